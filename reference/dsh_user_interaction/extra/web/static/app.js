/*
 * The page of dsh_user_interaction.extra.web: one card per pending ask.
 *
 * The server speaks over the socket at /ws (hello, pending, ask, settled,
 * gone) and the page never sends on it. Answers and dismissals are POSTs to
 * /asks/{askId}/answer and /asks/{askId}/dismiss.
 *
 * Rule: model text (agent name, headers, questions, details, labels,
 * descriptions) reaches the DOM only as text nodes: never as HTML, an
 * attribute or a URL. And it is made visible, as the terminal's visible()
 * does: a control, format or otherwise invisible character is drawn as its
 * escape (<U+202E>, \x1b) in a span of class "escape", so two labels never
 * look alike; what is sent back is the text as the server gave it.
 *
 * DOM contract (roles and accessible names; nothing else is promised):
 * - A pending ask is an <article> named, through aria-labelledby, by its
 *   heading: the first question's header, or its question when it has none.
 *   data-ask-id holds the ask id (WebProvider.ask_id_of gives it: a driver
 *   finds the card of a request by it when several cards look alike);
 *   data-question-id holds the question id (for debugging only).
 * - Generic card: each question is a <fieldset> (role group) named by its
 *   <legend>, the question text. Inside it:
 *   - one radio (single-select) or checkbox (multi-select) per option, named
 *     by a <label> whose text is the option's label as shown (exactly, but
 *     for hidden characters drawn as escapes, as all model text is: see the
 *     rule above); the description
 *     is a separate element, linked by aria-describedby;
 *   - a textbox named "Other (replaces the choice)" (single-select),
 *     "Other (added to the picks)" (multi-select) or "Answer" (no options);
 *   - a checkbox named "Skip this question".
 *   The card ends with the buttons "Send" and "Dismiss" (Ctrl+Enter in the
 *   card is Send). Send refuses a question with no pick, no text and no
 *   Skip: skipping is a deliberate act.
 * - Plan card (intent plan-review; one single-select question with a detail,
 *   at most two options, the approve label among them): a <fieldset> named
 *   by the question, the plan in a region named "Plan", a textbox named
 *   "Feedback", then one button per option named by its label (approve
 *   first), then "Skip this question" and "Dismiss". With feedback typed,
 *   the other option's button sends the feedback in place of that option,
 *   and the approve button refuses (approving carries no feedback, and typed
 *   text is never dropped unsaid). A plan card with a single option has a
 *   "Send feedback" button in the other option's place.
 * - An ask with a deadline shows, under its heading, a role="timer" line
 *   counting down each second in the server's words (the core's
 *   countdown_text: "1:15 left to answer", "...; then the defaults are
 *   used", then "Time is up"). A question with a default shows its default
 *   line ("Default: Wait") under the question, linked to its group by
 *   aria-describedby. Without them the card has neither.
 * - A page the server refuses says so, and why, in the status line: a wrong
 *   or stale secret (it stops reconnecting) or as many pages open as the
 *   server allows (it tries again every few seconds). A socket turned away
 *   by a server holding as many connections as it serves (HTTP 503, which a
 *   socket's close does not show a script) is told from a lost connection
 *   by one plain request: the page then says the server is busy.
 * - A refused answer shows the server's reason as role="alert" text at the
 *   question it names, else at the card's buttons; the card keeps every
 *   draft. The connection is the role="status" line; the "Recent" list
 *   (role="log") says how each ask ended, a line an ask, which carries the
 *   ask's data-ask-id: its span.how starts "Answered here", "Answered in
 *   another page" or "Answered elsewhere…", "Dismissed" likewise,
 *   "Withdrawn by the agent", or "Time ran out" (SURF-TELL-1).
 * - While an answer or dismissal is being saved, the card's own role="status"
 *   line says "Sending…" (or that another page's answer is being saved) and
 *   its buttons are aria-disabled. Served through a relay, the server answers
 *   the POST only once the store has decided (DUR-ACK-1): "Answered here"
 *   only when it was saved; "Answered elsewhere by WHO on WHERE" when another
 *   answer won; "Not saved" when the relay stopped first. With no reply, the
 *   card stays, with its drafts, and says it may not have been saved.
 */

