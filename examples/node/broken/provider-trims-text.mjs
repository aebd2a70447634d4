#!/usr/bin/env node
/**
 * BROKEN ON PURPOSE: the screen provider, but it trims the text the human
 * typed. The suite must fail it with PRV-TEXT-1 (text round-trips exactly,
 * surrounding whitespace included).
 */
import { serveProvider } from '../harness/roles.js';
import { ScreenProvider } from '../seam/screen-provider.js';

class TrimmingProvider extends ScreenProvider {
  customOf(typed) {
    return typed.trim(); // the defect
  }
}

serveProvider({ name: 'broken/provider-trims-text', Provider: TrimmingProvider });
