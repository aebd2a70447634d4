"""The bounded example runner: whatever the scenario does, it returns in a fixed time."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest
from dsh_user_interaction_conformance import (
    HarnessSubjects,
    Report,
    Subject,
    SubjectFactory,
    _loop,
    reference_subject,
    run_suite,
)
from dsh_user_interaction_conformance._harness import _subjects
from dsh_user_interaction_conformance._loop import (
    LoopResult,
    Stall,
    _LoopClock,
    run_bounded,
    thread_times,
)

from .gallery.providers import sleeping_subject, spinning_subject

ROOT = Path(__file__).resolve().parents[1]

LIMIT = 0.5
BOUND = 0.1
#: The most any run may take: the limit, five bounds, and the second of slack.
WORST = LIMIT + 5 * BOUND + 1.0


async def _nothing() -> None:
    return None


async def _stubborn() -> None:
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue


async def _answers() -> object:
    return 42


async def _hangs() -> None:
    await asyncio.Event().wait()


async def _swallows() -> None:
    await _stubborn()


async def _blocks() -> None:
    time.sleep(5)  # noqa: ASYNC251 - the flaw under test


async def _leaks() -> None:
    asyncio.get_running_loop().create_task(_stubborn())
    await asyncio.sleep(0)


async def _orphans_an_error() -> None:
    async def fails() -> None:
        raise ValueError

    task = asyncio.ensure_future(fails())
    await asyncio.sleep(0)
    del task  # dropped without looking at its exception


def _run(scenario: Callable[[], Coroutine[Any, Any, object]]) -> tuple[LoopResult, float]:
    started = time.monotonic()
    result = run_bounded(scenario, teardown=_nothing, limit=LIMIT, bound=BOUND)
    return result, time.monotonic() - started


def test_a_scenario_that_returns_is_settled_with_its_value() -> None:
    """A well-behaved scenario settles at once, with its value, and leaves nothing."""
    result, seconds = _run(_answers)
    assert (result.settled, result.value, result.leftovers) == (True, 42, [])
    assert not result.abandoned
    assert seconds < LIMIT


@pytest.mark.parametrize(
    ("scenario", "settled", "ignored_cancel", "abandoned", "leftovers"),
    [
        (_hangs, False, False, False, False),
        (_swallows, False, True, False, True),
        (_blocks, False, False, True, False),
        (_leaks, True, False, False, True),
    ],
)
def test_every_hostile_scenario_ends_in_bounded_time_and_says_why(
    scenario: Callable[[], Coroutine[Any, Any, object]],
    settled: bool,
    ignored_cancel: bool,
    abandoned: bool,
    leftovers: bool,
) -> None:
    """Hangs, swallowed cancellation, a blocked loop and stubborn tasks all end, classified."""
    result, seconds = _run(scenario)
    assert seconds < WORST + 0.5
    assert result.settled is settled
    assert result.ignored_cancel is ignored_cancel
    assert result.abandoned is abandoned
    assert bool(result.leftovers) is leftovers
    if abandoned:
        # Measured up to the moment it was given up, and, asleep, it waited for no CPU.
        assert result.stall > LIMIT
        assert result.longest is not None
        assert result.longest.judged(BOUND) in {"blocked", None}


def test_a_hang_says_whether_the_loop_sat_idle_or_kept_busy() -> None:
    """An example at its limit reports what its loop's thread did: idle waiting, or busy.

    One awaiting a future that never comes leaves the thread idle; one that
    reschedules itself with ``call_soon`` keeps it on a CPU the whole time.
    """

    async def busy() -> None:
        loop = asyncio.get_running_loop()

        def again() -> None:
            loop.call_soon(again)

        again()
        await asyncio.Event().wait()

    idle, _ = _run(_hangs)
    assert idle.hung is not None
    assert idle.hung.seconds >= LIMIT * 0.9
    assert idle.hung.on_cpu < LIMIT / 2
    assert "was idle" in idle.hung.describe()
    spinning, _ = _run(busy)
    assert spinning.hung is not None
    on_cpu = spinning.hung.on_cpu + (spinning.hung.waiting or 0.0)
    assert on_cpu > LIMIT * 0.5, spinning.hung
    assert spinning.hung.on_cpu > idle.hung.on_cpu
    settled, _ = _run(_answers)
    assert settled.hung is None


def test_a_blocking_call_is_measured_as_a_stall() -> None:
    """A blocking call shorter than the patience is still seen, by the heartbeat."""

    async def blocks_briefly() -> None:
        time.sleep(0.3)  # noqa: ASYNC251 - the flaw under test

    result, _ = _run(blocks_briefly)
    assert result.settled
    assert result.stall >= 0.25


def test_unretrieved_errors_are_kept_off_the_log() -> None:
    """An exception nobody retrieved is recorded on the result, not logged over the report."""
    result, _ = _run(_orphans_an_error)
    gc.collect()
    assert result.loop_errors == ["Task exception was never retrieved"]


# -- stalls: a blocked loop, never a busy machine ----------------------------

LINUX = sys.platform == "linux" and thread_times(threading.get_native_id()) is not None
linux_only = pytest.mark.skipif(not LINUX, reason="reads /proc/self/task/<tid>/schedstat")
#: The stall limit at the default bound.
STALL_LIMIT = 0.28


def _spin(seconds: float) -> None:
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_a_stall_is_judged_by_the_part_not_spent_waiting_for_a_cpu() -> None:
    """Blocked when more than the limit was on a CPU or asleep; starved when it was waiting."""
    assert Stall(0.62, on_cpu=0.01, waiting=0.02).judged(STALL_LIMIT) == "blocked"
    assert Stall(0.62, on_cpu=0.55, waiting=0.05).judged(STALL_LIMIT) == "blocked"
    assert Stall(2.3, on_cpu=0.18, waiting=2.16, preempted=1).judged(STALL_LIMIT) == "starved"
    # A garbage collection is the interpreter's, not the subject's.
    stall = Stall(0.62, on_cpu=0.55, waiting=0.02, collecting=0.45, preempted=2)
    assert stall.judged(STALL_LIMIT) == "starved"
    # Without the waiting time, a stretch on the CPU still tells; a sleep cannot.
    assert Stall(0.62, on_cpu=0.5).judged(STALL_LIMIT) == "blocked"
    assert Stall(0.62, on_cpu=0.5, collecting=0.4).judged(STALL_LIMIT) is None
    assert Stall(0.62, on_cpu=0.01).judged(STALL_LIMIT) is None
    assert Stall(0.62).judged(STALL_LIMIT) is None


def test_a_stall_whose_thread_was_put_back_on_a_cpu_again_and_again_is_unsure() -> None:
    """Waits the machine explains, but preempted again and again: too little CPU to tell.

    A stretch of the subject's own code that spins until a time on the wall
    clock (the Node example ``provider-blocks-loop.mjs``) is preempted again
    and again on a busy machine: only 0.14 s of its 0.7 s on a CPU, the rest
    waiting, and preempted dozens of times. Neither blocked nor
    starved can be said; so it is when how often is unknown (a ping).
    """
    spinner = Stall(0.72, on_cpu=0.14, waiting=0.57, preempted=47)
    assert spinner.judged(STALL_LIMIT) == "unsure"
    assert dataclasses.replace(spinner, preempted=None).judged(STALL_LIMIT) == "unsure"
    assert Stall(0.72, waiting=0.57).judged(STALL_LIMIT) == "unsure"
    # Preempted at most twice: the loop only waited for its turn.
    assert dataclasses.replace(spinner, preempted=2).judged(STALL_LIMIT) == "starved"
    # The numbers still tell a stretch longer than the limit, however it was preempted.
    assert Stall(0.72, on_cpu=0.4, waiting=0.31, preempted=47).judged(STALL_LIMIT) == "blocked"


def test_a_sleep_while_a_thread_the_example_started_waited_is_unsure() -> None:
    """Such a thread may hold the lock the loop sleeps on, or the sleep is the subject's own."""
    stall = Stall(0.62, on_cpu=0.03, waiting=0.0, others=0.0, preempted=1, started=0.57)
    assert stall.blocked is not None
    assert stall.blocked > STALL_LIMIT
    assert stall.surely_blocked is not None
    assert stall.surely_blocked <= STALL_LIMIT
    assert stall.judged(STALL_LIMIT) == "unsure"
    # What the example's thread cannot explain is still blocked.
    assert dataclasses.replace(stall, started=0.1).judged(STALL_LIMIT) == "blocked"
    # The suite's threads' waits are credited first, the example's only on the rest.
    both = Stall(0.62, on_cpu=0.03, waiting=0.0, others=0.3, preempted=1, started=0.3)
    surely = both.surely_blocked
    assert surely is not None
    assert abs(surely - 0.03) < 1e-9  # its time on a CPU, never credited
    assert both.judged(STALL_LIMIT) == "unsure"


