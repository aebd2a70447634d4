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

Rule 4: a race interleaves as the example drew it, never as the threads
happened to run. :func:`interleaved` runs two calls "at once" one step at a
time (a step: from where a call resumed to its next await, and until what it
awaits is done), the next step's call chosen by the example's drawn turns.
The stores' work never overlaps, so one seed finds one example, in every run
and every process. A call may wait on the other (a lock the other holds
across its awaits): if it polls, its steps end, and once the drawn turns
run out the calls take turns, so the other gets on; if one step waits
longer than a short patience, the race is freed, and from then on the calls
run as they come, as the store's own lock orders them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, Final, TypeVar

__all__ = ["Late", "StoreLoop", "Stuck", "abandoned", "interleaved"]

T = TypeVar("T")

#: Seconds the suite's thread waits beyond the bound before it calls a loop stuck.
_SLACK: Final = 1.0

#: Seconds a racing call's step may take before the race is freed (it waits on the other).
_TURN_PATIENCE: Final = 0.25

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


class _Turns:
    """Who of the racing calls takes the next step (Rule 4); all on the loop's thread."""

    def __init__(self, count: int, turns: Sequence[int], patience: float) -> None:
        self._count = count
        self._turns = list(turns)
        self._taken = 0
        #: The call that took the last step (none yet: call 0 goes first on a 0).
        self._last = -1
        self._patience = patience
        self._arrived = 0
        #: The calls ready for their next step, each with the future that wakes it.
        self._ready: dict[int, asyncio.Future[None]] = {}
        #: The call whose step runs now (the others wait), if one does.
        self._running: int | None = None
        #: Whether the race is freed: every call steps as it comes.
        self._free = False
        self._timer: asyncio.TimerHandle | None = None

    def arrive(self) -> None:
        self._arrived += 1

    def turn(self, me: int) -> asyncio.Future[None]:
        """The future that *me* awaits before its next step (done at once when it goes now)."""
        wake = asyncio.get_running_loop().create_future()
        self._ready[me] = wake
        self._next()
        return wake

    def _next(self) -> None:
        if self._free:
            for wake in self._ready.values():
                if not wake.done():
                    wake.set_result(None)
            self._ready.clear()
            return
        if self._running is not None or not self._ready or self._arrived < self._count:
            return
        # The ready calls, the one after the last step's call first: 0 hands the
        # step on, and once the drawn turns run out the calls take turns, so a
        # call that waits on the other (polling a lock it holds) never starves it.
        ready = sorted(self._ready, key=lambda call: (call <= self._last, call))
        drawn = self._turns[self._taken] if self._taken < len(self._turns) else 0
        self._taken += 1
        chosen = ready[drawn % len(ready)]
        self._running = self._last = chosen
        wake = self._ready.pop(chosen)
        if not wake.done():
            wake.set_result(None)

    def stepping(self, me: int) -> None:
        """*me* awaits something: the others wait until it is done, or the patience is out."""
        if not self._free and self._running == me:
            self._timer = asyncio.get_running_loop().call_later(self._patience, self.free)

    def stepped(self, me: int) -> None:
        """*me*'s step is done: it is ready again, and :meth:`turn` chooses the next step's call."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running == me:
            self._running = None

    def ended(self, me: int) -> None:
        """*me* returned or raised: the next step goes to one of the others."""
        self.stepped(me)
        self._ready.pop(me, None)
        self._next()

    def free(self) -> None:
        """Every call steps as it comes from now on (a step waits on another, or a call ends)."""
        self._free = True
        self._running = None
        self._next()


class _Racer:
    """One racing call, awaited a step at a time when :class:`_Turns` says."""

    def __init__(self, call: Awaitable[Any], me: int, turns: _Turns) -> None:
        self._call = call
        self._me = me
        self._turns = turns

    def __await__(self) -> Generator[Any, Any, Any]:
        turns, me = self._turns, self._me
        turns.arrive()
        try:
            steps: Any = self._call.__await__()
        except BaseException:
            turns.ended(me)  # not awaitable: the other call races nothing
            raise
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yield from turns.turn(me).__await__()
            except BaseException as stopped:  # noqa: BLE001 - cancelled while waiting: the call gets it
                turns.free()
                error = stopped
            try:
                yielded = steps.send(value) if error is None else steps.throw(error)
            except StopIteration as done:
                turns.ended(me)
                return done.value
            except BaseException:
                turns.ended(me)
                raise
            turns.stepping(me)
            try:
                value, error = (yield yielded), None
            except BaseException as raised:  # noqa: BLE001 - handed on to the call, as a task does
                value, error = None, raised
            turns.stepped(me)


def interleaved(
    calls: Sequence[Awaitable[T]], turns: Sequence[int], patience: float = _TURN_PATIENCE
) -> Awaitable[list[T | BaseException]]:
    """Await *calls* "at once", one step at a time, in the order *turns* draws (Rule 4).

    Each next step goes to a ready call chosen by the next of *turns*: ``0``
    hands it to the call after the one that took the last step (the first
    step: call 0), ``1`` to the one after that (of two calls: the same call
    again). Once *turns* run out, the calls take turns. Returns what each
    call returned or raised, as ``asyncio.gather(..., return_exceptions=True)``
    does.
    """
    order = _Turns(len(calls), turns, patience)

    async def racer(call: Awaitable[T], me: int) -> T:
        result: T = await _Racer(call, me, order)
        return result

    return asyncio.gather(
        *(racer(call, me) for me, call in enumerate(calls)), return_exceptions=True
    )
