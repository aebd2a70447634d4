#!/usr/bin/env node
/**
 * The screen provider and its driver, served over the JSON-lines harness.
 *
 *     python3 -m dsh_user_interaction_conformance --provider-cmd "node examples/node/provider.mjs"
 */
import { serveProvider } from './harness/roles.js';

serveProvider({ name: 'screen-provider' });
