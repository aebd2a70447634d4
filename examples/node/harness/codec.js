/**
 * Values, identity and signals on the wire (spec/harness.md, sections 4-6).
 *
 * Design notes:
 *
 * - Handles. The adapter remembers every object that reached it with a
 *   handle (HAR-REF-1): the top-level value of a `request`, `value` or
 *   `error` whose message names a handle, and every `signal` and `opaque`
 *   tag. Objects are looked up through a `WeakMap` (object -> handle), so
 *   remembering never keeps an object alive on that side; the handle -> object
 *   table lives per subject and is dropped when the subject closes.
 *   Primitives have no identity in JavaScript: a top-level primitive that
 *   arrived with a handle is written back as a ref only at the top level of
 *   a value, where an equal primitive is "the very value".
 * - The child's own handles begin with `c` (never `s`, HAR-HANDLE-1).
 * - Tagged values (HAR-VALUE-1): NaN, the infinities and -0 use the `number`
 *   tag; integers outside ±(2^53 - 1) the `bigint` tag; `undefined` its own
 *   tag; a plain object with a `$` key is wrapped in the `object` tag. Lone
 *   surrogates need nothing: `JSON.stringify` writes them as `\udXXX` and
 *   `JSON.parse` reads them back.
 * - Signals (HAR-SIGNAL-1/2). A suite signal becomes the signal of an
 *   `AbortController` the adapter holds, with its listeners counted; the
 *   `abort` notification aborts it. A signal the child itself sends gets a
 *   child handle, and its abort is sent as an `abort` notification.
 *
 * @module
 */

import { ErrorCode, isUserInteractionError, UserInteractionError } from '../seam/errors.js';
import { countListeners } from './signals.js';

/** A value of the suite with no JSON form: only its identity counts. */
export class Opaque {
  /** @param {string} type the suite's name for its type */
  constructor(type) {
    this.type = type;
    Object.freeze(this);
  }

  toString() {
    return `[opaque ${this.type}]`;
  }
}

/** An error of the suite that is not a seam error (a `RemoteError` on its side). */
export class RemoteError extends Error {
  /**
   * @param {string} message
   * @param {string} name
   * @param {string|null} code
   */
  constructor(message, name, code) {
    super(message);
    this.name = name;
    if (code !== null) this.code = code;
  }
}

/** A message that breaks the protocol. */
export class ProtocolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ProtocolError';
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const NUMBERS = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 };

