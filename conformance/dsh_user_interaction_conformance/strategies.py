"""Hypothesis strategies for the seam: public API, for the suite and for your tests.

* :func:`hostile_text`: strings that break naive UIs.
* :func:`requests`: well-formed requests.
* :func:`invalid_requests`: malformed requests, each with the error it must raise.
* :func:`behaviours` and :func:`actions`: what the simulated human does.
* :func:`~dsh_user_interaction_conformance.expected_answer`: the answer the spec requires for them.
* :func:`valid_answers` and :func:`invalid_answers`: answers that keep, or
  break, the answer rules for a request.

Every strategy draws only JSON-representable data, so a drawn request can
cross to a provider in any language. Text a model writes (ids, questions,
labels, :func:`hostile_text`) holds lone surrogates about one time in seven,
as JSON's ``\\udXXX`` escapes can; text a human types (:func:`custom_texts`)
never does.

>>> from hypothesis import given
>>> from dsh_user_interaction import check_request
>>> @given(requests())
... def test_requests_are_well_formed(request):
...     check_request(request)
>>> test_requests_are_well_formed()

Design note: every strategy that does not depend on drawn data is built once,
at import or (for keyword parameters) on first use, because Hypothesis
validates each new strategy object, and rebuilding them on every draw cost
about half the suite's time. Strategies that depend on a drawn request
(:func:`actions`, :func:`invalid_answers`) draw indices and counts from
prebuilt strategies and index into the offered labels, so they shrink toward
the first options and the simplest action (on a multi-select, picking the
first two). Nothing is filtered: a value that must meet a constraint (a
minimum length, a non-blank text, a label that is not offered) is built to
meet it. Weights are set with the simplest choices in mind too, because
Hypothesis completes many early examples with them.
"""

from __future__ import annotations

import copy
import functools
import itertools
import random
import unicodedata
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    check_request,
    is_blank,
)

from ._behaviour import (
    Action,
    Behaviour,
    Dismiss,
    Nothing,
    Pick,
    Revise,
    Skip,
    Step,
    TypeText,
    expected_answer,
)
from ._capabilities import Capabilities

__all__ = [
    "INVALID_REQUEST_REQUIREMENTS",
    "Agent",
    "InvalidAnswer",
    "InvalidRequest",
    "actions",
    "agents",
    "behaviours",
    "custom_texts",
    "dismissals",
    "hostile_text",
    "invalid_answers",
    "invalid_requests",
    "labels",
    "near_miss_answers",
    "options",
    "questions",
    "requests",
    "valid_answers",
]

# ---------------------------------------------------------------------------
# Hostile text
# ---------------------------------------------------------------------------

#: Text that Unicode normalisation changes. Each of ``_UNSTABLE`` changes under
#: all four forms (NFC, NFD, NFKC, NFKD); the others under some of them.
_UNSTABLE: Final = (
    "\u212b",  # ANGSTROM SIGN: a singleton, NFC gives U+00C5
    "\u2126",  # OHM SIGN: a singleton, NFC gives U+03A9
    "q\u0307\u0323",  # combining marks out of canonical order
    "\u0958",  # DEVANAGARI QA: excluded from composition
    "\u1f71",  # GREEK SMALL LETTER ALPHA WITH OXIA: a singleton
    "\u0344",  # COMBINING GREEK DIALYTIKA TONOS
)
_NORMALISATION: Final = (
    *_UNSTABLE,
    "e\u0301",  # decomposed: NFC and NFKC compose it
    "\u00e9",  # precomposed: NFD and NFKD decompose it
    "A\u030a",
    "\u00c5",
    "\u1100\u1161",  # conjoining jamo: NFC gives a Hangul syllable
    "\uac00",  # Hangul syllable: NFD gives jamo
    "\u1e9b\u0323",
    "\ufb01",  # compatibility ligature
    "\uff21\uff42\uff43",  # fullwidth letters
    "\u00bd",  # vulgar fraction
    "x\u00b2",  # superscript
    "\u2075",
    "\u2460",  # circled digit
    "\u017f",  # long s
    "\u00b5",  # micro sign
)
#: Line terminators, and what newline conversion changes.
_LINE_BREAKS: Final = ("\r", "\r\n", "\n", "\n\r", "\x85", "\u2028", "\u2029", "\x0b", "\x0c")
#: Controls and characters that render as nothing.
_INVISIBLE: Final = (
    "\x00",
    "\x08",
    "\x7f",
    "\t",
    "\ufeff",
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\u00ad",
    "\u180e",
)
#: Bidi overrides, embeddings, isolates and marks.
_BIDI: Final = (
    "\u202e",
    "\u202d",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200e",
    "\u200f",
    "\u061c",
)
#: ANSI CSI and OSC sequences a terminal would act on.
_TERMINAL: Final = (
    "\x1b[31m",
    "\x1b[0m",
    "\x1b[2J",
    "\x1b[1A\x1b[2K",
    "\x1b[?25l",
    "\x9b31m",
    "\x1b]0;title\x07",
    "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\",
    "\x1bc",
)
#: Emoji with skin-tone modifiers, ZWJ sequences, flags and keycaps.
_EMOJI: Final = (
    "\U0001f44d\U0001f3fd",
    "\U0001f469\u200d\U0001f4bb",
    "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f468\U0001f3ff\u200d\U0001f91d\u200d\U0001f468\U0001f3fb",
    "\U0001f1fa\U0001f1f3",
    "1\ufe0f\u20e3",
    "\u2764\ufe0f",
)
#: Spaces that trimming removes (and ``\ufeff``, which JavaScript trims and Python keeps).
_SPACES: Final = (" ", "\u00a0", "\u3000", "\u2003", "\u2000", "\u1680", "\u202f", "\u205f")
#: Quoting, markup and format strings.
_MARKUP: Final = ('"', "'", "`", "\\", "<b>", "</script>", "&amp;", "%s", "{0}", "${x}", "*x*")

_FAMILIES: Final = (
    _NORMALISATION,
    _LINE_BREAKS,
    _INVISIBLE,
    _BIDI,
    _TERMINAL,
    _EMOJI,
    _SPACES,
    _MARKUP,
)

#: Pieces that break naive UIs: characters that Unicode normalisation changes,
#: line terminators, controls, zero-width characters, bidi overrides and
#: isolates, ANSI CSI and OSC sequences, emoji sequences, unusual spaces, and
#: quoting and markup.
HOSTILE_PIECES: Final = tuple(piece for family in _FAMILIES for piece in family)

#: What can surround a text, so that trimming changes it. Some of it is whitespace
#: to one language only: JavaScript's ``trim`` removes U+FEFF and Python's ``strip``
#: keeps it; ``strip`` removes U+0085 and U+001C to U+001F, and ``trim`` keeps them.
_EDGES: Final = (
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    " \r\n",
    "\u00a0",
    "\u3000",
    "\ufeff",
    "\u2028",
    "\x85",
    " \t\n",
    "\x1c",
    "\x1f\x1e",
    "\x1d\ufeff",
)

_any_char: Final = st.characters(exclude_categories=["Cs"])
_plain_text: Final = st.text(_any_char, max_size=12)
#: One character that is not whitespace (as either Python or JavaScript sees it).
_solid_char: Final = st.characters(
    exclude_categories=["Cs", "Cc", "Zs", "Zl", "Zp"], exclude_characters="\ufeff\u180e"
)


