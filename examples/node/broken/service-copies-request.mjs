#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the JavaScript seam, but the provider receives a
 * shallow copy of the request instead of the very object. The suite must
 * fail it with SVC-PASS-1.
 */
import { serveService } from '../harness/roles.js';
import { UserInteractionService } from '../seam/service.js';

class CopyingService extends UserInteractionService {
  registerProvider(provider) {
    return super.registerProvider({
      ask: (request, options) => provider.ask({ ...request }, options), // the defect
    });
  }
}

serveService({ name: 'broken/service-copies-request', makeService: () => new CopyingService() });
