"""The store suite's checks: a state machine of agents and UIs sharing one store's data.

Design notes (the rules the checks keep):

Rule 1: several stores on the same data, one model of the truth. Each
example opens two or three stores on a fresh subject (as several
processes or machines would), then plays agents that put asks and UIs
that settle them, through stores drawn at random, and judges every call
against :class:`~._store_model.Truth`. The calls run one at a time, so
"as soon as the call returned" is the order of the steps: right after a
put or a settlement, another store reads it back, and the newest change
number lists it alone. The two races (two settlements, or two puts, of
one ask at once) run on one loop, interleaved one step at a time in an
order the example draws (:func:`~._store_loop.interleaved`), so that a seed
replays a race as it ran, whatever the threads' timing. Every
example that did not fail ends with a restart (every store closed, the
data opened again), which must lose nothing.

Rule 2: every failure names a requirement of the spec's section 7
(:data:`STORE_REQUIREMENTS`). A call that raises, or returns something
that is not the truth, fails the requirement of what it shows;
:func:`~._store_model.blame` tells an outcome that was overwritten, text
that did not round-trip, and a change number apart. A call that raises
on text holding NUL or a lone surrogate fails ``DUR-STORE-3``: a store
keeps any text.

Rule 3: every call is bounded (:mod:`._store_loop`), by the run's bound,
five seconds unless told. A call that takes longer fails its requirement
and ends the example unshrunk, since every further try would wait again.
A watcher gets the same bound to show the last change; the verdict is a
missed, repeated or misordered change, or one not shown within the
bound, never how long the machine took.

Rule 4: every example cleans up after itself, whatever happened: each
store it opened is closed, the subject's data is cleaned away, and its
loop is stopped (or, when the store holds it, abandoned).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeGuard, cast

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest
from dsh_user_interaction.durable import (
    AskRecord,
    AskStore,
    Outcome,
    Settlement,
    StoredRequest,
    stored_request,
)

from ._engine import Failure, SetupAbort, SetupError, require_methods
from ._registry import Requirement, requirements
from ._store_loop import Late, StoreLoop, Stuck, interleaved
from ._store_model import Truth, differences, same
from ._store_subject import StoreSubject
from .strategies import _pairs_up, hostile_text, requests, valid_answers

__all__ = [
    "STORE_CHECK",
    "STORE_REQUIREMENTS",
    "Attempt",
    "SetupAbort",
    "StopExample",
    "StoreMachine",
    "brief",
    "make_subject",
    "store_requirements",
]


#: The name reports give the store suite's one check.
STORE_CHECK: Final = "store-machine"

#: The requirements the state machine judges, the store's own rules (spec section 7).
STORE_REQUIREMENTS: Final = (
    "DUR-STORE-1",
    "DUR-ONCE-1",
    "DUR-STORE-2",
    "DUR-STORE-3",
    "DUR-STORE-4",
    "DUR-STORE-5",
    "DUR-WATCH-1",
    "DUR-REOPEN-1",
    "DUR-AUDIT-1",
)

#: The methods a store must have (the ``AskStore`` protocol).
_METHODS: Final = (
    "put",
    "get",
    "pending",
    "settle",
    "changes",
    "watch",
    "records",
    "purge",
    "close",
)


def store_requirements() -> dict[str, Requirement]:
    """The state machine's requirements, as the spec words them, in the spec's order."""
    spec = requirements()
    return {rid: spec[rid] for rid in spec if rid in STORE_REQUIREMENTS}


# ---------------------------------------------------------------------------
# What the examples draw
# ---------------------------------------------------------------------------

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
_ask_ids: Final = st.one_of(
    st.text("abc-_0123456789", min_size=1, max_size=6),
    _joined(1),
    hostile_text(min_size=1).map(lambda text: text[:24]),
)
#: Where an example's clock starts: at zero, or at a present-day epoch time,
#: where a millisecond or a microsecond is the last digits of a double.
_EPOCHS: Final = st.sampled_from((0.0, 1_700_000_000.0, 1_754_321_098.765_432_1))
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
#: Which of the two racing calls takes each next step (see :func:`interleaved`).
_TURNS: Final = st.lists(st.integers(0, 1), max_size=16)
_STATES: Final = st.sampled_from(("answered", "answered", "cancelled", "aborted", "expired"))


def _awkward_text(value: object) -> bool:
    """Whether *value* holds text with NUL or a lone surrogate, anywhere."""
    if isinstance(value, str):
        return "\x00" in value or any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        items = cast("dict[object, object]", value).items()
        return any(_awkward_text(k) or _awkward_text(v) for k, v in items)
    if isinstance(value, (list, tuple)):
        return any(_awkward_text(v) for v in cast("Iterable[object]", value))
    if isinstance(value, Outcome):
        return _awkward_text([value.answer, value.principal, value.via])
    return False


def _is_record(value: object) -> TypeGuard[AskRecord]:
    """Whether *value* is an :class:`AskRecord` (a store may return anything)."""
    return isinstance(value, AskRecord)


def _is_settlement(value: object) -> TypeGuard[Settlement]:
    """Whether *value* is a :class:`Settlement` of an :class:`AskRecord`."""
    return isinstance(value, Settlement) and _is_record(value.record)


def _later(seq: object, high: int) -> bool:
    """Whether *seq* is a change number (an ``int``) larger than *high*."""
    return isinstance(seq, int) and not isinstance(seq, bool) and seq > high


def brief(value: object, limit: int = 160) -> str:
    """``repr(value)``, cut to *limit* characters (its last one kept) for a report's line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]} ...{text[-1]}"


def _record_text(record: object) -> str:
    if not isinstance(record, AskRecord):
        return brief(record)
    shown = [f"{record.ask_id!r}", f"seq={record.seq!r}", f"state={record.state!r}"]
    if record.settled_at is not None or not record.pending:
        shown += [
            f"principal={record.principal!r}",
            f"via={record.via!r}",
            f"settled_at={record.settled_at!r}",
        ]
    return f"AskRecord({', '.join(shown)}, ...)"


def _diff_text(expected: AskRecord, got: AskRecord) -> str:
    found = differences(expected, got)
    return "; ".join(
        f"{name} {brief(getattr(got, name))} where it must be {brief(getattr(expected, name))}"
        for name in found
    )


# ---------------------------------------------------------------------------
# One example: its verdicts, its loop, its subject
# ---------------------------------------------------------------------------


