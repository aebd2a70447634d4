/**
 * The request checks and the answer rules, written once (spec sections 1-3).
 *
 * `checkRequest` throws what `ask()` must throw, in the stage order of
 * SVC-ORDER-1..5; `answerViolations` lists every broken answer rule. Both
 * take anything, never assume a shape they have not checked, and never throw
 * anything but a `UserInteractionError`.
 *
 * Messages quote strings as `JSON.stringify` writes them, shortened past 200
 * characters (code points, as the spec's reference counts them), so a hostile
 * input cannot make a message huge.
 *
 * @module
 */

import { ErrorCode, UserInteractionError } from './errors.js';

/** Longer strings are shortened in messages. */
export const QUOTE_LIMIT = 200;

/** At most this many unknown keys are named in a message; the rest are counted. */
const KEYS_NAMED = 3;

/**
 * `text` quoted as `JSON.stringify` writes it (non-ASCII raw, controls
 * escaped, lone surrogates as `\udXXX`), shortened past `QUOTE_LIMIT` code
 * points to the first ones, `...` and the length.
 *
 * @param {string} text
 * @returns {string}
 */
export function quote(text) {
  const points = Array.from(text);
  if (points.length <= QUOTE_LIMIT) return JSON.stringify(text);
  const head = JSON.stringify(points.slice(0, QUOTE_LIMIT).join(''));
  return `${head.slice(0, -1)}..." (${points.length} characters)`;
}

/**
 * Whether `text` is empty after ECMAScript's `trim` (ANS-CUSTOM-1).
 *
 * @param {string} text
 * @returns {boolean}
 */
export function isBlank(text) {
  return text.trim() === '';
}

/** @param {unknown} value @returns {value is Record<string, unknown>} */
function isMapping(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `object` has `key` with a value; `undefined` counts as absent. */
function has(object, key) {
  return Object.hasOwn(object, key) && object[key] !== undefined;
}

const MISSING = Symbol('missing');

/** What a value is, for messages; never runs the value's own code. */
export function typeName(value) {
  if (value === MISSING) return 'nothing';
  if (value === null) return 'null';
  if (value === '') return 'an empty string';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') {
    try {
      const proto = Object.getPrototypeOf(value);
      const name = proto === null ? 'object' : Object.getOwnPropertyDescriptor(proto, 'constructor')?.value?.name;
      return typeof name === 'string' && name ? name.slice(0, 60) : 'object';
    } catch {
      return 'object';
    }
  }
  return typeof value;
}

const EXPECTED = {
  mapping: 'a mapping',
  list: 'a list',
  'non-empty list': 'a non-empty list',
  string: 'a string',
  'non-empty string': 'a non-empty string',
  bool: 'a bool',
  AbortSignal: 'an AbortSignal',
};

/** A field path inside a question: `options[1].label`. */
function fieldOf(path) {
  let text = '';
  for (const step of path) {
    text += typeof step === 'number' ? `[${step}]` : text ? `.${step}` : step;
  }
  return text;
}

/**
 * One broken request rule (REQ-*), with the path of the field that breaks it.
 */
export class RequestViolation {
  /**
   * @param {string} requirement
   * @param {(string|number)[]} path from the request: `['questions', 2, 'options', 0, 'label']`
   * @param {string} expected a key of the expected kinds, or `unique`
   * @param {unknown} value the offending value, or the missing marker
   * @param {string|null} question the question's id, when it has a valid one
   */
  constructor(requirement, path, expected, value, question = null) {
    this.requirement = requirement;
    this.path = path;
    this.expected = expected;
    this.value = value;
    this.question = question;
  }

