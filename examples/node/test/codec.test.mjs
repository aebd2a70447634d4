import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Codec, Opaque, RemoteError } from '../harness/codec.js';
import { ErrorCode, UserInteractionError } from '../seam/errors.js';

function codec() {
  const sent = [];
  const made = new Codec({
    aborted: (handle, reason) => sent.push(['abort', handle, reason]),
    listeners: (handle, count) => sent.push(['listeners', handle, count]),
  });
  return { codec: made, sent };
}

/** Through JSON text and back, as the pipe carries it. */
const wire = (value) => JSON.parse(JSON.stringify(value));

describe('codec: tagged values', () => {
  it('writes and reads every number tag', () => {
    const { codec: c } = codec();
    for (const [value, text] of [[NaN, 'NaN'], [Infinity, 'Infinity'], [-Infinity, '-Infinity'], [-0, '-0']]) {
      const encoded = wire(c.encode(value));
      assert.deepEqual(encoded, { $: 'number', value: text });
      assert.ok(Object.is(c.decode(encoded), value));
    }
    assert.equal(c.encode(0), 0);
    assert.equal(c.encode(1.5), 1.5);
  });

  it('writes integers outside the safe range with the bigint tag, and reads it as a BigInt', () => {
    const { codec: c } = codec();
    const big = 2n ** 70n;
    assert.deepEqual(c.encode(big), { $: 'bigint', value: big.toString() });
    assert.deepEqual(c.encode(-big), { $: 'bigint', value: `-${big}` });
    assert.equal(c.decode({ $: 'bigint', value: '-123456789012345678901234567890' }), -123456789012345678901234567890n);
    assert.equal(c.encode(5n), 5, 'a BigInt in range is a plain integer');
  });

  it('writes undefined as its tag, in objects and arrays too', () => {
    const { codec: c } = codec();
    assert.deepEqual(c.encode(undefined), { $: 'undefined' });
    assert.deepEqual(c.encode({ a: undefined, b: [undefined] }), {
      a: { $: 'undefined' },
      b: [{ $: 'undefined' }],
    });
    const back = c.decode({ a: { $: 'undefined' } });
    assert.ok(Object.hasOwn(back, 'a'));
    assert.equal(back.a, undefined);
  });

  it('escapes a plain object with a "$" key, at any depth, both ways', () => {
    const { codec: c } = codec();
    const value = { x: [{ $: 'ref', handle: 'not a ref' }] };
    const encoded = c.encode(value);
    assert.deepEqual(encoded, { x: [{ $: 'object', value: { $: 'ref', handle: 'not a ref' } }] });
    assert.deepEqual(c.decode(wire(encoded)), value);
    assert.deepEqual(c.decode({ $: 'object', value: { $: 1, n: { $: 'number', value: 'NaN' } } }), { $: 1, n: NaN });
  });

  it('keeps a "__proto__" key as data', () => {
    const { codec: c } = codec();
    const decoded = c.decode(JSON.parse('{"__proto__": {"polluted": true}}'));
    assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
    assert.deepEqual(Object.keys(decoded), ['__proto__']);
    assert.equal(JSON.stringify(c.encode(decoded)), '{"__proto__":{"polluted":true}}');
  });

  it('round-trips lone surrogates as \\udXXX', () => {
    const { codec: c } = codec();
    const text = 'a\ud800b\udfffc\u{1f600}';
    const line = JSON.stringify(c.encode({ text }));
    assert.equal(line, '{"text":"a\\ud800b\\udfffc\u{1f600}"}');
    assert.equal(c.decode(JSON.parse(line)).text, text);
  });
});