/** Set `key` on `object` as an own data property, `__proto__` included. */
function put(object, key, value) {
  if (key === '__proto__') {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

function isPlain(value) {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function typeOf(value) {
  if (typeof value === 'function') return 'function';
  if (typeof value === 'symbol') return 'symbol';
  try {
    const name = value?.constructor?.name;
    return typeof name === 'string' && name ? name : 'object';
  } catch {
    return 'object';
  }
}

/**
 * One adapter's handle tables and the encoding of values both ways.
 */
export class Codec {
  /** object -> handle */
  #handles = new WeakMap();
  /** scope -> handle -> object */
  #scopes = new Map();
  /** scope -> primitive -> handle (top level only) */
  #primitives = new Map();
  /** suite signal handle -> {controller, counter, scope} */
  #suiteSignals = new Map();
  /** child signal handle -> remover of the adapter's abort listener */
  #childSignals = new Map();
  #next = 0;

  /**
   * @param {object} hooks
   * @param {(handle: string, reason: unknown) => void} hooks.aborted
   *   a signal the child sent aborted: send `abort`
   * @param {(handle: string, count: number) => void} hooks.listeners
   *   the count of listeners on a suite signal changed: send `listeners`
   */
  constructor(hooks) {
    this.hooks = hooks;
  }

  /** A fresh child handle. */
  mint() {
    this.#next += 1;
    return `c${this.#next}`;
  }

  #table(scope) {
    let table = this.#scopes.get(scope);
    if (table === undefined) {
      table = new Map();
      this.#scopes.set(scope, table);
    }
    return table;
  }

  /**
   * Remember `value` under `handle` for `scope` (a subject handle, or null).
   *
   * @param {unknown} value
   * @param {string} handle
   * @param {string|null} scope
   */
  remember(value, handle, scope) {
    this.#table(scope).set(handle, value);
    if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
      this.#handles.set(value, handle);
    } else if (value !== undefined && !Object.is(value, -0)) {
      let primitives = this.#primitives.get(scope);
      if (primitives === undefined) {
        primitives = new Map();
        this.#primitives.set(scope, primitives);
      }
      primitives.set(value, handle);
    }
  }

  /** Whether `handle` names an object we remember. */
  knows(handle) {
    for (const table of this.#scopes.values()) if (table.has(handle)) return true;
    return false;
  }

  /** The object remembered under `handle`; throws for an unknown one. */
  lookup(handle) {
    for (const table of this.#scopes.values()) if (table.has(handle)) return table.get(handle);
    throw new ProtocolError(`unknown handle ${JSON.stringify(handle)}`);
  }

  /** The handle of an object we remember, or undefined. */
  handleOf(value) {
    if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
      return this.#handles.get(value);
    }
    return undefined;
  }

  /**
   * Forget everything remembered for `scope`: its handles, its signals'
   * listener counts, and the adapter's own listeners on the child's signals.
   */
  forget(scope) {
    const table = this.#scopes.get(scope);
    if (table !== undefined) {
      for (const handle of table.keys()) this.#unwatch(handle);
      this.#scopes.delete(scope);
    }
    this.#primitives.delete(scope);
  }

  /**
   * Forget `handles` of `scope` (HAR-RELEASE-1): the suite never names them
   * again, so an object that had one is sent in full, as new, if it is
   * handed back later. Unknown handles are skipped.
   *
   * @param {string|null} scope
   * @param {string[]} handles
   */
  release(scope, handles) {
    const table = this.#scopes.get(scope);
    const primitives = this.#primitives.get(scope);
    for (const handle of handles) {
      if (table === undefined || !table.has(handle)) continue;
      this.#unwatch(handle);
      const value = table.get(handle);
      table.delete(handle);
      if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
        if (this.#handles.get(value) === handle) this.#handles.delete(value);
      } else if (primitives !== undefined && primitives.get(value) === handle) {
        primitives.delete(value);
      }
    }
  }

  /** Stop counting the listeners on signal `handle`, and stop hearing its abort. */
  #unwatch(handle) {
    const suite = this.#suiteSignals.get(handle);
    if (suite !== undefined) {
      suite.counter.clear();
      this.#suiteSignals.delete(handle);
    }
    const remove = this.#childSignals.get(handle);
    if (remove !== undefined) {
      remove();
      this.#childSignals.delete(handle);
    }
  }

  /**
   * How many listeners the implementation holds on each suite signal of
   * `scope`, for those that have any.
   *
   * @returns {[string, number][]}
   */
  heldListeners(scope) {
    const held = [];
    for (const [handle, { counter, scope: owner }] of this.#suiteSignals) {
      if (owner === scope && counter.count > 0) held.push([handle, counter.count]);
    }
    return held;
  }

  /**
   * The suite's `abort` notification: abort our copy of its signal at once.
   * Unknown handles are ignored (a subject that closed).
   */
  abortSuiteSignal(handle, reason) {
    const entry = this.#suiteSignals.get(handle);
    if (entry === undefined || entry.controller.signal.aborted) return;
    entry.controller.abort(this.decode(reason, { scope: entry.scope }));
    entry.counter.afterAbort();
  }

  // -------------------------------------------------------------------------
  // Decoding: wire -> JavaScript
  // -------------------------------------------------------------------------

  /**
   * The JavaScript value of wire value `json`. With `handle`, the value is
   * remembered under it, and a handle we already know gives the object we
   * remember (a `perform` that arrives before its `ask`, HAR-REF-2).
   *
   * @param {unknown} json
   * @param {{handle?: string, scope?: string|null}} [options]
   */
  decode(json, { handle, scope = null } = {}) {
    if (handle !== undefined && this.knows(handle)) return this.lookup(handle);
    const value = this.#decode(json, scope);
    if (handle !== undefined) this.remember(value, handle, scope);
    return value;
  }

  #decode(json, scope) {
    if (json === null || typeof json !== 'object') return json;
    if (Array.isArray(json)) return json.map((item) => this.#decode(item, scope));
    if (!Object.hasOwn(json, '$')) return this.#members(json, scope);
    switch (json.$) {
      case 'ref':
        return this.lookup(json.handle);
      case 'signal':
        return this.#suiteSignal(json, scope);
      case 'opaque': {
        if (this.knows(json.handle)) return this.lookup(json.handle);
        const opaque = new Opaque(String(json.type));
        this.remember(opaque, json.handle, scope);
        return opaque;
      }
      case 'number':
        if (!Object.hasOwn(NUMBERS, json.value)) throw new ProtocolError(`bad number tag ${json.value}`);
        return NUMBERS[json.value];
      case 'bigint':
        return BigInt(json.value);
      case 'undefined':
        return undefined;
      case 'object': {
        const out = this.#members(json.value, scope);
        // An object the suite wants identity for (an agent) comes with a handle.
        if (typeof json.handle === 'string') this.remember(out, json.handle, scope);
        return out;
      }
      default:
        throw new ProtocolError(`unknown tag ${JSON.stringify(json.$)}`);
    }
  }

  #members(json, scope) {
    const out = {};
    for (const key of Object.keys(json)) put(out, key, this.#decode(json[key], scope));
    return out;
  }

  #suiteSignal(tag, scope) {
    const { handle } = tag;
    if (this.knows(handle)) {
      const known = this.lookup(handle);
      if (tag.aborted) this.abortSuiteSignal(handle, tag.reason);
      return known;
    }
    const controller = new AbortController();
    const counter = countListeners(controller.signal, (count) => this.hooks.listeners(handle, count));
    this.#suiteSignals.set(handle, { controller, counter, scope });
    this.remember(controller.signal, handle, scope);
    if (tag.aborted) controller.abort(this.#decode(tag.reason, scope));
    return controller.signal;
  }

  /**
   * The JavaScript error of wire error `json` (section 6): the very error for
   * a ref, a `UserInteractionError` for a seam error, a `RemoteError`
   * otherwise. An error with a handle is remembered.
   */
  decodeError(json, scope = null) {
    if (json?.$ === 'ref') return this.lookup(json.handle);
    const answer = Object.hasOwn(json, 'answer') ? { answer: this.decode(json.answer, { scope }) } : {};
    let error;
    if (json.is_seam_error && isCode(json.code)) {
      error = new UserInteractionError(json.message, json.code, answer);
    } else {
      error = new RemoteError(json.message, json.name ?? 'Error', json.code ?? null);
      if (Object.hasOwn(answer, 'answer')) error.answer = answer.answer;
    }
    if (json.handle !== undefined) this.remember(error, json.handle, scope);
    return error;
  }

  // -------------------------------------------------------------------------
  // Encoding: JavaScript -> wire
  // -------------------------------------------------------------------------

  /**
   * The wire value of `value`. Objects we remember become refs, at any
   * depth, except the top-level object itself when `asValue` is set (the
   * `request` of HAR-MUTATE-1).
   *
   * @param {unknown} value
   * @param {{asValue?: boolean, scope?: string|null}} [options]
   */
  encode(value, { asValue = false, scope = null } = {}) {
    if (!asValue && value !== null && typeof value !== 'object' && typeof value !== 'function') {
      const handle = this.#primitives.get(scope)?.get(value);
      if (handle !== undefined && !Object.is(value, -0)) return { $: 'ref', handle };
    }
    return this.#encode(value, scope, asValue, new Set());
  }

  #encode(value, scope, skipRef, ancestors) {
    switch (typeof value) {
      case 'undefined':
        return { $: 'undefined' };
      case 'boolean':
      case 'string':
        return value;
      case 'number':
        if (Number.isNaN(value)) return { $: 'number', value: 'NaN' };
        if (value === Infinity) return { $: 'number', value: 'Infinity' };
        if (value === -Infinity) return { $: 'number', value: '-Infinity' };
        if (Object.is(value, -0)) return { $: 'number', value: '-0' };
        return value;
      case 'bigint':
        return value >= -MAX_SAFE && value <= MAX_SAFE ? Number(value) : { $: 'bigint', value: value.toString() };
      case 'symbol':
        return { $: 'opaque', handle: this.mint(), type: 'symbol' };
      default:
        break;
    }
    if (value === null) return null;
    const known = this.#handles.get(value);
    if (known !== undefined && !skipRef) return { $: 'ref', handle: known };
    if (value instanceof AbortSignal) return this.#childSignal(value, scope);
    if (typeof value === 'function' || ancestors.has(value) || (!Array.isArray(value) && !isPlain(value))) {
      const handle = this.mint();
      this.remember(value, handle, scope);
      return { $: 'opaque', handle, type: typeOf(value) };
    }
    ancestors.add(value);
    let out;
    if (Array.isArray(value)) {
      out = Array.from(value, (item) => this.#encode(item, scope, false, ancestors));
    } else {
      const members = {};
      for (const key of Object.keys(value)) put(members, key, this.#encode(value[key], scope, false, ancestors));
      out = Object.hasOwn(value, '$') ? { $: 'object', value: members } : members;
    }
    ancestors.delete(value);
    return out;
  }

  #childSignal(signal, scope) {
    const handle = this.mint();
    this.remember(signal, handle, scope);
    if (signal.aborted) {
      return { $: 'signal', handle, aborted: true, reason: this.encode(signal.reason, { scope }) };
    }
    const onAbort = () => {
      this.#childSignals.delete(handle);
      this.hooks.aborted(handle, signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.#childSignals.set(handle, () => signal.removeEventListener('abort', onAbort));
    return { $: 'signal', handle, aborted: false };
  }

  /**
   * The wire error of `error` (section 6): a ref for an error we remember,
   * otherwise what it is, never with an invented code (HAR-ERROR-1).
   *
   * @param {unknown} error
   * @param {string|null} [scope]
   */
  encodeError(error, scope = null) {
    const known = this.handleOf(error);
    if (known !== undefined) return { $: 'ref', handle: known };
    const seam = isUserInteractionError(error);
    const isObject = typeof error === 'object' && error !== null;
    let code = null;
    if (seam) code = error.code;
    else if (isObject && typeof error.code === 'string') code = error.code;
    const out = {
      is_seam_error: seam,
      code,
      message: messageOf(error),
      name: isObject ? String(error.name ?? typeOf(error)) : typeof error,
    };
    if (isObject && Object.hasOwn(error, 'answer')) out.answer = this.encode(error.answer, { scope });
    return out;
  }
}

function isCode(code) {
  return Object.values(ErrorCode).includes(code);
}

function messageOf(error) {
  try {
    if (error instanceof Error) return String(error.message);
    return String(error);
  } catch {
    return 'an error that cannot be shown';
  }
}
