/**
 * The driver of `ScreenProvider`: code plays the human in front of its screen.
 *
 * A behaviour is what the suite's simulated human does (spec/harness.md):
 * `{kind: 'actions', actions}` with one action per question (`pick`, `type`,
 * `skip`, `revise`), `{kind: 'dismiss'}` or `{kind: 'nothing'}`.
 *
 * @module
 */

/**
 * Plays the human in front of one `Screen`.
 */
export class ScreenDriver {
  /** @param {import('./screen-provider.js').Screen} screen */
  constructor(screen) {
    this.screen = screen;
  }

  /**
   * Wait until `request` is on screen, then do `behaviour` on its card.
   * Rejects with `options.signal.reason` if the signal aborts first.
   *
   * @param {object} request the very request the provider was asked
   * @param {object} behaviour
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<void>}
   */
  async perform(request, behaviour, options) {
    const card = await this.#shown(request, options?.signal);
    switch (behaviour?.kind) {
      case 'nothing':
        return;
      case 'dismiss':
        card.dismiss();
        return;
      case 'actions':
        break;
      default:
        throw new TypeError(`unknown behaviour ${JSON.stringify(behaviour?.kind)}`);
    }
    const { actions } = behaviour;
    if (!Array.isArray(actions) || actions.length !== card.fields.length) {
      throw new RangeError('a behaviour needs one action per question');
    }
    actions.forEach((action, index) => {
      switch (action.do) {
        case 'skip':
          card.skip(index);
          break;
        case 'type':
          for (const label of action.labels ?? []) card.pick(index, label);
          card.type(index, action.text);
          break;
        case 'pick':
          for (const label of action.labels) card.pick(index, label);
          break;
        case 'revise':
          // The human changes their mind: each step on the card, in order.
          for (const step of action.steps) {
            if (step.step === 'pick') card.pick(index, step.label);
            else if (step.step === 'unpick') card.unpick(index, step.label);
            else if (step.step === 'type') card.type(index, step.text);
            else if (step.step === 'clear') card.clear(index);
            else if (step.step === 'skip') card.skip(index);
            else if (step.step === 'unskip') card.unskip(index);
            else throw new TypeError(`unknown step ${JSON.stringify(step.step)}`);
          }
          break;
        default:
          throw new TypeError(`unknown action ${JSON.stringify(action.do)}`);
      }
    });
    card.submit();
  }

  /**
   * Whether any question of `request` is on screen now.
   *
   * @param {object} request
   * @returns {boolean}
   */
  isShown(request) {
    return this.screen.cards.some((card) => card.request === request);
  }

  /** The card of `request` once it is up. */
  #shown(request, signal) {
    const find = () => this.screen.cards.find((card) => card.request === request);
    const now = find();
    if (now !== undefined) return Promise.resolve(now);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const stop = () => {
        unwatch();
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        stop();
        reject(signal.reason);
      };
      const unwatch = this.screen.watch(() => {
        const card = find();
        if (card !== undefined) {
          stop();
          resolve(card);
        }
      });
      signal?.addEventListener('abort', onAbort);
    });
  }
}
