"""The store machine's reads: one ask, the pending asks, the changes after a number."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import cast

from hypothesis import strategies as st
from hypothesis.stateful import rule

from dsh_user_interaction.durable import AskRecord

from ._draws import Drawing
from ._example import SkipStep
from ._model import differences
from ._values import brief, diff_text, record_text

__all__ = ["Reads"]


class Reads(Drawing):
    """Any store reads what the data holds: exactly the truth, in order."""

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
                self._fail("DUR-STORE-2", f"{what} returned {record_text(got)}, not None")
                self.truth.adopt(ask_id, got)
            elif expected is not None and got is None:
                self._fail(
                    "DUR-STORE-2",
                    f"{what} returned None, where the data holds {record_text(expected)}",
                )
                self.truth.adopt(ask_id, got)
            elif expected is not None and got is not None:
                self._judge("DUR-STORE-3")
                if differences(expected, got):
                    blamed = self.truth.blame("DUR-STORE-2", expected, got)
                    self._fail(blamed, f"{what} returned {diff_text(expected, got)}")
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

    def _get(self, index: int, ask_id: str, requirement: str, what: str) -> AskRecord | None:
        store = self.handles[index]
        got = self._call(requirement, what, lambda: store.get(ask_id), values=ask_id)
        if got is not None and not isinstance(got, AskRecord):
            self._fail(requirement, f"{what} returned {brief(got)}, not an AskRecord or None")
            raise SkipStep
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
            raise SkipStep
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
                    blamed, f"{what} listed {record.ask_id!r} with {diff_text(truth, record)}"
                )
                self.truth.adopt(record.ask_id, record)