const SECRET_KEY = 'dsh-ui-secret';
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
// How the server closes the socket of a page it refuses (see _app.py): a wrong or
// stale secret, which retrying cannot help; or as many pages open as it allows.
const CLOSED_SECRET = 4403;
const CLOSED_FULL = 1013;
const POST_TIMEOUT_MS = 30000;
const RECENT_MAX = 50;
const TITLE_MAX = 80; // code points of a title quoted in the Recent list
const CLOCK = '{clock}'; // where a countdown's template takes the time left

const state = {
  secret: null, // the server's secret, from the address's fragment (see takeSecret)
  pageId: null, // this page's id on the current connection
  pageIds: new Set(), // every id this page had: an ask settled "by" one was settled here
  cards: new Map(), // askId -> card, in display order
  gone: false,
  retryMs: RETRY_FIRST_MS,
  connected: false, // a socket is open and the server said hello on it
  busy: false, // the server last turned this page away for holding too many connections
};

let serial = 0;
const uid = (prefix) => `${prefix}-${++serial}`;
const byId = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/* ---- Model text made visible ---------------------------------------- */

// What the terminal's visible() escapes (extra/terminal/_visible.py): control
// characters; format characters (bidi overrides and isolates, zero-width
// characters, the byte order mark); line and paragraph separators; private-use,
// surrogate and unassigned code points; and the default-ignorable characters that
// draw nothing (the combining grapheme joiner, Hangul fillers, variation
// selectors, the blank braille pattern).
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u2800\u3164\uFE00-\uFE0F\uFFA0\u{E0100}-\u{E01EF}]/u;
const NAMED = new Map([['\t', '\\t'], ['\r', '\\r'], ['\n', '\\n']]);

/** The escape that stands for the hidden character *char*: \t, \x1b or <U+202E>. */
function escapeOf(char) {
  if (NAMED.has(char)) return NAMED.get(char);
  const code = char.codePointAt(0);
  if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return `\\x${code.toString(16).padStart(2, '0')}`;
  return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
}

/**
 * Fill *node* with *value* as text, each run of hidden characters as their escapes
 * in a span of its own (class "escape", drawn apart from the same text typed
 * literally). With *lines*, a line feed stays a line break (a question, a detail).
 */
function showText(node, value, lines = false) {
  const text = String(value ?? '');
  const hidden = HIDDEN.test(text);
  node.textContent = hidden ? '' : text;
  if (!hidden) return node;
  let run = ''; // the plain text, or the escapes, not yet added
  let escaping = false;
  for (const char of text) {
    const escape = (lines && char === '\n') || !HIDDEN.test(char) ? null : escapeOf(char);
    if ((escape !== null) !== escaping) {
      if (run) node.append(escaping ? el('span', 'escape', run) : run);
      run = '';
      escaping = escape !== null;
    }
    run += escape ?? char;
  }
  if (run) node.append(escaping ? el('span', 'escape', run) : run);
  return node;
}

/** An element holding model text: as visible text, its direction isolated. */
function modelText(tag, className, value, lines = false) {
  const node = showText(el(tag, className ? `model ${className}` : 'model'), value, lines);
  node.dir = 'auto';
  return node;
}

function shorten(text) {
  const points = Array.from(text);
  return points.length > TITLE_MAX ? `${points.slice(0, TITLE_MAX).join('')}…` : text;
}

/** Give *control* an id and point *label* (a <label>) at it. */
function labelFor(control, label) {
  control.id = uid('in');
  label.htmlFor = control.id;
  return label;
}

function alertLine() {
  const node = el('p', 'error');
  node.setAttribute('role', 'alert');
  return node;
}