@linux_only
def test_a_synchronous_call_on_a_process_that_waited_for_a_cpu_is_never_blocked() -> None:
    """The loop asleep in a harness child's ``register`` while the child waited: unsure.

    ``note_waited_on`` records what the processes a synchronous call waited
    on waited for a CPU; the stall it is in keeps it as ``started``, so the
    sleep is not called blocked (the false red of the reference service in a
    harness child at extreme load), nor starved.
    """

    async def scenario() -> None:
        time.sleep(0.5)  # noqa: ASYNC251 - the child's reply, a synchronous call away
        _loop.note_waited_on(0.45)

    result = run_bounded(scenario, teardown=_nothing, limit=5.0, bound=1.0)
    stall = result.worst
    assert stall is not None
    assert stall.seconds > STALL_LIMIT
    assert stall.started is not None
    assert stall.started >= 0.45
    assert stall.judged(STALL_LIMIT) == "unsure", stall
    assert dataclasses.replace(stall, started=None).judged(STALL_LIMIT) == "blocked", stall


def test_a_sleep_on_a_lock_that_a_starved_suite_thread_holds_is_starvation() -> None:
    """The loop's thread asleep while one of the suite's threads waited for a CPU is starved.

    It slept on a lock that thread held (the interpreter's, most often).
    Only one thread's wait counts, never more than the loop's thread slept.
    """
    stall = Stall(0.62, on_cpu=0.03, waiting=0.0, others=0.57, preempted=1)
    assert stall.judged(STALL_LIMIT) == "starved"
    # The loop's own CPU time is never excused by another thread's wait.
    assert Stall(0.62, on_cpu=0.55, waiting=0.0, others=0.62).judged(STALL_LIMIT) == "blocked"
    # A sleep longer than the other thread's wait, by more than the limit, is blocked.
    assert Stall(0.9, on_cpu=0.01, waiting=0.0, others=0.3).judged(STALL_LIMIT) == "blocked"
    assert Stall(0.9, on_cpu=0.01, waiting=0.0, others=0.0).judged(STALL_LIMIT) == "blocked"
    assert Stall(0.9, on_cpu=0.01, waiting=0.0, others=None).judged(STALL_LIMIT) == "blocked"


