/**
 * The seam: one registered provider and an asynchronous `ask()`.
 *
 * Design notes (the invariants this module keeps):
 *
 * Rule 1: `ask()` never throws synchronously. It returns a promise, and every
 * check failure rejects it, in the stage order SVC-ORDER-1..5; the provider
 * is never called when a check fails.
 *
 * Rule 2: JavaScript cannot cancel a running call, so every provider call
 * gets its own signal: `provider.ask(request, {signal: callSignal})`. The
 * service aborts `callSignal` when it gives up on the call: the request's
 * signal aborted (ASK_ABORTED), the registration was disposed
 * (PROVIDER_DISPOSED), or the caller cancelled its own ask through the
 * per-call signal of `ask(request, {signal})`. A one-argument provider works
 * too; it simply never sees `callSignal`.
 *
 * Rule 3: the caller's cancellation wins. Once the caller's signal aborts,
 * the ask rejects with that signal's `reason`, unchanged, whatever else
 * happened before it settled: an abort or a disposal in the same turn, a
 * provider that answers anyway or turns the interrupt into an error of its
 * own (SVC-CANCEL-1).
 *
 * Rule 4: an interrupted provider gets a short grace (`GRACE_MS`) to settle,
 * so that an answer it gives in response to being interrupted is kept on the
 * ASK_ABORTED or PROVIDER_DISPOSED error as `error.answer` (SVC-ABORT-3).
 * The grace ends early when the provider settles; a provider that never
 * settles cannot hold the ask longer than the grace (SVC-ABORT-1).
 *
 * Rule 5: an answer the provider has already returned stands; an abort after
 * it changes nothing (SVC-ABORT-2). A strict service then checks it
 * (SVC-STRICT-1) and returns the very same object (SVC-STRICT-2).
 *
 * Rule 6: once an ask settles, in any way, it leaves nothing behind: its
 * abort listeners are removed, its grace timer is cleared and its record is
 * gone from the service (SVC-LEAK-1).
 *
 * @module
 */

import { badAnswer, checkRequest, mustViolations } from './checks.js';
import { ErrorCode, UserInteractionError } from './errors.js';

/** How long an interrupted provider may take to settle, in milliseconds (at most 100). */
export const GRACE_MS = 100;

/**
 * @typedef {object} Provider
 * @property {(request: object, options: {signal: AbortSignal}) => unknown} ask
 *   Returns the answer, or a promise of it. Must reject with `ASK_ABORTED` when
 *   the request's signal aborts, and with `options.signal.reason` when the
 *   call's own signal aborts.
 */

/**
 * A function that unregisters the provider; `dispose()` does the same, and so
 * does `using` where the language has it.
 *
 * @typedef {(() => void) & {dispose: () => void, readonly active: boolean}} Disposer
 */

/** Why the service gave up on a provider call. */
const ABORTED = 'aborted';
const DISPOSED = 'disposed';
const CANCELLED = 'cancelled';

/** One pending ask: who it waits for and why it was interrupted. */
class Call {
  /**
   * @param {object} registration
   * @param {AbortSignal|undefined} callerSignal
   */
  constructor(registration, callerSignal) {
    this.registration = registration;
    this.callerSignal = callerSignal;
    this.controller = new AbortController();
    /** @type {null|'aborted'|'disposed'|'cancelled'} */
    this.interrupt = null;
    /** How the provider's call ended, once it has: `{ok, value}`. */
    this.outcome = null;
    this.timer = null;
    this.finished = false;
    /** Set by `UserInteractionService.ask`: ends the ask. */
    this.finish = () => {};
  }

  /**
   * Give up on the provider's call. A caller's cancellation replaces an
   * abort or a disposal that came first; nothing replaces a cancellation.
   *
   * @param {'aborted'|'disposed'|'cancelled'} why
   * @param {unknown} reason the reason `callSignal` aborts with
   */
  stop(why, reason) {
    if (this.finished || this.outcome !== null) return;
    if (this.interrupt === CANCELLED) return;
    if (this.interrupt !== null && why !== CANCELLED) return;
    this.interrupt = why;
    if (!this.controller.signal.aborted) this.controller.abort(reason);
    if (this.timer === null) {
      this.timer = setTimeout(() => this.finish(), GRACE_MS);
    }
  }
}

/**
 * The seam between model-facing tools and the one UI provider.
 *
 * With `strict: true` (the default) every answer is checked against the
 * answer rules, and one that breaks a MUST rule rejects with `BAD_ANSWER`,
 * the raw answer kept on the error.
 */
export class UserInteractionService {
  #strict;
  /** @type {null|{provider: Provider, active: boolean}} */
  #registration = null;
  /** @type {Set<Call>} */
  #calls = new Set();

  /** @param {{strict?: boolean}} [options] */
  constructor({ strict = true } = {}) {
    this.#strict = strict;
  }

  /** Whether answers are checked. */
  get strict() {
    return this.#strict;
  }

  /** The registered provider, or null. */
  get provider() {
    return this.#registration?.provider ?? null;
  }

  /** How many asks are waiting for the provider; for leak checks. */
  get pendingCount() {
    return this.#calls.size;
  }

