"""Run one example's event loop on a thread of its own, and walk away from it if it will not end.

Design notes (what this module guarantees to the engine):

Rule 1: every example ends. The example's coroutine runs in a fresh event
loop on a worker thread. The calling thread waits at most ``limit`` for the
scenario, then cancels it and waits ``bound`` more; then the teardown gets
``bound``, and the tasks left behind are cancelled and get ``bound``. If the
thread has still not finished by the end of all that, plus a little slack,
the caller stops waiting and abandons it. No wait depends on the subject's
cooperation: a subject that ignores its signal, swallows cancellation in a
loop, leaves a task that ignores cancellation, or blocks the loop with a
blocking call costs at most a fixed number of seconds.

Rule 2: the verdict says why. :class:`LoopResult` tells a scenario that did
not finish apart from one that ignored its cancellation, a loop that was
blocked (measured by a heartbeat the loop schedules itself), and tasks that
outlived the example and ignored their own cancellation.

Rule 3: nothing is destroyed while pending. A loop whose leftover tasks
would not end is kept referenced (never closed under them), so the
interpreter reports no "Task was destroyed but it is pending" later.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

__all__ = ["LoopResult", "abandoned", "run_bounded"]

#: Loops given up on, with their stubborn tasks; kept so that those are never
#: garbage-collected while pending.
_ABANDONED: list[tuple[asyncio.AbstractEventLoop, set[asyncio.Task[Any]]]] = []


@dataclass
class LoopResult:
    """How one bounded run ended."""

    #: The scenario finished (returned or raised) within the limit.
    settled: bool = False
    #: What it returned, when it returned.
    value: object = None
    #: What it raised, when it raised (``CancelledError`` included).
    error: BaseException | None = None
    #: It was cancelled at the limit and was still running ``bound`` seconds later.
    ignored_cancel: bool = False
    #: The longest time the loop went without running its heartbeat, in seconds.
    stall: float = 0.0
    #: The calling thread gave up waiting for the worker thread.
    abandoned: bool = False
    #: When the loop last ran its heartbeat (``time.monotonic()``).
    last_beat: float = 0.0
    #: Tasks left behind by the example that did not end when cancelled.
    leftovers: list[str] = field(default_factory=list[str])
    #: The teardown raised this, or did not finish within the bound.
    teardown_error: str | None = None
    #: The scenario's own task, once it runs.
    scenario: asyncio.Task[Any] | None = None
    #: The scenario's error, formatted on the worker thread.
    error_text: str = ""
    #: Threads the example started that were still running after it.
    threads: list[str] = field(default_factory=list[str])
    #: What the loop's exception handler was given (an exception nobody
    #: retrieved, say); kept here instead of being logged over the report.
    loop_errors: list[str] = field(default_factory=list[str])


class _Heartbeat:
    """A callback the loop runs every *interval*; the gaps between runs measure stalls."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, interval: float, result: LoopResult
    ) -> None:
        self.loop = loop
        self.interval = interval
        self.result = result
        result.last_beat = time.monotonic()
        self.handle: asyncio.TimerHandle | None = loop.call_later(interval, self.beat)

    def _measure(self) -> float:
        now = time.monotonic()
        gap = now - self.result.last_beat - self.interval
        self.result.stall = max(self.result.stall, gap)
        self.result.last_beat = now
        return now

    def beat(self) -> None:
        self._measure()
        self.handle = self.loop.call_later(self.interval, self.beat)

    def stop(self) -> None:
        self._measure()
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


async def _within(awaitable: Awaitable[object], seconds: float) -> tuple[bool, object]:
    """Wait for *awaitable* at most *seconds* without ever awaiting it directly.

    Returns whether it finished, and its task (so a stubborn one can be left running).
    """
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    return bool(done), task


async def _scenario_phase(
    result: LoopResult,
    *,
    scenario: Callable[[], Coroutine[Any, Any, object]],
    limit: float,
    bound: float,
    on_limit: Callable[[], None],
) -> None:
    task = asyncio.get_running_loop().create_task(scenario(), name="dsh-conformance-scenario")
    result.scenario = task
    done, _ = await asyncio.wait({task}, timeout=limit)
    if not done:
        on_limit()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=bound)
        result.ignored_cancel = not done
    else:
        result.settled = True
    if task.done():
        if task.cancelled():
            result.error = asyncio.CancelledError()
        elif task.exception() is not None:
            result.error = task.exception()
        else:
            result.value = task.result()