_SECONDS = st.floats(0.0, 5.0, allow_nan=False)


@given(seconds=_SECONDS, on_cpu=_SECONDS, waiting=_SECONDS, collecting=_SECONDS, others=_SECONDS)
def test_another_threads_wait_only_ever_excuses_the_loops_sleep(
    seconds: float, on_cpu: float, waiting: float, collecting: float, others: float
) -> None:
    """The credit lowers the blocked part by at most the other's wait and the loop's sleep."""
    on_cpu, waiting = min(on_cpu, seconds), min(waiting, seconds - min(on_cpu, seconds))
    collecting = min(collecting, on_cpu)
    without = Stall(seconds, on_cpu, waiting, collecting)
    stall = dataclasses.replace(without, others=others)
    assert without.blocked is not None
    assert stall.blocked is not None
    asleep = seconds - on_cpu - waiting
    assert stall.blocked <= without.blocked
    assert stall.blocked >= without.blocked - min(others, asleep) - 1e-9
    # What the loop's thread did on a CPU (outside collections) always counts.
    assert stall.blocked >= on_cpu - collecting - 1e-9


def _gil_holder(cpu: int, stop: threading.Event) -> Callable[[], None]:
    """A thread body: Python code on *cpu*, scheduled only when nothing else wants it."""

    def spin() -> None:
        os.sched_setaffinity(0, {cpu})
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        while not stop.is_set():
            pass

    return spin