  /**
   * Register `provider`, the one UI that answers every ask.
   *
   * Throws `DUPLICATE_PROVIDER` at once while a provider is registered, even
   * the same one (SVC-REG-2). Disposing twice does nothing, and a stale
   * disposer never unregisters a later provider (SVC-REG-3).
   *
   * @param {Provider} provider
   * @returns {Disposer}
   */
  registerProvider(provider) {
    if (this.#registration !== null) throw UserInteractionError.of(ErrorCode.DUPLICATE_PROVIDER);
    const registration = { provider, active: true };
    this.#registration = registration;
    const dispose = () => {
      if (!registration.active) return;
      registration.active = false;
      if (this.#registration === registration) this.#registration = null;
      // Note: the original leaves pending asks waiting on a UI that is gone;
      // here they reject with PROVIDER_DISPOSED (SVC-DISPOSE-1).
      const error = UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED);
      for (const call of [...this.#calls]) {
        if (call.registration === registration) call.stop(DISPOSED, error);
      }
    };
    Object.defineProperties(dispose, {
      dispose: { value: dispose },
      active: { get: () => registration.active },
    });
    if (typeof Symbol.dispose === 'symbol') {
      Object.defineProperty(dispose, Symbol.dispose, { value: dispose });
    }
    return /** @type {Disposer} */ (dispose);
  }

  /**
   * Ask the human through the registered provider and resolve with the answer.
   *
   * Rejects with a `UserInteractionError`: `ASK_ABORTED` (signal already
   * aborted), `EMPTY_QUESTIONS`, `BAD_REQUEST`, `BAD_INTENT`, `NO_PROVIDER`;
   * then, while waiting, `ASK_ABORTED` or `PROVIDER_DISPOSED`; then
   * `BAD_ANSWER` for a strict service. What the provider throws propagates as
   * the same object. When `options.signal` aborts, the ask is cancelled: it
   * rejects with that signal's `reason`, unchanged.
   *
   * @param {object} request passed to the provider as the very same object
   * @param {{signal?: AbortSignal}} [options] the caller's per-call signal
   * @returns {Promise<object>}
   */
  ask(request, options) {
    try {
      return this.#ask(request, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #ask(request, options) {
    const callerSignal = options?.signal ?? undefined;
    if (callerSignal !== undefined && !(callerSignal instanceof AbortSignal)) {
      throw new TypeError('ask(request, {signal}): signal must be an AbortSignal');
    }
    // A call cancelled before it started never runs.
    if (callerSignal?.aborted) return Promise.reject(callerSignal.reason);
    const registration = this.#registration;
    checkRequest(request, { hasProvider: registration !== null });
    return this.#wait(request, registration, callerSignal);
  }

  #wait(request, registration, callerSignal) {
    const call = new Call(registration, callerSignal);
    // Note: the original relies on the provider to notice the signal, so an ask
    // to one that ignores it never settles; here the service stops it (SVC-ABORT-1).
    const requestSignal = request.signal instanceof AbortSignal ? request.signal : null;
    const onAbort = () => call.stop(ABORTED, requestSignal.reason);
    const onCancel = () => call.stop(CANCELLED, callerSignal.reason);
    return new Promise((resolve, reject) => {
      call.finish = () => {
        if (call.finished) return;
        call.finished = true;
        clearTimeout(call.timer);
        requestSignal?.removeEventListener('abort', onAbort);
        callerSignal?.removeEventListener('abort', onCancel);
        this.#calls.delete(call);
        this.#settle(call, request, resolve, reject);
      };
      requestSignal?.addEventListener('abort', onAbort);
      callerSignal?.addEventListener('abort', onCancel);
      this.#calls.add(call);
      let pending;
      try {
        pending = Promise.resolve(
          registration.provider.ask(request, { signal: call.controller.signal }),
        );
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        (value) => {
          call.outcome ??= { ok: true, value };
          call.finish();
        },
        (error) => {
          call.outcome ??= { ok: false, value: error };
          call.finish();
        },
      );
    });
  }

  #settle(call, request, resolve, reject) {
    const { interrupt, outcome } = call;
    if (interrupt === CANCELLED) {
      reject(call.callerSignal.reason); // Rule 3: unchanged, never a code
      return;
    }
    if (interrupt !== null) {
      const code = interrupt === ABORTED ? ErrorCode.ASK_ABORTED : ErrorCode.PROVIDER_DISPOSED;
      // Rule 4. Note: a late answer loses, but stays on the error (SVC-ABORT-3).
      const late = outcome?.ok ? { answer: outcome.value } : undefined;
      reject(UserInteractionError.of(code, late));
      return;
    }
    if (!outcome.ok) {
      reject(outcome.value); // SVC-ERR-1: the same object
      return;
    }
    const answer = outcome.value;
    // Note: the original never checks answers; a strict service does (SVC-STRICT-1).
    if (this.#strict) {
      const violations = mustViolations(request, answer);
      if (violations.length) {
        reject(badAnswer(answer, violations));
        return;
      }
    }
    resolve(answer);
  }
}
