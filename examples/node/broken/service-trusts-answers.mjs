#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the JavaScript seam, but it returns whatever the
 * provider answers, unchecked. The suite must fail it with SVC-STRICT-1.
 */
import { serveService } from '../harness/roles.js';
import { UserInteractionService } from '../seam/service.js';

serveService({
  name: 'broken/service-trusts-answers',
  makeService: () => new UserInteractionService({ strict: false }), // the defect
});