@pytest.fixture
def busy_cpu() -> Iterator[tuple[int, int]]:
    """A process keeping one CPU busy (the first returned); the second is left free."""
    cpus = sorted(os.sched_getaffinity(0))
    busy, free = cpus[0], cpus[1]
    burner = subprocess.Popen(
        [sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{busy}}})\nwhile True: pass"]
    )
    try:
        yield busy, free
    finally:
        burner.kill()
        burner.wait(timeout=30)


#: These run alone, after the rest of the slow tier (``alone``): a CPU kept busy by
#: other tests leaves the holder no slice to take the lock in at all (a CI run saw
#: no stall), and their busy CPU would slow the tests beside them.
_STARVES_A_THREAD = pytest.mark.skipif(
    sys.platform != "linux" or len(os.sched_getaffinity(0)) < 2,
    reason="starves one thread on purpose: Linux's SCHED_IDLE, and two CPUs",
)


def _stalled_by_a_gil_holder(busy: int, free: int, *, by_the_example: bool) -> Stall:
    """The worst stall of an example whose loop waits for the interpreter's lock.

    A thread running Python code on the busy CPU, under SCHED_IDLE, gets that
    CPU now and then, takes the interpreter's lock, and loses the CPU still
    holding it: the loop's thread, on the free CPU, sleeps until it runs
    again. The thread is started before the example (as the suite's own are),
    or *by_the_example* (as a subject's would be).
    """
    stop = threading.Event()
    holder = _gil_holder(busy, stop)

    async def scenario() -> None:
        os.sched_setaffinity(0, {free})
        if by_the_example:
            threading.Thread(target=holder, daemon=True).start()
        await asyncio.sleep(0.8)

    if not by_the_example:
        threading.Thread(target=holder, daemon=True).start()
    try:
        result = run_bounded(scenario, teardown=_nothing, limit=5.0, bound=1.0)
    finally:
        stop.set()
    assert result.worst is not None
    return result.worst


def _held_up(busy: int, free: int, *, by_the_example: bool) -> Stall:
    """The first stall past the limit in up to five tries, for the proof not to be vacuous.

    Whether the holder loses its CPU while it holds the lock is the
    scheduler's choice; it did in every try on the idle machine.
    """
    tried: list[Stall] = []
    for _ in range(5):
        stall = _stalled_by_a_gil_holder(busy, free, by_the_example=by_the_example)
        if stall.seconds > STALL_LIMIT:
            return stall
        tried.append(stall)
    pytest.fail(f"no stall past {STALL_LIMIT} s in five tries: {tried}")


@pytest.mark.slow
@pytest.mark.alone
@_STARVES_A_THREAD
def test_the_loop_held_up_by_a_starved_suite_thread_is_starved_not_blocked(
    busy_cpu: tuple[int, int],
) -> None:
    """A real stall on the interpreter's lock held by a starved suite thread: starved.

    Measured, not faked: the loop's thread slept most of the stall and
    waited for no CPU itself, so without the other thread's wait it would
    be judged blocked (the false red this rule removes).
    """
    stall = _held_up(*busy_cpu, by_the_example=False)
    assert stall.seconds > STALL_LIMIT, stall
    assert stall.others is not None
    assert stall.others > STALL_LIMIT, stall
    assert stall.judged(STALL_LIMIT) == "starved", stall
    assert dataclasses.replace(stall, others=None).judged(STALL_LIMIT) == "blocked", stall


@pytest.mark.slow
@pytest.mark.alone
@_STARVES_A_THREAD
def test_a_thread_the_example_started_is_never_credited(busy_cpu: tuple[int, int]) -> None:
    """The same stall, by a thread the example (a subject) started: unsure, never starved.

    That thread waited for a CPU through most of the stall, and none of it
    is credited as the suite's: ``others`` holds only the waits of threads
    that ran before the example (the suite's own: 7 ms in a CI run). Its
    wait is kept apart (``started``): it may be the machine's, or the loop
    may sleep in a blocking call of the subject's, so it keeps the stall
    from being called blocked (no false red) and never lets it be called
    starved (no false green).
    """
    stall = _held_up(*busy_cpu, by_the_example=True)
    assert stall.seconds > STALL_LIMIT, stall
    assert (stall.others or 0.0) < STALL_LIMIT / 2, stall
    assert stall.started is not None
    assert stall.started > STALL_LIMIT, stall
    assert stall.judged(STALL_LIMIT) == "unsure", stall
    assert dataclasses.replace(stall, started=None).judged(STALL_LIMIT) == "blocked", stall


