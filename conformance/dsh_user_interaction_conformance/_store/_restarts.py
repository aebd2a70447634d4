"""The store machine's stores: opened at the start, closed and opened again on the way."""

from __future__ import annotations

import contextlib

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from dsh_user_interaction.durable import AskRecord

from ._draws import EPOCHS
from ._example import SkipStep
from ._model import differences
from ._reads import Reads
from ._values import diff_text, record_text

__all__ = ["Restarts"]


class Restarts(Reads):
    """Two or three stores on the data; one, or every one, closed and opened again."""

    @initialize(count=st.integers(2, 3), epoch=EPOCHS)
    def open_stores(self, count: int, epoch: float) -> None:
        """Open two or three stores on the subject's data, as several processes would."""
        self.now = epoch

        def body() -> None:
            for index in range(count):
                what = f"store {index} = await subject.open()"
                self._line(what)
                try:
                    self.handles.append(self._open("DUR-STORE-2", what))
                except SkipStep:
                    self.dead = True
                    raise

        self._step(body)

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
            with contextlib.suppress(SkipStep):
                self._call("DUR-REOPEN-1", what, store.close)
        for index in indexes:
            what = f"store {index} = await subject.open() (again)"
            self._line(what)
            try:
                self.handles[index] = self._open("DUR-REOPEN-1", what)
            except SkipStep:
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
                    f"{record_text(kept)}",
                )
                self.truth.adopt(ask_id, None)
            elif differences(kept, after):
                self._fail(
                    "DUR-REOPEN-1",
                    f"after {where} and opened again, {what} returned {diff_text(kept, after)}",
                )
                self.truth.adopt(ask_id, after)
