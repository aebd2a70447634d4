/**
 * The child's side of the JSON-lines harness (spec/harness.md).
 *
 * Design notes (the invariants this module keeps):
 *
 * Rule 1 (HAR-LINE-1, HAR-TURN-1): every complete line of a chunk is handled
 * before the adapter yields to the event loop, so messages the suite wrote in
 * one turn (a cancellation and an abort, say) reach the implementation in
 * one synchronous turn, as they would in-process. Output goes out in order,
 * one JSON object per line, and nothing else is written on standard output.
 *
 * Rule 2 (HAR-CALL-1/2): calls run concurrently in both directions. The
 * suite's calls are answered exactly once; a synchronous handler (`ping`,
 * `register`, `dispose`, ...) is answered in the same turn. The child's own
 * calls (`provider.ask`) are numbered `k1`, `k2`, ...
 *
 * Rule 3 (HAR-CANCEL-1/2): each suite call gets its own `AbortController`;
 * `cancel` aborts it with a `CallCancelled` reason, passed to the
 * implementation as `{signal}`. A call that then rejects with exactly that
 * reason is answered `cancelled`; any other ending is relayed as it is. When
 * the implementation aborts the signal it passed to a `provider.ask` of the
 * suite, the adapter sends `cancel` for that call.
 *
 * Rule 4 (HAR-SIGNAL-2): a `listeners` notification is written the moment a
 * count changes, so it precedes every reply that follows the change.
 *
 * Rule 5 (HAR-CLOSE-1): `close` cancels what is still pending on the subject,
 * disposes its registrations, waits briefly for everything to settle, and
 * lists what did not.
 *
 * @module
 */

import { Codec, ProtocolError, RemoteError } from './codec.js';

/** The protocol version this adapter speaks. */
export const PROTOCOL = '1.2';

/** How long `close` waits for cancelled calls to settle, in milliseconds, at most. */
const CLOSE_WAIT_MS = 300;

/** The reason a suite call's signal aborts with when the suite cancels it. */
export class CallCancelled extends Error {
  constructor(message = 'the suite cancelled this call') {
    super(message);
    this.name = 'CallCancelled';
  }
}

const LINE_BREAKS = /[\u0085\u2028\u2029]/g;

/** The suite's provider, as the service under test sees it. */
class SuiteProvider {
  /**
   * @param {string} handle the suite's handle of its provider
   * @param {(request: object, signal: AbortSignal|undefined) => Promise<unknown>} ask
   */
  constructor(handle, ask) {
    this.handle = handle;
    this.ask = (request, options) => ask(request, options?.signal);
  }
}

/**
 * @typedef {object} ProviderSubject
 * @property {{ask: Function}} provider
 * @property {{perform: Function, isShown: Function}} driver
 * @property {string} [name]
 * @property {() => string[]} [leftovers] what is still running, in words
 *
 * @typedef {object} ServiceSubject
 * @property {{ask: Function, registerProvider: Function}} service
 * @property {string} [name]
 * @property {() => string[]} [leftovers]
 */

/**
 * One child's adapter: feed it input with `receive`, and it writes messages
 * through `write`.
 */
export class Adapter {
  #options;
  #codec;
  #input = '';
  #out = [];
  #flushing = false;
  /** suite call id -> entry */
  #incoming = new Map();
  /** child call id -> entry */
  #outgoing = new Map();
  /** child call ids given up on at `close`, whose late replies are ignored */
  #dropped = new Set();
  #calls = 0;
  #subjects = new Map();
  #registrations = new Map();