# Every hostile text is two choices: a kind (below), then either a fresh plain text or
# an index into a pool of texts of that kind built once, at import, from a fixed seed. A
# request holds dozens of texts, and building each from its parts (a frame, pieces, a
# text, a repeat count) made drawing them most of the suite's time. The pools hold
# 256 texts each, because Hypothesis draws an index below 256 uniformly (above, it
# favours the small ones); each is sorted shortest first, so a failing example shrinks
# toward the shortest text of its kind that still fails. Plain text stays fresh, so each
# run still meets characters no pool holds.
_POOL_SIZE: Final = 256
_POOL_SEED: Final = 20260101

#: Frames that trimming changes: a leading and a trailing edge.
_PADS: Final = tuple((lead, trail) for lead in ("", *_EDGES) for trail in _EDGES)
#: Frames that every normalisation form, newline conversion and trimming change.
_GAUNTLET_FRAMES: Final = tuple(
    (lead + unstable, newline + trail)
    for lead in _EDGES
    for unstable in _UNSTABLE
    for newline in ("\r\n", "\r")
    for trail in ("", *_EDGES)
)
_SPLITS: Final = ("\r\n", "\r", "\r\n\r\n", "\n\r")


#: Ranges of code points a pool's plain text takes its characters from (first, count),
#: and their weights: mostly ASCII and the BMP, as Hypothesis draws them; no surrogate.
_CHAR_RANGES: Final = (
    (0x20, 0x5F),
    (0, 0x100),
    (0x100, 0x700),
    (0x800, 0xD000),
    (0xE000, 0x2000),
    (0x10000, 0x100000),
)
_CHAR_WEIGHTS: Final = (45, 10, 20, 9, 8, 8)
_ASCII: Final = tuple(map(chr, range(0x20, 0x7F)))


def _random_text(rng: random.Random, min_size: int = 0, max_size: int = 12) -> str:
    size = rng.randint(min_size, max_size)
    spans = rng.choices(_CHAR_RANGES, _CHAR_WEIGHTS, k=size)
    return "".join([chr(first + int(rng.random() * count)) for first, count in spans])


def _random_ascii(rng: random.Random) -> str:
    return "".join(rng.choices(_ASCII, k=rng.randint(0, 16)))


def _random_mixed(rng: random.Random) -> str:
    """Hostile pieces with one plain text between them, one of them changed by normalisation."""
    pieces = [rng.choice(_NORMALISATION), *rng.choices(HOSTILE_PIECES, k=rng.randint(0, 4))]
    rng.shuffle(pieces)
    return _random_text(rng).join(pieces)


def _random_padded(rng: random.Random) -> str:
    """Text that trimming changes."""
    lead, trail = rng.choice(_PADS)
    text = _random_text(rng) if rng.random() < 0.5 else _random_mixed(rng)
    return lead + text + trail


def _random_gauntlet(rng: random.Random) -> str:
    """Text that every normalisation form, newline conversion and trimming change."""
    lead, trail = rng.choice(_GAUNTLET_FRAMES)
    return lead + _random_text(rng) + trail


def _random_lines(rng: random.Random) -> str:
    """Two lines split by CR or CRLF, which newline conversion changes."""
    return _random_ascii(rng) + rng.choice(_SPLITS) + _random_mixed(rng)


#: Whitespace to Python's ``str.strip`` alone, and to JavaScript's ``trim`` alone
#: (U+FEFF), and to both.
_PYTHON_SPACE: Final = ("\x85", "\x1c", "\x1d", "\x1e", "\x1f")
_DISPUTED: Final = (*_PYTHON_SPACE, "\ufeff", " ", "\t")


def _random_disputed(rng: random.Random) -> str:
    """Text of whitespace the two languages disagree on: not blank to ``trim``, but to ``strip``.

    The spec judges blank text as JavaScript does (``ANS-CUSTOM-1``), so this
    is a human's answer that a UI or a check using ``str.strip`` throws away.
    """
    chars = [rng.choice(_PYTHON_SPACE), *rng.choices(_DISPUTED, k=rng.randint(0, 3))]
    rng.shuffle(chars)
    return "".join(chars)


def _random_long(rng: random.Random) -> str:
    return _random_text(rng, 1) * rng.randint(32, 200)


def _pool(make: Callable[[random.Random], str], rng: random.Random) -> st.SearchStrategy[str]:
    """*_POOL_SIZE* distinct texts from *make*, shortest first, as one choice.

    An ASCII pool starts with the empty text and ``"0"``, the simplest text and
    the simplest label, which a failing example shrinks to.
    """
    first = ("", "0") if make is _random_ascii else ()
    texts: set[str] = set(first)
    while len(texts) < _POOL_SIZE:
        texts.add(make(rng))
    rest = sorted(texts.difference(first), key=lambda text: (len(text), text))
    return st.sampled_from((*first, *rest))


#: The kinds of hostile text, one drawn per text; ``None`` is fresh plain text. A kind
#: listed twice is twice as likely, and has two pools. ASCII comes first, as the
#: simplest. The weights make each transformation (any normalisation form, newline
#: conversion, trimming) change about half the texts, while about a quarter are plain.
_KINDS: Final = (
    _random_ascii,
    None,
    _random_mixed,
    _random_gauntlet,
    _random_padded,
    _random_lines,
    _random_gauntlet,
    _random_long,
    _random_ascii,
    _random_gauntlet,
    _random_padded,
    _random_lines,
    _random_gauntlet,
)


#: Lone surrogates: high ones, low ones, and the halves of an emoji.
_SURROGATES: Final = ("\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00")


def _pairs_up(text: str) -> bool:
    """Whether *text* holds a high surrogate followed by a low one: a pair, not lone ones.

    JSON's escapes would join such a pair into one character on the way back,
    so a drawn text never holds one: it would not cross a pipe unchanged.
    """
    return any(
        "\ud800" <= high <= "\udbff" and "\udc00" <= low <= "\udfff"
        for high, low in itertools.pairwise(text)
    )


def _random_lone_surrogate(rng: random.Random) -> str:
    """Text with one or two lone surrogates in it, which a model's JSON can carry (``\\udXXX``)."""
    while True:
        text = _random_text(rng)
        for _ in range(rng.randint(1, 2)):
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(_SURROGATES) + text[at:]
        if not _pairs_up(text):
            return text


def _pools() -> tuple[tuple[st.SearchStrategy[str], ...], tuple[st.SearchStrategy[str], ...]]:
    """The pools of what a human types, and of what a model writes (lone surrogates too).

    A human types in UTF-8, which cannot hold a lone surrogate; a model's
    JSON can (``\\ud800``), and the harness carries it (``HAR-VALUE-1``). The
    surrogate pool is listed three times, so about one text in seven a model
    writes holds one. Whitespace only Python's ``strip`` removes is listed
    three times for what a human types, and once for what a model writes:
    a text of it alone is a human's answer that ``strip`` would call blank.
    """
    rng = random.Random(_POOL_SEED)  # noqa: S311 - a fixed seed: the same pools in every run
    common = tuple(_plain_text if make is None else _pool(make, rng) for make in _KINDS)
    disputed = _pool(_random_disputed, rng)
    lone = _pool(_random_lone_surrogate, rng)
    return (*common, disputed, disputed, disputed), (*common, disputed, lone, lone, lone)


_TYPED_POOLS, _WRITTEN_POOLS = _pools()
#: A kind of text a human types, then a text of that kind.
_BRANCHES: Final = st.sampled_from(_TYPED_POOLS)
#: A kind of text a model writes (ids, questions, labels), then a text of that kind.
_WRITTEN: Final = st.sampled_from(_WRITTEN_POOLS)


@functools.cache
def _solid_run(size: int) -> st.SearchStrategy[str]:
    """Exactly *size* characters that are not whitespace, as one choice."""
    return st.text(_solid_char, min_size=size, max_size=size)