function button(text, className, onClick) {
  const node = el('button', className, text);
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

// A long detail scrolls inside its box; a box that scrolls takes focus, so
// the keyboard can scroll it too.
const scrollers = new ResizeObserver((entries) => {
  for (const { target } of entries) {
    if (target.scrollHeight > target.clientHeight + 1) target.tabIndex = 0;
    else target.removeAttribute('tabindex');
  }
});

function scrollBox(className, name, value) {
  const box = modelText('div', className, value, true);
  box.setAttribute('role', 'region');
  box.setAttribute('aria-label', name);
  scrollers.observe(box);
  return box;
}

/* ---- Cards ---------------------------------------------------------- */

function isPlan(questions) {
  if (questions.length !== 1) return false;
  const [q] = questions;
  const intent = q.intent;
  return (
    intent != null &&
    intent.kind === 'plan-review' &&
    q.multiSelect !== true &&
    typeof q.detail === 'string' &&
    q.options.length >= 1 &&
    q.options.length <= 2 &&
    q.options.some((option) => option.label === intent.approve)
  );
}

function normalQuestion(q) {
  return { ...q, options: Array.isArray(q?.options) ? q.options : [] };
}

function newCard(ask) {
  const questions = (Array.isArray(ask.questions) ? ask.questions : []).map(normalQuestion);
  const first = questions[0];
  const title = String((first && (first.header || first.question)) || 'Question');
  const node = el('article', 'card');
  node.dataset.askId = ask.askId;
  const heading = modelText('h3', 'title', title);
  heading.id = uid('title');
  heading.tabIndex = -1;
  node.setAttribute('aria-labelledby', heading.id);
  node.append(heading);

  const meta = el('p', 'meta');
  if (ask.agent != null) meta.append('From ', modelText('bdi', 'agent', ask.agent));
  if (questions.length > 1) meta.append(`${ask.agent != null ? ' · ' : ''}${questions.length} questions`);
  if (meta.childNodes.length) node.append(meta);

  const card = { askId: ask.askId, title, node, heading, entries: [], error: alertLine(), busy: false, sending: false };
  card.status = el('p', 'sending');
  card.status.setAttribute('role', 'status');
  card.countdown = newCountdown(ask.countdown);
  if (card.countdown) node.append(card.countdown.node);
  const actions = el('div', 'actions');
  if (isPlan(questions)) {
    node.classList.add('plan');
    planBody(card, questions[0], actions);
  } else {
    questions.forEach((q, index) => node.append(questionBlock(card, q, index)));
    actions.append(button('Send', 'primary', () => sendGeneric(card)));
    node.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        sendGeneric(card);
      }
    });
  }
  actions.append(button('Dismiss', 'secondary', () => post(card, 'dismiss', {})));
  node.append(actions, card.status, card.error);
  return card;
}

function questionBlock(card, q, index) {
  const block = el('div', 'question');
  // The first header is the card's heading already.
  if (index > 0 && q.header) block.append(modelText('p', 'q-header', q.header));
  const fieldset = el('fieldset');
  fieldset.dataset.questionId = q.id;
  fieldset.append(modelText('legend', null, q.question, true));
  if (q.detail !== undefined && q.detail !== '') fieldset.append(scrollBox('detail', 'Details', q.detail));
  appendDefault(fieldset, q);

  const multi = q.multiSelect === true;
  const group = uid('group');
  const options = el('div', 'options');
  const choices = q.options.map((option) => {
    const row = el('div', 'option');
    const input = el('input');
    input.type = multi ? 'checkbox' : 'radio';
    input.name = group;
    row.append(input, labelFor(input, modelText('label', null, option.label)));
    if (option.description) {
      const description = modelText('p', 'description', option.description);
      description.id = uid('desc');
      input.setAttribute('aria-describedby', description.id);
      row.append(description);
    }
    options.append(row);
    return { input, label: String(option.label ?? '') };
  });
  if (choices.length) fieldset.append(options);

  const text = el('textarea', 'text');
  text.rows = 2;
  const name = !choices.length ? 'Answer' : multi ? 'Other (added to the picks)' : 'Other (replaces the choice)';
  const other = el('div', 'other');
  other.append(labelFor(text, el('label', null, name)), text);
  if (!multi) {
    // Typed text wins over the pick; show the pick as set aside.
    text.addEventListener('input', () => options.classList.toggle('overridden', text.value.trim() !== ''));
  }

  const skip = el('input');
  skip.type = 'checkbox';
  const skipRow = el('div', 'skip');
  skipRow.append(skip, labelFor(skip, el('label', null, 'Skip this question')));
  skip.addEventListener('change', () => {
    // Disabled, not cleared: unchecking Skip gives the draft back.
    for (const choice of choices) choice.input.disabled = skip.checked;
    text.disabled = skip.checked;
    fieldset.classList.toggle('skipped', skip.checked);
  });

  const error = alertLine();
  fieldset.append(other, skipRow, error);
  block.append(fieldset);
  card.entries.push({ q, fieldset, choices, text, skip, multi, error });
  return block;
}

