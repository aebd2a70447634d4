import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';

import { Adapter } from '../harness/adapter.js';
import { SCREEN_CAPABILITIES, screenSubject, serviceSubject } from '../harness/roles.js';

/** An adapter on a fake stdin/stdout: `send` lines, read `out` messages. */
function fake(role) {
  const out = [];
  const adapter = new Adapter({
    role,
    implementation: { name: 'test', version: '0' },
    capabilities: role === 'provider' ? SCREEN_CAPABILITIES : undefined,
    create: role === 'provider' ? () => screenSubject() : () => serviceSubject(),
    write: (text) => {
      for (const line of text.split('\n')) if (line) out.push(JSON.parse(line));
    },
  });
  const send = (...messages) => adapter.receive(messages.map((m) => `${JSON.stringify(m)}\n`).join(''));
  /** Wait until a message matching `predicate` was written; returns it. */
  const until = async (predicate) => {
    for (let i = 0; i < 200; i += 1) {
      const found = out.find(predicate);
      if (found) return found;
      await tick();
    }
    throw new Error(`no such message; got ${JSON.stringify(out)}`);
  };
  const call = (id, method, params = {}) => ({ type: 'call', id, method, params });
  return { adapter, out, send, until, call };
}

const REQUEST = {
  questions: [
    { id: 'q', question: 'Which?', multiSelect: true, options: [{ label: 'a' }, { label: 'b' }, { label: 'c' }] },
    { id: 'n', question: 'Notes?' },
  ],
};

describe('adapter: provider role', () => {
  it('says hello, builds a subject, answers an ask through perform, and closes clean', async () => {
    const { send, until, call, out } = fake('provider');
    send(call('s1', 'hello', { protocol: '1.0', suite: 'test', spec: '1.2.0' }), call('s2', 'new'));
    const hello = await until((m) => m.id === 's1');
    assert.equal(hello.value.role, 'provider');
    assert.equal(hello.value.cancellable, true);
    const { value } = await until((m) => m.id === 's2');
    assert.match(value.subject, /^c/);
    const subject = value.subject;
    const signal = { $: 'signal', handle: 's10', aborted: false };
    // The perform comes first: it still names the same request (HAR-REF-2).
    send(
      call('s3', 'perform', {
        subject,
        handle: 's9',
        request: { ...REQUEST, signal },
        behaviour: {
          kind: 'actions',
          actions: [{ do: 'type', text: ' \ud800 x ', labels: ['c', 'a'] }, { do: 'skip' }],
        },
      }),
      call('s4', 'ask', { subject, handle: 's9', request: { ...REQUEST, signal } }),
    );
    const answered = await until((m) => m.id === 's4');
    assert.deepEqual(answered.value, {
      answers: [
        { id: 'q', selected: ['a', 'c'], custom: ' \ud800 x ' },
        { id: 'n', selected: [] },
      ],
    });
    // HAR-MUTATE-1: the request as a value at the top, the signal as a ref.
    assert.deepEqual(answered.request, { ...REQUEST, signal: { $: 'ref', handle: 's10' } });
    assert.equal((await until((m) => m.id === 's3')).value, null);
    // The listener on the suite's signal came and went, both before the reply.
    const counts = out.filter((m) => m.method === 'listeners').map((m) => m.params.count);
    assert.deepEqual(counts, [1, 0]);
    const index = (predicate) => out.findIndex(predicate);
    assert.ok(index((m) => m.method === 'listeners' && m.params.count === 0) < index((m) => m.id === 's4'));
    send(call('s5', 'close', { subject }));
    assert.deepEqual((await until((m) => m.id === 's5')).value, { leftovers: [] });
  });

  it('maps abort to ASK_ABORTED and cancel to cancelled, and answers ping in the same turn', async () => {
    const { send, until, call, out } = fake('provider');
    send(call('s1', 'new'));
    const subject = (await until((m) => m.id === 's1')).value.subject;
    send(
      call('s2', 'ask', { subject, handle: 's7', request: { ...REQUEST, signal: { $: 'signal', handle: 's8', aborted: false } } }),
      call('s3', 'ask', { subject, handle: 's9', request: REQUEST }),
      call('s4', 'is_shown', { subject, handle: 's9', request: REQUEST }),
    );
    assert.equal((await until((m) => m.id === 's4')).value, true);
    send({ type: 'notify', method: 'abort', params: { signal: 's8', reason: 'stop' } }, { type: 'notify', method: 'cancel', params: { id: 's3' } });
    const aborted = await until((m) => m.id === 's2');
    assert.equal(aborted.type, 'throw');
    assert.equal(aborted.error.code, 'ASK_ABORTED');
    assert.equal(aborted.error.is_seam_error, true);
    assert.equal((await until((m) => m.id === 's3')).type, 'cancelled');
    send(call('s5', 'is_shown', { subject, handle: 's9', request: REQUEST }), call('s6', 'ping'));
    const before = out.length;
    send(call('s7', 'ping'));
    assert.deepEqual(out.slice(before), [], 'written at the end of the turn, not before');
    await tick();
    assert.equal((await until((m) => m.id === 's5')).value, false);
    assert.equal((await until((m) => m.id === 's7')).value, null);
  });

  it('refuses another major protocol version', async () => {
    const { send, until, call } = fake('provider');
    send(call('s1', 'hello', { protocol: '2.0', suite: 'x', spec: 'y' }));
    const reply = await until((m) => m.id === 's1');
    assert.equal(reply.type, 'throw');
    assert.equal(reply.error.is_seam_error, false);
    assert.equal(reply.error.code, null);
  });
});

