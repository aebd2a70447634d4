import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ErrorCode } from '../seam/errors.js';
import { ScreenDriver } from '../seam/screen-driver.js';
import { ScreenProvider } from '../seam/screen-provider.js';

function subject() {
  const provider = new ScreenProvider();
  return { provider, driver: new ScreenDriver(provider.screen) };
}

const request = (extra = {}) => ({
  questions: [{ id: 'q', question: 'Pick', options: [{ label: 'a' }, { label: 'b' }] }],
  ...extra,
});

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('it resolved');
}

describe('screen provider', () => {
  it('shows nothing for a request that already aborted', async () => {
    const { provider, driver } = subject();
    const asked = request({ signal: AbortSignal.abort() });
    assert.equal((await rejection(provider.ask(asked))).code, ErrorCode.ASK_ABORTED);
    assert.equal(driver.isShown(asked), false);
  });

  it('takes the card down on abort, dismissal and cancellation', async () => {
    const { provider, driver } = subject();
    const controller = new AbortController();
    const aborted = request({ signal: controller.signal });
    const dismissed = request();
    const cancelled = request();
    const call = new AbortController();
    const asks = [provider.ask(aborted), provider.ask(dismissed), provider.ask(cancelled, { signal: call.signal })];
    await driver.perform(aborted, { kind: 'nothing' });
    assert.equal(driver.isShown(aborted), true);
    controller.abort();
    await driver.perform(dismissed, { kind: 'dismiss' });
    call.abort('gone');
    assert.equal((await rejection(asks[0])).code, ErrorCode.ASK_ABORTED);
    const dismissal = await rejection(asks[1]);
    assert.equal(dismissal.code, ErrorCode.ASK_CANCELLED);
    assert.equal(dismissal.message, 'the user cancelled ask_user_question');
    assert.equal(await rejection(asks[2]), 'gone');
    assert.deepEqual(provider.screen.cards, []);
    assert.equal(provider.pending, 0);
  });

  it('answers single-select text over the choice, and never mutates the request', async () => {
    const { provider, driver } = subject();
    const asked = request();
    const before = structuredClone(asked);
    const answer = provider.ask(asked);
    await driver.perform(asked, { kind: 'actions', actions: [{ do: 'type', text: '\t x\u202e ', labels: ['b'] }] });
    assert.deepEqual(await answer, { answers: [{ id: 'q', selected: [], custom: '\t x\u202e ' }] });
    assert.deepEqual(asked, before);
  });

  it('answers a revision that skips: nothing when left skipped, what it holds once taken back', async () => {
    const { provider, driver } = subject();
    const steps = (...list) => ({ kind: 'actions', actions: [{ do: 'revise', steps: list }] });
    const skipped = request();
    const left = provider.ask(skipped);
    await driver.perform(skipped, steps({ step: 'pick', label: 'a' }, { step: 'type', text: 'x' }, { step: 'skip' }));
    assert.deepEqual(await left, { answers: [{ id: 'q', selected: [] }] });
    const back = request();
    const taken = provider.ask(back);
    await driver.perform(
      back,
      steps({ step: 'pick', label: 'a' }, { step: 'skip' }, { step: 'unskip' }, { step: 'pick', label: 'b' }),
    );
    assert.deepEqual(await taken, { answers: [{ id: 'q', selected: ['b'] }] });
  });

  it("stops a driver's wait when its signal aborts", async () => {
    const { provider, driver } = subject();
    const controller = new AbortController();
    const waiting = driver.perform(request(), { kind: 'nothing' }, { signal: controller.signal });
    controller.abort('stop');
    assert.equal(await rejection(waiting), 'stop');
    assert.equal(provider.screen.watcherCount, 0);
  });
});
