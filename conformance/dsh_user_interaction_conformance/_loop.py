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

Rule 2: the loop's clock runs only while its thread can. On Linux the
loop's ``time()`` is the monotonic clock less the time the loop's thread has
spent runnable but waiting for a CPU, so every timed wait of the example
(the limit, the bound a check allows a subject, a driver's patience) counts
the time the loop could have run, not the time a busy machine took from it.
The calling thread's last-resort wait is extended the same way, by three
times its length at most, so an example still ends in a fixed time.

Rule 3: the verdict says why. :class:`LoopResult` tells a scenario that did
not finish apart from one that ignored its cancellation, a loop that was
blocked (measured by a heartbeat the loop schedules itself), and tasks that
outlived the example and ignored their own cancellation.

Rule 4: a stall is measured, not yet judged. Each gap between heartbeats
longer than their interval is a :class:`Stall`: how late the beat ran, and
what the loop's thread did meanwhile (its CPU time, the CPU time the
interpreter spent collecting garbage on it, and on Linux the time it was
runnable but waiting for a CPU, from ``/proc/self/task/<tid>/schedstat``,
and the longest time any thread that was running before the example began,
the suite's own, waited for a CPU). A thread held by its own code is on a
CPU or asleep in a blocking call; a thread the machine starved is runnable
and waiting, or asleep on a lock (the interpreter's, say) that another
thread the machine starved holds; a collection's length depends on
everything the process holds, not on the subject. :meth:`Stall.judged`
tells them apart where the numbers allow it; the engine decides the rest.

Rule 4a: a stall is called starved only where the numbers prove it. The
part of a stall the loop's own code held is at least :attr:`Stall.blocked`
(its time on a CPU and asleep, less what the machine explains); over the
limit, it is ``blocked``. It may be more: a stretch of the subject's code
that is preempted waits for a CPU too, and code that spins until a time
on the wall clock holds the loop for that whole time, waits included. The
waits are the machine's only when the loop's thread was preempted (switched
off a CPU it still wanted) at most :data:`PREEMPTED` times in the stall: its
waits were for the loop's next turn, after a sleep, not a stretch of its
code preempted again and again. Then it is ``starved``. Otherwise
the stall is ``unsure``: the machine gave the thread too little CPU to
tell, and the engine runs the example again (``spec/user-interaction.md``,
section 4, "Never a false green").

Rule 5: nothing is destroyed while pending. A loop whose leftover tasks
would not end is kept referenced (never closed under them), so the
interpreter reports no "Task was destroyed but it is pending" later.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread
import contextlib
import gc
import os
import sys
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, cast

if sys.platform == "linux":
    import resource

__all__ = [
    "Hung",
    "LoopResult",
    "Stall",
    "abandoned",
    "note_waited_on",
    "process_collecting",
    "run_bounded",
    "thread_times",
]

#: How a stall was judged: the subject's own code held the loop, the loop's
#: thread waited for a CPU, or (``unsure``) the machine gave the thread too
#: little CPU to tell which (Rule 4a).
Judged = Literal["blocked", "starved", "unsure"]

#: The most times the loop's thread may be preempted in a stall for its
#: waits to be the machine's. A correct loop runs short callbacks and
#: sleeps; its waits follow its wakes, and one of its callbacks is
#: preempted now and then. A stretch of its own that holds the loop on a
#: busy machine is preempted at every time slice: dozens of times in 0.3 s.
PREEMPTED = 2

#: Seconds between heartbeats (a quarter of the bound, if that is smaller). A
#: blocking stretch of *d* seconds shows as a stall of at least *d* minus this.
BEAT = 0.01

#: Loops given up on, with their stubborn tasks; kept so that those are never
#: garbage-collected while pending.
_ABANDONED: list[tuple[asyncio.AbstractEventLoop, set[asyncio.Task[Any]]]] = []


def thread_times(tid: int) -> tuple[float, float] | None:
    """Thread *tid*'s CPU time and its time runnable but waiting for a CPU, in seconds.

    Read from ``/proc/self/task/<tid>/schedstat``; ``None`` where that is not
    available (not Linux, no ``/proc``, a kernel without scheduler
    statistics), or the thread is gone.
    """
    if sys.platform != "linux":
        return None
    try:
        fd = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _parse_schedstat(os.read(fd, 128))
    except OSError:
        return None
    finally:
        os.close(fd)


def cpu_pressure() -> float | None:
    """Seconds in which some task of this machine waited for a CPU, since it booted.

    The kernel's pressure stall information (``/proc/pressure/cpu``, its
    ``some`` line); ``None`` where that is not available (not Linux, or a
    kernel without it). Two readings tell what share of a stretch of time
    the machine's CPUs were contended: busy with other work while ready work
    waited.
    """
    if sys.platform != "linux":
        return None
    try:
        with open("/proc/pressure/cpu", "rb") as file:
            text = file.read(512)
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == [b"some"]:
            for field in fields[1:]:
                key, _, value = field.partition(b"=")
                if key == b"total" and value.isdigit():
                    return int(value) / 1e6
    return None


def _parse_schedstat(text: bytes) -> tuple[float, float] | None:
    fields = text.split()
    if len(fields) < 3 or not all(field.isdigit() for field in fields[:3]):
        return None
    on_cpu, waiting, slices = (int(field) for field in fields[:3])
    if not slices:
        # A kernel without scheduler statistics reports "0 0 0"; a running
        # thread has had one slice at least (its CPU time may not show yet).
        return None
    return on_cpu / 1e9, waiting / 1e9


def _preemptions() -> int | None:
    """How often the calling thread was switched off a CPU it still wanted; ``None`` if unknown.

    ``getrusage(RUSAGE_THREAD)``'s involuntary context switches (Linux), a
    couple of microseconds a reading.
    """
    if sys.platform != "linux":
        return None
    try:
        return int(resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw)
    except OSError:
        return None


@dataclass(frozen=True)
class Stall:
    """A stretch in which the event loop did not run, and what its thread did meanwhile."""

    #: How late the loop ran its heartbeat (or the child answered a ping), in seconds.
    seconds: float
    #: The loop thread's CPU time in that stretch, when known.
    on_cpu: float | None = None
    #: The time it was runnable but waiting for a CPU (Linux), when known.
    waiting: float | None = None
    #: Of its CPU time, what the interpreter spent collecting garbage, when known.
    collecting: float | None = None
    #: The longest time one of the suite's other threads (those running
    #: before the example began) waited for a CPU in that stretch (Linux),
    #: when known.
    others: float | None = None
    #: How many times the loop's thread was preempted in that stretch (switched
    #: off a CPU it still wanted; Linux), when known. Many means a stretch of
    #: its own code was running, preempted again and again.
    preempted: int | None = None
    #: The longest time a thread the example started (the subject's, or the
    #: runtime's on its behalf) waited for a CPU in that stretch, or what the
    #: processes a synchronous call of the loop's thread waited on (a harness
    #: child's ``register``) waited meanwhile, whichever is more (Linux),
    #: when known.
    started: float | None = None

    @property
    def asleep(self) -> float | None:
        """The part of the stall the loop's thread was neither on a CPU nor waiting for one."""
        if self.on_cpu is None or self.waiting is None:
            return None
        return max(0.0, self.seconds - self.on_cpu - self.waiting)

    @property
    def blocked(self) -> float | None:
        """The part of the stall the loop's own code held it; ``None`` when unknown.

        A thread held by its own code is on a CPU (a CPU-bound stretch) or
        asleep in a blocking call (``time.sleep``, a blocking read); either
        way it is not waiting for a CPU. Garbage collection is left out too.
        So is the time it slept while another of the suite's threads waited
        for a CPU, up to that thread's wait: the loop's thread then sleeps
        on a lock (the interpreter's lock, most often) that the starved
        thread holds. Only one thread's wait counts, the longest, never more
        than the loop's thread slept, and never a thread the example
        started, so a blocking call of the subject's own still counts whole
        on a busy machine.
        """
        if self.waiting is None:
            return None
        held = self.seconds - self.waiting - (self.collecting or 0.0)
        asleep = self.asleep
        if self.others and asleep is not None:
            held -= min(self.others, asleep)
        return max(0.0, held)

    @property
    def surely_blocked(self) -> float | None:
        """The part of the stall the loop's own code held it, however the machine ran the rest.

        :attr:`blocked`, less the time the loop's thread slept while a
        thread the example started waited for a CPU (up to that wait): that
        thread may hold the interpreter's lock the loop sleeps on, so the
        sleep may be the machine's, or the subject's own blocking call; the
        numbers cannot tell. ``None`` when unknown.
        """
        blocked = self.blocked
        asleep = self.asleep
        if blocked is None or not self.started or asleep is None:
            return blocked
        credited = min(self.others or 0.0, asleep)
        return max(0.0, blocked - min(self.started, asleep - credited))

    def judged(self, limit: float) -> Judged | None:
        """How a stall longer than *limit* is judged (Rule 4a); ``None`` without the waits.

        ``blocked`` when more than *limit* of it was the loop's own (not
        spent waiting for a CPU, nor collecting garbage), or (without the
        waiting time) when the thread spent more than *limit* on a CPU
        outside collections. ``starved`` when the rest was waiting for a CPU
        and the thread was preempted at most :data:`PREEMPTED` times in it,
        so its waits were the machine's. ``unsure`` when it waited for a CPU
        but was preempted more often than that (or how often is unknown):
        a stretch of its own, preempted, may have held it past the limit; or
        when only the waits of a thread the example started bring it within
        the limit (:attr:`surely_blocked`).
        ``None`` when the waiting time is unknown: only a second run can tell.
        """
        blocked = self.blocked
        if blocked is not None:
            surely = self.surely_blocked
            if surely is not None and surely > limit:
                return "blocked"
            if blocked <= limit and self.preempted is not None and self.preempted <= PREEMPTED:
                return "starved"
            return "unsure"
        if self.on_cpu is not None and self.on_cpu - (self.collecting or 0.0) > limit:
            return "blocked"
        return None

    def key(self) -> float:
        """What makes one stall worse than another: its blocked part, where known."""
        blocked = self.blocked
        return self.seconds if blocked is None else blocked


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
    #: What the loop's thread did until the limit, when the scenario reached it.
    hung: Hung | None = None
    #: The longest time the loop went without running its heartbeat, in seconds.
    stall: float = 0.0
    #: The longest stall, with what the loop's thread did in it.
    longest: Stall | None = None
    #: The stall with the largest part not spent waiting for a CPU (the
    #: longest, where that is not known).
    worst: Stall | None = None
    #: The calling thread gave up waiting for the worker thread.
    abandoned: bool = False
    #: When the loop last ran its heartbeat (``time.monotonic()``).
    last_beat: float = 0.0
    #: The loop thread's id (``threading.get_native_id()``), and its times
    #: when it last ran its heartbeat.
    loop_thread: int | None = None
    last_times: _Times = field(default_factory=lambda: _Times(0.0, None, 0.0))
    #: Its waiting time when the loop started, when known.
    first_waiting: float | None = None
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

    def note(self, stall: Stall) -> None:
        """Keep *stall* if it is the longest, or the worst, so far."""
        self.stall = max(self.stall, stall.seconds)
        if self.longest is None or stall.seconds > self.longest.seconds:
            self.longest = stall
        if self.worst is None or stall.key() > self.worst.key():
            self.worst = stall

    def since_last_beat(self) -> Stall:
        """The stall still going on (read from another thread): the loop has not beaten since."""
        seconds = time.monotonic() - self.last_beat
        tid = self.loop_thread
        times = thread_times(tid) if tid is not None else None
        then = self.last_times
        if times is None or then.waiting is None:
            return Stall(seconds)
        return Stall(
            seconds,
            max(0.0, times[0] - then.on_cpu),
            max(0.0, times[1] - then.waiting),
            _COLLECTING.get(tid, then.collecting) - then.collecting if tid is not None else None,
        )


#: No other thread read.
_NO_OTHERS: Mapping[int, float] = MappingProxyType({})


class _Times(NamedTuple):
    """A thread's cumulative times, in seconds."""

    on_cpu: float
    #: Runnable but waiting for a CPU (Linux), when known.
    waiting: float | None
    #: On a CPU collecting garbage.
    collecting: float
    #: The suite's other threads' cumulative waits for a CPU (Linux), by thread id.
    others: Mapping[int, float] = _NO_OTHERS
    #: How many times the thread was preempted (Linux), when known.
    preempted: int | None = None
    #: The cumulative waits for a CPU of the threads the example started (Linux), by id.
    started: Mapping[int, float] = _NO_OTHERS
    #: What the processes this thread waited on in synchronous calls waited for
    #: a CPU meanwhile, cumulative (:func:`note_waited_on`).
    waited_on: float = 0.0


#: By thread id: what the processes a thread waited on in synchronous calls
#: waited for a CPU meanwhile, summed (:func:`note_waited_on`).
_WAITED_ON: dict[int, float] = {}


def note_waited_on(seconds: float) -> None:
    """Record that a synchronous call of this thread waited on processes that waited *seconds*.

    The harness's ``register`` and ``dispose`` are synchronous, as Python's
    seam is: the example's loop sleeps until the child answers. What the
    child (and the pipe's threads) waited for a CPU meanwhile keeps such a
    sleep from being judged blocked, as a thread the example started does
    (:attr:`Stall.surely_blocked`): it may be the machine's, or the child's
    own slowness, which the loop requirement judges too.
    """
    if seconds > 0:
        tid = threading.get_native_id()
        _WAITED_ON[tid] = _WAITED_ON.get(tid, 0.0) + seconds


def _started_or_waited_on(times: _Times, then: _Times) -> float | None:
    """The longest wait of a thread the example started, or what a synchronous call waited on."""
    started = _longest_wait(times.started, then.started, whole=True)
    waited_on = times.waited_on - then.waited_on
    if waited_on <= 0:
        return started
    return max(started or 0.0, waited_on)


def _longest_wait(
    now: Mapping[int, float], then: Mapping[int, float], *, whole: bool = False
) -> float | None:
    """The longest wait for a CPU of a thread read both times; ``None`` if none was.

    With *whole*, a thread read only now counts with its whole wait (it
    started in the stretch, or was found since).
    """
    tids = now.keys() if whole else now.keys() & then.keys()
    waits = [now[tid] - then.get(tid, 0.0) for tid in tids]
    return max(waits) if waits else None


#: The CPU time each example loop's thread has spent collecting garbage, by thread
#: id, while its :class:`_ThreadClock` is open; and when a collection started on it.
_COLLECTING: dict[int, float] = {}
_COLLECTION_STARTED: dict[int, float] = {}


def _on_collection(phase: str, _info: dict[str, int]) -> None:
    """A ``gc.callbacks`` entry: time the collections of the loops' threads."""
    tid = threading.get_native_id()
    if tid not in _COLLECTING:
        return
    if phase == "start":
        _COLLECTION_STARTED[tid] = time.thread_time()
        return
    started = _COLLECTION_STARTED.pop(tid, None)
    if started is not None:
        _COLLECTING[tid] = _COLLECTING.get(tid, 0.0) + time.thread_time() - started


class _ThreadClock:
    """The calling thread's CPU time, its garbage collections, and on Linux its waits for a CPU.

    Made and read on the loop's thread; the schedstat file stays open, and is
    read with ``pread`` (a couple of microseconds a beat).
    """

    def __init__(self) -> None:
        self.tid = threading.get_native_id()
        self._fd: int | None = None
        self._others: _OtherThreads | None = None
        if sys.platform == "linux":
            path = f"/proc/self/task/{self.tid}/schedstat"
            try:
                self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._fd = None
            else:
                self._others = _OtherThreads(self.tid)
        _COLLECTING[self.tid] = 0.0
        if _on_collection not in gc.callbacks:
            gc.callbacks.append(_on_collection)

    def read(self) -> _Times:
        """The thread's times, cumulative."""
        return _Times(time.thread_time(), self.waiting(), _COLLECTING.get(self.tid, 0.0))

    def sample(self) -> tuple[float, _Times]:
        """``time.monotonic()`` and :meth:`read`, taken together.

        A thread preempted between the readings would count that wait in one
        and not the other, so the readings are taken again (up to three
        times) until the waiting time around the clock does not change.
        """
        waiting = self.waiting()
        now, on_cpu = time.monotonic(), time.thread_time()
        for _ in range(3):
            after = self.waiting()
            if after == waiting:
                break
            waiting = after
            now, on_cpu = time.monotonic(), time.thread_time()
        others, started = (
            self._others.read() if self._others is not None else (_NO_OTHERS, _NO_OTHERS)
        )
        collecting = _COLLECTING.get(self.tid, 0.0)
        preempted = _preemptions() if waiting is not None else None
        waited_on = _WAITED_ON.get(self.tid, 0.0)
        return now, _Times(on_cpu, waiting, collecting, others, preempted, started, waited_on)

    def waiting(self) -> float | None:
        """The time the thread has waited for a CPU, cumulative; ``None`` when unknown."""
        if self._fd is None:
            return None
        try:
            found = _parse_schedstat(os.pread(self._fd, 128, 0))
        except OSError:
            found = None
        if found is None:
            self.close()
            return None
        return found[1]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._others is not None:
            self._others.close()
            self._others = None
        _COLLECTING.pop(self.tid, None)
        _COLLECTION_STARTED.pop(self.tid, None)


class _OtherThreads:
    """The cumulative waits for a CPU of the process's other threads (Linux).

    Two sets, read apart. The threads that ran before the example are the
    suite's own (the thread waiting for the example, a test runner's, the
    harness's pipe threads). The threads the example started may be the
    subject's: a subject's thread that holds the loop up on a busy machine
    is not surely the machine's doing, so their waits only ever make a stall
    ``unsure`` (:attr:`Stall.surely_blocked`), never ``starved``. Their
    schedstat files stay open (at most :attr:`MOST`); a few microseconds a
    thread each reading, and the list of threads is read again at most
    every :attr:`RELIST` seconds.
    """

    MOST = 64
    RELIST = 0.1

    def __init__(self, own: int) -> None:
        self._own = own
        self._fds: dict[int, int] = {}
        self._started: dict[int, int] = {}
        self._listed_at = time.monotonic()
        for tid in self._listed()[: self.MOST]:
            self._open(tid, self._fds)

    def _listed(self) -> list[int]:
        try:
            return sorted({int(name) for name in os.listdir("/proc/self/task")} - {self._own})
        except (OSError, ValueError):
            return []

    @staticmethod
    def _open(tid: int, into: dict[int, int]) -> None:
        with contextlib.suppress(OSError):  # it ended meanwhile
            into[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)

    def read(self) -> tuple[dict[int, float], dict[int, float]]:
        """Each thread's wait for a CPU so far, in seconds, by id: the suite's, the example's."""
        now = time.monotonic()
        if now - self._listed_at >= self.RELIST:
            self._listed_at = now
            known = self._fds.keys() | self._started.keys()
            room = self.MOST - len(self._started)
            for tid in [t for t in self._listed() if t not in known][: max(0, room)]:
                self._open(tid, self._started)
        return self._waits(self._fds), self._waits(self._started)

    @staticmethod
    def _waits(fds: dict[int, int]) -> dict[int, float]:
        found: dict[int, float] = {}
        for tid, fd in fds.items():
            try:
                times = _parse_schedstat(os.pread(fd, 128, 0))
            except OSError:
                continue  # the thread has ended
            if times is not None:
                found[tid] = times[1]
        return found

    def close(self) -> None:
        for fd in [*self._fds.values(), *self._started.values()]:
            os.close(fd)
        self._fds.clear()
        self._started.clear()


class _LoopClock:
    """The loop's ``time()``: monotonic time less its thread's time waiting for a CPU (Rule 2).

    The waiting time is read at most once a millisecond; the clock never goes back.
    """

    def __init__(self, clock: _ThreadClock) -> None:
        self._clock = clock
        self._start = clock.waiting() or 0.0
        self._waited = 0.0
        self._read_at = self._last = 0.0

    def __call__(self) -> float:
        now = time.monotonic()
        if now - self._read_at >= 0.001:
            self._read_at = now
            waiting = self._clock.waiting()
            if waiting is not None:
                self._waited = waiting - self._start
        self._last = max(self._last, now - self._waited)
        return self._last


class _Heartbeat:
    """A callback the loop runs every *interval*; the gaps between runs measure stalls."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, interval: float, result: LoopResult
    ) -> None:
        self.loop = loop
        self.interval = interval
        self.result = result
        self.clock = _ThreadClock()
        result.loop_thread = self.clock.tid
        result.last_beat, result.last_times = self.clock.sample()
        result.first_waiting = result.last_times.waiting
        if result.first_waiting is not None:
            # Rule 2; on the instance, so the loop keeps the class the policy chose.
            setattr(loop, "time", _LoopClock(self.clock))  # noqa: B010 - a method on one instance
        self.handle: asyncio.TimerHandle | None = loop.call_later(interval, self.beat)

    def _measure(self) -> float:
        now, times = self.clock.sample()
        result = self.result
        gap = now - result.last_beat - self.interval
        if gap > 0.001:
            then = result.last_times
            waiting = (
                None
                if times.waiting is None or then.waiting is None
                else times.waiting - then.waiting
            )
            result.note(
                Stall(
                    gap,
                    times.on_cpu - then.on_cpu,
                    waiting,
                    times.collecting - then.collecting,
                    _longest_wait(times.others, then.others),
                    None
                    if times.preempted is None or then.preempted is None
                    else times.preempted - then.preempted,
                    _started_or_waited_on(times, then),
                )
            )
        result.last_beat = now
        result.last_times = times
        return now

    def beat(self) -> None:
        self._measure()
        self.handle = self.loop.call_later(self.interval, self.beat)

    def stop(self) -> None:
        self._measure()
        self.clock.close()
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


@dataclass(frozen=True)
class Hung:
    """What the loop's thread did while an example ran to its limit without settling.

    A subject that waits on something that never comes leaves its thread
    idle; one that keeps the loop busy (a callback that reschedules itself)
    spends the time on a CPU. The wall-clock shift is how far ``time.time()``
    moved against the monotonic clock meanwhile: a deadline in epoch seconds
    drifts with it.
    """

    #: Seconds of monotonic time from the scenario's start to its limit.
    seconds: float
    #: The loop thread's CPU time in them.
    on_cpu: float
    #: Its time runnable but waiting for a CPU, when known (Linux).
    waiting: float | None
    #: How far the wall clock moved against the monotonic clock, in seconds.
    wall_shift: float
    #: The share of the seconds in which some task of the machine waited for a CPU
    #: (:func:`cpu_pressure`), when known.
    contended: float | None = None

    def describe(self) -> str:
        """A clause for the failure's message."""
        waited = "" if self.waiting is None else f", waited {self.waiting:.2f} s for a CPU"
        shift = (
            f"; the wall clock moved {self.wall_shift:+.2f} s against the monotonic clock"
            if abs(self.wall_shift) >= 0.1
            else ""
        )
        idle = max(0.0, self.seconds - self.on_cpu - (self.waiting or 0.0))
        return (
            f" (in {self.seconds:.2f} s the loop's thread ran {self.on_cpu:.2f} s{waited}"
            f" and was idle {idle:.2f} s{shift})"
        )


class _Mark(NamedTuple):
    """The loop thread's clocks at one moment (read on that thread)."""

    monotonic: float
    on_cpu: float
    waiting: float | None
    wall: float
    pressure: float | None

    @classmethod
    def now(cls) -> _Mark:
        times = thread_times(threading.get_native_id())
        return cls(
            time.monotonic(),
            time.thread_time(),
            None if times is None else times[1],
            time.time() - time.monotonic(),
            cpu_pressure(),
        )

    def hung(self) -> Hung:
        after = _Mark.now()
        waiting = (
            None if self.waiting is None or after.waiting is None else after.waiting - self.waiting
        )
        seconds = after.monotonic - self.monotonic
        contended = (
            None
            if self.pressure is None or after.pressure is None or seconds <= 0
            else min(1.0, (after.pressure - self.pressure) / seconds)
        )
        return Hung(seconds, after.on_cpu - self.on_cpu, waiting, after.wall - self.wall, contended)


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
    mark = _Mark.now()
    done, _ = await asyncio.wait({task}, timeout=limit)
    if not done:
        result.hung = mark.hung()
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

    The worst case is about ``limit + 5 * bound`` plus a second of slack, plus
    the time the loop's thread waited for a CPU (up to three times as much
    again). *on_limit* is called in the worker when the scenario reaches
    the limit, before it is cancelled.
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
        heartbeat = _Heartbeat(loop, min(BEAT, bound / 4), result)
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
    if not _wait_for(finished, limit + 4 * bound + 1.0, result):
        # Every wait of the worker is timed, so a worker that has not finished
        # is stuck in a blocking call: its loop has not run its heartbeat since.
        result.abandoned = True
        result.note(result.since_last_beat())
        return result
    thread.join(bound)
    deadline = time.monotonic() + bound
    started = [t for t in threading.enumerate() if t not in before and t is not thread]
    for other in started:
        other.join(max(0.0, deadline - time.monotonic()))
    result.threads = [f"thread {t.name}" for t in started if t.is_alive()]
    return result


def _wait_for(finished: threading.Event, patience: float, result: LoopResult) -> bool:
    """Wait for the worker *patience* seconds, plus what its thread waited for a CPU (Rule 2).

    The extension is at most three times *patience*. Returns whether it finished.
    """
    started = time.monotonic()
    deadline, last = started + patience, started + 4 * patience
    while not finished.wait(max(0.0, min(deadline, last) - time.monotonic())):
        tid, first = result.loop_thread, result.first_waiting
        times = thread_times(tid) if tid is not None and first is not None else None
        now = time.monotonic()
        if times is None or first is None or now >= last:
            return False
        extended = started + patience + times[1] - first
        if extended <= now:
            return False
        deadline = extended
    return True


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


#: The wall time every garbage collection of this process took, summed, and
#: when the one under way started: while it runs, no other thread of the
#: process runs Python, so the suite's pipe threads cannot read a ping's reply.
_PROCESS_COLLECTING: list[float] = [0.0, -1.0]


def _on_any_collection(phase: str, _info: dict[str, int]) -> None:
    if phase == "start":
        _PROCESS_COLLECTING[1] = time.monotonic()
    elif _PROCESS_COLLECTING[1] >= 0.0:
        _PROCESS_COLLECTING[0] += time.monotonic() - _PROCESS_COLLECTING[1]
        _PROCESS_COLLECTING[1] = -1.0


def process_collecting() -> float:
    """Seconds (wall clock) this process has spent in garbage collections since first asked."""
    if _on_any_collection not in gc.callbacks:
        gc.callbacks.append(_on_any_collection)
    return _PROCESS_COLLECTING[0]
