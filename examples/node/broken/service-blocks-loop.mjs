#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the JavaScript seam, but every ask spins for 700 ms
 * before it returns to the event loop. The suite must fail it with
 * SVC-LOOP-1, seen as pings that go unanswered; on a machine too busy to
 * tell, the requirement is untested and the run fails all the same.
 */
import { serveService } from '../harness/roles.js';
import { UserInteractionService } from '../seam/service.js';

class SpinningService extends UserInteractionService {
  async ask(request, options) {
    const until = Date.now() + 700;
    while (Date.now() < until) {
      // the defect: a busy wait instead of an await
    }
    return super.ask(request, options);
  }
}

serveService({ name: 'broken/service-blocks-loop', makeService: () => new SpinningService() });
