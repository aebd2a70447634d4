#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the JavaScript seam, but every ask also adds a listener
 * to the request's signal that it never removes. The suite must fail it
 * with SVC-LEAK-1, through the listener counts the adapter reports.
 */
import { serveService } from '../harness/roles.js';
import { UserInteractionService } from '../seam/service.js';

class LeakyService extends UserInteractionService {
  ask(request, options) {
    const signal = request?.signal;
    if (signal && typeof signal.addEventListener === 'function') {
      signal.addEventListener('abort', () => {}); // the defect: never removed
    }
    return super.ask(request, options);
  }
}

serveService({ name: 'broken/service-keeps-listener', makeService: () => new LeakyService() });