function planBody(card, q, actions) {
  const approve = q.intent.approve;
  const approveOption = q.options.find((option) => option.label === approve);
  const otherOption = q.options.find((option) => option.label !== approve);
  const fieldset = el('fieldset');
  fieldset.dataset.questionId = q.id;
  fieldset.append(modelText('legend', null, q.question, true), scrollBox('plan-text', 'Plan', q.detail));
  appendDefault(fieldset, q);

  const feedback = el('textarea', 'text');
  feedback.rows = 3;
  const hint = el('p', 'hint');
  hint.id = uid('hint');
  feedback.setAttribute('aria-describedby', hint.id);
  if (otherOption) hint.append('Typed feedback is sent with “', modelText('bdi', null, otherOption.label), '”, in place of that choice.');
  else hint.append('Typed feedback is sent in place of approving.');
  const other = el('div', 'other');
  other.append(labelFor(feedback, el('label', null, 'Feedback')), hint, feedback);
  const error = alertLine();
  fieldset.append(other, error);
  card.node.append(fieldset);
  card.entries.push({ q, fieldset, error });

  const typed = () => (feedback.value.trim() !== '' ? feedback.value : null);
  const answer = (item) => post(card, 'answer', { answers: [{ id: q.id, ...item }] });
  const keepLabel = otherOption ? `“${otherOption.label}”` : '“Send feedback”';
  actions.append(
    choice(approveOption, 'primary', () => {
      if (typed() === null) answer({ selected: [approve] });
      else showError(card, `Approving sends no feedback: clear it, or send it with ${keepLabel}.`, q.id);
    }),
  );
  if (otherOption) {
    actions.append(
      choice(otherOption, 'secondary', () => {
        const custom = typed();
        answer(custom === null ? { selected: [otherOption.label] } : { selected: [], custom });
      }),
    );
  } else {
    actions.append(
      button('Send feedback', 'secondary', () => {
        const custom = typed();
        if (custom === null) showError(card, 'Type some feedback first.', q.id);
        else answer({ selected: [], custom });
      }),
    );
  }
  // No decision either way: the same answer as a generic card's Skip.
  actions.append(button('Skip this question', 'secondary', () => answer({ selected: [] })));
}

/** A plan card's button, named by the option's label, its description beside it. */
function choice(option, className, onClick) {
  const wrap = el('div', 'choice');
  const control = showText(button('', `model ${className}`, onClick), option.label);
  control.dir = 'auto';
  wrap.append(control);
  if (option.description) {
    const description = modelText('p', 'description', option.description);
    description.id = uid('desc');
    control.setAttribute('aria-describedby', description.id);
    wrap.append(description);
  }
  return wrap;
}

/* ---- Deadline and defaults ------------------------------------------ */

/** The question's default line ("Default: Wait"), the server's words, describing its group. */
function appendDefault(fieldset, q) {
  if (typeof q.defaultText !== 'string' || q.defaultText === '') return;
  const line = modelText('p', 'default', q.defaultText);
  line.id = uid('default');
  fieldset.setAttribute('aria-describedby', line.id);
  fieldset.append(line);
}

/** "1:15", or "1:00:05" from an hour up: the rule of the core's countdown_text. */
function clock(seconds) {
  const whole = Math.ceil(seconds);
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const secs = String(whole % 60).padStart(2, '0');
  return hours ? `${hours}:${String(minutes).padStart(2, '0')}:${secs}` : `${minutes}:${secs}`;
}

/**
 * A card's countdown, or null without a deadline. The server sends the seconds
 * left as of sending, never its clock's time: the page counts down from
 * there on its own monotonic clock, so a browser whose clock disagrees with
 * the server's (another machine) still shows the right time left.
 */
function newCountdown(wire) {
  if (wire == null || typeof wire.template !== 'string' || typeof wire.timeUp !== 'string') return null;
  if (!Number.isFinite(wire.secondsLeft)) return null;
  const node = el('p', 'countdown');
  node.setAttribute('role', 'timer'); // a timer is not announced each second
  const countdown = { node, template: wire.template, timeUp: wire.timeUp, endsAt: 0, timer: null };
  retime(countdown, wire);
  return countdown;
}

/** Count *countdown* down from the seconds left that *wire* says, starting now. */
function retime(countdown, wire) {
  const left = Number(wire?.secondsLeft);
  if (!countdown || !Number.isFinite(left)) return;
  countdown.endsAt = performance.now() + Math.max(0, left) * 1000;
  tick(countdown);
}