async def _cleanup_phase(
    result: LoopResult,
    *,
    teardown: Callable[[], Coroutine[Any, Any, None]],
    bound: float,
    stubborn: set[asyncio.Task[Any]],
    phase: asyncio.Future[Any],
) -> None:
    if not phase.done():
        # The scenario phase was cut short (the subject stopped the loop, or
        # raised KeyboardInterrupt or SystemExit); let it finish if it can.
        await asyncio.wait({phase}, timeout=bound)
    finished, closing = await _within(teardown(), bound)
    if not finished:
        result.teardown_error = f"the teardown did not finish within {bound:g} s"
    elif isinstance(closing, asyncio.Future):
        failed = closing.exception() if not closing.cancelled() else None
        if failed is not None:
            result.teardown_error = f"the teardown raised {_format(failed)}"
    me = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not me and t is not phase]
    for leftover in left:
        leftover.cancel()
    if left:
        finished_tasks, pending = await asyncio.wait(left, timeout=bound)
        for leftover in finished_tasks:
            if not leftover.cancelled():
                leftover.exception()  # retrieved: judged by the scenario, or nobody's
        result.leftovers = [_describe(t, result) for t in pending]
        stubborn.update(pending)


def _format(error: BaseException) -> str:
    """One line for *error*, formatted on the worker: its ``__str__`` may be hostile."""
    try:
        return "".join(traceback.format_exception_only(error)).strip()
    except Exception:  # noqa: BLE001 - a broken __str__ is reported by its type
        return f"{type(error).__name__} (whose message cannot be shown)"


def _describe(task: asyncio.Task[Any], result: LoopResult) -> str:
    if task is result.scenario:
        return "the example itself: the provider or driver it awaits ignores cancellation"
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", None) or type(coro).__name__
    return f"task {task.get_name()} running {name}"


def run_bounded(
    scenario: Callable[[], Coroutine[Any, Any, object]],
    *,
    teardown: Callable[[], Coroutine[Any, Any, None]],
    limit: float,
    bound: float,
    on_limit: Callable[[], None] = lambda: None,
) -> LoopResult:
    """Run *scenario* in a fresh loop on a worker thread; always return within a fixed time.

    The worst case is about ``limit + 5 * bound`` plus a second of slack.
    *on_limit* is called in the worker when the scenario reaches the limit,
    before it is cancelled.
    """
    result = LoopResult()
    finished = threading.Event()
    stubborn: set[asyncio.Task[Any]] = set()

    def quiet(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        result.loop_errors.append(str(context.get("message", "")))

    def work() -> None:
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(quiet)
        executor = ThreadPoolExecutor(thread_name_prefix="dsh-conformance-executor")
        loop.set_default_executor(executor)
        heartbeat = _Heartbeat(loop, min(0.05, bound / 4), result)
        phase = loop.create_task(
            _scenario_phase(result, scenario=scenario, limit=limit, bound=bound, on_limit=on_limit)
        )
        try:
            try:
                loop.run_until_complete(phase)
            except BaseException as error:  # noqa: BLE001 - the subject stopped the loop
                result.settled = True
                result.error = result.error or error
            if result.error is not None:
                result.error_text = _format(result.error)
            try:
                loop.run_until_complete(
                    _cleanup_phase(
                        result, teardown=teardown, bound=bound, stubborn=stubborn, phase=phase
                    )
                )
            except BaseException as error:  # noqa: BLE001 - reported to the calling thread
                result.teardown_error = f"the clean-up was interrupted by {_format(error)}"
        finally:
            heartbeat.stop()
            executor.shutdown(wait=False, cancel_futures=True)
            _forget_at_exit(executor)
            if stubborn or not phase.done():
                _ABANDONED.append((loop, {*stubborn, phase}))
            else:
                loop.close()
            finished.set()

    before = set(threading.enumerate())
    thread = threading.Thread(target=work, name="dsh-conformance-example", daemon=True)
    thread.start()
    if not finished.wait(limit + 4 * bound + 1.0):
        # Every wait of the worker is timed, so a worker that has not finished
        # is stuck in a blocking call: its loop has not run its heartbeat since.
        result.abandoned = True
        result.stall = max(result.stall, time.monotonic() - result.last_beat)
        return result
    thread.join(bound)
    deadline = time.monotonic() + bound
    started = [t for t in threading.enumerate() if t not in before and t is not thread]
    for other in started:
        other.join(max(0.0, deadline - time.monotonic()))
    result.threads = [f"thread {t.name}" for t in started if t.is_alive()]
    return result


def _forget_at_exit(executor: ThreadPoolExecutor) -> None:
    """Keep the interpreter's exit from joining this executor's threads.

    ``concurrent.futures`` joins every worker thread at exit; one stuck in a
    subject's blocking call would hang the exit after the report. The threads
    are reported as left behind instead.
    """
    queues: object = getattr(concurrent.futures.thread, "_threads_queues", None)
    if not isinstance(queues, MutableMapping):
        return
    registry = cast("MutableMapping[object, object]", queues)
    for worker in list(getattr(executor, "_threads", ())):
        registry.pop(worker, None)


def abandoned() -> bool:
    """Whether this process gave up on an example's loop (its tasks or thread may still run)."""
    return bool(_ABANDONED)