  /** The question part of the location and the field inside it. */
  #where() {
    const path = this.path;
    if (path.length >= 2 && path[0] === 'questions' && typeof path[1] === 'number') {
      if (path.length === 2) return [`questions[${path[1]}]`, ''];
      const field = fieldOf(path.slice(2));
      if (this.question !== null) {
        return [`question ${quote(this.question)} (questions[${path[1]}])`, field];
      }
      return [`questions[${path[1]}]`, field];
    }
    return ['', fieldOf(['request', ...path])];
  }

  /** Where the problem is, as a `BAD_REQUEST` message starts (SVC-ORDER-3). */
  location() {
    const [where, field] = this.#where();
    if (!where) return field;
    return field ? `${where}: ${field}` : where;
  }

  /** The `BAD_REQUEST` message: the location, then the problem. */
  describe() {
    const [where, field] = this.#where();
    if (this.expected === 'unique') {
      if (this.path.at(-1) === 'id') return `${where}: id duplicates an earlier question's id`;
      return `${where}: ${field} ${quote(String(this.value))} duplicates an earlier option's label`;
    }
    return `${this.location()} must be ${EXPECTED[this.expected]}, got ${typeName(this.value)}`;
  }
}

class Stop extends Error {}

/** Scans a request for structural problems, in spec order. */
class Scan {
  constructor(firstOnly) {
    this.firstOnly = firstOnly;
    /** @type {RequestViolation[]} */
    this.found = [];
    /** Questions with a sound intent and a valid id, with their option labels. */
    this.intents = [];
  }

  add(requirement, path, expected, value = MISSING, question = null) {
    this.found.push(new RequestViolation(requirement, path, expected, value, question));
    if (this.firstOnly) throw new Stop();
  }

  run(request) {
    if (!isMapping(request)) {
      this.add('REQ-QUESTIONS-1', [], 'mapping', request === undefined ? MISSING : request);
      return;
    }
    const questions = has(request, 'questions') ? request.questions : MISSING;
    if (!Array.isArray(questions)) {
      this.add('REQ-QUESTIONS-1', ['questions'], 'non-empty list', questions);
      return;
    }
    // REQ-SIGNAL-1: null and undefined mean no signal. REQ-AGENT-2: agent is never read.
    if (has(request, 'signal') && request.signal !== null && !(request.signal instanceof AbortSignal)) {
      this.add('REQ-SIGNAL-1', ['signal'], 'AbortSignal', request.signal);
    }
    const firstIndex = new Map();
    questions.forEach((question, index) => {
      if (!isMapping(question)) {
        this.add('REQ-ITEM-1', ['questions', index], 'mapping', question === undefined ? MISSING : question);
        return;
      }
      this.question(index, question, firstIndex);
    });
  }

  question(index, question, firstIndex) {
    const here = ['questions', index];
    const get = (key) => (has(question, key) ? question[key] : MISSING);
    // REQ-ID-1, REQ-ID-2
    const id = get('id');
    let validId = null;
    if (typeof id !== 'string' || id === '') {
      this.add('REQ-ID-1', [...here, 'id'], 'non-empty string', id);
    } else {
      validId = id;
      if (firstIndex.has(id)) {
        this.add('REQ-ID-2', [...here, 'id'], 'unique', id, validId);
      } else {
        firstIndex.set(id, index);
      }
    }
    // REQ-TEXT-1
    const text = get('question');
    if (typeof text !== 'string' || text === '') {
      this.add('REQ-TEXT-1', [...here, 'question'], 'non-empty string', text, validId);
    }
    // REQ-HEADER-1, REQ-DETAIL-1
    for (const [key, requirement] of [['header', 'REQ-HEADER-1'], ['detail', 'REQ-DETAIL-1']]) {
      const value = get(key);
      if (value !== MISSING && typeof value !== 'string') {
        this.add(requirement, [...here, key], 'string', value, validId);
      }
    }
    // REQ-OPTIONS-1..3
    const options = get('options');
    const labels = options === MISSING ? new Set() : this.options(here, validId, options);
    // REQ-MULTI-1
    const multi = get('multiSelect');
    if (multi !== MISSING && typeof multi !== 'boolean') {
      this.add('REQ-MULTI-1', [...here, 'multiSelect'], 'bool', multi, validId);
    }
    // REQ-INTENT-1
    const intent = get('intent');
    if (intent === MISSING) return;
    if (!isMapping(intent)) {
      this.add('REQ-INTENT-1', [...here, 'intent'], 'mapping', intent, validId);
      return;
    }
    let sound = true;
    for (const key of ['kind', 'approve']) {
      const value = has(intent, key) ? intent[key] : MISSING;
      if (typeof value !== 'string') {
        sound = false;
        this.add('REQ-INTENT-1', [...here, 'intent', key], 'string', value, validId);
      }
    }
    if (sound && validId !== null) this.intents.push({ question, id: validId, intent, labels });
  }