/** Show the time left, and come back when the shown second changes. */
function tick(countdown) {
  clearTimeout(countdown.timer);
  countdown.timer = null;
  const left = (countdown.endsAt - performance.now()) / 1000;
  const text = left > 0 ? countdown.template.split(CLOCK).join(clock(left)) : countdown.timeUp;
  if (countdown.node.textContent !== text) countdown.node.textContent = text;
  countdown.node.classList.toggle('up', left <= 0);
  // The server withdraws the ask once time is up; until then the line says so.
  if (left > 0) countdown.timer = setTimeout(tick, (left - Math.ceil(left) + 1) * 1000 + 5, countdown);
}

function stopCountdown(card) {
  if (card.countdown) clearTimeout(card.countdown.timer);
}

/* ---- Answering ------------------------------------------------------ */

/** The answer item a generic question holds now, or null when it holds nothing. */
function itemOf(entry) {
  const { q, choices, text, skip, multi } = entry;
  if (skip.checked) return { id: q.id, selected: [] };
  const selected = [];
  for (const { input, label } of choices) {
    if (input.checked && !selected.includes(label)) selected.push(label);
  }
  const typed = text.value.trim() !== '';
  // Single-select: typed text replaces the choice. Multi-select: it is added.
  if (typed && !multi) return { id: q.id, selected: [], custom: text.value };
  if (typed) return { id: q.id, selected, custom: text.value };
  return selected.length ? { id: q.id, selected } : null;
}

function sendGeneric(card) {
  if (card.busy) return;
  clearErrors(card);
  const answers = [];
  let firstEmpty = null;
  for (const entry of card.entries) {
    const item = itemOf(entry);
    if (item === null) {
      entry.error.textContent = entry.choices.length
        ? 'Pick an option, type in Other, or check “Skip this question”.'
        : 'Type an answer, or check “Skip this question”.';
      firstEmpty ??= entry;
    }
    answers.push(item);
  }
  if (firstEmpty) {
    const target = firstEmpty.choices.find((c) => c.input.checked) ?? firstEmpty.choices[0];
    (target ? target.input : firstEmpty.text).focus();
    return;
  }
  post(card, 'answer', { answers });
}

function clearErrors(card) {
  card.error.textContent = '';
  for (const entry of card.entries) entry.error.textContent = '';
}

function showError(card, message, questionId) {
  const entry = card.entries.find((e) => e.q.id === questionId);
  showText(entry ? entry.error : card.error, message); // it may quote model text
}

function setBusy(card, busy) {
  card.busy = busy;
  // aria-disabled, not disabled: the focused button keeps its focus.
  for (const control of card.node.querySelectorAll('.actions button')) {
    control.setAttribute('aria-disabled', String(busy));
  }
  if (busy) card.node.setAttribute('aria-busy', 'true');
  else card.node.removeAttribute('aria-busy');
}

/** Show *card* as being saved (DUR-ACK-1): by this page, or by the page *by*. */
function markSending(card, by) {
  card.sending = true;
  setBusy(card, true);
  card.status.textContent = by != null && !state.pageIds.has(by)
    ? 'Another page’s answer is being saved…'
    : 'Sending… not saved until this card says so.';
}

function unmarkSending(card) {
  card.sending = false;
  card.status.textContent = '';
  setBusy(card, false);
}