def _draw_hostile(
    draw: st.DrawFn, min_size: int, branches: st.SearchStrategy[st.SearchStrategy[str]] = _WRITTEN
) -> str:
    # One kind, like st.one_of but weighted; then padding rather than a filter,
    # so no draw is thrown away.
    text: str = draw(draw(branches))
    if len(text) < min_size:
        text += draw(_solid_run(min_size - len(text)))
    return text


def _draw_label(draw: st.DrawFn) -> str:
    """What :func:`labels` draws, drawn without a strategy of its own.

    A request holds a dozen texts, and drawing each through a composite
    strategy of its own took three draws where two do: its kind, then the text.
    """
    return _draw_hostile(draw, 1)


def _draw_text(draw: st.DrawFn) -> str:
    """What :func:`hostile_text` draws, without a strategy of its own (see :func:`_draw_label`)."""
    return _draw_hostile(draw, 0)


@st.composite
def _hostile_of(draw: st.DrawFn, min_size: int) -> str:
    return _draw_hostile(draw, min_size)


@functools.cache
def _hostile_text(min_size: int) -> st.SearchStrategy[str]:
    return _hostile_of(max(min_size, 0))


_hostile: Final = _hostile_text(0)


def hostile_text(*, min_size: int = 0) -> st.SearchStrategy[str]:
    """Strings with hostile pieces, surrounding whitespace, and long runs.

    They include text that Unicode normalisation (any form), newline
    conversion or trimming changes, so a UI that does any of those to what it
    returns is caught by an exact comparison; whitespace that only one of
    JavaScript's ``trim`` and Python's ``strip`` removes; and, about one time
    in seven, lone surrogates, which a model's JSON can hold (never a high
    one before a low one, which JSON would join into one character). Plain
    text is drawn too. Text a human types is :func:`custom_texts`.

    Every string has at least *min_size* characters.
    """
    return _hostile_text(min_size)


_labels: Final = _hostile_text(1)


def labels() -> st.SearchStrategy[str]:
    """Non-empty option labels (and ids), hostile ones included."""
    return _labels


@st.composite
def _non_blank(draw: st.DrawFn) -> str:
    text = _draw_hostile(draw, 1, _BRANCHES)
    if is_blank(text):
        # Keep the whitespace, so the text still tests trimming.
        text += draw(_solid_char)
    return text


_custom_texts: Final = _non_blank()


def custom_texts() -> st.SearchStrategy[str]:
    """Custom text with at least one non-whitespace character (``ANS-CUSTOM-1``).

    What a human types: hostile as :func:`hostile_text`, but valid UTF-8 (no
    lone surrogate, which no keyboard or UTF-8 input can produce).
    """
    return _custom_texts


def _fresh(label: str, taken: Collection[str]) -> str:
    """*label*, suffixed until it is none of *taken*."""
    while label in taken:
        label += "'"
    return label


# ---------------------------------------------------------------------------
# Well-formed requests
# ---------------------------------------------------------------------------

_booleans: Final = st.booleans()
_one_in_four: Final = st.integers(0, 3)
_one_in_five: Final = st.integers(0, 4)
_one_in_eight: Final = st.integers(0, 7)


@functools.cache
def _below(n: int) -> st.SearchStrategy[int]:
    """An index into a sequence of *n* items; shrinks toward the first."""
    return st.integers(0, n - 1)


@functools.cache
def _between(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


def _label_of(option: AskUserQuestionOption) -> str:
    return option["label"]


@st.composite
def _option_of(draw: st.DrawFn) -> AskUserQuestionOption:
    # As st.fixed_dictionaries with an optional description draws it (a description
    # half the time, then the keys in either order), in fewer draws.
    label = _draw_label(draw)
    if not draw(_booleans):
        return {"label": label}
    description = _draw_text(draw)
    if draw(_booleans):
        return {"description": description, "label": label}
    return {"label": label, "description": description}


_option: Final = _option_of()


@functools.cache
def _options(min_size: int, max_size: int) -> st.SearchStrategy[list[AskUserQuestionOption]]:
    return st.lists(_option, min_size=min_size, max_size=max_size, unique_by=_label_of)


def options(
    *, min_size: int = 0, max_size: int = 5
) -> st.SearchStrategy[list[AskUserQuestionOption]]:
    """A list of options with distinct labels (``REQ-OPTIONS-3``)."""
    return _options(min_size, max_size)


# Often two options or more, so multi-select questions have something to pick.
_offered: Final = st.one_of(st.none(), _options(0, 5), _options(2, 5))
# Multi-select half the time an option list is given explicitly.
_multi_select: Final = st.sampled_from((None, False, True, True))


def _draw_question(draw: st.DrawFn, question_id: str | None) -> AskUserQuestionItem:
    item: dict[str, object] = {
        "id": question_id if question_id is not None else _draw_label(draw),
        "question": _draw_label(draw),
    }
    if draw(_booleans):
        item["header"] = _draw_text(draw)
    offered = draw(_offered)
    if offered is not None:
        labels = _near_twin(draw, [option["label"] for option in offered])
        if labels != [option["label"] for option in offered]:
            offered = [
                {**option, "label": label} for option, label in zip(offered, labels, strict=True)
            ]
        item["options"] = offered
    multi = draw(_multi_select)
    if multi is not None:
        item["multiSelect"] = multi
    if offered and draw(_one_in_four) == 0:
        approve = offered[draw(_below(len(offered)))]["label"]
        item["intent"] = {"kind": "plan-review", "approve": approve}
        item["detail"] = _draw_label(draw)
    elif draw(_booleans):
        item["detail"] = _draw_text(draw)
    return cast("AskUserQuestionItem", item)


@st.composite
def questions(draw: st.DrawFn, *, question_id: str | None = None) -> AskUserQuestionItem:
    """One well-formed question, sometimes with a valid intent."""
    return _draw_question(draw, question_id)


@dataclass(eq=False)
class Agent:
    """A stand-in for a harness's own agent object: the seam must pass it through untouched."""

    #: What a UI may show for it.
    name: str

    def __str__(self) -> str:
        return self.name


_agents: Final[st.SearchStrategy[object]] = st.one_of(
    _hostile,
    st.builds(Agent, _hostile),
    st.builds(object),
    st.integers(),
    st.none(),
    st.builds(dict[str, object]),
)


def agents() -> st.SearchStrategy[object]:
    """The calling agent of a request: any object (``REQ-AGENT-2``).

    Text, ``None``, or an object with a ``name``; compared by identity, never by value.
    """
    return _agents


def _near_twin(draw: st.DrawFn, texts: list[str]) -> list[str]:
    """*texts*, one in four times with one of them a near miss of an earlier one.

    The two differ only by case, normalisation, surrounding whitespace or a
    look-alike: a service that compares ids or labels loosely refuses a request
    that the spec accepts (``REQ-ID-2``, ``REQ-OPTIONS-3``: distinct means
    different strings).
    """
    if len(texts) < 2 or draw(_one_in_four) != 0:
        return texts
    later = draw(_between(1, len(texts) - 1))
    missed = _near_miss(draw, texts[draw(_below(later))], texts)
    if missed:  # never empty: an id and a label must not be
        texts = [*texts[:later], missed, *texts[later + 1 :]]
    return texts


@st.composite
def _requests_of(draw: st.DrawFn, ids: st.SearchStrategy[list[str]]) -> AskUserQuestionRequest:
    request: dict[str, object] = {
        "questions": [
            _draw_question(draw, question_id) for question_id in _near_twin(draw, draw(ids))
        ]
    }
    if draw(_booleans):
        request["agent"] = draw(_agents)
    return cast("AskUserQuestionRequest", request)


@functools.cache
def _requests(min_questions: int, max_questions: int) -> st.SearchStrategy[AskUserQuestionRequest]:
    ids = st.lists(_labels, min_size=min_questions, max_size=max_questions, unique=True)
    return _requests_of(ids)


def requests(
    *, min_questions: int = 1, max_questions: int = 4
) -> st.SearchStrategy[AskUserQuestionRequest]:
    """A well-formed request without a signal, with distinct question ids."""
    return _requests(min_questions, max_questions)


# ---------------------------------------------------------------------------
# Malformed requests
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InvalidRequest:
    """A malformed request and what ``ask()`` must raise for it."""

    #: The request. It may hold any value where the spec wants a specific type.
    request: Any
    #: The code ``ask()`` must raise.
    code: ErrorCode
    #: The requirement the request breaks.
    requirement: str
    #: The field the message must name, when the code is ``BAD_REQUEST``.
    field: str | None = None
    #: The same request broken the same way by a near miss of each kind (case,
    #: normalisation, spacing, look), one kind alone in each, with the kind's
    #: name: ``ask()`` must raise the same code for every one. A loose
    #: comparison of one kind is then caught in every example, not in one of
    #: the kinds' share of them.
    also: tuple[tuple[str, Any], ...] = ()


_NOT_STRING: Final = st.one_of(
    st.none(), st.integers(), st.booleans(), st.lists(st.integers(), max_size=2)
)
_NOT_BOOL: Final = st.one_of(st.none(), st.integers(), st.text(max_size=3))
_NOT_LIST: Final = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
_NOT_MAPPING: Final = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)
)
_NOT_NON_EMPTY_STRING: Final = _NOT_STRING | st.just("")
#: Not an abort signal (``None`` counts as no signal).
_NOT_SIGNAL: Final[st.SearchStrategy[object]] = st.one_of(
    st.integers(),
    st.booleans(),
    st.text(max_size=3),
    st.builds(dict[str, object]),
    st.builds(object),
)
_BAD_OPTION: Final = st.one_of(
    _NOT_MAPPING,
    st.fixed_dictionaries({"label": _NOT_NON_EMPTY_STRING}),
    st.builds(lambda: {"description": "no label"}),
)
_BAD_INTENT: Final = st.one_of(
    _NOT_MAPPING,
    st.fixed_dictionaries({"kind": _NOT_STRING, "approve": st.just("Approve")}),
    st.fixed_dictionaries({"kind": st.just("plan-review"), "approve": _NOT_STRING}),
)
_INTENT_KIND: Final = st.sampled_from(("plan-review", "deploy-review"))