  /** One question's options; returns their valid labels. */
  options(here, questionId, options) {
    const labels = new Set();
    if (!Array.isArray(options)) {
      this.add('REQ-OPTIONS-1', [...here, 'options'], 'list', options, questionId);
      return labels;
    }
    options.forEach((option, number) => {
      const where = [...here, 'options', number];
      if (!isMapping(option)) {
        this.add('REQ-OPTIONS-1', where, 'mapping', option === undefined ? MISSING : option, questionId);
        return;
      }
      const label = has(option, 'label') ? option.label : MISSING;
      const good = typeof label === 'string' && label !== '';
      if (!good) {
        this.add('REQ-OPTIONS-1', [...where, 'label'], 'non-empty string', label, questionId);
      }
      if (has(option, 'description') && typeof option.description !== 'string') {
        this.add('REQ-OPTIONS-2', [...where, 'description'], 'string', option.description, questionId);
      }
      if (good) {
        if (labels.has(label)) {
          this.add('REQ-OPTIONS-3', [...where, 'label'], 'unique', label, questionId);
        } else {
          labels.add(label);
        }
      }
    });
    return labels;
  }
}

function scan(request, firstOnly) {
  const found = new Scan(firstOnly);
  try {
    found.run(request);
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
  }
  return found;
}

/**
 * Every structural problem of `request` (the REQ-* rules), in spec order.
 *
 * @param {unknown} request
 * @returns {RequestViolation[]}
 */
export function requestViolations(request) {
  return scan(request, false).found;
}

/**
 * Throw the `UserInteractionError` that `ask(request)` would throw before
 * calling a provider, or return normally. Stages SVC-ORDER-1..5; pass
 * `hasProvider: false` to include the last one.
 *
 * @param {unknown} request
 * @param {{hasProvider?: boolean}} [options]
 */
export function checkRequest(request, { hasProvider = true } = {}) {
  try {
    checkStages(request, hasProvider);
  } catch (error) {
    if (error instanceof UserInteractionError) throw error;
    // A request whose own getters throw while it is read is malformed too.
    throw new UserInteractionError(
      `request could not be read: ${typeName(error)} thrown while reading it`,
      ErrorCode.BAD_REQUEST,
    );
  }
}

