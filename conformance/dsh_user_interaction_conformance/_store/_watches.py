"""The store machine's watches: a UI watches one store while the data changes through any.

The watch is read only between the steps that change the data (:class:`_Watcher`),
so that a seed replays what it showed, whatever the timing of the store's
threads and polls.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from hypothesis import strategies as st
from hypothesis.stateful import rule

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.durable import AskRecord, AskStore, Outcome, StoredRequest

from ._draws import ASK_IDS
from ._loop import Late, Stuck
from ._model import differences, same
from ._values import brief, later, record_text
from ._writes import Writes

__all__ = ["Watches"]


class Watches(Writes):
    """A UI watches a store while agents and UIs change the data through any store."""

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
                ask_id = data.draw(ASK_IDS.filter(_not_in(taken)), label="ask id")
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
        self._line(f"{what} showed {[record_text(r) for r in shown]}")
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
            if not later(record.seq, last):
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
                    f"{what} yielded {record_text(record)}, which is not the state change "
                    f"{record.seq} made",
                )
                return
            if not self.truth.shown_since(record.seq, started):
                self._fail(
                    "DUR-WATCH-1",
                    f"{what} yielded {record_text(record)}, a state that had been replaced "
                    "before the watcher started",
                )
                return
        shown_seqs = {cast("AskRecord", r).seq for r in shown}
        missed = [r for r in self.truth.changes(after) if r.seq not in shown_seqs]
        if missed and reached:
            self._fail(
                "DUR-WATCH-1",
                f"{what} skipped {[record_text(r) for r in missed]}, though it showed "
                "later changes",
            )


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
        return any(isinstance(r, AskRecord) and later(r.seq, target - 1) for r in self.records)

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


def _not_in(taken: frozenset[str]) -> Callable[[str], bool]:
    """Whether a drawn ask id is a new one: not one of *taken* (an id, not its characters)."""
    return lambda drawn: drawn not in taken