Question = dict[str, Any]
#: Breaks one question; returns the code and the field the message must name.
QuestionDefect = Callable[[st.DrawFn, Question], tuple[ErrorCode, str | None]]
#: Breaks a well-formed request (a mutable copy) in one way.
RequestDefect = Callable[[st.DrawFn, str, dict[str, Any]], InvalidRequest]


def _labels_of(question: Question) -> list[str]:
    return [option["label"] for option in question.get("options", [])]


def _set(key: str, values: st.SearchStrategy[object]) -> QuestionDefect:
    """A defect that sets *key* to one of *values*; the message names *key*."""

    def defect(draw: st.DrawFn, question: Question) -> tuple[ErrorCode, str | None]:
        question[key] = draw(values)
        return ErrorCode.BAD_REQUEST, key

    return defect


def _bad_options(draw: st.DrawFn, question: Question) -> tuple[ErrorCode, str | None]:
    if draw(_booleans):
        question["options"] = draw(_NOT_LIST)
    else:
        question["options"] = [*question.get("options", []), draw(_BAD_OPTION)]
    return ErrorCode.BAD_REQUEST, "options"


def _bad_description(draw: st.DrawFn, question: Question) -> tuple[ErrorCode, str | None]:
    name = _fresh(draw(_labels), _labels_of(question))
    question["options"] = [
        *question.get("options", []),
        {"label": name, "description": draw(_NOT_STRING)},
    ]
    return ErrorCode.BAD_REQUEST, "description"


def _duplicate_label(draw: st.DrawFn, question: Question) -> tuple[ErrorCode, str | None]:
    offered: list[dict[str, Any]] = question.get("options") or [{"label": draw(_labels)}]
    copied = dict(offered[draw(_below(len(offered)))])
    question["options"] = [*offered, copied]
    return ErrorCode.BAD_REQUEST, "label"


def _bad_intent(draw: st.DrawFn, question: Question) -> tuple[ErrorCode, str | None]:
    question["intent"] = draw(_BAD_INTENT)
    return ErrorCode.BAD_REQUEST, "intent"


#: Look-alike characters: each maps to another code point that looks the same.
_LOOK_ALIKES: Final = str.maketrans(
    "aceopxyAEHKMOPTXlI",
    # The Cyrillic letters of the same shapes, in the same order.
    "\u0430\u0441\u0435\u043e\u0440\u0445\u0443\u0410\u0415"
    "\u041d\u041a\u041c\u041e\u0420\u0422\u0425\u04cf\u0406",
)
#: How a near miss differs from the text it misses, one way at a time: by case,
#: by Unicode normalisation, by surrounding whitespace, or by a look-alike.
_NEAR_MISSES: Final[tuple[Callable[[str], str], ...]] = (
    str.swapcase,
    str.upper,
    str.lower,
    lambda text: unicodedata.normalize("NFC", text),
    lambda text: unicodedata.normalize("NFD", text),
    lambda text: unicodedata.normalize("NFKC", text),
    lambda text: unicodedata.normalize("NFKD", text),
    lambda text: f" {text}",
    lambda text: f"{text}\u00a0",
    str.strip,
    lambda text: text.translate(_LOOK_ALIKES),
    lambda text: f"{text[:1]}\u200b{text[1:]}",
)
_near_miss_kind: Final = st.integers(0, len(_NEAR_MISSES) - 1)


def _near_miss(draw: st.DrawFn, text: str, taken: Collection[str]) -> str | None:
    """*text* changed in one way an exact comparison must notice, and none of *taken*.

    ``None`` when no way changes it into something new.
    """
    first = draw(_near_miss_kind)
    for step in range(len(_NEAR_MISSES)):
        missed = _NEAR_MISSES[(first + step) % len(_NEAR_MISSES)](text)
        if missed != text and missed not in taken:
            return missed
    return None


def _approve_unknown(draw: st.DrawFn, question: Question) -> tuple[ErrorCode, str | None]:
    # 7 (the largest) is the rare branch: Hypothesis draws the simplest value, 0, often.
    if not question.get("options") and draw(_one_in_eight) != 7:
        question["options"] = draw(_options(1, 4))
    offered = _labels_of(question)
    approve = None
    if offered and draw(_one_in_eight) != 7:
        # Mostly a near miss of an offered label, so that a service comparing the
        # approve label loosely (case, normalisation, whitespace, look) is caught;
        # sometimes a label unlike any.
        approve = _near_miss(draw, offered[draw(_below(len(offered)))], offered)
    question["intent"] = {
        "kind": draw(_INTENT_KIND),
        "approve": approve if approve is not None else _fresh(draw(_labels), offered),
    }
    question["detail"] = "the plan"
    return ErrorCode.BAD_INTENT, None


def _look_alike(text: str) -> str:
    return text.translate(_LOOK_ALIKES)


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _ligature(text: str) -> str:
    return text.replace("fi", "\ufb01")


#: One near miss of each kind an exact comparison must notice: the kind's
#: name, a letter the kind changes (appended to an offered label that has
#: nothing the kind can change: no cased letter, no character that
#: normalises apart, no letter with a look-alike), and the near miss.
_EVERY_NEAR_MISS: Final[tuple[tuple[str, str, Callable[[str], str]], ...]] = (
    ("case", "a", str.swapcase),
    ("Unicode normalisation", "\u00e9", _nfd),
    ("Unicode compatibility", "fi", _ligature),
    ("leading whitespace", "x", lambda label: f" {label}"),
    ("trailing whitespace", "x", lambda label: f"{label}\u00a0"),
    ("a look-alike character", "o", _look_alike),
)