function checkStages(request, hasProvider) {
  if (isMapping(request)) {
    // SVC-ORDER-1
    if (request.signal instanceof AbortSignal && request.signal.aborted) {
      throw UserInteractionError.of(ErrorCode.ASK_ABORTED);
    }
    // SVC-ORDER-2
    if (Array.isArray(request.questions) && request.questions.length === 0) {
      throw UserInteractionError.of(ErrorCode.EMPTY_QUESTIONS);
    }
  }
  // SVC-ORDER-3
  const result = scan(request, true);
  if (result.found.length) {
    throw new UserInteractionError(result.found[0].describe(), ErrorCode.BAD_REQUEST);
  }
  // SVC-ORDER-4: per question, the approve check before the detail check.
  for (const { question, id, intent, labels } of result.intents) {
    if (!labels.has(intent.approve)) {
      throw new UserInteractionError(
        `question ${id} declares intent ${intent.kind} whose approve label ` +
          `${JSON.stringify(intent.approve)} names none of its options`,
        ErrorCode.BAD_INTENT,
      );
    }
    // Note: the original accepts an empty detail; the spec does not (INT-DETAIL-1).
    if (!question.detail) {
      throw new UserInteractionError(
        `question ${id} declares intent ${intent.kind} without the detail it reviews`,
        ErrorCode.BAD_INTENT,
      );
    }
  }
  // SVC-ORDER-5
  if (!hasProvider) throw UserInteractionError.of(ErrorCode.NO_PROVIDER);
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

/** The level of every requirement an answer can break. */
export const LEVELS = Object.freeze({
  'ANS-SHAPE-1': 'MUST',
  'ANS-KEYS-1': 'MUST',
  'ANS-COUNT-1': 'MUST',
  'ANS-ORDER-1': 'MUST',
  'ANS-SEL-1': 'MUST',
  'ANS-SEL-2': 'MUST',
  'ANS-SEL-3': 'MUST',
  'ANS-SINGLE-1': 'MUST',
  'ANS-SINGLE-2': 'MUST',
  'ANS-MULTI-2': 'SHOULD',
  'ANS-CUSTOM-1': 'MUST',
});

/** One broken answer rule. */
export class Violation {
  /**
   * @param {string} requirement
   * @param {string|null} question the id of the question, or null for the batch
   * @param {string} message what is wrong, naming the field
   */
  constructor(requirement, question, message) {
    this.requirement = requirement;
    this.level = LEVELS[requirement];
    this.question = question;
    this.message = message;
  }

  /** One line: the requirement, the question and the problem. */
  describe() {
    const where = this.question !== null ? `question ${quote(this.question)}: ` : '';
    return `${this.requirement} (${this.level}): ${where}${this.message}`;
  }
}

const ANSWER_KEYS = new Set(['answers']);
const ITEM_KEYS = new Set(['id', 'selected', 'custom']);

function nameKeys(keys) {
  const named = keys.slice(0, KEYS_NAMED).map((key) => quote(key));
  const more = keys.length - named.length;
  return named.join(', ') + (more ? ` and ${more} more` : '');
}

/**
 * Every way `answer` breaks the answer rules for `request` (section 3),
 * SHOULD rules included. `request` must pass `checkRequest`.
 *
 * @param {object} request
 * @param {unknown} answer
 * @returns {Violation[]}
 */
export function answerViolations(request, answer) {
  const found = [];
  try {
    readAnswer(request, answer, found);
  } catch (error) {
    // Note: an answer whose getters throw cannot be read: ANS-SHAPE-1.
    found.push(
      new Violation('ANS-SHAPE-1', null, `answer could not be read: ${typeName(error)} thrown while reading it`),
    );
  }
  return found;
}

function readAnswer(request, answer, found) {
  const add = (requirement, question, message) =>
    found.push(new Violation(requirement, question, message));
  if (!isMapping(answer)) {
    add('ANS-SHAPE-1', null, `answer must be a mapping, got ${typeName(answer)}`);
    return;
  }
  const extra = Object.keys(answer).filter((key) => !ANSWER_KEYS.has(key));
  if (extra.length) add('ANS-KEYS-1', null, `answer has keys besides answers: ${nameKeys(extra)}`);
  const items = answer.answers;
  if (!Array.isArray(items)) {
    const got = Object.hasOwn(answer, 'answers') ? typeName(items) : 'nothing';
    add('ANS-SHAPE-1', null, `answer.answers must be a list, got ${got}`);
    return;
  }
  const questions = request.questions;
  if (items.length !== questions.length) {
    add('ANS-COUNT-1', null, `answers has ${items.length} item(s) for ${questions.length} question(s)`);
  }
  const count = Math.min(items.length, questions.length);
  for (let index = 0; index < count; index += 1) {
    readItem(index, questions[index], items[index], add);
  }
}

function readItem(index, question, item, add) {
  const id = question.id;
  const at = `answers[${index}]`;
  if (!isMapping(item)) {
    add('ANS-SHAPE-1', id, `${at} must be a mapping, got ${typeName(item)}`);
    return;
  }
  const extra = Object.keys(item).filter((key) => !ITEM_KEYS.has(key));
  if (extra.length) add('ANS-KEYS-1', id, `${at} has unknown keys: ${nameKeys(extra)}`);
  // ANS-ORDER-1
  const itemId = item.id;
  if (itemId !== id) {
    const got = typeof itemId === 'string' ? quote(itemId) : typeName(itemId);
    add('ANS-ORDER-1', id, `${at}.id must be ${quote(id)} (question order), got ${got}`);
  }
  // ANS-SEL-1
  const selected = item.selected;
  const labels = [];
  if (!Array.isArray(selected)) {
    const got = Object.hasOwn(item, 'selected') ? typeName(selected) : 'nothing';
    add('ANS-SEL-1', id, `${at}.selected must be a list of labels, got ${got}`);
  } else {
    for (const label of selected) {
      if (typeof label === 'string') labels.push(label);
      else add('ANS-SEL-1', id, `${at}.selected holds a ${typeName(label)}, not a label`);
    }
  }
  const offered = new Map();
  (question.options ?? []).forEach((option, rank) => offered.set(option.label, rank));
  // ANS-SEL-2, ANS-SEL-3
  const seen = new Set();
  const repeated = new Set();
  for (const label of labels) {
    if (seen.has(label)) {
      if (!repeated.has(label)) {
        repeated.add(label);
        add('ANS-SEL-2', id, `${at}.selected repeats label ${quote(label)}`);
      }
      continue;
    }
    seen.add(label);
    if (!offered.has(label)) {
      add('ANS-SEL-3', id, `${at}.selected label ${quote(label)} is not one of the question's options`);
    }
  }
  // ANS-CUSTOM-1
  const hasCustom = Object.hasOwn(item, 'custom');
  if (hasCustom) {
    const custom = item.custom;
    if (typeof custom !== 'string') {
      add('ANS-CUSTOM-1', id, `${at}.custom must be a string, got ${typeName(custom)}`);
    } else if (isBlank(custom)) {
      add('ANS-CUSTOM-1', id, `${at}.custom must hold a non-whitespace character; omit it to skip`);
    }
  }
  if (question.multiSelect === true) {
    // ANS-MULTI-2
    const ranks = labels.filter((label) => offered.has(label)).map((label) => offered.get(label));
    if (ranks.some((rank, i) => i > 0 && rank < ranks[i - 1])) {
      add('ANS-MULTI-2', id, `${at}.selected labels are not in option order`);
    }
    return;
  }
  // ANS-SINGLE-1, ANS-SINGLE-2
  if (labels.length > 1) {
    add('ANS-SINGLE-1', id, `${at}.selected has ${labels.length} labels on a single-select question`);
  }
  if (hasCustom && labels.length) {
    add(
      'ANS-SINGLE-2',
      id,
      `${at} has both selected and custom on a single-select question;` +
        ' custom overrides the choice, so selected must be empty',
    );
  }
}

/**
 * The MUST violations only: the ones that make a strict service throw.
 *
 * @param {object} request
 * @param {unknown} answer
 * @returns {Violation[]}
 */
export function mustViolations(request, answer) {
  return answerViolations(request, answer).filter((violation) => violation.level === 'MUST');
}

/**
 * The `BAD_ANSWER` error for `violations`, keeping `answer` (SVC-STRICT-1).
 *
 * @param {unknown} answer
 * @param {Violation[]} violations at least one
 * @returns {UserInteractionError}
 */
export function badAnswer(answer, violations) {
  const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : '';
  return new UserInteractionError(
    `the provider's answer breaks ${violations[0].describe()}${more}`,
    ErrorCode.BAD_ANSWER,
    { answer, violations },
  );
}
