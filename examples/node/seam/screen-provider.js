/**
 * A provider whose UI is a simulated screen: each ask becomes a card on the
 * screen, and whoever plays the human (see `screen-driver.js`) picks, types,
 * skips, submits or dismisses on it.
 *
 * Invariants:
 *
 * - A card is on the screen exactly while its `ask()` is pending; once the
 *   call settles, in any way, the card is taken down and every listener the
 *   call added is removed (PRV-ABORT-2, PRV-CANCEL-1, PRV-LEAK-1).
 * - A request whose signal has already aborted shows nothing and rejects with
 *   ASK_ABORTED (PRV-ABORT-1).
 * - The card keeps its own state; the request is only read, never written
 *   (PRV-MUTATE-1). Ids, labels and typed text are kept exactly as given
 *   (PRV-TEXT-1).
 * - Multi-select labels are answered in option order, whatever order the
 *   human picked them in (ANS-MULTI-2).
 * - Several cards may be up at once; each is answered with its own state
 *   (PRV-CONC-1).
 *
 * @module
 */

import { checkRequest, isBlank } from './checks.js';
import { ErrorCode, UserInteractionError } from './errors.js';

/**
 * One question as the screen shows it, with what the human has done to it.
 */
class Field {
  /** @param {object} question a question of a well-formed request */
  constructor(question) {
    this.id = question.id;
    this.text = question.question;
    this.header = typeof question.header === 'string' ? question.header : null;
    this.labels = (question.options ?? []).map((option) => option.label);
    this.multi = question.multiSelect === true;
    /** @type {Set<string>} */
    this.picked = new Set();
    /** @type {string|null} */
    this.typed = null;
  }
}

/**
 * One ask on screen. The human acts on it through `pick`, `unpick`, `type`,
 * `clear`, `skip`, `unskip`, `submit` and `dismiss`; the provider settles its
 * call from them.
 */
export class Card {
  /**
   * @param {object} request
   * @param {{submit: (card: Card) => void, dismiss: (card: Card) => void}} hooks
   */
  constructor(request, hooks) {
    /** The very request the provider was given. */
    this.request = request;
    this.fields = request.questions.map((question) => new Field(question));
    this.agent = describeAgent(request.agent);
    this.#hooks = hooks;
  }

  #hooks;

  #field(index) {
    const field = this.fields[index];
    if (field === undefined) throw new RangeError(`the card has no question ${index}`);
    return field;
  }

  /**
   * Pick the option `label` of question `index`: on a single-select it
   * replaces the choice, on a multi-select it is added.
   */
  pick(index, label) {
    const field = this.#field(index);
    if (!field.labels.includes(label)) {
      throw new RangeError(`question ${index} offers no option ${JSON.stringify(label)}`);
    }
    if (!field.multi) field.picked.clear();
    field.picked.add(label);
  }

  /** Unpick the option `label` of question `index` (a multi-select's checkbox). */
  unpick(index, label) {
    this.#field(index).picked.delete(label);
  }

  /** Type `text` into question `index`'s text box, over what it held, exactly as given. */
  type(index, text) {
    this.#field(index).typed = text;
  }

  /** Empty question `index`'s text box. */
  clear(index) {
    this.#field(index).typed = null;
  }

  /** Clear question `index`: nothing picked, nothing typed. */
  skip(index) {
    const field = this.#field(index);
    field.picked.clear();
    field.typed = null;
  }

  /**
   * Take back the skip of question `index`. This screen's skip emptied the
   * question, so it stays empty, open to picks and text again: the draft
   * is not given back (another UI may give it back; the suite's steps after
   * an unskip leave the same answer either way).
   */
  unskip(index) {
    this.#field(index);
  }

  /** Send the answers as they stand. */
  submit() {
    this.#hooks.submit(this);
  }

  /** Close the card without answering: the whole batch is dismissed. */
  dismiss() {
    this.#hooks.dismiss(this);
  }
}

/** What a UI shows for the agent: read defensively, never trusted. */
function describeAgent(agent) {
  try {
    if (agent === undefined || agent === null) return null;
    if (typeof agent === 'string') return agent;
    const name = typeof agent === 'object' ? agent.name : undefined;
    return typeof name === 'string' ? name : null;
  } catch {
    return null;
  }
}