describe('codec: identity', () => {
  it('gives the very object back for a ref, and writes a ref for it at any depth', () => {
    const { codec: c } = codec();
    const request = c.decode({ questions: [] }, { handle: 's1', scope: 'c1' });
    assert.equal(c.decode({ $: 'ref', handle: 's1' }), request);
    assert.deepEqual(c.encode(request, { scope: 'c1' }), { $: 'ref', handle: 's1' });
    assert.deepEqual(c.encode({ wrapped: [request] }), { wrapped: [{ $: 'ref', handle: 's1' }] });
    assert.deepEqual(c.encode({ questions: [] }), { questions: [] }, 'an equal object is a value');
  });

  it('writes a remembered object as a value at the top when asked (HAR-MUTATE-1)', () => {
    const { codec: c } = codec();
    const agent = c.decode({ $: 'opaque', handle: 's3', type: 'Agent' });
    const request = c.decode({ questions: [], agent: { $: 'ref', handle: 's3' } }, { handle: 's2' });
    assert.deepEqual(c.encode(request, { asValue: true }), { questions: [], agent: { $: 'ref', handle: 's3' } });
  });

  it('returns the known object for a handle it already knows (perform before ask)', () => {
    const { codec: c } = codec();
    const first = c.decode({ questions: [{ id: 'q' }] }, { handle: 's4', scope: 'c1' });
    const again = c.decode({ questions: [{ id: 'q' }] }, { handle: 's4', scope: 'c1' });
    assert.equal(first, again);
  });

  it('keeps opaque values by identity', () => {
    const { codec: c } = codec();
    const one = c.decode({ $: 'opaque', handle: 's5', type: 'object' });
    assert.ok(one instanceof Opaque);
    assert.equal(c.decode({ $: 'opaque', handle: 's5', type: 'object' }), one);
    assert.deepEqual(c.encode([one]), [{ $: 'ref', handle: 's5' }]);
  });

  it('writes a top-level primitive that came with a handle as a ref, only at the top', () => {
    const { codec: c } = codec();
    c.decode('answers', { handle: 's6', scope: 'c1' });
    assert.deepEqual(c.encode('answers', { scope: 'c1' }), { $: 'ref', handle: 's6' });
    assert.deepEqual(c.encode(['answers'], { scope: 'c1' }), ['answers']);
    assert.equal(c.encode('answers', { scope: 'c2' }), 'answers');
  });

  it('writes values with no JSON form as opaque child handles, never beginning with "s"', () => {
    const { codec: c } = codec();
    const fn = () => {};
    const tag = c.encode(fn);
    assert.equal(tag.$, 'opaque');
    assert.match(tag.handle, /^c\d+$/);
    assert.deepEqual(c.encode(fn), { $: 'ref', handle: tag.handle });
    assert.equal(c.encode(new Map()).type, 'Map');
    const cyclic = {};
    cyclic.self = cyclic;
    assert.equal(c.encode(cyclic).self.$, 'opaque');
  });

  it('forgets a scope when its subject closes', () => {
    const { codec: c } = codec();
    c.decode({}, { handle: 's7', scope: 'c9' });
    c.forget('c9');
    assert.throws(() => c.decode({ $: 'ref', handle: 's7' }), /unknown handle/);
  });

  it('forgets released handles only, and sends their objects in full afterwards (HAR-RELEASE-1)', () => {
    const { codec: c, sent } = codec();
    const request = c.decode({ questions: [] }, { handle: 's8', scope: 'c1' });
    const kept = c.decode({ questions: [] }, { handle: 's9', scope: 'c1' });
    const signal = c.decode({ $: 'signal', handle: 's10', aborted: false }, { scope: 'c1' });
    signal.addEventListener('abort', () => {});
    c.release('c1', ['s8', 's10', 'no-such-handle']);
    assert.throws(() => c.decode({ $: 'ref', handle: 's8' }), /unknown handle/);
    assert.throws(() => c.decode({ $: 'ref', handle: 's10' }), /unknown handle/);
    assert.deepEqual(c.encode(request, { scope: 'c1' }), { questions: [] }, 'in full, not a ref');
    assert.equal(c.decode({ $: 'ref', handle: 's9' }), kept);
    assert.deepEqual(c.heldListeners('c1'), []);
    const before = sent.length;
    c.abortSuiteSignal('s10', 'late');
    assert.equal(sent.length, before, 'a released signal is no longer watched');
  });
});

