import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { countListeners } from '../harness/signals.js';

function counted() {
  const controller = new AbortController();
  const counts = [];
  const counter = countListeners(controller.signal, (count) => counts.push(count));
  const abort = (reason) => {
    controller.abort(reason);
    counter.afterAbort();
  };
  return { signal: controller.signal, counts, counter, abort };
}

describe('listener counting', () => {
  it('counts adds and removes, and reports every change', () => {
    const { signal, counts, counter } = counted();
    const a = () => {};
    const b = () => {};
    signal.addEventListener('abort', a);
    signal.addEventListener('abort', b);
    signal.removeEventListener('abort', a);
    signal.removeEventListener('abort', b);
    assert.deepEqual(counts, [1, 2, 1, 0]);
    assert.equal(counter.count, 0);
  });

  it('ignores a duplicate, but counts the same callback with another capture flag', () => {
    const { signal, counter } = counted();
    const a = () => {};
    signal.addEventListener('abort', a);
    signal.addEventListener('abort', a);
    assert.equal(counter.count, 1);
    signal.addEventListener('abort', a, { capture: true });
    assert.equal(counter.count, 2);
    signal.removeEventListener('abort', a, true);
    assert.equal(counter.count, 1);
    signal.removeEventListener('abort', () => {});
    assert.equal(counter.count, 1, 'removing an unknown listener does nothing');
  });

  it('still calls the listeners, in order, with the signal as this', () => {
    const { signal, abort } = counted();
    const seen = [];
    signal.addEventListener('abort', function first() {
      seen.push(['first', this === signal]);
    });
    signal.addEventListener('abort', { handleEvent: (event) => seen.push(['object', event.type]) });
    abort('why');
    assert.deepEqual(seen, [['first', true], ['object', 'abort']]);
  });

  it('drops a once listener after it ran, and every abort listener once the abort fired', () => {
    const { signal, counts, counter, abort } = counted();
    signal.addEventListener('abort', () => {}, { once: true });
    signal.addEventListener('abort', () => {});
    abort();
    assert.equal(counter.count, 0);
    assert.deepEqual(counts, [1, 2, 1, 0]);
    signal.addEventListener('abort', () => {});
    assert.equal(counter.count, 0, 'a listener added after the abort is never stored');
  });

  it('counts a listener removed from inside the abort only once', () => {
    const { signal, counts, abort } = counted();
    const listener = () => signal.removeEventListener('abort', listener);
    signal.addEventListener('abort', listener);
    abort();
    assert.deepEqual(counts, [1, 0]);
  });

  it("removes a listener when its own signal option aborts", () => {
    const { signal, counter } = counted();
    const stopper = new AbortController();
    signal.addEventListener('abort', () => {}, { signal: stopper.signal });
    assert.equal(counter.count, 1);
    stopper.abort();
    assert.equal(counter.count, 0);
  });

  it('counts onabort as one listener', () => {
    const { signal, counter, abort } = counted();
    const seen = [];
    signal.onabort = () => seen.push(1);
    signal.onabort = () => seen.push(2);
    assert.equal(counter.count, 1);
    signal.onabort = null;
    assert.equal(counter.count, 0);
    signal.onabort = () => seen.push(3);
    abort();
    assert.deepEqual(seen, [3]);
    assert.equal(counter.count, 0);
  });

  it('clear() removes everything', () => {
    const { signal, counter } = counted();
    signal.addEventListener('abort', () => {});
    signal.addEventListener('other', () => {});
    counter.clear();
    assert.equal(counter.count, 0);
  });
});