def _with_every_near_miss(defect: RequestDefect) -> RequestDefect:
    """*defect* (an approve label no option offers), and the same request missed each other way.

    Each of :attr:`InvalidRequest.also` is the request with the broken
    question's approve label replaced by a near miss of one kind of an
    offered label (the option's label made to hold what that kind changes),
    so a service that compares the label loosely in any one way fails in
    every example. Nothing more is drawn: the shrinker sees the same choices.
    """

    def build(draw: st.DrawFn, requirement: str, request: dict[str, Any]) -> InvalidRequest:
        case = defect(draw, requirement, request)
        target = next(
            (
                i
                for i, q in enumerate(case.request["questions"])
                if "intent" in q and q.get("options")
            ),
            None,
        )
        if target is None:
            return case
        also: list[tuple[str, Any]] = []
        for kind, letter, miss in _EVERY_NEAR_MISS:
            variant = copy.deepcopy(case.request)
            question = variant["questions"][target]
            options: list[dict[str, Any]] = question["options"]
            offered = [option["label"] for option in options]
            # The first offered label whose near miss of this kind no option
            # offers (one made able to be missed so, where needed); else the
            # first label with the kind's letter appended.
            candidates = [(i, x if miss(x) != x else x + letter) for i, x in enumerate(offered)]
            for index, able in [*candidates, (0, offered[0] + letter)]:
                label = able if able == offered[index] else _fresh(able, offered)
                missed = miss(label)
                if missed != label and missed not in offered:
                    options[index] = {**options[index], "label": label}
                    question["intent"] = {**question["intent"], "approve": missed}
                    also.append((kind, variant))
                    break
        return InvalidRequest(case.request, case.code, case.requirement, case.field, tuple(also))

    return build


def _detail_missing(draw: st.DrawFn, question: Question) -> tuple[ErrorCode, str | None]:
    offered: list[dict[str, Any]] = question.get("options") or [{"label": "Approve"}]
    question["options"] = offered
    approve = offered[draw(_below(len(offered)))]["label"]
    question["intent"] = {"kind": "plan-review", "approve": approve}
    if draw(_booleans):
        question.pop("detail", None)
    else:
        question["detail"] = ""
    return ErrorCode.BAD_INTENT, None


def _in_one_question(defect: QuestionDefect) -> RequestDefect:
    """A request defect that breaks one drawn question with *defect*."""

    def build(draw: st.DrawFn, requirement: str, request: dict[str, Any]) -> InvalidRequest:
        questions: list[Question] = request["questions"]
        target = questions[draw(_below(len(questions)))]
        # An unrelated intent elsewhere must not decide the outcome.
        for question in questions:
            question.pop("intent", None)
        code, field = defect(draw, target)
        return InvalidRequest(request, code, requirement, field)

    return build


def _aborted(draw: st.DrawFn, requirement: str, request: dict[str, Any]) -> InvalidRequest:
    # SVC-ORDER-1 wins over every other defect, so break something else too.
    request["signal"] = AbortSignal.abort()
    request["questions"] = ([], request["questions"], None)[draw(_below(3))]
    return InvalidRequest(request, ErrorCode.ASK_ABORTED, requirement)


def _no_questions(draw: st.DrawFn, requirement: str, request: dict[str, Any]) -> InvalidRequest:
    request["questions"] = []
    return InvalidRequest(request, ErrorCode.EMPTY_QUESTIONS, requirement)


def _questions_not_a_list(
    draw: st.DrawFn, requirement: str, request: dict[str, Any]
) -> InvalidRequest:
    if draw(_booleans):
        request.pop("questions")
    else:
        request["questions"] = draw(_NOT_LIST)
    return InvalidRequest(request, ErrorCode.BAD_REQUEST, requirement, "questions")


def _item_not_a_mapping(
    draw: st.DrawFn, requirement: str, request: dict[str, Any]
) -> InvalidRequest:
    index = draw(_below(len(request["questions"]) + 1))
    request["questions"].insert(index, draw(_NOT_MAPPING))
    return InvalidRequest(request, ErrorCode.BAD_REQUEST, requirement, f"questions[{index}]")


def _duplicate_id(draw: st.DrawFn, requirement: str, request: dict[str, Any]) -> InvalidRequest:
    questions: list[Question] = request["questions"]
    source = questions[draw(_below(len(questions)))]
    twin = dict(_draw_question(draw, source["id"]))
    twin.pop("intent", None)
    questions.append(twin)
    return InvalidRequest(request, ErrorCode.BAD_REQUEST, requirement, "id")


def _bad_signal(draw: st.DrawFn, requirement: str, request: dict[str, Any]) -> InvalidRequest:
    request["signal"] = draw(_NOT_SIGNAL)
    return InvalidRequest(request, ErrorCode.BAD_REQUEST, requirement, "signal")


#: Every requirement a malformed request can break, and how to break it alone.
#: :func:`invalid_requests` picks a requirement first, so each is equally likely.
_DEFECTS: Final[dict[str, RequestDefect]] = {
    "SVC-ORDER-1": _aborted,
    "SVC-ORDER-2": _no_questions,
    "REQ-QUESTIONS-1": _questions_not_a_list,
    "REQ-ITEM-1": _item_not_a_mapping,
    "REQ-ID-1": _in_one_question(_set("id", _NOT_NON_EMPTY_STRING)),
    "REQ-ID-2": _duplicate_id,
    "REQ-TEXT-1": _in_one_question(_set("question", _NOT_NON_EMPTY_STRING)),
    "REQ-HEADER-1": _in_one_question(_set("header", _NOT_STRING)),
    "REQ-DETAIL-1": _in_one_question(_set("detail", _NOT_STRING)),
    "REQ-OPTIONS-1": _in_one_question(_bad_options),
    "REQ-OPTIONS-2": _in_one_question(_bad_description),
    "REQ-OPTIONS-3": _in_one_question(_duplicate_label),
    "REQ-MULTI-1": _in_one_question(_set("multiSelect", _NOT_BOOL)),
    "REQ-INTENT-1": _in_one_question(_bad_intent),
    "REQ-SIGNAL-1": _bad_signal,
    "INT-APPROVE-1": _with_every_near_miss(_in_one_question(_approve_unknown)),
    "INT-DETAIL-1": _in_one_question(_detail_missing),
}
_REQUIREMENTS: Final = st.sampled_from(tuple(_DEFECTS))


def _plain(request: AskUserQuestionRequest) -> dict[str, Any]:
    """A deep, mutable copy of a drawn request."""
    copied: dict[str, Any] = dict(request)
    copied["questions"] = [
        {**question, "options": [dict(option) for option in question.get("options", [])]}
        if "options" in question
        else dict(question)
        for question in request["questions"]
    ]
    return copied


_base_requests: Final = _requests(1, 4)


@st.composite
def _invalid_requests(draw: st.DrawFn, only: str | None = None) -> InvalidRequest:
    # The requirement first, so each is equally likely whatever its defect draws. Every
    # defect starts from a whole drawn request, even one whose questions it replaces:
    # Hypothesis mutates larger examples more, so drawing less for some requirements
    # would make them rarer in practice.
    requirement = only if only is not None else draw(_REQUIREMENTS)
    return _DEFECTS[requirement](draw, requirement, _plain(draw(_base_requests)))