  /**
   * @param {object} options
   * @param {'provider'|'service'} options.role
   * @param {{name: string, version: string, language?: string}} options.implementation
   * @param {Record<string, boolean>} [options.capabilities] providers only
   * @param {boolean} [options.cancellable] whether calls can be cancelled (default true)
   * @param {() => ProviderSubject|ServiceSubject} options.create builds a fresh subject
   * @param {(text: string) => void} options.write writes to standard output
   * @param {(text: string) => void} [options.log] writes to standard error
   */
  constructor(options) {
    this.#options = { cancellable: true, log: () => {}, ...options };
    this.#codec = new Codec({
      aborted: (signal, reason) =>
        this.#send({ type: 'notify', method: 'abort', params: { signal, reason: this.#codec.encode(reason) } }),
      listeners: (signal, count) =>
        this.#send({ type: 'notify', method: 'listeners', params: { signal, count } }),
    });
  }

  /** The codec, for tests. */
  get codec() {
    return this.#codec;
  }

  /**
   * Feed a chunk of standard input; every complete line is handled now.
   *
   * @param {string} chunk
   */
  receive(chunk) {
    this.#input += chunk;
    const lines = this.#input.split('\n');
    this.#input = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      try {
        this.#handle(line);
      } catch (error) {
        this.#options.log(`adapter: ${error?.stack ?? error}\n`);
      }
    }
  }

  /** Write everything queued; called at the end of the turn. */
  flush() {
    this.#flushing = false;
    if (this.#out.length === 0) return;
    const text = this.#out.join('');
    this.#out = [];
    this.#options.write(text);
  }

  #send(message) {
    const line = JSON.stringify(message).replace(
      LINE_BREAKS,
      (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    this.#out.push(`${line}\n`);
    if (!this.#flushing) {
      this.#flushing = true;
      queueMicrotask(() => this.flush());
    }
  }

  #handle(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      throw new ProtocolError(`a line that is not JSON: ${line.slice(0, 200)}`);
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      throw new ProtocolError(`a line that is not a JSON object: ${line.slice(0, 200)}`);
    }
    switch (message.type) {
      case 'call':
        this.#onCall(message);
        return;
      case 'notify':
        this.#onNotify(message);
        return;
      case 'return':
      case 'throw':
      case 'cancelled':
        this.#onReply(message);
        return;
      default:
        throw new ProtocolError(`a message of unknown type: ${line.slice(0, 200)}`);
    }
  }

  // -------------------------------------------------------------------------
  // The suite's calls
  // -------------------------------------------------------------------------

  #onCall({ id, method, params }) {
    params ??= {};
    if (typeof id !== 'string') throw new ProtocolError(`a call without a string id: ${method}`);
    const entry = {
      id,
      method,
      subject: method === 'close' ? null : (params.subject ?? null),
      stateOf: params.subject ?? null,
      controller: new AbortController(),
      request: undefined,
      settled: false,
      synchronous: false,
    };
    this.#incoming.set(id, entry);
    let result;
    try {
      const handler = this.#methods[method];
      if (handler === undefined) throw new ProtocolError(`unknown method ${JSON.stringify(method)}`);
      result = handler.call(this, params, entry);
    } catch (error) {
      this.#reply(entry, false, error);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value) => this.#reply(entry, true, value),
        (error) => this.#reply(entry, false, error),
      );
    } else {
      this.#reply(entry, true, result);
    }
  }

  #reply(entry, ok, outcome) {
    if (entry.settled) return;
    entry.settled = true;
    this.#incoming.delete(entry.id);
    const scope = entry.subject;
    const signal = entry.controller.signal;
    let message;
    try {
      if (ok) {
        message = { type: 'return', id: entry.id, value: this.#codec.encode(outcome, { scope }) };
      } else if (signal.aborted && outcome === signal.reason) {
        message = { type: 'cancelled', id: entry.id };
      } else {
        message = { type: 'throw', id: entry.id, error: this.#codec.encodeError(outcome, scope) };
        if (entry.synchronous && message.error.$ === undefined) message.error.synchronous = true;
      }
      // HAR-MUTATE-1: the request as the implementation holds it now, as a value.
      if (entry.method === 'ask' && entry.request !== undefined) {
        message.request = this.#codec.encode(entry.request, { asValue: true, scope });
      }
      // HAR-MUTATE-1: every request of the subject that changed since last said.
      const changed = this.#changedRequests(entry.stateOf);
      if (changed !== undefined) message.requests = changed;
    } catch (error) {
      message = { type: 'throw', id: entry.id, error: this.#codec.encodeError(error, scope) };
    }
    this.#send(message);
  }

  #subject(handle) {
    const subject = this.#subjects.get(handle);
    if (subject === undefined) throw new ProtocolError(`unknown subject ${JSON.stringify(handle)}`);
    return subject;
  }

  /** The request of a call, the same object for the same handle (HAR-REF-2). */
  #request(params) {
    const request = this.#codec.decode(params.request, { handle: params.handle, scope: params.subject });
    const subject = this.#subjects.get(params.subject);
    if (subject !== undefined && typeof params.handle === 'string' && !subject.requests.has(params.handle)) {
      const state = JSON.stringify(this.#codec.encode(request, { asValue: true, scope: params.subject }));
      subject.requests.set(params.handle, { request, state });
    }
    return request;
  }

  /** The requests of subject `handle` whose content changed since they were last reported. */
  #changedRequests(handle) {
    const subject = handle === null ? undefined : this.#subjects.get(handle);
    if (subject === undefined) return undefined;
    let changed;
    for (const [name, known] of subject.requests) {
      const value = this.#codec.encode(known.request, { asValue: true, scope: handle });
      const state = JSON.stringify(value);
      if (state === known.state) continue;
      known.state = state;
      changed ??= {};
      changed[name] = value;
    }
    return changed;
  }

  /** How long this adapter's `close` waits, from the run's bound. */
  #closeWait = CLOSE_WAIT_MS;

  #methods = {
    hello(params) {
      const version = String(params.protocol ?? '');
      if (version.split('.')[0] !== PROTOCOL.split('.')[0]) {
        throw new Error(`this adapter speaks harness protocol ${PROTOCOL}, not ${version}`);
      }
      // `close` must answer within four fifths of the run's bound (HAR-TIME-1).
      if (typeof params.bound === 'number' && params.bound > 0) {
        this.#closeWait = Math.min(CLOSE_WAIT_MS, params.bound * 400);
      }
      const { role, implementation, capabilities, cancellable } = this.#options;
      return {
        protocol: PROTOCOL,
        role,
        implementation,
        ...(role === 'provider' ? { capabilities } : {}),
        cancellable,
      };
    },

    new() {
      const handle = this.#codec.mint();
      const made = this.#options.create();
      this.#subjects.set(handle, { ...made, handle, registrations: new Set(), requests: new Map() });
      return { subject: handle, name: made.name ?? this.#options.implementation.name };
    },

    async close(params) {
      const handle = params.subject;
      const subject = this.#subject(handle);
      const mine = () => [...this.#incoming.values()].filter((entry) => entry.subject === handle);
      for (const entry of mine()) entry.controller.abort(new CallCancelled('the subject closed'));
      for (const registration of subject.registrations) this.#registrations.get(registration)?.dispose();
      const deadline = Date.now() + this.#closeWait;
      while (mine().length > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const leftovers = mine().map(
        (entry) => `the ${entry.method} call ${entry.id} did not settle after the subject closed`,
      );
      leftovers.push(...(subject.leftovers?.() ?? []));
      for (const [signal, count] of this.#codec.heldListeners(handle)) {
        leftovers.push(`${count} listener(s) still on the suite's signal ${signal}`);
      }
      // The suite's provider calls still pending for this subject: cancelled and
      // forgotten; a late reply to one of them is ignored.
      for (const [id, call] of this.#outgoing) {
        if (call.scope !== handle) continue;
        this.#outgoing.delete(id);
        this.#dropped.add(id);
        call.done();
        if (!call.cancelSent) this.#send({ type: 'notify', method: 'cancel', params: { id } });
        call.reject(new CallCancelled('the subject closed'));
      }
      for (const registration of subject.registrations) this.#registrations.delete(registration);
      this.#subjects.delete(handle);
      this.#codec.forget(handle);
      return { leftovers };
    },

    /** HAR-RELEASE-1: forget what the suite will never name again. */
    release(params) {
      const subject = this.#subject(params.subject);
      if (!Array.isArray(params.handles)) throw new ProtocolError("release: 'handles' is not a list");
      const handles = params.handles.filter((handle) => typeof handle === 'string');
      for (const handle of handles) subject.requests.delete(handle);
      this.#codec.release(params.subject, handles);
      return null;
    },

    ask(params, entry) {
      const subject = this.#subject(params.subject);
      const request = this.#request(params);
      entry.request = request;
      const target = subject.provider ?? subject.service;
      let asked;
      try {
        asked = target.ask(request, { signal: entry.controller.signal });
      } catch (error) {
        // A service's ask() that throws instead of returning a promise (SVC-ASYNC-1).
        entry.synchronous = subject.service !== undefined;
        throw error;
      }
      return Promise.resolve(asked);
    },

    perform(params, entry) {
      const subject = this.#subject(params.subject);
      const request = this.#request(params);
      const behaviour = this.#codec.decode(params.behaviour, { scope: params.subject });
      return Promise.resolve(
        subject.driver.perform(request, behaviour, { signal: entry.controller.signal }),
      ).then(() => null);
    },

    is_shown(params) {
      const subject = this.#subject(params.subject);
      const shown = subject.driver.isShown(this.#request(params));
      return shown instanceof Promise ? shown.then(Boolean) : Boolean(shown);
    },

    register(params) {
      const subject = this.#subject(params.subject);
      const handle = params.provider;
      let provider;
      if (this.#codec.knows(handle)) {
        provider = this.#codec.lookup(handle);
      } else {
        provider = new SuiteProvider(handle, (request, signal) =>
          this.#askSuite(handle, request, signal, params.subject),
        );
        this.#codec.remember(provider, handle, params.subject);
      }
      const dispose = subject.service.registerProvider(provider);
      const registration = this.#codec.mint();
      this.#registrations.set(registration, { dispose: () => dispose() });
      subject.registrations.add(registration);
      return { registration };
    },

    dispose(params) {
      const registration = this.#registrations.get(params.registration);
      if (registration === undefined) {
        throw new ProtocolError(`unknown registration ${JSON.stringify(params.registration)}`);
      }
      registration.dispose();
      return null;
    },

    ping() {
      return null;
    },
  };

  // -------------------------------------------------------------------------
  // The child's calls
  // -------------------------------------------------------------------------

  /** `provider.ask` on the suite's provider `handle`, cancelled through `signal`. */
  #askSuite(handle, request, signal, scope) {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const params = { provider: handle };
    const known = this.#codec.handleOf(request);
    if (known !== undefined) {
      params.request = { $: 'ref', handle: known };
      // HAR-MUTATE-2: the request as the implementation holds it now, so that
      // a service that changed it is caught as it would be in-process.
      params.state = this.#codec.encode(request, { asValue: true, scope });
    } else {
      // A request the suite never sent (a copy): named, so it has an identity too.
      const named = this.#codec.mint();
      this.#codec.remember(request, named, scope);
      params.request = this.#codec.encode(request, { asValue: true, scope });
      params.handle = named;
    }
    this.#calls += 1;
    const id = `k${this.#calls}`;
    return new Promise((resolve, reject) => {
      const call = {
        resolve,
        reject,
        signal,
        scope,
        cancelSent: false,
        done: () => signal?.removeEventListener('abort', onAbort),
      };
      const onAbort = () => {
        call.cancelSent = true;
        this.#send({ type: 'notify', method: 'cancel', params: { id } });
      };
      this.#outgoing.set(id, call);
      this.#send({ type: 'call', id, method: 'provider.ask', params });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #onReply(message) {
    const entry = this.#outgoing.get(message.id);
    if (entry === undefined && this.#dropped.delete(message.id)) return;
    if (entry === undefined) {
      throw new ProtocolError(`a reply to unknown call ${JSON.stringify(message.id)}`);
    }
    this.#outgoing.delete(message.id);
    entry.done();
    try {
      if (message.type === 'return') {
        entry.resolve(this.#codec.decode(message.value, { handle: message.handle, scope: entry.scope }));
      } else if (message.type === 'throw') {
        entry.reject(this.#codec.decodeError(message.error, entry.scope));
      } else if (entry.signal?.aborted) {
        entry.reject(entry.signal.reason);
      } else {
        entry.reject(new RemoteError('the suite ended the call by cancellation', 'CancelledError', null));
      }
    } catch (error) {
      entry.reject(error);
      throw error;
    }
  }

  // -------------------------------------------------------------------------
  // Notifications
  // -------------------------------------------------------------------------

  #onNotify({ method, params }) {
    params ??= {};
    switch (method) {
      case 'abort':
        this.#codec.abortSuiteSignal(params.signal, params.reason);
        return;
      case 'cancel':
        this.#incoming.get(params.id)?.controller.abort(new CallCancelled());
        return;
      default:
        throw new ProtocolError(`unknown notification ${JSON.stringify(method)}`);
    }
  }
}

/**
 * Run an adapter on this process's standard input and output until the
 * suite closes the input.
 *
 * @param {Omit<ConstructorParameters<typeof Adapter>[0], 'write'|'log'>} options
 * @returns {Adapter}
 */
export function serveStdio(options) {
  // DSH_HARNESS_TRACE=1 logs every line both ways, with a timestamp, on standard error.
  const trace = process.env.DSH_HARNESS_TRACE ? (arrow, text) => {
    for (const line of text.split('\n')) {
      if (line) process.stderr.write(`${performance.now().toFixed(1)} ${arrow} ${line}\n`);
    }
  } : null;
  const adapter = new Adapter({
    ...options,
    write: (text) => {
      trace?.('<-', text);
      process.stdout.write(text);
    },
    log: (text) => process.stderr.write(text),
  });
  process.stdout.on('error', () => process.exit(0)); // the suite went away
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    trace?.('->', chunk);
    adapter.receive(chunk);
  });
  process.stdin.on('end', () => {
    adapter.flush();
    process.exit(0);
  });
  return adapter;
}
