#!/usr/bin/env node
/**
 * The bridge soak's UI in JavaScript, served over the JSON-lines harness on
 * the Node example's adapter (bench/soak_bridges.py, bridge `stdio-node`).
 *
 *     node bench/soak_subject.mjs
 *
 * The same UI as `SoakUI` in bench/soak_subjects.py: each question is
 * answered at once with its own text as the custom answer; a question whose
 * text starts with "hold" stays pending until the request's signal aborts
 * (ASK_ABORTED) or the call is cancelled (the call signal's reason). Every
 * listener is removed when the ask ends. The example's screen provider
 * needs a driver to answer, which StdioProvider never calls; this UI needs
 * none.
 */
import { serveStdio } from '../examples/node/harness/adapter.js';
import { VERSION } from '../examples/node/harness/roles.js';
import { ErrorCode, UserInteractionError } from '../examples/node/seam/errors.js';

const HOLD = 'hold';

class SoakUI {
  /** How many asks are held; for leak reports. */
  holding = 0;

  ask(request, options) {
    const callSignal = options?.signal;
    const signal = request.signal instanceof AbortSignal ? request.signal : null;
    if (signal?.aborted) return Promise.reject(UserInteractionError.of(ErrorCode.ASK_ABORTED));
    if (callSignal?.aborted) return Promise.reject(callSignal.reason);
    if (!request.questions[0].question.startsWith(HOLD)) {
      return Promise.resolve({
        answers: request.questions.map((q) => ({ id: q.id, selected: [], custom: q.question })),
      });
    }
    return new Promise((resolve, reject) => {
      const end = (error) => {
        signal?.removeEventListener('abort', onAbort);
        callSignal?.removeEventListener('abort', onCancel);
        this.holding -= 1;
        reject(error);
      };
      const onAbort = () => end(UserInteractionError.of(ErrorCode.ASK_ABORTED));
      const onCancel = () => end(callSignal.reason);
      signal?.addEventListener('abort', onAbort);
      callSignal?.addEventListener('abort', onCancel);
      this.holding += 1;
    });
  }
}

/** A driver is part of a provider subject; the soak never calls it. */
const driver = {
  perform() {
    throw new Error('the soak UI has no driver');
  },
  isShown() {
    return false;
  },
};

serveStdio({
  role: 'provider',
  implementation: { name: 'soak-ui', version: VERSION, language: `JavaScript (Node.js ${process.version})` },
  capabilities: {
    can_skip: true,
    can_dismiss: false,
    custom_on_single: true,
    custom_on_multi: true,
    revises: false,
    concurrent: true,
    observes_screen: false,
  },
  cancellable: true,
  create: () => {
    const provider = new SoakUI();
    return {
      provider,
      driver,
      name: 'soak-ui',
      leftovers: () => (provider.holding > 0 ? [`${provider.holding} ask(s) still held`] : []),
    };
  },
});
