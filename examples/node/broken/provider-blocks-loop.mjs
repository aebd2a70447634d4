#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the screen provider, but showing a question spins for
 * 700 ms before it returns to the event loop. The suite must fail it with
 * PRV-LOOP-1, seen as pings that go unanswered.
 */
import { serveProvider } from '../harness/roles.js';
import { ScreenProvider } from '../seam/screen-provider.js';

class SpinningProvider extends ScreenProvider {
  async ask(request, options) {
    const until = Date.now() + 700;
    while (Date.now() < until) {
      // the defect: a busy wait instead of an await
    }
    return super.ask(request, options);
  }
}

serveProvider({ name: 'broken/provider-blocks-loop', Provider: SpinningProvider });
