"""What the store machine's examples draw: awkward text and ids, times, outcomes and turns.

The strategies are the module's constants; :class:`Drawing` draws from them
for a step, in the order each rule needs them (the order is part of a seed's
example: keep it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from hypothesis import strategies as st

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest
from dsh_user_interaction.durable import Outcome, StoredRequest, stored_request

from ..strategies import _pairs_up, hostile_text, requests, valid_answers
from ._example import StoreExample

__all__ = ["ASK_IDS", "EPOCHS", "TURNS", "Drawing"]


#: Pieces of awkward text: twins under case folding, normalisation and trimming,
#: controls (NUL among them), invisible and bidi characters, an emoji, lone
#: surrogates, quoting, and what SQL's LIKE and a shell treat specially.
_PIECES: Final = (
    "a",
    "A",
    "\u00e9",
    "e\u0301",
    "\u00df",
    "ss",
    " ",
    "\t",
    "\x00",
    "\x7f",
    "\u202e",
    "\u200b",
    "\ufeff",
    "\U0001f600",
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
    "\r\n",
    "'",
    '"',
    "\\",
    "%",
    "_",
    "call_1",
    "toolu_01",
)


def _unpaired(pieces: Sequence[str]) -> str:
    """The pieces joined, with a ``-`` between any high surrogate and a low one after it.

    Such a pair would be one character to JSON and to every UTF-16
    language, so the suite never draws one.
    """
    text = "".join(pieces)
    if not _pairs_up(text):
        return text
    out: list[str] = []
    for char in text:
        if out and "\ud800" <= out[-1] <= "\udbff" and "\udc00" <= char <= "\udfff":
            out.append("-")
        out.append(char)
    return "".join(out)


def _joined(min_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_PIECES), min_size=min_size, max_size=5).map(_unpaired)


#: Text as a UI may name who answered, and itself: awkward on purpose.
_awkward: Final = st.one_of(_joined(0), hostile_text())

_principals: Final = st.none() | _awkward

#: Ask ids: plain ones, and awkward ones (twins, NUL, lone surrogates).
ASK_IDS: Final = st.one_of(
    st.text("abc-_0123456789", min_size=1, max_size=6),
    _joined(1),
    hostile_text(min_size=1).map(lambda text: text[:24]),
)

#: Where an example's clock starts: at zero, or at a present-day epoch time,
#: where a millisecond or a microsecond is the last digits of a double.
EPOCHS: Final = st.sampled_from((0.0, 1_700_000_000.0, 1_754_321_098.765_432_1))

#: How far the clock moves at each change: often not at all (ties).
_STEPS: Final = st.one_of(
    st.sampled_from((0.0, 0.0, 1e-6, 0.001, 0.25, 1.0, 60.0, 86_400.0)),
    st.floats(0.0, 10.0, allow_nan=False, allow_infinity=False),
)

#: How long before the clock a settlement says it was made (UIs disagree on the time).
_BACKDATES: Final = st.sampled_from((0.0, 0.0, 0.0, 0.5, 30.0))

#: Extra JSON data a request may carry (REQ-EXTRA-1): numbers of every kind.
_JSON: Final = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.sampled_from((0.1, 1e308, 5e-324, -0.0, 2.0**53 + 1))
    | st.floats(allow_nan=False, allow_infinity=False)
    | _awkward,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_awkward, inner, max_size=3),
    max_leaves=6,
)

#: Which of the two racing calls takes each next step (see :func:`~._loop.interleaved`).
TURNS: Final = st.lists(st.integers(0, 1), max_size=16)

_STATES: Final = st.sampled_from(("answered", "answered", "cancelled", "aborted", "expired"))


class Drawing(StoreExample):
    """The draws a step makes: a store, the time, an ask id, a request, an outcome."""

    def _handle(self, data: st.DataObject, *, other_than: int | None = None) -> int:
        choices = [i for i in range(len(self.handles)) if i != other_than]
        return data.draw(st.sampled_from(choices), label="store")

    def _tick(self, data: st.DataObject) -> float:
        self.now += data.draw(_STEPS, label="time passes")
        return self.now

    def _fresh_id(self, data: st.DataObject) -> str:
        known = self.truth.records
        return data.draw(ASK_IDS.filter(lambda i: i not in known), label="ask id")

    def _request(
        self, data: st.DataObject, ask_id: str
    ) -> tuple[StoredRequest, AskUserQuestionRequest]:
        original = data.draw(requests(max_questions=2), label="request")
        stored = dict(stored_request(original))
        stored["askId"] = ask_id
        if data.draw(st.booleans(), label="with extra data"):
            stored["meta"] = data.draw(_JSON, label="extra data")
        return stored, original

    def _outcome(self, data: st.DataObject, ask_id: str) -> Outcome:
        state = data.draw(_STATES, label="outcome")
        via = data.draw(_principals, label="via")
        if state == "answered":
            original = self.originals.get(ask_id)
            answer: AskUserQuestionAnswer
            if original is not None:
                answer = data.draw(valid_answers(original), label="answer")
            else:
                answer = {"answers": []}
            principal = data.draw(_principals, label="principal")
            return Outcome.answered(answer, principal=principal, via=via)
        if state == "cancelled":
            return Outcome.cancelled(principal=data.draw(_principals, label="principal"), via=via)
        if state == "aborted":
            return Outcome.aborted(via=via)
        return Outcome.expired(via=via)

    def _settled_at(self, data: st.DataObject) -> float:
        return self._tick(data) - data.draw(_BACKDATES, label="backdated by")

    def _cursor(self, data: st.DataObject, *, beyond: bool = True) -> int:
        """A change number to list or watch from: one made, one less, none, or (*beyond*) more."""
        seqs = sorted(self.truth.history)
        high = self.truth.high
        choices = [0, high, *seqs, *(s - 1 for s in seqs if s > 0)]
        if beyond:
            choices += [high + 1, -1]
        return data.draw(st.sampled_from(sorted(set(choices))), label="after change number")

    def _settled_times(self) -> list[float]:
        return sorted({r.settled_at for r in self.truth.settled() if r.settled_at is not None})

    def _about(self, data: st.DataObject, label: str) -> float:
        """A time at, just before or just after a settlement, or before or after them all."""
        times = [*self._settled_times(), self.now]
        near = data.draw(st.sampled_from(times), label=f"{label} near")
        return near + data.draw(st.sampled_from((0.0, 0.0, -1e-3, 1e-3, -1e6, 1e6)), label=label)