#: Every requirement :func:`invalid_requests` can break, in spec order.
INVALID_REQUEST_REQUIREMENTS: Final = tuple(_DEFECTS)
_invalid: Final = _invalid_requests()
_invalid_for: Final = {r: _invalid_requests(r) for r in _DEFECTS}


def invalid_requests(*, requirement: str | None = None) -> st.SearchStrategy[InvalidRequest]:
    """A request with exactly one defect, and the error ``ask()`` must raise.

    The rest of the request is well-formed, so the defect alone decides the
    outcome. Every requirement a request can break (``SVC-ORDER-1``,
    ``SVC-ORDER-2``, ``REQ-*``, ``INT-*``; see
    :data:`INVALID_REQUEST_REQUIREMENTS`) is equally likely, unless
    *requirement* names the one to break.
    """
    if requirement is None:
        return _invalid
    if requirement not in _invalid_for:
        raise ValueError(f"no malformed request breaks {requirement!r}")
    return _invalid_for[requirement]


# ---------------------------------------------------------------------------
# What the human does
# ---------------------------------------------------------------------------

_SKIP: Final = "skip"
_PICK: Final = "pick"
_TYPE: Final = "type"
_PICK_AND_TYPE: Final = "pick and type"
_REVISE: Final = "revise"
_REVISE_AND_SKIP: Final = "revise and skip"
_DEFAULT_CAPABILITIES: Final = Capabilities()


@functools.cache
def _kinds(has_options: bool, multi: bool, capabilities: Capabilities) -> st.SearchStrategy[str]:
    """What the human may do with a question of this shape; shrinks toward the first."""
    custom = capabilities.custom_on_multi if multi else capabilities.custom_on_single
    skip = [_SKIP] if capabilities.can_skip else []
    revise = [_REVISE] if capabilities.revises else []
    # Skip among the changes of mind: a kind of its own, so that the revisions
    # without it are drawn as often as before it came.
    revise_and_skip = [_REVISE_AND_SKIP] if capabilities.revises and capabilities.can_skip else []
    # Typing comes first where it is allowed: the simplest example, which Hypothesis
    # draws often early on, then carries hostile text (and on a single-select, text
    # that must override the choice).
    # Revising: often on a single-select (pick, then type; pick again), seldom where
    # there is only text to type over.
    if not has_options:
        kinds = [_TYPE, *skip, _TYPE, _TYPE, *revise, *revise_and_skip, *revise]
    elif not multi:
        kinds = (
            [_TYPE, _PICK, *skip, _PICK, *revise, *revise, *revise, *revise_and_skip, *revise]
            if custom
            else [_PICK, *skip, *revise, *revise_and_skip]
        )
    else:
        # Picking first, and three times as likely as the rest, so that several
        # labels are picked in more than half the examples (see _draw_labels).
        picks = [_PICK, _PICK_AND_TYPE] if custom else [_PICK]
        # Picking and typing once more: a UI that lets the text replace the picks is
        # seen only then (or in a revision that leaves both).
        also = [_TYPE, _PICK_AND_TYPE] if custom else []
        kinds = [*picks, *skip, *also, *picks, *picks, *revise, *revise_and_skip, *revise_and_skip]
    return st.sampled_from(kinds)


#: How a revision uses Skip: not at all, skipped at the end ("pick, then skip"), or
#: skipped and taken back ("skip, then pick").
_NO_SKIP: Final = "no skip"
_ENDS_SKIPPED: Final = "ends skipped"
_SKIP_TAKEN_BACK: Final = "skip taken back"
_skip_plans: Final = st.sampled_from((_ENDS_SKIPPED, _SKIP_TAKEN_BACK))


@dataclass
class _Draft:
    """What a question holds while a revision is drawn, and the steps taken so far."""

    offered: Sequence[str]
    multi: bool
    custom: bool
    steps: list[Step] = field(default_factory=list[Step])
    picked: list[str] = field(default_factory=list[str])
    text: str = ""
    #: Labels the next pick passes over: a single-select's pick before a skip taken
    #: back, so that the pick after it is another one.
    passed_over: list[str] = field(default_factory=list[str])

    def change(self, draw: st.DrawFn) -> bool:
        """Take one drawn step of changing one's mind; False when there is none to take."""
        offered, multi = self.offered, self.multi
        # Typing first where it is allowed: on a single-select, the pick is then
        # overridden by the text, the first thing a UI may get wrong.
        moves: list[str] = ["type"] if self.custom or not offered else []
        if self.text:
            moves.append("clear")
        others = [label for label in offered if label not in self.picked]
        others = [label for label in others if label not in self.passed_over] or others
        if others:
            # Twice as likely on a single-select: the change that stays visible.
            moves += ["pick"] if multi else ["pick", "pick"]
        if self.picked and multi:
            moves.append("unpick")
        if not moves:
            return False  # one option and no text box: there is no mind to change
        move = draw(_ways(tuple(moves)))
        if move == "pick":
            if self.text and not multi:
                self.steps.append(("clear", ""))
                self.text = ""
            label = others[draw(_below(len(others)))]
            self.picked = [*self.picked, label] if multi else [label]
            self.passed_over = []
            self.steps.append(("pick", label))
        elif move == "unpick":
            label = self.picked.pop(draw(_below(len(self.picked))))
            self.steps.append(("unpick", label))
        elif move == "type":
            self.type_text(draw)
        else:
            self.text = ""
            self.steps.append(("clear", ""))
        return True

    def type_text(self, draw: st.DrawFn) -> None:
        """Type a drawn text over what the text field holds."""
        self.text = draw(_custom_texts)
        self.steps.append(("type", self.text))

    def start(self, draw: st.DrawFn) -> None:
        """A first pick (or, without options, a first text)."""
        if self.offered:
            first = self.offered[draw(_below(len(self.offered)))]
            self.steps.append(("pick", first))
            self.picked.append(first)
        else:
            self.text = draw(_custom_texts)
            self.steps.append(("type", self.text))

    def skip_and_take_back(self) -> None:
        """Skip, take the skip back, and empty the question whatever the unskip gave back.

        Whether an unskip gives the draft back is the UI's design: the labels
        it held are unpicked and its text cleared, which a UI that emptied it
        takes as no change. A single-select's pick cannot be undone so: it is
        forgotten here, and a pick of another option (or text) follows before
        the question is sent.
        """
        self.steps.extend((("skip", ""), ("unskip", "")))
        if self.multi:
            self.steps.extend(("unpick", label) for label in self.picked)
        else:
            self.passed_over = self.picked
        if self.text:
            self.steps.append(("clear", ""))
        self.picked, self.text = [], ""

    def finish(self, draw: st.DrawFn) -> None:
        """Leave something to answer with: a pick, or without options a text."""
        if self.picked or self.text:
            return
        if self.offered:
            offered = [label for label in self.offered if label not in self.passed_over]
            offered = offered or list(self.offered)
            self.steps.append(("pick", offered[draw(_below(len(offered)))]))
        else:
            self.steps.append(("type", draw(_custom_texts)))


