"""The store machine's audit record: listing the settled asks, and purging them up to a time."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import rule

from ._reads import Reads

__all__ = ["Audit"]


class Audit(Reads):
    """The audit record, listed whole or since a time, and purged up to a time."""

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