async def make_subject(factory: Callable[[], object], name: str) -> StoreSubject:
    """What the store factory *name* makes (awaited, when it is awaitable): a subject.

    Raises :class:`SetupError` when it has no ``open`` or no ``cleanup``
    method; what the factory raises goes through, for the caller to report.
    """
    made = factory()
    if inspect.isawaitable(made):
        made = await cast("Awaitable[object]", made)
    require_methods(made, ("open", "cleanup"), f"store factory {name}", "store")
    return cast("StoreSubject", made)


class StopExample(BaseException):
    """Ends the Hypothesis run now: a call hung (not shrunk), or the shrink budget is spent."""


class _Skip(Exception):
    """A masked failure left the step nothing to judge: it ends quietly."""


@dataclass
class Attempt:
    """One Hypothesis run of the state machine: what it needs, and what it found."""

    factory: Callable[[], object]
    #: How reports name the factory.
    factory_name: str
    bound: float
    #: Requirements that already failed in this check (the engine's Rule 2).
    masked: frozenset[str]
    #: Requirement ID -> (message, the example's steps), the latest failing example's.
    failures: dict[str, tuple[str, list[str]]] = field(
        default_factory=dict[str, tuple[str, list[str]]]
    )
    #: How many examples judged each requirement.
    judged: dict[str, int] = field(default_factory=dict[str, int])
    examples: int = 0
    steps: int = 0
    #: The requirement whose call hung, when one did (the run was stopped).
    hung: str | None = None
    #: The subject's name, once one was made.
    subject_name: str = ""
    #: When the first failure was found (the shrink budget counts from it).
    first_failure: float | None = None


