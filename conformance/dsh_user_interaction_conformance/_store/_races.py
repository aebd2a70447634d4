"""The store machine's races: two settlements, or two puts, of one ask at the same moment.

Both calls run on the example's loop, interleaved in the order the example
draws (:func:`~._loop.interleaved`), so a seed replays a race as it ran.
"""

from __future__ import annotations

from typing import cast

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.durable import AskRecord, Outcome, Settlement, StoredRequest

from ._draws import TURNS
from ._example import SkipStep
from ._loop import interleaved
from ._model import differences
from ._values import awkward_text, brief, diff_text, is_settlement, record_text
from ._writes import Writes

__all__ = ["Races"]


class Races(Writes):
    """Two UIs settle one pending ask, or two agents put one new ask id, at once."""

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
        turns = data.draw(TURNS, label="turns")
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
                requirement = "DUR-STORE-3" if awkward_text(outcomes[n]) else "DUR-ONCE-1"
                self._fail(requirement, f"{what}: store {indexes[n]}'s call raised {result!r}")
                self._resync(indexes[0], ask_id)
                raise SkipStep
            if not is_settlement(result):
                self._fail("DUR-ONCE-1", f"{what}: store {indexes[n]} returned {brief(result)}")
                raise SkipStep
        settlements = cast("list[Settlement]", results)
        winners = [n for n, s in enumerate(settlements) if s.won is True]
        self._judge("DUR-ONCE-1", "DUR-STORE-3", "DUR-STORE-4")
        if len(winners) != 1:
            said = ", ".join(f"won={s.won!r} with {record_text(s.record)}" for s in settlements)
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
                f"{what}: the winner, store {indexes[w]}, returned {diff_text(expected, record)}",
            )
        other = settlements[loser].record
        if differences(record, other):
            self._fail(
                self.truth.blame("DUR-ONCE-1", record, other),
                f"{what}: the refused call, store {indexes[loser]}'s, returned "
                f"{diff_text(record, other)} (the record must be the winner's)",
            )
        self._verify_change_number(f"{what}: the winner", record.seq, high)
        self.truth.changed(record)

    @rule(data=st.data())
    def race_put(self, data: st.DataObject) -> None:
        """Two agents, on two stores, put the same new ask id at the same moment."""
        first = self._handle(data)
        second = self._handle(data, other_than=first)
        ask_id = self._fresh_id(data)
        one, original = self._request(data, ask_id)
        two, _ = self._request(data, ask_id)
        times = (self._tick(data), self._tick(data))
        turns = data.draw(TURNS, label="turns")
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
                requirement = "DUR-STORE-3" if awkward_text((ask_id, puts)) else "DUR-STORE-1"
                self._fail(requirement, f"{what}: store {indexes[n]}'s call raised {result!r}")
                self._resync(indexes[0], ask_id)
                raise SkipStep
            if not isinstance(result, AskRecord):
                self._fail("DUR-STORE-1", f"{what}: store {indexes[n]} returned {brief(result)}")
                raise SkipStep
        records = cast("list[AskRecord]", results)
        high = self.truth.high
        self._judge("DUR-STORE-1", "DUR-STORE-3", "DUR-STORE-4")
        if differences(records[0], records[1]):
            self._fail(
                "DUR-STORE-1",
                f"{what}: the two calls returned different records ({record_text(records[0])} "
                f"and {record_text(records[1])}): both added the ask, where one must keep "
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
            self._fail(requirement, f"{what} returned {diff_text(nearest, record)}")
        self._verify_change_number(what, record.seq, high)
        self.truth.changed(record)
        self.originals[ask_id] = original
