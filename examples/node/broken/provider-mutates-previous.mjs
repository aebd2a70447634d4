#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the screen provider, but while it shows a request it
 * rewrites the question of the request it showed before, after that ask has
 * settled. The suite must fail it with PRV-MUTATE-1, through the states of
 * changed requests that every reply carries (HAR-MUTATE-1).
 */
import { serveProvider } from '../harness/roles.js';
import { ScreenProvider } from '../seam/screen-provider.js';

class RewritingProvider extends ScreenProvider {
  #last = null;

  ask(request, options) {
    const earlier = this.#last;
    this.#last = request;
    const first = earlier?.questions?.[0];
    if (earlier !== request && first && typeof first === 'object') {
      first.question = `${first.question} (seen)`; // the defect
    }
    return super.ask(request, options);
  }
}

serveProvider({ name: 'broken/provider-mutates-previous', Provider: RewritingProvider });
