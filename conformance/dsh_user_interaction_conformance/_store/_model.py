"""The store suite's model of the truth: what every store on the same data must show.

Design notes (the rules the model keeps):

Rule 1: the model holds what returned calls established, and nothing else.
A put or a settlement that returned is in it; what a store shows is judged
against it, whichever store object shows it.

Rule 2: change numbers are the store's. The spec fixes their order, not
their values (a PostgreSQL sequence may skip), so the model keeps the
number each change was given and the highest number seen, and a new
change must take a larger one.

Rule 3: every state an ask has been in is kept (:attr:`Truth.history`,
by change number), with when it stopped being current, so a watcher that
raced a change may show the state the change replaced, and no other.

Rule 4: a failure is judged once. When a masked requirement fails (the
engine's Rule 2), the model takes what the store said as the truth from
then on, so the same fault is not reported again against another
requirement.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Final, cast

from dsh_user_interaction.durable import AskRecord, Outcome

__all__ = ["CONTENT", "Truth", "blame", "differences", "same"]

#: What a record holds besides its state and change number: what must round-trip.
CONTENT: Final = (
    "ask_id",
    "request",
    "asked_at",
    "answer",
    "principal",
    "via",
    "settled_at",
)


def same(expected: object, got: object) -> bool:
    """Whether *got* is *expected*, JSON value for JSON value, types included.

    ``True`` is not ``1``, ``1`` is not ``1.0``, and text is compared code
    point for code point; the order of an object's keys does not matter.

    >>> same({"a": [1, True]}, {"a": [1, True]}), same([1], [1.0]), same(True, 1)
    (True, False, False)
    """
    if type(expected) is not type(got):
        return False
    if isinstance(expected, dict):
        left = cast("dict[object, object]", expected)
        right = cast("dict[object, object]", got)  # the same type: checked above
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(expected, list):
        first = cast("list[object]", expected)
        second = cast("list[object]", got)  # the same type: checked above
        return len(first) == len(second) and all(map(same, first, second))
    if isinstance(expected, float):
        assert isinstance(got, float)
        return expected == got or (math.isnan(expected) and math.isnan(got))
    return expected == got


def differences(expected: AskRecord, got: AskRecord) -> list[str]:
    """The names of the fields in which *got* is not *expected*, in field order."""
    return [
        f.name
        for f in fields(AskRecord)
        if not _same_field(f.name, getattr(expected, f.name), getattr(got, f.name))
    ]


def _same_field(name: str, expected: object, got: object) -> bool:
    if name in {"asked_at", "settled_at"}:
        # A time is a number of seconds: any number type of the same value keeps it.
        if expected is None or got is None:
            return expected is got
        numbers = (int, float)
        if isinstance(got, bool) or not isinstance(got, numbers):
            return False
        return expected == got
    return same(expected, got)


def _outcome_of(record: AskRecord) -> tuple[object, ...]:
    return (record.state, record.answer, record.principal, record.via, record.settled_at)


@dataclass
class Truth:
    """What the data holds, as the calls that returned established it."""

    #: The current record of every ask the data holds.
    records: dict[str, AskRecord] = field(default_factory=dict[str, AskRecord])
    #: Every state any ask has been in, by the change number that made it.
    history: dict[int, AskRecord] = field(default_factory=dict[int, AskRecord])
    #: For each change number of :attr:`history` no longer current: the highest
    #: change number seen when it stopped being current.
    ended: dict[int, int] = field(default_factory=dict[int, int])
    #: The highest change number any store has shown.
    high: int = 0
    #: Ask ids a purge deleted (and nobody put again since).
    purged: set[str] = field(default_factory=set[str])
    #: Every settlement that was refused, as the records it would have made, by ask id.
    refused: dict[str, list[AskRecord]] = field(default_factory=dict[str, list[AskRecord]])

    def seen(self, records: Iterable[AskRecord]) -> None:
        """Note the change numbers *records* show (for :attr:`high`)."""
        for record in records:
            seq: object = record.seq  # a broken store may show anything
            if type(seq) is int and seq > self.high:
                self.high = seq

    def changed(self, record: AskRecord) -> None:
        """*record* is the new current state of its ask (an adding put or a winning settle)."""
        before = self.records.get(record.ask_id)
        if before is not None and before.seq in self.history and before.seq != record.seq:
            self.ended[before.seq] = max(self.high, record.seq)
        self.records[record.ask_id] = record
        self.history[record.seq] = record
        self.purged.discard(record.ask_id)
        self.seen([record])

    def adopt(self, ask_id: str, record: AskRecord | None) -> None:
        """Take what a store shows of *ask_id* as the truth (Rule 4)."""
        before = self.records.get(ask_id)
        if record is None:
            if before is not None:
                del self.records[ask_id]
                self.ended.setdefault(before.seq, self.high)
            return
        if before is not None and before.seq != record.seq:
            self.ended.setdefault(before.seq, self.high)
        self.records[ask_id] = record
        self.history[record.seq] = record
        self.seen([record])

    def refuse(self, ask_id: str, outcome: Outcome, settled_at: float) -> None:
        """Note a settlement of *ask_id* that must lose (or lost)."""
        current = self.records.get(ask_id)
        if current is None:
            return
        would = AskRecord(
            ask_id,
            current.request,
            current.asked_at,
            current.seq,
            outcome.state,
            outcome.answer,
            outcome.principal,
            outcome.via,
            settled_at,
        )
        self.refused.setdefault(ask_id, []).append(would)

    def pending(self) -> list[AskRecord]:
        """Every pending ask, by change number."""
        return sorted((r for r in self.records.values() if r.pending), key=lambda r: r.seq)

    def settled(self) -> list[AskRecord]:
        """Every settled ask, oldest settlement first (by change number on a tie)."""
        done = [r for r in self.records.values() if not r.pending]
        return sorted(done, key=lambda r: (r.settled_at or 0.0, r.seq))

    def changes(self, after: int) -> list[AskRecord]:
        """The records whose last change came after *after*, by change number."""
        return sorted((r for r in self.records.values() if r.seq > after), key=lambda r: r.seq)

    def purge(self, before: float) -> list[str]:
        """Delete the records settled before *before*; return their ask ids."""
        gone = [
            r.ask_id
            for r in self.records.values()
            if not r.pending and r.settled_at is not None and r.settled_at < before
        ]
        for ask_id in gone:
            record = self.records.pop(ask_id)
            self.ended[record.seq] = self.high
            self.purged.add(ask_id)
        return gone

    def shown_since(self, seq: int, started: int) -> bool:
        """Whether the state made by change *seq* was current at some time after *started*.

        *started* is :attr:`high` when a watcher started: it may show a state
        that was current then or later, and no older one.
        """
        end = self.ended.get(seq)
        if seq not in self.history:
            return False
        current = self.records.get(self.history[seq].ask_id)
        if current is not None and current.seq == seq:
            return True
        return end is not None and end > started

    def blame(self, context: str, expected: AskRecord | None, got: AskRecord | None) -> str:
        """The requirement a difference between *expected* and *got* breaks; see :func:`blame`."""
        refused = self.refused.get(expected.ask_id, []) if expected is not None else []
        return blame(context, expected, got, refused)


def blame(
    context: str,
    expected: AskRecord | None,
    got: AskRecord | None,
    refused: Iterable[AskRecord] = (),
) -> str:
    """The requirement a store breaks by showing *got* where the truth is *expected*.

    An outcome that a refused settlement asked for breaks ``DUR-ONCE-1``; a
    missing or extra record, or a pending one shown settled (or settled
    shown pending), breaks the *context*'s requirement (the call that showed
    it); other content that differs breaks ``DUR-STORE-3`` (it did not
    round-trip); a change number alone, ``DUR-STORE-4``.

    >>> a = AskRecord("a", {}, 1.0, 1)
    >>> blame("DUR-STORE-2", a, None), blame("DUR-STORE-2", a, AskRecord("a", {}, 2.0, 1))
    ('DUR-STORE-2', 'DUR-STORE-3')
    """
    if expected is None or got is None:
        return context
    if any(_outcome_of(got) == _outcome_of(r) for r in refused) and _outcome_of(got) != _outcome_of(
        expected
    ):
        return "DUR-ONCE-1"
    found = differences(expected, got)
    if "state" in found and (expected.pending or got.pending):
        return context
    if "state" in found or any(name in CONTENT for name in found):
        return "DUR-STORE-3"
    if "seq" in found:
        return "DUR-STORE-4"
    return context
