#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the screen provider, but when a request's signal aborts
 * it rejects with ASK_ABORTED and leaves the questions on screen. The suite
 * must fail it with PRV-ABORT-2 (the questions are removed from the screen).
 */
import { serveProvider } from '../harness/roles.js';
import { ScreenProvider } from '../seam/screen-provider.js';

class StayingProvider extends ScreenProvider {
  takeDown(card, why) {
    if (why === 'aborted') return; // the defect
    super.takeDown(card, why);
  }
}

serveProvider({ name: 'broken/provider-stays-on-abort', Provider: StayingProvider });
