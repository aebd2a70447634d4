"""The store machine's writes: agents put asks, UIs settle them, another store reads back."""

from __future__ import annotations

import functools

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.durable import AskRecord, Outcome, Settlement, StoredRequest

from ._example import SkipStep
from ._model import differences
from ._reads import Reads
from ._values import brief, diff_text, is_settlement, later, record_text

__all__ = ["Writes"]


class Writes(Reads):
    """Puts and settlements, one at a time, each judged and read back at once."""

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
            raise SkipStep
        if known is not None:
            self._judge("DUR-STORE-1")
            if differences(known, got):
                self._fail(
                    "DUR-STORE-1",
                    f"{what}: the ask id was known, and the put returned "
                    f"{diff_text(known, got)}: a known record stays unchanged",
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
            self._fail("DUR-STORE-3", f"{what} returned a record with {diff_text(expected, got)}")
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
        if not is_settlement(got):
            self._fail("DUR-ONCE-1", f"{what} returned {brief(got)}, not a Settlement")
            raise SkipStep
        if current.pending:
            self._judge_win(what, current, outcome, settled_at, got)
        else:
            self._judge_refusal(what, current, got)

    def _verify_change_number(self, what: str, seq: object, high: int) -> None:
        """Judge ``DUR-STORE-4``: the change number *seq* that *what* took is above *high*."""
        self._verify(
            "DUR-STORE-4",
            later(seq, high),
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
                f"(won={got.won!r}, record {record_text(record)})",
            )
            self.truth.adopt(current.ask_id, record)
            return
        expected = self._won(current, outcome, at, record.seq)
        if differences(expected, record):
            requirement = self.truth.blame("DUR-ONCE-1", expected, record)
            self._fail(requirement, f"{what} won with {diff_text(expected, record)}")
        self._verify_change_number(what, record.seq, high)
        self.truth.changed(record)

    def _judge_refusal(self, what: str, current: AskRecord, got: Settlement) -> None:
        self._judge("DUR-ONCE-1")
        record = got.record
        if got.won is not False:
            self._fail(
                "DUR-ONCE-1",
                f"{what}: the ask was settled already ({current.state}), and this "
                f"settlement won too (won={got.won!r}, record {record_text(record)})",
            )
            self.truth.adopt(current.ask_id, record)
            return
        if differences(current, record):
            requirement = self.truth.blame("DUR-ONCE-1", current, record)
            self._fail(
                requirement,
                f"{what} was refused, but returned {diff_text(current, record)} "
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
                shown = "None" if got is None else record_text(got)
                self._fail(
                    "DUR-STORE-2",
                    f"{what} returned {shown}, where the data holds "
                    f"{'nothing' if expected is None else record_text(expected)}",
                )
                self.truth.adopt(ask_id, got)
            return
        if differences(expected, got):
            blamed = self.truth.blame("DUR-STORE-2", expected, got)
            self._fail(blamed, f"{what} returned {diff_text(expected, got)}")
            self.truth.adopt(ask_id, got)
        # The newest change is the one after the one before it, and nothing is after it.
        store = self.handles[index]
        high = self.truth.high
        for after in (high - 1, high):
            check = f"store {index}: changes({after})"
            self._line(f"{check} (the newest change)")
            listed = self._list("DUR-STORE-4", check, functools.partial(store.changes, after))
            self._judge_list("DUR-STORE-4", check, self.truth.changes(after), listed)