describe('adapter: service role', () => {
  it('calls the suite provider with a ref to the very request and returns a ref to the very answer', async () => {
    const { send, until, call } = fake('service');
    send(call('s1', 'new'));
    const subject = (await until((m) => m.id === 's1')).value.subject;
    send(call('s2', 'register', { subject, provider: 's3' }));
    const registration = (await until((m) => m.id === 's2')).value.registration;
    send(call('s2b', 'register', { subject, provider: 's3' }));
    assert.equal((await until((m) => m.id === 's2b')).error.code, 'DUPLICATE_PROVIDER');
    const request = { questions: [{ id: 'q', question: 'Go?', options: [{ label: 'Yes' }] }] };
    send(call('s4', 'ask', { subject, handle: 's5', request }));
    const asked = await until((m) => m.method === 'provider.ask');
    // The very request, by ref, and its state as the service holds it (HAR-MUTATE-2).
    assert.deepEqual(asked.params, { provider: 's3', request: { $: 'ref', handle: 's5' }, state: request });
    send({ type: 'return', id: asked.id, value: { answers: [{ id: 'q', selected: ['Yes'] }] }, handle: 's6' });
    const reply = await until((m) => m.id === 's4');
    assert.deepEqual(reply.value, { $: 'ref', handle: 's6' });
    assert.deepEqual(reply.request, request);
    send(call('s7', 'dispose', { subject, registration }));
    assert.equal((await until((m) => m.id === 's7')).value, null);
  });

  it('sends cancel for its provider call when the suite cancels the ask, then replies cancelled', async () => {
    const { send, until, call, out } = fake('service');
    send(call('s1', 'new'));
    const subject = (await until((m) => m.id === 's1')).value.subject;
    send(call('s2', 'register', { subject, provider: 's3' }));
    await until((m) => m.id === 's2');
    const request = { questions: [{ id: 'q', question: 'Go?' }], signal: { $: 'signal', handle: 's9', aborted: false } };
    send(call('s4', 'ask', { subject, handle: 's5', request }));
    const asked = await until((m) => m.method === 'provider.ask');
    // The caller's cancellation and an abort in one turn: the cancellation wins.
    send({ type: 'notify', method: 'abort', params: { signal: 's9' } }, { type: 'notify', method: 'cancel', params: { id: 's4' } });
    await until((m) => m.method === 'cancel' && m.params.id === asked.id);
    send({ type: 'cancelled', id: asked.id });
    assert.equal((await until((m) => m.id === 's4')).type, 'cancelled');
    assert.equal(out.filter((m) => m.method === 'listeners').at(-1).params.count, 0);
  });

  it('keeps a late answer on the error after a disposal, as a ref', async () => {
    const { send, until, call } = fake('service');
    send(call('s1', 'new'));
    const subject = (await until((m) => m.id === 's1')).value.subject;
    send(call('s2', 'register', { subject, provider: 's3' }));
    const registration = (await until((m) => m.id === 's2')).value.registration;
    send(call('s4', 'ask', { subject, handle: 's5', request: { questions: [{ id: 'q', question: 'Go?' }] } }));
    const asked = await until((m) => m.method === 'provider.ask');
    send(call('s6', 'dispose', { registration }));
    await until((m) => m.method === 'cancel');
    send({ type: 'return', id: asked.id, value: { answers: [{ id: 'q', selected: [] }] }, handle: 's7' });
    const reply = await until((m) => m.id === 's4');
    assert.equal(reply.error.code, 'PROVIDER_DISPOSED');
    assert.deepEqual(reply.error.answer, { $: 'ref', handle: 's7' });
  });

  it('propagates the very error of the suite provider as a ref', async () => {
    const { send, until, call } = fake('service');
    send(call('s1', 'new'));
    const subject = (await until((m) => m.id === 's1')).value.subject;
    send(call('s2', 'register', { subject, provider: 's3' }));
    await until((m) => m.id === 's2');
    send(call('s4', 'ask', { subject, handle: 's5', request: { questions: [{ id: 'q', question: 'Go?' }] } }));
    const asked = await until((m) => m.method === 'provider.ask');
    send({ type: 'throw', id: asked.id, error: { is_seam_error: false, code: null, message: 'ui crashed', name: 'ValueError', handle: 's8' } });
    assert.deepEqual((await until((m) => m.id === 's4')).error, { $: 'ref', handle: 's8' });
  });
});

describe('adapter: a service whose ask() throws synchronously', () => {
  it('marks the error synchronous (SVC-ASYNC-1)', async () => {
    const out = [];
    const adapter = new Adapter({
      role: 'service',
      implementation: { name: 'test', version: '0' },
      create: () => ({
        service: {
          registerProvider() {},
          ask() {
            throw new TypeError('thrown at once');
          },
        },
      }),
      write: (text) => out.push(...text.split('\n').filter(Boolean).map((line) => JSON.parse(line))),
    });
    adapter.receive(`${JSON.stringify({ type: 'call', id: 's1', method: 'new', params: {} })}\n`);
    await tick();
    const subject = out[0].value.subject;
    adapter.receive(`${JSON.stringify({ type: 'call', id: 's2', method: 'ask', params: { subject, handle: 's3', request: { questions: [] } } })}\n`);
    await tick();
    const reply = out.find((m) => m.id === 's2');
    assert.equal(reply.error.synchronous, true);
    assert.equal(reply.error.name, 'TypeError');
  });
});