def test_garbage_collection_on_the_loop_is_timed_apart() -> None:
    """A collection run by the loop's thread shows in the stall as ``collecting``."""

    async def collects() -> None:
        await asyncio.sleep(0.03)
        garbage: list[object] = []
        for _ in range(200_000):
            cycle: list[object] = []
            cycle.append(cycle)
            garbage.append(cycle)
        del garbage
        gc.collect()
        await asyncio.sleep(0.03)

    result = run_bounded(collects, teardown=_nothing, limit=5.0, bound=1.0)
    longest = result.longest
    assert longest is not None
    assert longest.collecting is not None
    assert longest.on_cpu is not None
    assert 0 < longest.collecting <= longest.on_cpu


@linux_only
@pytest.mark.parametrize("how", ["sleep", "spin"])
def test_a_stretch_of_three_tenths_of_a_second_is_over_the_limit(how: str) -> None:
    """A 0.3 s sleep or 0.3 s of CPU in one callback is judged blocked at the default limit."""

    async def blocks() -> None:
        await asyncio.sleep(0.05)
        if how == "sleep":
            time.sleep(0.3)  # noqa: ASYNC251 - the flaw under test
        else:
            _spin(0.3)
        await asyncio.sleep(0.05)

    result = run_bounded(blocks, teardown=_nothing, limit=5.0, bound=1.0)
    worst = result.worst
    assert worst is not None
    assert worst.blocked is not None
    assert worst.blocked > STALL_LIMIT
    assert worst.judged(STALL_LIMIT) == "blocked"
    assert worst.on_cpu is not None
    if how == "spin":
        assert worst.on_cpu > STALL_LIMIT
    else:
        assert worst.on_cpu < 0.1


@linux_only
def test_short_stretches_on_a_cpu_are_no_stall() -> None:
    """Callbacks of 0.1 s of CPU each, back to back, leave no stall over the limit."""

    async def computes() -> None:
        for _ in range(4):
            _spin(0.1)
            await asyncio.sleep(0)

    result = run_bounded(computes, teardown=_nothing, limit=5.0, bound=1.0)
    assert result.worst is not None
    assert result.worst.blocked is not None
    assert result.worst.blocked < STALL_LIMIT


def test_the_loop_clock_leaves_out_the_time_its_thread_waited_for_a_cpu() -> None:
    """The loop's time() is monotonic time less the waiting its thread's clock reports."""

    class Waits:
        waited = 0.0

        def waiting(self) -> float:
            return self.waited

    fake = Waits()
    clock = _LoopClock(fake)  # type: ignore[arg-type] # a stand-in with the one method used
    started, first = time.monotonic(), clock()
    fake.waited = 0.2
    time.sleep(0.002)
    # Waiting longer than the time that passed holds the clock; it never goes back.
    assert clock() == first
    time.sleep(0.3)
    elapsed = time.monotonic() - started
    assert abs(clock() - first - (elapsed - 0.2)) < 0.01


# -- stalls, judged by the engine ----------------------------------------------


def _loop_verdicts(
    factory: SubjectFactory, bound: float = 1.0
) -> tuple[Report, list[dict[str, Any]]]:
    report = run_suite(
        subject_factory=factory, kinds=["provider"], only=["provider-answers"],
        profile="quick", seed=1, shrink=False, bound=bound,
    )  # fmt: skip
    stalls = [stall for check in report.as_dict()["checks"] for stall in check["stalls"]]
    return report, stalls


def _status(report: Report) -> dict[str, str]:
    return {r.requirement.id: r.status for r in report.results}


