/**
 * Listener counting on the suite's signals (spec/harness.md, HAR-SIGNAL-2).
 *
 * The adapter decodes a suite signal tag into a real `AbortSignal` of an
 * `AbortController` it holds, and replaces that signal's
 * `addEventListener`, `removeEventListener` and `onabort` with counting
 * versions, so it knows at every moment how many listeners the
 * implementation holds on it, and can tell the suite at once.
 *
 * The count follows the DOM's rules: a listener is one (type, callback,
 * capture) triple, adding it twice adds nothing, `once` listeners are gone
 * once they ran, a listener whose `signal` option aborts is removed, and an
 * `abort` listener is gone once the abort has fired (and one added after the
 * abort is never stored: it could never run).
 *
 * @module
 */

const nativeAdd = EventTarget.prototype.addEventListener;
const nativeRemove = EventTarget.prototype.removeEventListener;

/** @param {unknown} options */
function captureOf(options) {
  return typeof options === 'boolean' ? options : Boolean(options?.capture);
}

/**
 * Make `signal` count its listeners. `onChange(count)` is called
 * synchronously every time the count changes.
 *
 * @param {AbortSignal} signal
 * @param {(count: number) => void} onChange
 * @returns {{readonly count: number, afterAbort: () => void, clear: () => void}}
 *   `afterAbort()` must be called once the signal's abort has been
 *   dispatched; `clear()` removes every listener (when the subject closes).
 */
export function countListeners(signal, onChange) {
  /** `${type}\u0000${capture}` -> callback -> the wrapper registered natively. */
  const entries = new Map();
  let count = 0;

  const changed = (delta) => {
    count += delta;
    onChange(count);
  };

  function remove(type, callback, options) {
    const key = `${String(type)}\u0000${captureOf(options)}`;
    const byCallback = entries.get(key);
    const wrapper = byCallback?.get(callback);
    if (wrapper === undefined) return;
    byCallback.delete(callback);
    if (byCallback.size === 0) entries.delete(key);
    nativeRemove.call(signal, type, wrapper, { capture: captureOf(options) });
    changed(-1);
  }

  function add(type, callback, options) {
    if (callback === null || callback === undefined) return;
    type = String(type);
    const capture = captureOf(options);
    const once = typeof options === 'object' && options !== null && Boolean(options.once);
    const stopper = typeof options === 'object' && options !== null ? options.signal : undefined;
    if (type === 'abort' && signal.aborted) return; // it could never run
    if (stopper?.aborted) return;
    const key = `${type}\u0000${capture}`;
    let byCallback = entries.get(key);
    if (byCallback?.has(callback)) return;
    if (byCallback === undefined) {
      byCallback = new Map();
      entries.set(key, byCallback);
    }
    const wrapper = function listener(event) {
      if (once) remove(type, callback, { capture });
      if (typeof callback === 'function') return callback.call(this, event);
      return callback.handleEvent(event);
    };
    byCallback.set(callback, wrapper);
    nativeAdd.call(signal, type, wrapper, {
      capture,
      passive: typeof options === 'object' && options !== null ? options.passive : undefined,
    });
    changed(+1);
    stopper?.addEventListener('abort', () => remove(type, callback, { capture }), { once: true });
  }

  let handler = null;
  const trampoline = function onabort(event) {
    return handler?.call(this, event);
  };

  Object.defineProperties(signal, {
    addEventListener: { value: add, configurable: true, writable: true },
    removeEventListener: { value: remove, configurable: true, writable: true },
    onabort: {
      configurable: true,
      get: () => handler,
      set(value) {
        const callable = typeof value === 'function' || (typeof value === 'object' && value !== null);
        if (callable) {
          handler = value;
          add('abort', trampoline);
        } else {
          handler = null;
          remove('abort', trampoline);
        }
      },
    },
  });

  const drop = (only) => {
    for (const [key, byCallback] of [...entries]) {
      const [type, capture] = key.split('\u0000');
      if (only !== undefined && type !== only) continue;
      for (const callback of [...byCallback.keys()]) remove(type, callback, { capture: capture === 'true' });
    }
  };

  return {
    get count() {
      return count;
    },
    afterAbort: () => drop('abort'),
    clear: () => drop(undefined),
  };
}