/** POST an answer or a dismissal; on refusal, keep the card and say why. */
async function post(card, action, body) {
  if (card.busy || state.gone) return;
  clearErrors(card);
  setBusy(card, true);
  card.status.textContent = 'Sending…';
  let reply;
  let data = null;
  try {
    reply = await fetch(`/asks/${encodeURIComponent(card.askId)}/${action}`, {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: {
        'Content-Type': 'application/json',
        'X-Dsh-Page': state.pageId ?? '',
        'X-Dsh-Secret': state.secret,
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(POST_TIMEOUT_MS),
    });
    data = await reply.json().catch(() => null);
  } catch {
    unmarkSending(card);
    card.error.textContent = 'Not confirmed: no reply from the server, so this may not have been saved. Your answers are kept: send again if this card stays.';
    return;
  }
  if (reply.status === 202) {
    // Still being saved (the store is slow or out of reach): the socket says when it is.
    card.status.textContent = 'Still saving: the store has not confirmed it yet.';
    return;
  }
  unmarkSending(card);
  const current = state.cards.get(card.askId) === card;
  if (reply.status === 409 && data?.how === 'sending') {
    if (current) markSending(card, data?.by);
  } else if (reply.ok) {
    // The settled message that follows finds no card, and adds nothing.
    if (current) settle(card.askId, action === 'answer' ? 'answered' : 'dismissed', state.pageId);
  } else if (reply.status === 409) {
    // Settled elsewhere first: the card goes, and the Recent line says so.
    if (current) settle(card.askId, data?.how, data?.by, 'yours was not saved', data);
    else record('Not sent', card.title, 'it was no longer pending');
  } else if (data?.how === 'unsaved') {
    if (current) settle(card.askId, 'unsaved', state.pageId, data?.note, data);
  } else if (current) {
    const reason = typeof data?.error === 'string' ? data.error : `The server refused this (HTTP ${reply.status}).`;
    showError(card, reason, data?.question);
  }
}

/* ---- Messages ------------------------------------------------------- */

/** " elsewhere by WHO on WHERE": an ask ended through another UI (DUR-TELL-1), or ''. */
function elsewhere(message) {
  const who = typeof message?.principal === 'string' ? message.principal : null;
  const via = typeof message?.via === 'string' ? message.via : null;
  if (who == null && via == null) return '';
  return ` elsewhere${who == null ? '' : ` by ${who}`}${via == null ? '' : ` on ${via}`}`;
}

function describe(how, by, message) {
  const here = by != null && state.pageIds.has(by);
  const where = by == null ? elsewhere(message) : here ? ' here' : ' in another page';
  switch (how) {
    case 'answered': return `Answered${where}`;
    case 'dismissed': return `Dismissed${where}`;
    case 'withdrawn': return 'Withdrawn by the agent';
    case 'timed_out': return 'Time ran out';
    case 'defaulted': return 'Time ran out; the defaults were used';
    case 'expired': return 'Expired: no agent came back for it';
    case 'disposed': return 'The agent has gone';
    case 'unsaved': return `Not saved${here || by == null ? '' : ' (sent in another page)'}`;
    default: return 'No longer pending';
  }
}

function addCard(ask) {
  if (ask == null || typeof ask.askId !== 'string' || state.cards.has(ask.askId)) return;
  const card = newCard(ask);
  state.cards.set(ask.askId, card);
  byId('cards').append(card.node);
  if ('sending' in ask) markSending(card, ask.sending);
  refresh();
}

/** Remove a settled ask's card, if it has one, and record how it ended. */
function settle(askId, how, by, note, message) {
  const card = state.cards.get(askId);
  if (!card) return;
  if (card.node.contains(document.activeElement)) {
    // Keep keyboard users in the list rather than at the top of the page.
    const next = card.node.nextElementSibling ?? card.node.previousElementSibling;
    (next?.querySelector('.title') ?? byId('pending-title')).focus();
  }
  for (const box of card.node.querySelectorAll('[role="region"]')) scrollers.unobserve(box);
  stopCountdown(card);
  card.node.remove();
  state.cards.delete(askId);
  record(describe(how, by, message), card.title, note, askId);
  refresh();
}

/** The snapshot after (re)connecting: cards of asks still pending keep their drafts. */
function replaceAll(asks) {
  const pending = Array.isArray(asks) ? asks : [];
  const ids = new Set(pending.map((ask) => ask?.askId));
  for (const askId of [...state.cards.keys()]) {
    if (!ids.has(askId)) settle(askId, null, null, 'settled while this page was disconnected');
  }
  for (const ask of pending) {
    // A card kept from before counts down from the server's new figure.
    const kept = state.cards.get(ask?.askId);
    if (kept) retime(kept.countdown, ask.countdown);
    if (kept && 'sending' in ask) markSending(kept, ask.sending);
    else addCard(ask);
  }
  // Snapshot order, moving only nodes out of place (a move drops focus).
  const container = byId('cards');
  const order = pending.map((ask) => state.cards.get(ask?.askId)).filter(Boolean);
  order.forEach((card, index) => {
    if (container.children[index] !== card.node) container.insertBefore(card.node, container.children[index] ?? null);
  });
  state.cards = new Map(order.map((card) => [card.askId, card]));
  refresh();
}

function agentGone() {
  state.gone = true;
  for (const askId of [...state.cards.keys()]) settle(askId, 'disposed', null);
  document.body.classList.add('gone');
  setStatus('The agent has gone. Nothing here can be answered any more.');
  byId('empty').textContent = 'Nothing to answer: the agent has gone.';
  refresh();
}

/** Apply one server message to the page. */
function receive(message) {
  switch (message?.type) {
    case 'hello':
      state.pageId = message.page;
      state.pageIds.add(message.page);
      state.retryMs = RETRY_FIRST_MS;
      byId('agent').hidden = message.agent == null;
      showText(byId('agent-name'), message.agent);
      document.body.classList.remove('refused');
      state.connected = true;
      state.busy = false;
      setStatus('Connected.');
      break;
    case 'pending': replaceAll(message.asks); break;
    case 'ask': addCard(message.ask); break;
    case 'sending': {
      const card = state.cards.get(message.askId);
      if (card) markSending(card, message.by);
      break;
    }
    case 'settled': settle(message.askId, message.how, message.by, message.note, message); break;
    case 'gone': agentGone(); break;
    default: break; // unknown messages are for newer pages
  }
}

/* ---- Page chrome ---------------------------------------------------- */

function setStatus(text) {
  byId('status').textContent = text;
}

/** Say that the server refused this page, and why (the status line, in the error colour). */
function refused(text) {
  document.body.classList.add('refused');
  setStatus(text);
}

function record(what, title, note, askId) {
  const item = el('li');
  if (typeof askId === 'string') item.dataset.askId = askId;
  // How it ended may name who answered and through which UI, as the store
  // recorded them: any text, made visible as model text is.
  const how = showText(el('span', 'how'), what);
  item.append(el('span', 'when', new Date().toLocaleTimeString()), ' ', how, ': ', modelText('bdi', 'what', shorten(title)));
  if (note) item.append(' (', showText(el('span'), note), ')');
  const list = byId('recent');
  list.prepend(item);
  while (list.children.length > RECENT_MAX) list.lastElementChild.remove();
}

function refresh() {
  const count = state.cards.size;
  byId('empty').hidden = count > 0;
  const base = state.gone ? 'The agent has gone' : 'Questions from the agent';
  document.title = count ? `(${count}) ${base}` : base;
}

/* ---- Connection ----------------------------------------------------- */

/**
 * The server's secret. The agent prints it in the address's fragment, which no
 * request carries; it moves to this tab's sessionStorage (scoped to this origin,
 * port included, unlike a cookie) and leaves the address bar. It goes with each
 * POST as a header and with the socket as a subprotocol.
 */
function takeSecret() {
  const given = new URLSearchParams(location.hash.slice(1)).get('secret');
  if (given) {
    sessionStorage.setItem(SECRET_KEY, given);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(SECRET_KEY);
}

/**
 * Whether the server turns requests away for holding as many connections as it
 * serves (HTTP 503). A socket refused that way closes as a lost one does, so the
 * page asks once, with a request that needs no secret and changes nothing.
 */
async function serverIsFull() {
  try {
    const reply = await fetch('/favicon.ico', { cache: 'no-store' });
    return reply.status === 503;
  } catch {
    return false;
  }
}

function connect() {
  const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
  const socket = new WebSocket(`${scheme}${location.host}/ws`, [
    'dsh-ui',
    `dsh-secret.${state.secret}`,
  ]);
  socket.addEventListener('message', (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    receive(message);
  });
  socket.addEventListener('close', (event) => {
    if (state.gone) return;
    if (event.code === CLOSED_SECRET) {
      // The cards stay, with every draft; only the agent's own link can help.
      refused('The server refused this page: its secret is not this server’s (the link is old, or the server has restarted). Open the address the agent printed last.');
      return;
    }
    if (event.code === CLOSED_FULL) {
      refused('The server refused this page: as many pages are open as it allows. Close another page of this agent; this one tries again every few seconds.');
      setTimeout(connect, RETRY_MAX_MS);
      return;
    }
    state.connected = false;
    if (!state.busy) setStatus('Connection lost. Reconnecting…');
    serverIsFull().then((full) => {
      if (state.connected || state.gone) return; // news of a socket since replaced
      state.busy = full;
      setStatus(
        full
          ? 'The server is busy: it holds as many connections as it serves. Reconnecting…'
          : 'Connection lost. Reconnecting…',
      );
    });
    setTimeout(connect, state.retryMs);
    state.retryMs = Math.min(state.retryMs * 2, RETRY_MAX_MS);
  });
}

refresh();
state.secret = takeSecret();
if (state.secret) {
  connect();
} else {
  setStatus('This page needs the link, with its secret, that the agent printed.');
}