class StoreMachine(RuleBasedStateMachine):
    """Agents and UIs sharing one store's data, judged against the truth at every step."""

    def __init__(self, attempt: Attempt) -> None:
        super().__init__()
        self.attempt = attempt
        self.bound = attempt.bound
        self.truth = Truth()
        self.handles: list[AskStore] = []
        self.lines: list[str] = []
        self.judged: set[str] = set()
        #: The requests as drawn, for drawing answers to them.
        self.originals: dict[str, AskUserQuestionRequest] = {}
        self.now = 0.0
        #: A store could not be opened (a masked failure): the example has nothing to run on.
        self.dead = False
        #: A failure is ending the example (the final restart is left out).
        self.failing = False
        self.loop = StoreLoop()
        self.subject: StoreSubject | None = None
        attempt.examples += 1
        try:
            made = self.loop.call(self._make_subject, self.bound)
        except (Late, Stuck) as error:
            self.loop.close(self.bound)
            raise SetupAbort(
                SetupError(f"the store factory {attempt.factory_name} {error}", "store")
            ) from None
        except SetupError as error:
            self.loop.close(self.bound)
            raise SetupAbort(error) from None
        self.subject = made
        attempt.subject_name = attempt.subject_name or str(getattr(made, "name", ""))

    async def _make_subject(self) -> StoreSubject:
        name = self.attempt.factory_name
        try:
            return await make_subject(self.attempt.factory, name)
        except SetupError:
            raise
        except Exception as error:  # noqa: BLE001 - reported as a set-up error
            raise SetupError(f"the store factory {name} raised {error!r}", "store") from None

    # -- judging ------------------------------------------------------------

    def _line(self, text: str) -> None:
        self.lines.append(text)

    def _judge(self, *covered: str) -> None:
        self.judged.update(covered)

    def _fail(self, requirement: str, message: str, *, slow: bool = False) -> None:
        """Record that this example breaks *requirement*; end it unless that is masked."""
        self.judged.add(requirement)
        attempt = self.attempt
        if slow:
            attempt.hung = attempt.hung or requirement
        if requirement not in attempt.masked or slow:
            self.failing = True
        if requirement not in attempt.masked:
            attempt.failures[requirement] = (message, list(self.lines))
            if attempt.first_failure is None:
                attempt.first_failure = time.monotonic()
            if slow:
                raise StopExample
            raise Failure(requirement, message)
        if slow:
            raise StopExample

    def _verify(self, requirement: str, ok: bool, message: Callable[[], str]) -> bool:
        self._judge(requirement)
        if not ok:
            self._fail(requirement, message())
        return ok

    def _call(
        self,
        requirement: str,
        what: str,
        make: Callable[[], Awaitable[object]],
        *,
        values: object = None,
        bound: float | None = None,
        resync: tuple[int, str] | None = None,
    ) -> object:
        """Await ``make()`` on the example's loop; a hang or an error fails *requirement*.

        An error for *values* holding NUL or a lone surrogate fails ``DUR-STORE-3``.
        When the failure is masked, the model takes what store *resync[0]* holds
        of the ask *resync[1]* (the call may have changed it before it raised).
        """
        patience = self.bound if bound is None else bound
        try:
            return self.loop.call(make, patience)
        except (Late, Stuck) as hang:
            self._fail(requirement, f"{what} {hang}", slow=True)
        except Exception as error:  # noqa: BLE001 - a store's error is a verdict
            if _awkward_text(values):
                self._fail(
                    "DUR-STORE-3",
                    f"{what} raised {error!r}: a store keeps any text, NUL and lone "
                    "surrogates included",
                )
            else:
                self._fail(requirement, f"{what} raised {error!r}")
            if resync is not None:
                self._resync(*resync)
        raise _Skip

    def _step(self, body: Callable[[], None]) -> None:
        if self.dead:
            return
        self.attempt.steps += 1
        try:
            body()
        except _Skip:
            return

    # -- drawing --------------------------------------------------------------

    def _handle(self, data: st.DataObject, *, other_than: int | None = None) -> int:
        choices = [i for i in range(len(self.handles)) if i != other_than]
        return data.draw(st.sampled_from(choices), label="store")

    def _tick(self, data: st.DataObject) -> float:
        self.now += data.draw(_STEPS, label="time passes")
        return self.now

    def _fresh_id(self, data: st.DataObject) -> str:
        known = self.truth.records
        return data.draw(_ask_ids.filter(lambda i: i not in known), label="ask id")

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

    # -- the calls, judged ----------------------------------------------------

    def _open(self, requirement: str, what: str) -> AskStore:
        subject = self.subject
        assert subject is not None
        store = self._call(requirement, what, subject.open)
        lacking = [m for m in _METHODS if not callable(getattr(store, m, None))]
        if lacking:
            name = self.attempt.factory_name
            raise SetupAbort(
                SetupError(
                    f"the store subject of {name} opened a {type(store).__name__}, "
                    f"which has no {', '.join(lacking)} method",
                    "store",
                )
            )
        return cast("AskStore", store)

    def _put(
        self,
        index: int,
        ask_id: str,
        request: StoredRequest,
        asked_at: float,
        original: AskUserQuestionRequest,
    ) -> None:
        store = self.handles[index]
        known = self.truth.records.get(ask_id)
        what = f"store {index}: put({ask_id!r}, {brief(request, 120)}, asked_at={asked_at!r})"
        self._line(what)
        got = self._call(
            "DUR-STORE-1",
            what,
            lambda: store.put(ask_id, request, asked_at=asked_at),
            values=(ask_id, request),
            resync=(index, ask_id),
        )
        if not isinstance(got, AskRecord):
            self._fail("DUR-STORE-1", f"{what} returned {brief(got)}, not an AskRecord")
            raise _Skip
        if known is not None:
            self._judge("DUR-STORE-1")
            if differences(known, got):
                self._fail(
                    "DUR-STORE-1",
                    f"{what}: the ask id was known, and the put returned "
                    f"{_diff_text(known, got)}: a known record stays unchanged",
                )
                self.truth.adopt(ask_id, got)
            return
        expected = AskRecord(ask_id, request, asked_at, got.seq)
        high = self.truth.high
        self._judge("DUR-STORE-1", "DUR-STORE-3", "DUR-STORE-4")
        found = differences(expected, got)
        if "state" in found:
            self._fail(
                "DUR-STORE-1",
                f"{what} on a new ask id returned a record in state {got.state!r}, not pending",
            )
        elif found:
            self._fail("DUR-STORE-3", f"{what} returned a record with {_diff_text(expected, got)}")
        self._verify_change_number(what, got.seq, high)
        self.truth.changed(got)
        self.originals[ask_id] = original

    def _settle(self, index: int, ask_id: str, outcome: Outcome, settled_at: float) -> None:
        store = self.handles[index]
        current = self.truth.records[ask_id]
        what = (
            f"store {index}: settle({ask_id!r}, {brief(outcome, 200)}, settled_at={settled_at!r})"
        )
        self._line(what)
        if not current.pending:
            self.truth.refuse(ask_id, outcome, settled_at)
        got = self._call(
            "DUR-ONCE-1",
            what,
            lambda: store.settle(ask_id, outcome, settled_at=settled_at),
            values=(ask_id, outcome),
            resync=(index, ask_id),
        )
        if not _is_settlement(got):
            self._fail("DUR-ONCE-1", f"{what} returned {brief(got)}, not a Settlement")
            raise _Skip
        if current.pending:
            self._judge_win(what, current, outcome, settled_at, got)
        else:
            self._judge_refusal(what, current, got)

    def _verify_change_number(self, what: str, seq: object, high: int) -> None:
        """Judge ``DUR-STORE-4``: the change number *seq* that *what* took is above *high*."""
        self._verify(
            "DUR-STORE-4",
            _later(seq, high),
            lambda: (
                f"{what} took change number {seq!r}, not more than {high}, the "
                "highest one already shown"
            ),
        )

    def _won(self, current: AskRecord, outcome: Outcome, at: float, seq: int) -> AskRecord:
        return AskRecord(
            current.ask_id,
            current.request,
            current.asked_at,
            seq,
            outcome.state,
            outcome.answer,
            outcome.principal,
            outcome.via,
            at,
        )

    def _judge_win(
        self, what: str, current: AskRecord, outcome: Outcome, at: float, got: Settlement
    ) -> None:
        record = got.record
        high = self.truth.high
        self._judge("DUR-ONCE-1", "DUR-STORE-3", "DUR-STORE-4")
        if got.won is not True:
            self._fail(
                "DUR-ONCE-1",
                f"{what}: the ask was pending, and the first settlement was refused "
                f"(won={got.won!r}, record {_record_text(record)})",
            )
            self.truth.adopt(current.ask_id, record)
            return
        expected = self._won(current, outcome, at, record.seq)
        if differences(expected, record):
            requirement = self.truth.blame("DUR-ONCE-1", expected, record)
            self._fail(requirement, f"{what} won with {_diff_text(expected, record)}")
        self._verify_change_number(what, record.seq, high)
        self.truth.changed(record)

    def _judge_refusal(self, what: str, current: AskRecord, got: Settlement) -> None:
        self._judge("DUR-ONCE-1")
        record = got.record
        if got.won is not False:
            self._fail(
                "DUR-ONCE-1",
                f"{what}: the ask was settled already ({current.state}), and this "
                f"settlement won too (won={got.won!r}, record {_record_text(record)})",
            )
            self.truth.adopt(current.ask_id, record)
            return
        if differences(current, record):
            requirement = self.truth.blame("DUR-ONCE-1", current, record)
            self._fail(
                requirement,
                f"{what} was refused, but returned {_diff_text(current, record)} "
                "(the record must be the winner's)",
            )
            self.truth.adopt(current.ask_id, record)

    def _read_back(self, index: int, ask_id: str) -> None:
        """Another store reads the ask the step just put or settled: it sees it at once."""
        what = f"store {index}: get({ask_id!r})"
        self._line(f"{what} (at once)")
        got = self._get(index, ask_id, "DUR-STORE-2", what)
        expected = self.truth.records.get(ask_id)
        self._judge("DUR-STORE-2")
        if expected is None or got is None:
            if expected is not got:
                shown = "None" if got is None else _record_text(got)
                self._fail(
                    "DUR-STORE-2",
                    f"{what} returned {shown}, where the data holds "
                    f"{'nothing' if expected is None else _record_text(expected)}",
                )
                self.truth.adopt(ask_id, got)
            return
        if differences(expected, got):
            blamed = self.truth.blame("DUR-STORE-2", expected, got)
            self._fail(blamed, f"{what} returned {_diff_text(expected, got)}")
            self.truth.adopt(ask_id, got)
        # The newest change is the one after the one before it, and nothing is after it.
        store = self.handles[index]
        high = self.truth.high
        for after in (high - 1, high):
            check = f"store {index}: changes({after})"
            self._line(f"{check} (the newest change)")
            listed = self._list("DUR-STORE-4", check, functools.partial(store.changes, after))
            self._judge_list("DUR-STORE-4", check, self.truth.changes(after), listed)

    def _get(self, index: int, ask_id: str, requirement: str, what: str) -> AskRecord | None:
        store = self.handles[index]
        got = self._call(requirement, what, lambda: store.get(ask_id), values=ask_id)
        if got is not None and not isinstance(got, AskRecord):
            self._fail(requirement, f"{what} returned {brief(got)}, not an AskRecord or None")
            raise _Skip
        return got

    def _list(
        self, requirement: str, what: str, make: Callable[[], Awaitable[object]]
    ) -> list[AskRecord]:
        got = self._call(requirement, what, make)
        shown = brief(got)
        if not isinstance(got, list) or not all(
            isinstance(r, AskRecord) for r in cast("list[object]", got)
        ):
            self._fail(requirement, f"{what} returned {shown}, not a list of AskRecords")
            raise _Skip
        return cast("list[AskRecord]", got)

    def _judge_list(
        self,
        requirement: str,
        what: str,
        expected: list[AskRecord],
        got: list[AskRecord],
        *,
        ordered_by: str = "seq",
    ) -> None:
        """Judge a listing: the same records, in order, each one exactly."""
        self._judge(requirement)
        want = [r.ask_id for r in expected]
        have = [r.ask_id for r in got]
        missing = [i for i in want if i not in have]
        extra = [i for i in have if i not in want]
        if missing or extra or len(set(have)) != len(have):
            repeated = sorted({i for i in have if have.count(i) > 1}, key=have.index)
            parts = [
                f"missing {missing!r}" if missing else "",
                f"listing {extra!r}, which it must not" if extra else "",
                f"listing {repeated!r} more than once" if repeated else "",
            ]
            self._fail(requirement, f"{what}: {'; '.join(p for p in parts if p)}")
            return
        if ordered_by == "seq" and have != want:
            self._fail(requirement, f"{what} listed {have!r}, where the order is {want!r}")
            return
        if ordered_by == "settled_at":
            times = [r.settled_at for r in got]
            if any(a is None or b is None or b < a for a, b in itertools.pairwise(times)):
                self._fail(
                    requirement,
                    f"{what} listed {have!r}, settled at {times!r}: not oldest settlement first",
                )
                return
        by_id = {r.ask_id: r for r in expected}
        for record in got:
            truth = by_id[record.ask_id]
            if differences(truth, record):
                blamed = self.truth.blame(requirement, truth, record)
                self._fail(
                    blamed, f"{what} listed {record.ask_id!r} with {_diff_text(truth, record)}"
                )
                self.truth.adopt(record.ask_id, record)

    # -- the rules ------------------------------------------------------------

    @initialize(count=st.integers(2, 3), epoch=_EPOCHS)
    def open_stores(self, count: int, epoch: float) -> None:
        """Open two or three stores on the subject's data, as several processes would."""
        self.now = epoch

        def body() -> None:
            for index in range(count):
                what = f"store {index} = await subject.open()"
                self._line(what)
                try:
                    self.handles.append(self._open("DUR-STORE-2", what))
                except _Skip:
                    self.dead = True
                    raise

        self._step(body)

    @rule(data=st.data())
    def put_new(self, data: st.DataObject) -> None:
        """An agent puts a new ask."""
        index = self._handle(data)
        self._put_then_read(data, index, self._fresh_id(data))

    @precondition(lambda self: bool(self.truth.records))
    @rule(data=st.data())
    def put_known(self, data: st.DataObject) -> None:
        """An agent puts a known ask id again, with other data: the record stays."""
        index = self._handle(data)
        ask_id = data.draw(st.sampled_from(list(self.truth.records)), label="known ask id")
        self._put_then_read(data, index, ask_id)

    def _put_then_read(self, data: st.DataObject, index: int, ask_id: str) -> None:
        """Store *index* puts *ask_id* with a drawn request; another store reads it back."""
        request, original = self._request(data, ask_id)
        asked_at = self._tick(data)
        reader = self._handle(data, other_than=index)

        def body() -> None:
            self._put(index, ask_id, request, asked_at, original)
            self._read_back(reader, ask_id)

        self._step(body)

    @precondition(lambda self: bool(self.truth.pending()))
    @rule(data=st.data())
    def settle_pending(self, data: st.DataObject) -> None:
        """A UI settles a pending ask: it wins."""
        index = self._handle(data)
        pending = [r.ask_id for r in self.truth.pending()]
        ask_id = data.draw(st.sampled_from(pending), label="pending ask id")
        self._settle_then_read(data, index, ask_id)

    @precondition(lambda self: bool(self.truth.settled()))
    @rule(data=st.data())
    def settle_again(self, data: st.DataObject) -> None:
        """Another UI settles an ask that is settled already: it is refused."""
        index = self._handle(data)
        done = [r.ask_id for r in self.truth.settled()]
        ask_id = data.draw(st.sampled_from(done), label="settled ask id")
        self._settle_then_read(data, index, ask_id)

    def _settle_then_read(self, data: st.DataObject, index: int, ask_id: str) -> None:
        """Store *index* settles *ask_id* with a drawn outcome; another store reads it back."""
        outcome = self._outcome(data, ask_id)
        at = self._settled_at(data)
        reader = self._handle(data, other_than=index)

        def body() -> None:
            self._settle(index, ask_id, outcome, at)
            self._read_back(reader, ask_id)

        self._step(body)

    @precondition(lambda self: bool(self.truth.pending()))
    @rule(data=st.data())
    def race_settle(self, data: st.DataObject) -> None:
        """Two UIs, on two stores, settle the same pending ask at the same moment."""
        first = self._handle(data)
        second = self._handle(data, other_than=first)
        pending = [r.ask_id for r in self.truth.pending()]
        ask_id = data.draw(st.sampled_from(pending), label="pending ask id")
        outcomes = (self._outcome(data, ask_id), self._outcome(data, ask_id))
        times = (self._settled_at(data), self._settled_at(data))
        turns = data.draw(_TURNS, label="turns")
        self._step(lambda: self._race_settle((first, second), ask_id, outcomes, times, turns=turns))

    def _race_settle(
        self,
        indexes: tuple[int, int],
        ask_id: str,
        outcomes: tuple[Outcome, Outcome],
        times: tuple[float, float],
        *,
        turns: list[int],
    ) -> None:
        stores = [self.handles[i] for i in indexes]
        current = self.truth.records[ask_id]
        what = (
            f"at once: store {indexes[0]}: settle({ask_id!r}, {brief(outcomes[0], 160)}, "
            f"settled_at={times[0]!r}) and store {indexes[1]}: settle({ask_id!r}, "
            f"{brief(outcomes[1], 160)}, settled_at={times[1]!r})"
        )
        self._line(what)

        async def both() -> list[object]:
            calls = [
                store.settle(ask_id, outcome, settled_at=at)
                for store, outcome, at in zip(stores, outcomes, times, strict=True)
            ]
            return await interleaved(calls, turns)

        results = cast(
            "list[object]",
            self._call(
                "DUR-ONCE-1", what, both, values=(ask_id, outcomes), resync=(indexes[0], ask_id)
            ),
        )
        for n, result in enumerate(results):
            if isinstance(result, BaseException):
                requirement = "DUR-STORE-3" if _awkward_text(outcomes[n]) else "DUR-ONCE-1"
                self._fail(requirement, f"{what}: store {indexes[n]}'s call raised {result!r}")
                self._resync(indexes[0], ask_id)
                raise _Skip
            if not _is_settlement(result):
                self._fail("DUR-ONCE-1", f"{what}: store {indexes[n]} returned {brief(result)}")
                raise _Skip
        settlements = cast("list[Settlement]", results)
        winners = [n for n, s in enumerate(settlements) if s.won is True]
        self._judge("DUR-ONCE-1", "DUR-STORE-3", "DUR-STORE-4")
        if len(winners) != 1:
            said = ", ".join(f"won={s.won!r} with {_record_text(s.record)}" for s in settlements)
            self._fail(
                "DUR-ONCE-1", f"{what}: {len(winners)} of the two calls won, not one ({said})"
            )
            self._resync(indexes[0], ask_id)
            return
        (w,) = winners
        loser = 1 - w
        record = settlements[w].record
        high = self.truth.high
        expected = self._won(current, outcomes[w], times[w], record.seq)
        self.truth.refuse(ask_id, outcomes[loser], times[loser])
        if differences(expected, record):
            requirement = self.truth.blame("DUR-ONCE-1", expected, record)
            self._fail(
                requirement,
                f"{what}: the winner, store {indexes[w]}, returned {_diff_text(expected, record)}",
            )
        other = settlements[loser].record
        if differences(record, other):
            self._fail(
                self.truth.blame("DUR-ONCE-1", record, other),
                f"{what}: the refused call, store {indexes[loser]}'s, returned "
                f"{_diff_text(record, other)} (the record must be the winner's)",
            )
        self._verify_change_number(f"{what}: the winner", record.seq, high)
        self.truth.changed(record)

    def _resync(self, index: int, ask_id: str) -> None:
        """Take the store's record of *ask_id* as the truth (after a masked failure)."""
        what = f"store {index}: get({ask_id!r})"
        store = self.handles[index]
        try:
            got = self.loop.call(lambda: store.get(ask_id), self.bound)
        except (Late, Stuck):
            raise StopExample from None
        except Exception:  # noqa: BLE001 - judged elsewhere; nothing to take
            raise _Skip from None
        self._line(f"{what} (to go on from what the store holds)")
        if got is None or _is_record(got):
            self.truth.adopt(ask_id, got)

    @rule(data=st.data())
    def race_put(self, data: st.DataObject) -> None:
        """Two agents, on two stores, put the same new ask id at the same moment."""
        first = self._handle(data)
        second = self._handle(data, other_than=first)
        ask_id = self._fresh_id(data)
        one, original = self._request(data, ask_id)
        two, _ = self._request(data, ask_id)
        times = (self._tick(data), self._tick(data))
        turns = data.draw(_TURNS, label="turns")
        self._step(
            lambda: self._race_put(
                (first, second), ask_id, (one, two), times, original, turns=turns
            )
        )

    def _race_put(
        self,
        indexes: tuple[int, int],
        ask_id: str,
        puts: tuple[StoredRequest, StoredRequest],
        times: tuple[float, float],
        original: AskUserQuestionRequest,
        *,
        turns: list[int],
    ) -> None:
        stores = [self.handles[i] for i in indexes]
        what = (
            f"at once: store {indexes[0]}: put({ask_id!r}, {brief(puts[0], 100)}, "
            f"asked_at={times[0]!r}) and store {indexes[1]}: put({ask_id!r}, "
            f"{brief(puts[1], 100)}, asked_at={times[1]!r})"
        )
        self._line(what)

        async def both() -> list[object]:
            calls = [
                store.put(ask_id, request, asked_at=at)
                for store, request, at in zip(stores, puts, times, strict=True)
            ]
            return await interleaved(calls, turns)

        results = cast(
            "list[object]",
            self._call(
                "DUR-STORE-1", what, both, values=(ask_id, puts), resync=(indexes[0], ask_id)
            ),
        )
        for n, result in enumerate(results):
            if isinstance(result, BaseException):
                requirement = "DUR-STORE-3" if _awkward_text((ask_id, puts)) else "DUR-STORE-1"
                self._fail(requirement, f"{what}: store {indexes[n]}'s call raised {result!r}")
                self._resync(indexes[0], ask_id)
                raise _Skip
            if not isinstance(result, AskRecord):
                self._fail("DUR-STORE-1", f"{what}: store {indexes[n]} returned {brief(result)}")
                raise _Skip
        records = cast("list[AskRecord]", results)
        high = self.truth.high
        self._judge("DUR-STORE-1", "DUR-STORE-3", "DUR-STORE-4")
        if differences(records[0], records[1]):
            self._fail(
                "DUR-STORE-1",
                f"{what}: the two calls returned different records ({_record_text(records[0])} "
                f"and {_record_text(records[1])}): both added the ask, where one must keep "
                "the other's",
            )
            self._resync(indexes[0], ask_id)
            return
        record = records[0]
        candidates = [
            AskRecord(ask_id, request, at, record.seq)
            for request, at in zip(puts, times, strict=True)
        ]
        if all(differences(c, record) for c in candidates):
            nearest = min(candidates, key=lambda c: len(differences(c, record)))
            requirement = "DUR-STORE-1" if record.state != "pending" else "DUR-STORE-3"
            self._fail(requirement, f"{what} returned {_diff_text(nearest, record)}")
        self._verify_change_number(what, record.seq, high)
        self.truth.changed(record)
        self.originals[ask_id] = original

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        """Any store reads one ask: a known one, a purged one, or one never put."""
        index = self._handle(data)
        known = list(self.truth.records) + sorted(self.truth.purged)
        if known and data.draw(st.integers(0, 3), label="a known ask id?") > 0:
            ask_id = data.draw(st.sampled_from(known), label="ask id")
        else:
            ask_id = self._fresh_id(data)

        def body() -> None:
            what = f"store {index}: get({ask_id!r})"
            self._line(what)
            got = self._get(index, ask_id, "DUR-STORE-2", what)
            expected = self.truth.records.get(ask_id)
            self._judge("DUR-STORE-2")
            if expected is None and got is not None:
                self._fail("DUR-STORE-2", f"{what} returned {_record_text(got)}, not None")
                self.truth.adopt(ask_id, got)
            elif expected is not None and got is None:
                self._fail(
                    "DUR-STORE-2",
                    f"{what} returned None, where the data holds {_record_text(expected)}",
                )
                self.truth.adopt(ask_id, got)
            elif expected is not None and got is not None:
                self._judge("DUR-STORE-3")
                if differences(expected, got):
                    blamed = self.truth.blame("DUR-STORE-2", expected, got)
                    self._fail(blamed, f"{what} returned {_diff_text(expected, got)}")
                    self.truth.adopt(ask_id, got)

        self._step(body)

    @rule(data=st.data())
    def list_pending(self, data: st.DataObject) -> None:
        """Any store lists the pending asks: every one, oldest change first."""
        index = self._handle(data)

        def body() -> None:
            store = self.handles[index]
            what = f"store {index}: pending()"
            self._line(what)
            got = self._list("DUR-STORE-2", what, store.pending)
            self._judge_list("DUR-STORE-2", what, self.truth.pending(), got)

        self._step(body)

    def _cursor(self, data: st.DataObject, *, beyond: bool = True) -> int:
        """A change number to list or watch from: one made, one less, none, or (*beyond*) more."""
        seqs = sorted(self.truth.history)
        high = self.truth.high
        choices = [0, high, *seqs, *(s - 1 for s in seqs if s > 0)]
        if beyond:
            choices += [high + 1, -1]
        return data.draw(st.sampled_from(sorted(set(choices))), label="after change number")

    @rule(data=st.data())
    def changes(self, data: st.DataObject) -> None:
        """Any store lists what changed after a change number: exactly that, in order."""
        index = self._handle(data)
        after = self._cursor(data)

        def body() -> None:
            store = self.handles[index]
            what = f"store {index}: changes({after!r})"
            self._line(what)
            got = self._list("DUR-STORE-4", what, lambda: store.changes(after))
            self._judge_list("DUR-STORE-4", what, self.truth.changes(after), got)

        self._step(body)

    def _settled_times(self) -> list[float]:
        return sorted({r.settled_at for r in self.truth.settled() if r.settled_at is not None})

    def _about(self, data: st.DataObject, label: str) -> float:
        """A time at, just before or just after a settlement, or before or after them all."""
        times = [*self._settled_times(), self.now]
        near = data.draw(st.sampled_from(times), label=f"{label} near")
        return near + data.draw(st.sampled_from((0.0, 0.0, -1e-3, 1e-3, -1e6, 1e6)), label=label)

    @rule(data=st.data())
    def records(self, data: st.DataObject) -> None:
        """Any store lists the whole audit record: the settled asks, oldest settlement first."""
        index = self._handle(data)
        self._step(lambda: self._records(index, None))

    @rule(data=st.data())
    def records_since(self, data: st.DataObject) -> None:
        """Any store lists the audit record since a time (an export that goes on from there)."""
        index = self._handle(data)
        after = self._about(data, "settled after")
        self._step(lambda: self._records(index, after))

    def _records(self, index: int, after: float | None) -> None:
        store = self.handles[index]
        what = f"store {index}: records(settled_after={after!r})"
        self._line(what)
        got = self._list("DUR-AUDIT-1", what, lambda: store.records(settled_after=after))
        expected = [
            r
            for r in self.truth.settled()
            if after is None or (r.settled_at is not None and r.settled_at > after)
        ]
        self._judge_list("DUR-AUDIT-1", what, expected, got, ordered_by="settled_at")

    @rule(data=st.data())
    def purge(self, data: st.DataObject) -> None:
        """Any store purges the audit record up to a time: only settled records before it go."""
        index = self._handle(data)
        before = self._about(data, "settled before")
        self._step(lambda: self._purge(index, before))

    def _purge(self, index: int, before: float) -> None:
        store = self.handles[index]
        what = f"store {index}: purge(settled_before={before!r})"
        self._line(what)
        held = dict(self.truth.records)
        got = self._call("DUR-AUDIT-1", what, lambda: store.purge(settled_before=before))
        gone = self.truth.purge(before)
        self._judge("DUR-AUDIT-1")
        if type(got) is not int or got != len(gone):
            self._fail(
                "DUR-AUDIT-1",
                f"{what} returned {got!r}, where {len(gone)} record(s) were settled before "
                f"it: {gone!r}",
            )
        # What is left, in one listing (a store's reads through get may be at fault).
        floor = min([0, *self.truth.history]) - 1
        check = f"store {index}: changes({floor})"
        self._line(f"{check} (after the purge: what is left)")
        left = {r.ask_id: r for r in self._list("DUR-AUDIT-1", check, lambda: store.changes(floor))}
        for ask_id, record in held.items():
            if ask_id in gone and ask_id in left:
                self._fail(
                    "DUR-AUDIT-1",
                    f"{what} kept {ask_id!r}, settled at {record.settled_at!r}, before the time",
                )
                self.truth.adopt(ask_id, left[ask_id])
            elif ask_id not in gone and ask_id not in left:
                why = "pending" if record.pending else f"settled at {record.settled_at!r}"
                self._fail("DUR-AUDIT-1", f"{what} deleted {ask_id!r}, {why}, which it must keep")
                self.truth.adopt(ask_id, None)

    @rule(data=st.data())
    def settle_unknown(self, data: st.DataObject) -> None:
        """A UI settles an ask id the store does not hold (never put, or purged): KeyError."""
        index = self._handle(data)
        purged = sorted(self.truth.purged)
        if bool(purged) and data.draw(st.booleans(), label="a purged ask id?"):
            ask_id = data.draw(st.sampled_from(purged), label="purged ask id")
        else:
            ask_id = self._fresh_id(data)
        outcome = self._outcome(data, ask_id)
        at = self._settled_at(data)
        self._step(lambda: self._settle_unknown(index, ask_id, outcome, at))

    def _settle_unknown(self, index: int, ask_id: str, outcome: Outcome, at: float) -> None:
        store = self.handles[index]
        what = f"store {index}: settle({ask_id!r}, {brief(outcome, 160)}, settled_at={at!r})"
        self._line(f"{what} (an ask id the data does not hold)")

        async def settle() -> object:
            try:
                return await store.settle(ask_id, outcome, settled_at=at)
            except KeyError as error:
                return error

        got = self._call("DUR-STORE-5", what, settle, values=(ask_id, outcome))
        self._judge("DUR-STORE-5")
        if not isinstance(got, KeyError):
            self._fail("DUR-STORE-5", f"{what} returned {brief(got)}, not raising KeyError")
            self._resync(index, ask_id)

    @rule(data=st.data())
    def reopen(self, data: st.DataObject) -> None:
        """Close one store and open the data again: nothing that returned is lost."""
        index = self._handle(data)
        self._step(lambda: self._reopen([index], every=False))

    @rule()
    def restart(self) -> None:
        """Close every store (a restart) and open the data again: nothing is lost."""
        self._step(lambda: self._reopen(list(range(len(self.handles))), every=True))

    def _reopen(self, indexes: list[int], *, every: bool) -> None:
        # What the store showed before that agrees with the truth: closing must keep it.
        before: dict[str, AskRecord] = {}
        reader = indexes[0]
        for ask_id, truth in list(self.truth.records.items()):
            what = f"store {reader}: get({ask_id!r})"
            self._line(f"{what} (before closing)")
            shown = self._get(reader, ask_id, "DUR-STORE-2", what)
            if shown is not None and not differences(truth, shown):
                before[ask_id] = shown
        for index in indexes:
            store = self.handles[index]
            what = f"store {index}: close()"
            self._line(what)
            with contextlib.suppress(_Skip):
                self._call("DUR-REOPEN-1", what, store.close)
        for index in indexes:
            what = f"store {index} = await subject.open() (again)"
            self._line(what)
            try:
                self.handles[index] = self._open("DUR-REOPEN-1", what)
            except _Skip:
                self.dead = True
                raise
        self._judge("DUR-REOPEN-1")
        where = "every store was closed" if every else f"store {indexes[0]} was closed"
        for ask_id, kept in before.items():
            what = f"store {indexes[-1]}: get({ask_id!r})"
            self._line(f"{what} (after opening again)")
            after = self._get(indexes[-1], ask_id, "DUR-REOPEN-1", what)
            if after is None:
                self._fail(
                    "DUR-REOPEN-1",
                    f"after {where} and opened again, {what} returned None, where it held "
                    f"{_record_text(kept)}",
                )
                self.truth.adopt(ask_id, None)
            elif differences(kept, after):
                self._fail(
                    "DUR-REOPEN-1",
                    f"after {where} and opened again, {what} returned {_diff_text(kept, after)}",
                )
                self.truth.adopt(ask_id, after)

    @rule(data=st.data())
    def watch(self, data: st.DataObject) -> None:
        """A UI watches one store while agents and UIs change the data through any store."""
        if "DUR-WATCH-1" in self.attempt.masked:
            return  # each further try would wait out its bound again
        watcher = self._handle(data)
        after = self._cursor(data, beyond=False)
        plan: list[_Change] = []
        pending = [r.ask_id for r in self.truth.pending()]
        for _ in range(data.draw(st.integers(1, 3), label="changes while watching")):
            index = self._handle(data)
            if bool(pending) and data.draw(st.booleans(), label="settle?"):
                ask_id = data.draw(st.sampled_from(pending), label="pending ask id")
                pending.remove(ask_id)
                outcome = self._outcome(data, ask_id)
                at = self._settled_at(data)
                looks = data.draw(st.booleans(), label="the UI looks")
                plan.append(_Change(index, ask_id, at, outcome=outcome, looks=looks))
            else:
                taken = frozenset(self.truth.records).union(c.ask_id for c in plan)
                ask_id = data.draw(_ask_ids.filter(taken.isdisjoint), label="ask id")
                request, original = self._request(data, ask_id)
                at = self._tick(data)
                looks = data.draw(st.booleans(), label="the UI looks")
                plan.append(_Change(index, ask_id, at, request, original, looks=looks))
                pending.append(ask_id)
        self._step(lambda: self._watch(watcher, after, plan))

    def _watch(self, watcher: int, after: int, plan: list[_Change]) -> None:
        store = self.handles[watcher]
        what = f"store {watcher}: watch({after!r})"
        self._line(f"{what} (a UI starts watching)")
        seen = _Watcher()
        self._call("DUR-WATCH-1", what, lambda: seen.start(store, after))
        started = self.truth.high
        target = started
        reached: object = True
        try:
            for change in plan:
                if change.outcome is not None:
                    if change.ask_id in self.truth.records:
                        self._settle(change.index, change.ask_id, change.outcome, change.at)
                elif change.request is not None and change.original is not None:
                    self._put(
                        change.index, change.ask_id, change.request, change.at, change.original
                    )
                if change.looks and change is not plan[-1]:
                    target = self.truth.high
                    self._line(f"{what} (the UI looks for change {target} before the next one)")
                    reached = self._await_watcher(seen, what, target)
                    if reached is not True:
                        break
            if reached is True:
                target = self.truth.high
                reached = self._await_watcher(seen, what, target)
        finally:
            if not self.loop.stuck:
                # Ends the watcher whatever happened; a watcher that will not end is judged below.
                with contextlib.suppress(Late, Stuck):
                    self.loop.call(seen.stop, self.bound)
        shown = list(seen.records)
        self._line(f"{what} showed {[_record_text(r) for r in shown]}")
        self._judge("DUR-WATCH-1")
        if not seen.stopped:
            self._fail(
                "DUR-WATCH-1", f"{what} did not end within {self.bound:g} s of its cancellation"
            )
        if seen.error is not None:
            self._fail("DUR-WATCH-1", f"{what}: iterating it raised {seen.error!r}")
            return
        self._judge_watch(what, after, started, shown, reached=reached is True)
        if not reached:
            if seen.ended:
                self._fail("DUR-WATCH-1", f"{what} ended before it showed change {target}")
            self._fail(
                "DUR-WATCH-1",
                f"{what} did not show change {target} (made through another store or its "
                f"own) within {self.bound:g} s",
                slow=True,
            )

    def _await_watcher(self, seen: _Watcher, what: str, target: int) -> object:
        """Read the watch until it shows change *target*; whether it did, within the bound."""
        return self._call(
            "DUR-WATCH-1",
            f"{what}, awaiting change {target}",
            lambda: seen.until(target, self.bound),
            bound=2 * self.bound + 1.0,
        )

    def _judge_watch(
        self, what: str, after: int, started: int, shown: list[object], *, reached: bool
    ) -> None:
        last = after
        for record in shown:
            if not isinstance(record, AskRecord):
                self._fail("DUR-WATCH-1", f"{what} yielded {brief(record)}, not an AskRecord")
                return
            if not _later(record.seq, last):
                self._fail(
                    "DUR-WATCH-1",
                    f"{what} yielded change {record.seq!r} of {record.ask_id!r} after change "
                    f"{last}: {'repeated or ' if last > after else ''}out of order",
                )
                return
            last = record.seq
            made = self.truth.history.get(record.seq)
            if made is None or not same(made.ask_id, record.ask_id) or differences(made, record):
                self._fail(
                    "DUR-WATCH-1",
                    f"{what} yielded {_record_text(record)}, which is not the state change "
                    f"{record.seq} made",
                )
                return
            if not self.truth.shown_since(record.seq, started):
                self._fail(
                    "DUR-WATCH-1",
                    f"{what} yielded {_record_text(record)}, a state that had been replaced "
                    "before the watcher started",
                )
                return
        shown_seqs = {cast("AskRecord", r).seq for r in shown}
        missed = [r for r in self.truth.changes(after) if r.seq not in shown_seqs]
        if missed and reached:
            self._fail(
                "DUR-WATCH-1",
                f"{what} skipped {[_record_text(r) for r in missed]}, though it showed "
                "later changes",
            )

    def _going(self) -> bool:
        """Whether the example is still running: no failure is ending it, no store is dead."""
        return not (self.failing or self.dead or self.loop.stuck)

    def teardown(self) -> None:
        """End with a restart (nothing may be lost), then close every store and clean up.

        The restart is left out when a failure is ending the example already.
        """
        try:
            if not (self.failing or self.dead or self.loop.stuck) and self.handles:
                self._line("(the example ends: a restart)")
                self._step(lambda: self._reopen(list(range(len(self.handles))), every=True))
                if len(self.truth.settled()) > 1 and self._going():
                    # The audit record's order shows only with two settlements or more.
                    self._step(lambda: self._records(0, None))
        finally:
            self._clean_up()

    def _clean_up(self) -> None:
        attempt = self.attempt
        for requirement in self.judged:
            attempt.judged[requirement] = attempt.judged.get(requirement, 0) + 1
        loop = self.loop
        failed: list[str] = []
        if not loop.stuck:
            for store in self.handles:
                try:
                    loop.call(store.close, self.bound)
                except Exception as error:  # noqa: BLE001 - the verdict is in already
                    failed.append(repr(error))
            subject = self.subject
            if subject is not None:
                try:
                    loop.call(subject.cleanup, self.bound)
                except Exception as error:  # noqa: BLE001 - a set-up error, below
                    failed.append(f"the subject's cleanup raised {error!r}")
        loop.close(self.bound)
        if loop.stuck and self.subject is not None:
            _cleanup_elsewhere(self.subject, self.bound)
        cleanup = [f for f in failed if f.startswith("the subject's cleanup")]
        if cleanup:
            raise SetupAbort(SetupError(f"{attempt.factory_name}: {cleanup[0]}", "store"))