/**
 * The simulated screen: the cards that are up, and who waits for a change.
 */
export class Screen {
  /** @type {Card[]} */
  #cards = [];
  /** @type {Set<() => void>} */
  #watchers = new Set();

  /** The cards on screen, oldest first. */
  get cards() {
    return [...this.#cards];
  }

  /** Put `card` up. */
  show(card) {
    this.#cards.push(card);
    this.#changed();
  }

  /** Take `card` down; does nothing if it is not up. */
  takeDown(card) {
    const index = this.#cards.indexOf(card);
    if (index === -1) return;
    this.#cards.splice(index, 1);
    this.#changed();
  }

  /**
   * Call `watcher` after every change until the returned function is called.
   *
   * @param {() => void} watcher
   * @returns {() => void}
   */
  watch(watcher) {
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  /** How many watchers wait; for leak reports. */
  get watcherCount() {
    return this.#watchers.size;
  }

  #changed() {
    for (const watcher of [...this.#watchers]) watcher();
  }
}

/**
 * A provider that shows each ask on a `Screen` and answers with what the
 * human did there.
 */
export class ScreenProvider {
  /** @param {Screen} [screen] */
  constructor(screen = new Screen()) {
    /** The screen the driver looks at. */
    this.screen = screen;
    /** How many asks are pending; for leak reports. */
    this.pending = 0;
  }

  /**
   * Show `request` and resolve with the human's answer.
   *
   * Rejects with ASK_ABORTED when the request's signal has aborted or aborts
   * (the card is taken down), ASK_CANCELLED when the human dismisses the
   * batch, and `options.signal.reason` when the call is cancelled.
   *
   * @param {object} request
   * @param {{signal?: AbortSignal}} [options] the call's own signal
   * @returns {Promise<object>}
   */
  async ask(request, options) {
    const callSignal = options?.signal;
    // PRV-ABORT-1 (stage 1), and a malformed or empty request is refused
    // before anything is shown.
    checkRequest(request);
    if (callSignal?.aborted) throw callSignal.reason;
    const signal = request.signal instanceof AbortSignal ? request.signal : null;
    return new Promise((resolve, reject) => {
      let card = null;
      let settled = false;
      const end = (settle, why) => {
        if (settled) throw new Error('this ask has already settled');
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        callSignal?.removeEventListener('abort', onCancel);
        this.pending -= 1;
        this.takeDown(card, why);
        settle();
      };
      const onAbort = () =>
        end(() => reject(UserInteractionError.of(ErrorCode.ASK_ABORTED)), 'aborted');
      const onCancel = () => end(() => reject(callSignal.reason), 'cancelled');
      card = new Card(request, {
        submit: (shown) => {
          const answer = this.answerOf(shown);
          end(() => resolve(answer), 'answered');
        },
        dismiss: () =>
          end(() => reject(UserInteractionError.of(ErrorCode.ASK_CANCELLED)), 'dismissed'),
      });
      signal?.addEventListener('abort', onAbort);
      callSignal?.addEventListener('abort', onCancel);
      this.pending += 1;
      this.screen.show(card);
    });
  }

  /**
   * The answer a card says: per question, the picked labels in option order,
   * and the typed text exactly as typed. On a single-select question typed
   * text overrides the choice.
   *
   * @param {Card} card
   * @returns {{answers: object[]}}
   */
  answerOf(card) {
    return {
      answers: card.fields.map((field) => {
        // Blank text is no text: a custom answer needs a non-whitespace character.
        const typed = field.typed !== null && !isBlank(field.typed) ? field.typed : null;
        const selected =
          typed !== null && !field.multi
            ? []
            : field.labels.filter((label) => field.picked.has(label));
        const item = { id: field.id, selected };
        if (typed !== null) item.custom = this.customOf(typed);
        return item;
      }),
    };
  }

  /**
   * The custom text of an answer, for text the human typed: exactly that text.
   *
   * @param {string} typed
   * @returns {string}
   */
  customOf(typed) {
    return typed;
  }

  /**
   * Take a settled ask's card off the screen.
   *
   * @param {Card} card
   * @param {'answered'|'dismissed'|'aborted'|'cancelled'} why
   */
  takeDown(card, why) {
    this.screen.takeDown(card);
  }
}