@linux_only
@pytest.mark.parametrize("factory", [sleeping_subject(0.3), spinning_subject(0.3)])
def test_a_provider_that_blocks_for_three_tenths_of_a_second_fails_at_the_default_bound(
    factory: Callable[[], Subject],
) -> None:
    """A 0.3 s sleep, or 0.3 s of CPU, inside ask() fails PRV-LOOP-1; the report says why."""
    report, stalls = _loop_verdicts(factory)
    assert _status(report)["PRV-LOOP-1"] == "failed"
    message = next(r.message for r in report.results if r.requirement.id == "PRV-LOOP-1")
    assert "the event loop was blocked for" in message
    assert "scheduler's statistics" in message
    blocked = [s for s in stalls if s["judged"] == "blocked"]
    assert blocked
    assert blocked[0]["by"] == "schedstat"
    assert blocked[0]["where"] == "loop"
    assert blocked[0]["stall"] - blocked[0]["waiting"] > STALL_LIMIT


@pytest.mark.slow
@linux_only
def test_a_provider_that_computes_a_tenth_of_a_second_at_a_time_passes() -> None:
    """CPU-bound stretches well under the limit are no blocked loop.

    On a busy machine such a stretch is preempted again and again, and may
    take more than the limit: the same numbers as a stretch that spins on
    the wall clock, so it is untested then, saying why, and never failed.
    """
    report, stalls = _loop_verdicts(spinning_subject(0.1))
    assert not [s for s in stalls if s["judged"] == "blocked"]
    result = next(r for r in report.results if r.requirement.id == "PRV-LOOP-1")
    if result.status == "untested":
        assert "too little CPU to tell" in result.message
        assert [s for s in stalls if s["judged"] == "unsure"]
    else:
        assert report.ok
        assert result.status == "passed"


#: Seconds the fake scheduler says the loop's thread waited for a CPU (see ``starved``),
#: and how many more times it says the thread was preempted.
_FAKE_WAITING = [0.0]
_FAKE_PREEMPTED = [0]


def _starved_subject() -> Subject:
    """Stalls its loop 0.25 s in every ask(), all of it, as the scheduler reports, waiting."""

    class Starved(ScriptedLike):
        def stall(self) -> None:
            time.sleep(0.25)
            _FAKE_WAITING[0] += 0.25

    return Starved.subject()


class ScriptedLike:
    """A correct provider whose ask() first stalls the loop in a way ``stall`` chooses."""

    def stall(self) -> None:
        raise NotImplementedError

    @classmethod
    def subject(cls) -> Subject:
        inner = reference_subject()
        stalls = cls()

        class Provider:
            async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
                stalls.stall()
                return await inner.provider.ask(request)

        return Subject(Provider(), inner.driver, name="stalling", aclose=inner.aclose)