def _cleanup_elsewhere(subject: StoreSubject, bound: float) -> None:
    """Clean a subject's data away on a loop of its own: its example's loop is stuck."""
    spare = StoreLoop()
    try:
        spare.call(subject.cleanup, bound)
    except Exception:  # noqa: BLE001, S110 - the example failed already; nothing to add
        pass
    finally:
        spare.close(bound)


@dataclass(frozen=True)
class _Change:
    """A change the watch rule makes while a UI watches: a put, or a settlement."""

    index: int
    ask_id: str
    at: float
    request: StoredRequest | None = None
    original: AskUserQuestionRequest | None = None
    outcome: Outcome | None = None
    #: Whether the UI reads its watch up to this change before the next one is made.
    looks: bool = False


class _Watcher:
    """A watch on one store, read by the example between its steps.

    The watch is read only while the example awaits a change (:meth:`until`),
    never while a step changes the data: each read shows the data as it
    stands then, whatever the timing of the store's threads and polls, so a
    seed replays what a watch showed. Where the UI looks between the changes
    is drawn; between two looks, changes pile up for one read.
    """

    def __init__(self) -> None:
        self.records: list[object] = []
        self.error: BaseException | None = None
        self.ended = False
        self._iterator: Any = None
        self._read: asyncio.Task[None] | None = None
        self._closed = False

    async def start(self, store: AskStore, after: int) -> None:
        iterable: Any = store.watch(after)
        try:
            self._iterator = aiter(iterable)
        except Exception as error:  # noqa: BLE001 - judged by the check
            self.error = error

    async def _next(self) -> None:
        try:
            record = await anext(self._iterator)
        except StopAsyncIteration:
            self.ended = True
        except Exception as error:  # noqa: BLE001 - judged by the check
            self.error = error
        else:
            self.records.append(record)

    def _reached(self, target: int) -> bool:
        return any(isinstance(r, AskRecord) and _later(r.seq, target - 1) for r in self.records)

    async def until(self, target: int, patience: float) -> bool:
        """Read the watch until it shows change *target* (or fails); whether it did in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        while not self._reached(target):
            if self.error is not None or self.ended or self._iterator is None:
                return False
            if self._read is None or self._read.done():
                self._read = asyncio.ensure_future(self._next())
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.wait({self._read}, timeout=left)
            if not self._read.done():
                return False
        return True

    @property
    def stopped(self) -> bool:
        """Whether the watch has ended: its read in flight, if any, and the iterator closed."""
        read = self._read
        return (read is None or read.done()) and self._closed

    async def stop(self) -> None:
        """Cancel a read in flight, wait for it to end, and close the watch's iterator."""
        read = self._read
        if read is not None and not read.done():
            read.cancel()
            await asyncio.wait({read})
        closer: object = getattr(self._iterator, "aclose", None)
        if callable(closer):
            with contextlib.suppress(Exception):
                await cast("Callable[[], Awaitable[object]]", closer)()
                self._closed = True
        else:
            self._closed = True