describe('codec: signals', () => {
  it('reads a suite signal as a real AbortSignal and aborts it on the notification', () => {
    const { codec: c, sent } = codec();
    const signal = c.decode({ $: 'signal', handle: 's8', aborted: false }, { scope: 'c1' });
    assert.ok(signal instanceof AbortSignal);
    assert.equal(signal.aborted, false);
    const seen = [];
    signal.addEventListener('abort', () => seen.push(signal.reason));
    c.abortSuiteSignal('s8', { $: 'number', value: 'NaN' });
    assert.equal(signal.aborted, true);
    assert.ok(Number.isNaN(seen[0]));
    assert.deepEqual(sent, [['listeners', 's8', 1], ['listeners', 's8', 0]]);
    assert.deepEqual(c.encode({ signal }), { signal: { $: 'ref', handle: 's8' } });
  });

  it('reads an already-aborted suite signal with its reason', () => {
    const { codec: c } = codec();
    const signal = c.decode({ $: 'signal', handle: 's9', aborted: true, reason: 'late' });
    assert.equal(signal.aborted, true);
    assert.equal(signal.reason, 'late');
  });

  it("sends the child's own signals as tags with child handles, and their aborts", () => {
    const { codec: c, sent } = codec();
    const controller = new AbortController();
    const tag = c.encode(controller.signal);
    assert.equal(tag.$, 'signal');
    assert.match(tag.handle, /^c/);
    assert.equal(tag.aborted, false);
    controller.abort('stop');
    assert.deepEqual(sent, [['abort', tag.handle, 'stop']]);
    const done = AbortSignal.abort('already');
    assert.deepEqual(c.encode(done), { $: 'signal', handle: c.handleOf(done), aborted: true, reason: 'already' });
  });
});

describe('codec: errors', () => {
  it('writes a seam error with its code, and any other without inventing one', () => {
    const { codec: c } = codec();
    assert.deepEqual(c.encodeError(UserInteractionError.of(ErrorCode.ASK_CANCELLED)), {
      is_seam_error: true,
      code: 'ASK_CANCELLED',
      message: 'the user cancelled ask_user_question',
      name: 'UserInteractionError',
    });
    assert.deepEqual(c.encodeError(new TypeError('nope')), {
      is_seam_error: false,
      code: null,
      message: 'nope',
      name: 'TypeError',
    });
    const coded = Object.assign(new Error('io'), { code: 'EPIPE' });
    assert.equal(c.encodeError(coded).code, 'EPIPE');
    assert.equal(c.encodeError('a string').message, 'a string');
  });

  it('keeps the answer on an error, as a ref when it is the very answer', () => {
    const { codec: c } = codec();
    const answer = c.decode({ answers: 1 }, { handle: 's10' });
    const error = new UserInteractionError('bad', ErrorCode.BAD_ANSWER, { answer });
    assert.deepEqual(c.encodeError(error).answer, { $: 'ref', handle: 's10' });
  });

  it('reads errors back: seam errors, remote errors, and refs to the very error', () => {
    const { codec: c } = codec();
    const seam = c.decodeError({ is_seam_error: true, code: 'ASK_ABORTED', message: 'm', handle: 's11' });
    assert.ok(seam instanceof UserInteractionError);
    assert.equal(seam.code, 'ASK_ABORTED');
    assert.equal(c.decodeError({ $: 'ref', handle: 's11' }), seam);
    assert.deepEqual(c.encodeError(seam), { $: 'ref', handle: 's11' });
    const other = c.decodeError({ is_seam_error: false, code: null, message: 'ui crashed', name: 'ValueError' });
    assert.ok(other instanceof RemoteError);
    assert.equal(other.name, 'ValueError');
    assert.equal(other.message, 'ui crashed');
  });
});
