/**
 * Errors with stable codes (spec/user-interaction.md, section 5).
 *
 * Callers branch on `error.code`, never on the message. The messages the spec
 * fixes are kept byte for byte in `MESSAGES` (ERR-MSG-1).
 *
 * @module
 */

/**
 * The codes a `UserInteractionError` carries (ERR-CODE-1). Each value equals
 * its name, so a code crosses a process boundary as a plain string.
 */
export const ErrorCode = Object.freeze({
  /** The request has no questions: stage 2 of `ask()` (SVC-ORDER-2). */
  EMPTY_QUESTIONS: 'EMPTY_QUESTIONS',
  /** An intent names no option, or lacks its detail: stage 4 (SVC-ORDER-4). */
  BAD_INTENT: 'BAD_INTENT',
  /** Every check passed but no provider is registered: stage 5 (SVC-ORDER-5). */
  NO_PROVIDER: 'NO_PROVIDER',
  /** `registerProvider()` while a provider is registered; thrown at once (SVC-REG-2). */
  DUPLICATE_PROVIDER: 'DUPLICATE_PROVIDER',
  /** The request's signal aborted, before `ask()` or while waiting: the program gave up. */
  ASK_ABORTED: 'ASK_ABORTED',
  /** The human dismissed the whole batch; raised by providers, never by the service. */
  ASK_CANCELLED: 'ASK_CANCELLED',
  /** The request is malformed: stage 3; the message starts with the field's location. */
  BAD_REQUEST: 'BAD_REQUEST',
  /** A strict service got an answer that breaks a MUST answer rule; the answer stays on the error. */
  BAD_ANSWER: 'BAD_ANSWER',
  /** The provider's registration was disposed while the ask was pending. */
  PROVIDER_DISPOSED: 'PROVIDER_DISPOSED',
});

/** The fixed messages, byte for byte (ERR-MSG-1). */
export const MESSAGES = Object.freeze({
  [ErrorCode.ASK_ABORTED]: 'ask_user_question was aborted before the user answered',
  [ErrorCode.EMPTY_QUESTIONS]: 'ask_user_question requires at least one question',
  [ErrorCode.NO_PROVIDER]: 'no user-interaction provider is registered',
  [ErrorCode.DUPLICATE_PROVIDER]: 'a user-interaction provider is already registered',
  [ErrorCode.ASK_CANCELLED]: 'the user cancelled ask_user_question',
  [ErrorCode.PROVIDER_DISPOSED]:
    'the user-interaction provider was disposed before the user answered',
});

const CODES = new Set(Object.values(ErrorCode));

/** An error of the agent harness, constructed as `new HarnessError(message, code)`. */
export class HarnessError extends Error {
  /**
   * @param {string} message
   * @param {string} code
   */
  constructor(message, code) {
    super(message);
    this.name = 'HarnessError';
    /** The code, the contract callers branch on. */
    this.code = code;
  }
}

/**
 * An error of the user-interaction seam. `answer` is present when the error
 * keeps a provider's answer: the raw answer of a `BAD_ANSWER`, or a late
 * answer that lost to an abort or a disposal (SVC-ABORT-3).
 */
export class UserInteractionError extends HarnessError {
  /**
   * @param {string} message
   * @param {string} code one of `ErrorCode`
   * @param {{answer?: unknown, violations?: readonly object[]}} [options]
   *   `answer` is kept only when the key is given.
   */
  constructor(message, code, options = {}) {
    if (!CODES.has(code)) {
      throw new TypeError(`not a user-interaction error code: ${String(code)}`);
    }
    super(message, code);
    this.name = 'UserInteractionError';
    if (Object.hasOwn(options, 'answer')) {
      /** The provider's answer this error keeps. */
      this.answer = options.answer;
    }
    /** The answer-rule violations behind a `BAD_ANSWER`; empty otherwise. */
    this.violations = Object.freeze([...(options.violations ?? [])]);
  }

  /**
   * The error for `code` with its fixed message from `MESSAGES`.
   *
   * @param {string} code
   * @param {{answer?: unknown}} [options]
   * @returns {UserInteractionError}
   */
  static of(code, options) {
    const message = MESSAGES[code];
    if (message === undefined) throw new TypeError(`${code} has no fixed message`);
    return new UserInteractionError(message, code, options);
  }
}

/**
 * Whether `value` is a seam error: our class, or one that says it is by name
 * and carries a known code (another copy of this module, say).
 *
 * @param {unknown} value
 * @returns {value is UserInteractionError}
 */
export function isUserInteractionError(value) {
  if (value instanceof UserInteractionError) return true;
  return (
    value instanceof Error &&
    value.name === 'UserInteractionError' &&
    CODES.has(/** @type {any} */ (value).code)
  );
}