def _draw_revision(
    draw: st.DrawFn, offered: Sequence[str], multi: bool, custom: bool, skips: bool
) -> tuple[Step, ...]:
    """A pick (or, without options, a text), then one to three steps of changing one's mind.

    A later pick on a single-select picks another option, and there a pick
    while text is typed comes after a ``clear``: whether a pick keeps the text
    (which then overrides it) or replaces it is the UI's design, so the suite
    never asks for it. A revision that *skips* skips after all the changes
    ("pick, then skip", the question answering nothing), or takes the skip
    back, from the start ("skip, then pick") or after the first changes, with
    more changes after it (see :class:`Revise`).
    """
    draft = _Draft(offered, multi, custom)
    plan = draw(_skip_plans) if skips else _NO_SKIP
    skip_first = plan == _SKIP_TAKEN_BACK and draw(_one_in_four) == 0
    if not skip_first:
        draft.start(draw)
        for _ in range(draw(_between(0 if plan == _SKIP_TAKEN_BACK else 1, 3))):
            if not draft.change(draw):
                break
    if plan == _ENDS_SKIPPED:
        draft.finish(draw)  # something to skip: a skip that changes nothing shows nothing
        draft.steps.append(("skip", ""))
        return tuple(draft.steps)
    if plan == _SKIP_TAKEN_BACK:
        draft.skip_and_take_back()
        changes = draw(_between(1, 2))
        if draft.passed_over and custom:
            # A single-select whose pick may be back (the web page gives it back):
            # text typed now must override it, the first thing a UI may get wrong.
            draft.type_text(draw)
            changes -= 1
        for _ in range(changes):
            if not draft.change(draw):
                break
    draft.finish(draw)
    return tuple(draft.steps)


def _draw_labels(draw: st.DrawFn, offered: Sequence[str], multi: bool) -> tuple[str, ...]:
    """One label, or on a multi-select one or more distinct labels in a drawn order."""
    if not multi or len(offered) == 1:
        return (offered[draw(_below(len(offered)))],)
    # Several labels four times in five, and in the simplest case: Hypothesis completes
    # many early examples with the simplest choices, and those should pick several too.
    count = 1 if draw(_one_in_five) == 4 else draw(_between(2, len(offered)))
    remaining = list(offered)
    return tuple(remaining.pop(draw(_below(len(remaining)))) for _ in range(count))


@functools.cache
def _ways(names: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(names)


def _draw_way(draw: st.DrawFn, capabilities: Capabilities, action: str) -> str | None:
    """One of the ways the driver declared for *action* (shrinking to the usual one), or None."""
    names = capabilities.ways_of(action)
    return draw(_ways(names)) if names else None


def _draw_action(
    draw: st.DrawFn, question: AskUserQuestionItem, capabilities: Capabilities
) -> Action:
    offered = [option["label"] for option in question.get("options", ())]
    multi = question.get("multiSelect") is True
    kind = draw(_kinds(bool(offered), multi, capabilities))
    if kind == _SKIP:
        return Skip(_draw_way(draw, capabilities, "skip"))
    if kind == _PICK:
        return Pick(_draw_labels(draw, offered, multi), _draw_way(draw, capabilities, "pick"))
    if kind in {_REVISE, _REVISE_AND_SKIP}:
        custom = capabilities.custom_on_multi if multi else capabilities.custom_on_single
        steps = _draw_revision(draw, offered, multi, custom, kind == _REVISE_AND_SKIP)
        return Revise(tuple(_step_as_typed(step, capabilities) for step in steps))
    text = draw(_custom_texts)
    labels = _draw_labels(draw, offered, multi) if kind == _PICK_AND_TYPE else ()
    return TypeText(_as_typed(text, capabilities), labels, _draw_way(draw, capabilities, "type"))


def _step_as_typed(step: Step, capabilities: Capabilities) -> Step:
    return ("type", _as_typed(step[1], capabilities)) if step[0] == "type" else step


def _as_typed(text: str, capabilities: Capabilities) -> str:
    """*text* as the UI's text field can hold it: a line feed for each CR, CRLF included."""
    if capabilities.keeps_carriage_returns or "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _draw_actions(
    draw: st.DrawFn, request: AskUserQuestionRequest, capabilities: Capabilities
) -> tuple[Action, ...]:
    return tuple(_draw_action(draw, question, capabilities) for question in request["questions"])


@st.composite
def _actions(
    draw: st.DrawFn, request: AskUserQuestionRequest, capabilities: Capabilities
) -> tuple[Action, ...]:
    return _draw_actions(draw, request, capabilities)


def actions(
    request: AskUserQuestionRequest, capabilities: Capabilities | None = None
) -> st.SearchStrategy[tuple[Action, ...]]:
    """One action per question that a UI with *capabilities* can perform.

    On a multi-select question with two or more options, the human picks two
    or more labels, in a drawn order, in more than half the examples.
    """
    return _actions(request, capabilities or _DEFAULT_CAPABILITIES)


_ANSWER: Final = "answer"
_DISMISS: Final = "dismiss"
_NOTHING: Final = "nothing"


@functools.cache
def _outcomes(can_dismiss: bool, include_nothing: bool) -> st.SearchStrategy[str]:
    outcomes = [_ANSWER]
    if can_dismiss:
        outcomes.append(_DISMISS)
    if include_nothing:
        outcomes.append(_NOTHING)
    return st.sampled_from(outcomes)


@st.composite
def _behaviours(
    draw: st.DrawFn,
    request: AskUserQuestionRequest,
    capabilities: Capabilities,
    include_nothing: bool,
) -> Behaviour:
    outcome = draw(_outcomes(capabilities.can_dismiss, include_nothing))
    if outcome == _DISMISS:
        return Dismiss(_draw_way(draw, capabilities, "dismiss"))
    if outcome == _NOTHING:
        return Nothing()
    return _draw_actions(draw, request, capabilities)


@st.composite
def _dismissals(draw: st.DrawFn, capabilities: Capabilities) -> Dismiss:
    return Dismiss(_draw_way(draw, capabilities, "dismiss"))


def dismissals(capabilities: Capabilities | None = None) -> st.SearchStrategy[Dismiss]:
    """A dismissal of the batch, in one of the ways the driver declared for it.

    >>> from hypothesis import find
    >>> from dsh_user_interaction_conformance import Capabilities
    >>> find(dismissals(Capabilities(ways={"dismiss": ["esc", "ctrl-c"]})), lambda d: True)
    Dismiss(way='esc')
    """
    return _dismissals(capabilities or _DEFAULT_CAPABILITIES)


def behaviours(
    request: AskUserQuestionRequest,
    capabilities: Capabilities | None = None,
    *,
    include_nothing: bool = False,
) -> st.SearchStrategy[Behaviour]:
    """Answer every question, or dismiss the batch, or (optionally) do nothing."""
    return _behaviours(request, capabilities or _DEFAULT_CAPABILITIES, include_nothing)


# ---------------------------------------------------------------------------
# Answers
# ---------------------------------------------------------------------------