@pytest.fixture
def starved(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler (faked) reports the subject's stalls as time waiting for a CPU.

    And, for a subject that says so, as preemptions of the loop's thread.
    """
    real = _loop._ThreadClock.waiting

    real_preemptions = _loop._preemptions

    def waiting(self: Any) -> float | None:
        found = real(self)
        return None if found is None else found + _FAKE_WAITING[0]

    def preemptions() -> int | None:
        found = real_preemptions()
        return None if found is None else found + _FAKE_PREEMPTED[0]

    monkeypatch.setattr(_loop._ThreadClock, "waiting", waiting)
    monkeypatch.setattr(_loop, "_preemptions", preemptions)


def _preempted_subject() -> Subject:
    """Stalls 0.25 s in every ask(), as waiting for a CPU, preempted 40 times in it.

    What a busy machine makes of a stretch that spins on the wall clock: the
    numbers cannot tell it from a loop the machine starved.
    """

    class Preempted(ScriptedLike):
        def stall(self) -> None:
            time.sleep(0.25)
            _FAKE_WAITING[0] += 0.25
            _FAKE_PREEMPTED[0] += 40

    return Preempted.subject()


@linux_only
@pytest.mark.usefixtures("starved")
def test_a_stall_spent_waiting_for_a_cpu_fails_nothing_and_stops_nothing() -> None:
    """Starvation is recorded as such, and every requirement is still judged.

    A busy machine may add stalls of its own, which the numbers cannot always
    tell (``unsure``, and unsure again: the loop requirement is then untested,
    saying why); none is ever judged blocked.
    """
    report, stalls = _loop_verdicts(_starved_subject, bound=0.2)
    loop = next(r for r in report.results if r.requirement.id == "PRV-LOOP-1")
    if loop.status == "untested":
        assert "too little CPU to tell" in loop.message
    else:
        assert report.ok, [(r.requirement.id, r.message) for r in report.results if r.fails_run]
        assert loop.status == "passed"
    assert not [r for r in report.results if r.status == "untested" and r is not loop]
    assert stalls
    assert ("starved", "schedstat") in {(s["judged"], s["by"]) for s in stalls}
    assert "blocked" not in {s["judged"] for s in stalls}


@linux_only
@pytest.mark.usefixtures("starved")
def test_a_stall_the_machine_gave_too_little_cpu_to_tell_is_untested() -> None:
    """Unsure in the example and again in its second run: untested, with why, and the run fails.

    Never a green the machine did not earn, and never a red for its load.
    """
    report, stalls = _loop_verdicts(_preempted_subject, bound=0.2)
    result = next(r for r in report.results if r.requirement.id == "PRV-LOOP-1")
    assert result.status == "untested", result.message
    assert result.fails_run
    assert not report.ok
    assert "too little CPU to tell" in result.message
    assert "preempted" in result.message
    assert "failed" not in _status(report).values()
    assert ("unsure", "second-run") in {(s["judged"], s["by"]) for s in stalls}
    assert "blocked" not in {s["judged"] for s in stalls}


@linux_only
@pytest.mark.usefixtures("starved")
def test_an_unsure_stall_that_a_further_run_does_not_repeat_is_starvation() -> None:
    """Unsure in the example and in its second run, gone in the third: starved, it passes.

    A deterministic blocker stalls in every run; a busy machine's stall
    comes and goes, so each further run (up to three) is a chance to tell.
    """
    left = [2]

    class Twice(ScriptedLike):
        def stall(self) -> None:
            if left[0]:
                left[0] -= 1
                time.sleep(0.25)
                _FAKE_WAITING[0] += 0.25
                _FAKE_PREEMPTED[0] += 40

    report, stalls = _loop_verdicts(Twice.subject, bound=0.2)
    assert left == [0]
    assert _status(report)["PRV-LOOP-1"] == "passed", report.results
    assert ("starved", "second-run") in {(s["judged"], s["by"]) for s in stalls}
    assert "blocked" not in {s["judged"] for s in stalls}


@pytest.fixture
def without_schedstat(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a system without scheduler statistics (macOS, Windows)."""

    def nothing(_what: object) -> None:
        return None

    monkeypatch.setattr(_loop._ThreadClock, "waiting", nothing)
    monkeypatch.setattr(_loop, "thread_times", nothing)


@pytest.mark.usefixtures("without_schedstat")
def test_without_schedstat_a_stall_is_confirmed_by_a_second_run() -> None:
    """A provider that sleeps in every ask() is blocked again when the example runs again."""
    report, stalls = _loop_verdicts(sleeping_subject(0.3), bound=0.2)
    assert _status(report)["PRV-LOOP-1"] == "failed"
    assert {(s["judged"], s["by"]) for s in stalls} == {("blocked", "second-run")}
    message = next(r.message for r in report.results if r.requirement.id == "PRV-LOOP-1")
    assert "ran a second time" in message


@pytest.mark.usefixtures("without_schedstat")
def test_without_schedstat_a_stall_that_does_not_recur_is_starvation() -> None:
    """A stall that the same example does not repeat fails nothing."""
    first = [True]

    class Once(ScriptedLike):
        def stall(self) -> None:
            if first[0]:
                first[0] = False
                time.sleep(0.3)

    report, stalls = _loop_verdicts(Once.subject, bound=0.2)
    assert report.ok
    # At least the planted stall; a busy machine may add stalls of its own, and
    # each of those must be judged the same way (a set, as the test above).
    assert {(s["judged"], s["by"]) for s in stalls} == {("starved", "second-run")}


@pytest.mark.usefixtures("without_schedstat")
def test_without_schedstat_a_stretch_on_the_cpu_needs_no_second_run() -> None:
    """The loop thread's own CPU time shows a CPU-bound stretch anywhere."""
    report, stalls = _loop_verdicts(spinning_subject(0.3), bound=0.2)
    assert _status(report)["PRV-LOOP-1"] == "failed"
    assert {(s["judged"], s["by"]) for s in stalls} == {("blocked", "cpu-time")}


# -- stalls through the harness --------------------------------------------------


def _child(target: str) -> HarnessSubjects:
    command = [sys.executable, "-m", "dsh_user_interaction_conformance.child"]
    return HarnessSubjects([*command, "--provider", target], cwd=str(ROOT))


@linux_only
def test_a_child_that_blocks_its_loop_fails_by_its_pings() -> None:
    """Pings a child answers late because it sleeps are judged blocked, by schedstat.

    Not every late ping: on a busy machine a ping that also waited for a CPU
    most of the time is starved (section "How the event loop requirements
    are judged"), so the verdict rests on a blocked one among them.
    """
    child = _child("tests.gallery.providers:SLEEPS_HALF_A_SECOND")
    try:
        report, stalls = _loop_verdicts(child, bound=0.2)
    finally:
        child.close()
    assert _status(report)["PRV-LOOP-1"] == "failed"
    message = next(r.message for r in report.results if r.requirement.id == "PRV-LOOP-1")
    assert "its event loop was blocked" in message
    pings = [s for s in stalls if s["where"] == "ping"]
    assert any((s["judged"], s["by"]) == ("blocked", "schedstat") for s in pings), pings


def _waited(preempted: int | None) -> Callable[[object], Callable[[], float]]:
    """A fake ``_PathProbe.__call__``: every ping's path waited an hour for a CPU."""

    def probe(_probe: object) -> Callable[[], float]:
        def waited() -> float:
            found = _subjects._Waited(3600.0)
            found.preempted = preempted
            return found

        return waited

    return probe


@pytest.mark.slow
@linux_only
def test_a_late_ping_spent_waiting_for_a_cpu_is_starvation(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the processes on a ping's path waited for a CPU all along, the child is not at fault.

    So it is when the child's threads were preempted at most twice in it.
    """
    monkeypatch.setattr(_subjects._PathProbe, "__call__", _waited(1))
    child = _child("tests.gallery.providers:SLEEPS_HALF_A_SECOND")
    try:
        report, stalls = _loop_verdicts(child, bound=0.2)
    finally:
        child.close()
    assert _status(report)["PRV-LOOP-1"] == "passed"
    assert report.ok
    assert {(s["where"], s["judged"]) for s in stalls} == {("ping", "starved")}


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("preempted", [40, None])
def test_a_late_ping_the_machine_gave_too_little_cpu_to_tell_is_untested(
    monkeypatch: pytest.MonkeyPatch, preempted: int | None
) -> None:
    """Waits that explain the ping, but a child preempted again and again (or unknown): untested."""
    monkeypatch.setattr(_subjects._PathProbe, "__call__", _waited(preempted))
    child = _child("tests.gallery.providers:SLEEPS_HALF_A_SECOND")
    try:
        report, stalls = _loop_verdicts(child, bound=0.2)
    finally:
        child.close()
    result = next(r for r in report.results if r.requirement.id == "PRV-LOOP-1")
    assert result.status == "untested", result.message
    assert "the child's event loop too little CPU to tell" in result.message
    assert not report.ok
    assert {(s["where"], s["judged"]) for s in stalls} == {("ping", "unsure")}


def test_the_process_collection_clock_counts_every_collection() -> None:
    """The suite's own garbage collections are timed, whichever thread runs them.

    A harness ping's window counts them as time the path was held up (the
    suite's pipe threads cannot read a reply meanwhile), not as the child's.
    """
    from dsh_user_interaction_conformance._loop import process_collecting

    before = process_collecting()
    garbage: list[list[object]] = [[] for _ in range(50_000)]
    for cycle in garbage:
        cycle.append(cycle)
    del garbage
    gc.collect()
    assert process_collecting() > before
