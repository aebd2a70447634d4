import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { quote, requestViolations } from '../seam/checks.js';
import { ErrorCode, MESSAGES, UserInteractionError } from '../seam/errors.js';
import { GRACE_MS, UserInteractionService } from '../seam/service.js';

const ONE = () => ({ questions: [{ id: 'q', question: 'Go?', options: [{ label: 'Yes' }] }] });
const YES = () => ({ answers: [{ id: 'q', selected: ['Yes'] }] });

/** A provider that waits until its call signal aborts, then does `then(signal)`. */
function waiting(then = (signal) => Promise.reject(signal.reason)) {
  const provider = {
    calls: 0,
    ask(request, { signal }) {
      provider.calls += 1;
      return new Promise((resolve, reject) => {
        signal.addEventListener('abort', () => then(signal).then(resolve, reject), { once: true });
      });
    },
  };
  return provider;
}

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('it resolved');
}

describe('checks', () => {
  it('quotes as JSON.stringify, shortened past 200 code points', () => {
    assert.equal(quote('é\n\ud800'), '"é\\n\\ud800"');
    const long = '\u{1f600}'.repeat(300);
    assert.equal(quote(long), `"${'\u{1f600}'.repeat(200)}..." (300 characters)`);
  });

  it('locates the first broken field as SVC-ORDER-3 says', () => {
    const at = (request) => requestViolations(request)[0].location();
    assert.equal(at({}), 'request.questions');
    assert.equal(at(null), 'request');
    assert.equal(at({ questions: [1] }), 'questions[0]');
    assert.equal(at({ questions: [{ id: '', question: 'x' }] }), 'questions[0]: id');
    assert.equal(
      at({ questions: [{ id: 'a"b', question: 'x', options: [{ label: 'l' }, { label: 7 }] }] }),
      'question "a\\"b" (questions[0]): options[1].label',
    );
    assert.equal(at({ questions: [{ id: 'q', question: 'x', intent: { kind: 1, approve: 'A' } }] }), 'question "q" (questions[0]): intent.kind');
    assert.equal(at({ questions: [], signal: 3 }), 'request.signal');
  });
});

describe('service', () => {
  it('rejects in stage order and never throws synchronously', async () => {
    const service = new UserInteractionService();
    const code = async (request) => (await rejection(service.ask(request))).code;
    assert.equal(await code({ questions: [], signal: AbortSignal.abort() }), ErrorCode.ASK_ABORTED);
    assert.equal(await code({ questions: [] }), ErrorCode.EMPTY_QUESTIONS);
    assert.equal(await code({ questions: [{ id: 'p', question: '?', intent: { kind: 'k', approve: 'A' } }, { id: '' }] }), ErrorCode.BAD_REQUEST);
    const intent = await rejection(service.ask({ questions: [{ id: 'p', question: '?', options: [{ label: 'B' }], intent: { kind: 'plan-review', approve: 'Aé\n' }, detail: 'x' }] }));
    assert.equal(intent.message, 'question p declares intent plan-review whose approve label "Aé\\n" names none of its options');
    assert.equal(await code(ONE()), ErrorCode.NO_PROVIDER);
  });

  it('passes the very request, returns the very answer, and checks answers when strict', async () => {
    const service = new UserInteractionService();
    const answer = YES();
    let seen;
    const dispose = service.registerProvider({ ask: (request) => ((seen = request), answer) });
    assert.throws(() => service.registerProvider({ ask() {} }), (e) => e.code === ErrorCode.DUPLICATE_PROVIDER);
    const request = { ...ONE(), agent: Symbol('agent'), extra: 1 };
    assert.equal(await service.ask(request), answer);
    assert.equal(seen, request);
    dispose();
    const bad = { answers: [{ id: 'q', selected: ['No'] }] };
    service.registerProvider({ ask: () => bad });
    const error = await rejection(service.ask(ONE()));
    assert.equal(error.code, ErrorCode.BAD_ANSWER);
    assert.equal(error.answer, bad);
    assert.match(error.message, /ANS-SEL-3/);
  });

  it('rejects with ASK_ABORTED when its grace ends, even when the provider ignores the abort', async (t) => {
    // Mocked timers: the grace is measured in timer time, so a busy machine cannot fail this.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const service = new UserInteractionService();
    service.registerProvider({ ask: () => new Promise(() => {}) });
    const controller = new AbortController();
    const asked = service.ask({ ...ONE(), signal: controller.signal });
    let settled = false;
    const outcome = rejection(asked).finally(() => (settled = true));
    controller.abort();
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(GRACE_MS - 1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'it gave up before its grace ended');
    t.mock.timers.tick(1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, true, 'it was still pending when its grace ended');
    const error = await outcome;
    assert.equal(error.code, ErrorCode.ASK_ABORTED);
    assert.equal(error.message, MESSAGES.ASK_ABORTED);
    assert.equal(service.pendingCount, 0);
  });

  it('keeps a late answer on the error after an abort (SVC-ABORT-3)', async () => {
    const service = new UserInteractionService();
    const late = YES();
    service.registerProvider(waiting(async () => late));
    const controller = new AbortController();
    const asked = service.ask({ ...ONE(), signal: controller.signal });
    controller.abort();
    const error = await rejection(asked);
    assert.equal(error.code, ErrorCode.ASK_ABORTED);
    assert.equal(error.answer, late);
  });

  it('disposes: every pending ask rejects with PROVIDER_DISPOSED and its call is cancelled', async () => {
    const service = new UserInteractionService();
    const provider = waiting();
    const dispose = service.registerProvider(provider);
    const asks = [service.ask(ONE()), service.ask(ONE())];
    dispose.dispose();
    dispose();
    for (const asked of asks) assert.equal((await rejection(asked)).code, ErrorCode.PROVIDER_DISPOSED);
    assert.equal(provider.calls, 2);
  });

  it("lets the caller's cancellation win over an abort in the same turn, unchanged", async () => {
    for (const order of ['abort first', 'cancel first']) {
      const service = new UserInteractionService();
      const provider = waiting(async () => YES()); // answers anyway
      service.registerProvider(provider);
      const abort = new AbortController();
      const cancel = new AbortController();
      const reason = new Error('cancelled by the caller');
      const asked = service.ask({ ...ONE(), signal: abort.signal }, { signal: cancel.signal });
      if (order === 'abort first') {
        abort.abort();
        cancel.abort(reason);
      } else {
        cancel.abort(reason);
        abort.abort();
      }
      assert.equal(await rejection(asked), reason, order);
    }
  });

  it('propagates the provider error as the same object', async () => {
    const service = new UserInteractionService();
    const error = UserInteractionError.of(ErrorCode.ASK_CANCELLED);
    service.registerProvider({ ask: async () => { throw error; } });
    assert.equal(await rejection(service.ask(ONE())), error);
  });
});