def _draw_valid_answer(draw: st.DrawFn, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    return expected_answer(request, _draw_actions(draw, request, _DEFAULT_CAPABILITIES))


@st.composite
def valid_answers(draw: st.DrawFn, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """An answer that keeps every answer rule for *request*."""
    return _draw_valid_answer(draw, request)


@dataclass(frozen=True)
class InvalidAnswer:
    """An answer that breaks one rule, and that rule's requirement ID."""

    answer: Any
    requirement: str
    #: The same request and answer missed by each kind of near miss (case,
    #: normalisation, spacing, look), one kind alone in each, as ``(kind, request,
    #: answer)``, for a near miss of an id or a label; every one breaks the same rule. A
    #: service comparing loosely in one way is then caught in every example, not in
    #: that kind's share of them.
    also: tuple[tuple[str, Any, Any], ...] = ()


def _every_answer_near_miss(
    request: AskUserQuestionRequest, answer: dict[str, Any], index: int, *, label: bool
) -> tuple[tuple[str, Any, Any], ...]:
    """*request* and *answer* with item *index*'s id (or its label) missed by each kind.

    The question's id (or an offered label) is made to hold what the kind
    changes where it holds nothing, so that every kind applies; a variant
    ``ask()`` would refuse before asking (a label an intent names) is left
    out.
    """
    found: list[tuple[str, Any, Any]] = []
    for kind, letter, miss in _EVERY_NEAR_MISS:
        variant = cast("dict[str, Any]", {**request})
        questions: list[dict[str, Any]] = [dict(q) for q in request["questions"]]
        variant["questions"] = questions
        missed_answer = copy.deepcopy(answer)
        item: dict[str, Any] = missed_answer["answers"][index]
        question = questions[index]
        if label:
            given: list[dict[str, Any]] = question["options"]
            options = [dict(option) for option in given]
            question["options"] = options
            offered: list[str] = [option["label"] for option in options]
            candidates = [(i, x if miss(x) != x else x + letter) for i, x in enumerate(offered)]
            for at, able in [*candidates, (0, offered[0] + letter)]:
                text = able if able == offered[at] else _fresh(able, offered)
                missed = miss(text)
                if missed != text and missed not in offered:
                    options[at]["label"] = text
                    item["selected"] = [missed]
                    item.pop("custom", None)
                    break
            else:
                continue
        else:
            ids: list[str] = [q["id"] for q in questions]
            own: str = question["id"]
            able = own if miss(own) != own else own + letter
            text = able if able == own else _fresh(able, ids)
            missed = miss(text)
            if missed == text or missed in ids:
                continue
            question["id"] = text
            item["id"] = missed
        try:
            check_request(variant)
        except UserInteractionError:
            continue  # an intent's approve label, or the like, named the label changed
        found.append((kind, variant, missed_answer))
    return tuple(found)


# Drawn values are copied, so no two examples share a mutable object.
_NOT_AN_ANSWER: Final[st.SearchStrategy[object]] = st.sampled_from(
    (None, [], "answers", {"answers": None}, {})
)
_NOT_A_SELECTION: Final = st.sampled_from((None, "label", [1], {"a": 1}))
#: Blank as JavaScript's ``trim`` sees it, but not as Python's ``strip`` does.
_JS_BLANK_ONLY: Final = st.sampled_from(("\ufeff", "\t\ufeff", "\ufeff\u2028 "))
#: Blank as JavaScript's ``trim`` sees it; the last three are not blank to Python's
#: ``strip``, which keeps U+FEFF.
_BLANK: Final = st.sampled_from(("", " ", "\n\t", "\u3000", "\ufeff", "\t\ufeff", "\ufeff\u2028 "))


@functools.cache
@functools.cache
def _breakers(has_options: bool, multi: bool, several: bool) -> st.SearchStrategy[str]:
    breakers = ["shape", "keys", "count", "order", "sel-type", "sel-unknown", "blank"]
    if has_options:
        breakers.append("sel-dup")
    if has_options and not multi and several:
        breakers.append("single-many")
    if has_options and not multi:
        breakers.append("single-custom")
    return st.sampled_from(breakers)


@st.composite
def invalid_answers(draw: st.DrawFn, request: AskUserQuestionRequest) -> InvalidAnswer:
    """An answer to *request* that breaks exactly one ``MUST`` rule (it may break more)."""
    return _draw_invalid_answer(draw, request, near_misses=False)


@st.composite
def near_miss_answers(draw: st.DrawFn, request: AskUserQuestionRequest) -> InvalidAnswer:
    """An answer to *request* whose id, label or custom text misses by a hair.

    The item's id differs from its question's (``ANS-ORDER-1``), or a label from
    an offered one (``ANS-SEL-3``), mostly in one way only: by case, Unicode
    normalisation, surrounding whitespace or a look-alike. A service that
    compares them loosely accepts it. Or its custom text is blank as
    JavaScript's ``trim`` sees it but not as Python's ``strip`` does (U+FEFF,
    ``ANS-CUSTOM-1``), which a service judging it in Python's way accepts.
    """
    return _draw_invalid_answer(draw, request, near_misses=True)


def _draw_invalid_answer(
    draw: st.DrawFn, request: AskUserQuestionRequest, *, near_misses: bool
) -> InvalidAnswer:
    answer: dict[str, Any] = dict(_draw_valid_answer(draw, request))
    items: list[dict[str, Any]] = [dict(item) for item in answer["answers"]]
    answer["answers"] = items
    with_options = [n for n, q in enumerate(request["questions"]) if q.get("options")]
    label_miss = near_misses and bool(with_options) and draw(_booleans)
    if label_miss:  # a label's near miss, on a question that offers labels
        index = with_options[draw(_below(len(with_options)))]
    else:
        index = draw(_below(len(items)))
    item, question = items[index], request["questions"][index]
    offered = [option["label"] for option in question.get("options", ())]
    multi = question.get("multiSelect") is True
    if near_misses:
        # Mostly the id's near miss: blank text by one language only is one in four.
        blank_miss = not label_miss and draw(_one_in_four) == 0
        breaker = "sel-unknown" if label_miss else ("js-blank" if blank_miss else "order")
    else:
        breaker = draw(_breakers(bool(offered), multi, len(offered) >= 2))
    if breaker == "shape":
        return InvalidAnswer(copy.deepcopy(draw(_NOT_AN_ANSWER)), "ANS-SHAPE-1")
    if breaker == "keys":
        if draw(_booleans):
            item["note"] = "extra"
        else:
            answer["extra"] = True
        return InvalidAnswer(answer, "ANS-KEYS-1")
    if breaker == "count":
        if draw(_booleans) or len(items) == 1:
            items.append(dict(items[-1]))
        else:
            items.pop()
        return InvalidAnswer(answer, "ANS-COUNT-1")
    if breaker == "order":
        # Mostly a near miss of the question's id, so that a service matching ids
        # loosely (case, normalisation, whitespace, look) is caught.
        ids = [q["id"] for q in request["questions"]]
        near = None
        if near_misses or draw(_one_in_eight) != 7:
            near = _near_miss(draw, question["id"], ids)
        item["id"] = near or _fresh(draw(_labels), (question["id"],))
        if near_misses:
            also = _every_answer_near_miss(request, answer, index, label=False)
            return InvalidAnswer(answer, "ANS-ORDER-1", also)
        return InvalidAnswer(answer, "ANS-ORDER-1")
    if breaker == "sel-type":
        item["selected"] = copy.deepcopy(draw(_NOT_A_SELECTION))
        return InvalidAnswer(answer, "ANS-SEL-1")
    if breaker == "sel-unknown":
        # Mostly a near miss of an offered label, as for the approve label.
        near = None
        if offered and (near_misses or draw(_one_in_eight) != 7):
            near = _near_miss(draw, offered[draw(_below(len(offered)))], offered)
        item["selected"] = [near or _fresh(draw(_labels), offered)]
        item.pop("custom", None)
        if near_misses:
            also = _every_answer_near_miss(request, answer, index, label=True)
            return InvalidAnswer(answer, "ANS-SEL-3", also)
        return InvalidAnswer(answer, "ANS-SEL-3")
    if breaker in {"blank", "js-blank"}:
        item["custom"] = draw(_BLANK if breaker == "blank" else _JS_BLANK_ONLY)
        if not multi:
            item["selected"] = []  # custom text stands alone on a single-select
        return InvalidAnswer(answer, "ANS-CUSTOM-1")
    if breaker == "sel-dup":
        label = offered[draw(_below(len(offered)))]
        item["selected"] = [label, label]
        item.pop("custom", None)
        return InvalidAnswer(answer, "ANS-SEL-2")
    if breaker == "single-many":
        first = draw(_below(len(offered)))
        second = draw(_below(len(offered) - 1))
        second += second >= first
        item["selected"] = [offered[first], offered[second]]
        item.pop("custom", None)
        return InvalidAnswer(answer, "ANS-SINGLE-1")
    item["selected"] = [offered[draw(_below(len(offered)))]]
    item["custom"] = draw(_custom_texts)
    return InvalidAnswer(answer, "ANS-SINGLE-2")
