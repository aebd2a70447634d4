"""One store example's event loop, on a thread of its own, where every call is bounded.

Design notes (what this module guarantees to the store suite):

Rule 1: every call returns within a fixed time. The suite's thread (where
Hypothesis runs the state machine) hands each coroutine to the example's
loop and waits for it. On the loop, the coroutine is cancelled after
``bound`` seconds (:class:`Late`); if the loop does not answer within
twice that and a second more, its thread is held by the store (a blocking
call, a deadlock, a cancellation swallowed in a loop), and the suite stops
waiting for good (:class:`Stuck`).

Rule 2: a stuck loop is abandoned, never closed under its tasks. It is kept
referenced (:func:`abandoned` says whether this process gave up on one),
so the interpreter reports no destroyed pending task later; its thread is a
daemon thread.

Rule 3: nothing outlives the example. :meth:`StoreLoop.close` cancels what
is left on the loop, waits ``bound`` for it, and stops the thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

__all__ = ["Late", "StoreLoop", "Stuck", "abandoned"]

T = TypeVar("T")

#: Seconds the suite's thread waits beyond the bound before it calls a loop stuck.
_SLACK: Final = 1.0

#: Loops given up on, with their tasks, kept so that those are never collected pending.
_ABANDONED: list[tuple[asyncio.AbstractEventLoop, set[asyncio.Task[Any]]]] = []


class Late(Exception):
    """The call did not return within the bound; it was cancelled."""

    def __init__(self, bound: float) -> None:
        super().__init__(f"did not return within {bound:g} s")
        self.bound = bound


class Stuck(Exception):
    """The loop did not answer at all: its thread is held, and the loop is given up."""

    def __init__(self, patience: float) -> None:
        super().__init__(
            f"did not return, and its event loop did not run again within {patience:g} s "
            "(a blocking call, or a cancellation that was swallowed)"
        )
        self.patience = patience


class StoreLoop:
    """A fresh event loop on a daemon thread, for one example of the store suite."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._stuck = False
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.call_soon(started.set)
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="dsh-store-example", daemon=True)
        self._thread.start()
        started.wait()

    @property
    def stuck(self) -> bool:
        """Whether a call found the loop held: nothing more runs on it."""
        return self._stuck

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop itself, for tasks that span several calls."""
        return self._loop

    def call(self, make: Callable[[], Awaitable[T]], bound: float) -> T:
        """Await ``make()`` on the loop, within *bound* seconds; return what it returned.

        Raises what it raised, :class:`Late` when it was cancelled at the
        bound, and :class:`Stuck` when the loop did not answer.
        """
        if self._stuck:
            raise Stuck(0.0)

        async def bounded() -> T:
            try:
                async with asyncio.timeout(bound):
                    return await make()
            except TimeoutError:
                raise Late(bound) from None

        future = asyncio.run_coroutine_threadsafe(bounded(), self._loop)
        patience = 2 * bound + _SLACK
        try:
            return future.result(patience)
        except TimeoutError:
            if future.done():
                return future.result()  # it ended just now, or raised a TimeoutError itself
            self._stuck = True
            future.cancel()
            raise Stuck(patience) from None

    def close(self, bound: float) -> None:
        """Cancel what is left on the loop, then stop it; abandon it if anything will not end.

        Returns at once for a stuck loop, and within about twice *bound* otherwise.
        """
        stubborn = self._stuck
        if not stubborn:
            try:
                self.call(_cancel_the_rest, bound)
            except (Late, Stuck):
                stubborn = True  # a task ignores its cancellation, or the loop is held
        if not self._stuck:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(bound + _SLACK)
        if stubborn or self._thread.is_alive():
            # Read while the loop stands still, or (stuck) as near to that as can be.
            tasks: set[asyncio.Task[Any]] = set()
            if not self._thread.is_alive():
                tasks = set(asyncio.all_tasks(self._loop))
            _ABANDONED.append((self._loop, tasks))
            return
        self._loop.close()


async def _cancel_the_rest() -> None:
    me = asyncio.current_task()
    left: set[asyncio.Task[Any]] = {t for t in asyncio.all_tasks() if t is not me}
    for task in left:
        task.cancel()
    if left:
        done, _ = await asyncio.wait(left)
        for task in done:
            if not task.cancelled():
                task.exception()  # retrieved: judged by the check that made it, or nobody's
    loop = asyncio.get_running_loop()
    await loop.shutdown_default_executor()


def abandoned() -> bool:
    """Whether this process gave up on a store example's loop (its thread may still run)."""
    return bool(_ABANDONED)
