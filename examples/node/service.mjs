#!/usr/bin/env node
/**
 * The JavaScript seam's service, served over the JSON-lines harness.
 *
 *     python3 -m dsh_user_interaction_conformance --service-cmd "node examples/node/service.mjs"
 */
import { serveService } from './harness/roles.js';

serveService({ name: 'javascript-seam' });
