"""Soak the bridges: 10,000 asks through each, with aborts and cancellations, nothing left behind.

``python -m bench.soak_bridges`` (with the repository root on ``PYTHONPATH``;
``nox -s soak`` runs it after ``bench.soak``) asks through each bridge in
one long-lived connection, the way an agent harness uses it:

* ``stdio-python``: one :class:`~dsh_user_interaction.extra.stdio.StdioProvider`
  whose child is ``python -m dsh_user_interaction_conformance.child
  --provider bench.soak_subjects:subject``;
* ``stdio-node``: one ``StdioProvider`` whose child is ``node
  bench/soak_subject.mjs``, the same UI on the Node example's adapter;
* ``mcp``: one real MCP server and client session (the SDK's in-memory
  streams, as the bridge's conformance driver runs it), the server's
  :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider` on a tool
  call in progress, the client answering through
  :func:`~dsh_user_interaction.extra.mcp.elicitation_callback`.

The far side is :class:`bench.soak_subjects.SoakUI`, which answers at once
or holds an ask until it is interrupted. Each bridge is registered with a
``UserInteractionService`` and asked *N* times (default 10,000) in groups of
one to four asks pending at once. Every ask carries its own signal, as a
tool call's does. About 70% are answered; 12% are aborted through their
``AbortController`` 1 to 5 ms after they start, 8% are cancelled by the
caller (``task.cancel()``) and 5% by an outer ``asyncio.timeout`` as late;
5% carry a signal that had aborted before the ask. Each outcome is checked:
the answer must be the one for that very request (each question's text,
unique per ask, comes back as its custom answer), an abort gives
``ASK_ABORTED``, a cancellation ``CancelledError`` and a timeout
``TimeoutError``.

Figures are taken before the bridge starts, at every 10% of the asks (the
bridge open, nothing pending) and after it is closed: open file descriptors
(``/proc/self/fd``), threads (``threading.active_count()`` and the OS's
``/proc/self/task``), child processes (every descendant of this process,
zombies included), asyncio tasks, traced memory (``tracemalloc``, after a
``gc.collect()``), this process's RSS and its descendants' RSS, and for each
10% slice the time per ask, wall clock and this process's CPU time. The
"before" figures are taken after a warm-up of 50 asks through a bridge of the
same kind, opened and closed (and its child reaped), so that imports and
caches made once are not counted as growth.

The verdict (:func:`judge`): after close, descriptors, threads, child
processes and tasks equal their "before" values exactly. The figures are
polled until they are back (for the child to be reaped, the threads and
tasks to end): after close every one of them, for up to :data:`PATIENCE`
seconds; after the warm-up, the tasks and children for as long, and the
rest, which a bridge may make once and keep, for :data:`SETTLE`. So
"before" never counts a warm-up's task that a busy machine kept alive.
Traced memory ends within :data:`MEMORY_MARGIN` of "before", and grows by at
most that much between the first and the last 10% while the bridge is open;
and the time per ask is flat: the median of the last three slices is within
:data:`FLAT_FACTOR` of the median of the first three (:func:`growth`), for
the wall clock and for the CPU time. RSS is reported, not judged: the
allocators keep freed pages.

    python -m bench.soak_bridges [--asks N] [--bridge stdio-python|stdio-node|mcp|all]
                                 [--seed S] [--no-memory] [--json PATH]

It prints a table per bridge, writes ``bench/results/soak_bridges.json``
(merged with the bridges of earlier runs) and exits with status 1, naming
each figure that did not come back or stay flat, if any did not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import AsyncGenerator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, cast, get_args

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)

from .soak_subjects import HOLD, SoakUI, answer_for

ROOT: Final = Path(__file__).resolve().parents[1]
RESULTS: Final = ROOT / "bench" / "results" / "soak_bridges.json"

Bridge = Literal["stdio-python", "stdio-node", "mcp"]
BRIDGES: Final[tuple[Bridge, ...]] = get_args(Bridge)
Kind = Literal["answer", "abort", "cancel", "timeout", "pre-abort"]
#: How often each kind of ask is drawn, in percent.
MIX: Final[dict[Kind, int]] = {"answer": 70, "abort": 12, "cancel": 8, "timeout": 5, "pre-abort": 5}
#: What a correct outcome of each kind is called in the report.
OUTCOME: Final[dict[Kind, str]] = {
    "answer": "answered",
    "abort": "ASK_ABORTED",
    "cancel": "CancelledError",
    "timeout": "TimeoutError",
    "pre-abort": "ASK_ABORTED, signal aborted before",
}
#: An abort, a cancellation or a timeout comes this long (seconds) after its ask starts.
INTERRUPT_AFTER: Final = (0.001, 0.005)
#: At most this many asks are pending at once.
MOST_AT_ONCE: Final = 4
#: The run is sampled, and timed, in this many slices.
SLICES: Final = 10
#: Asks of the warm-up, through a bridge of the same kind, before the "before" figures.
WARM_UP: Final = 50
#: The time per ask is flat when the median of the last FLAT_WINDOW slices is at most
#: FLAT_FACTOR times the median of the first FLAT_WINDOW.
FLAT_FACTOR: Final = 1.5
FLAT_WINDOW: Final = 3
#: Traced memory may end this far (bytes) above "before", and grow this much while
#: the bridge is open, between the first and the last 10% of the asks.
MEMORY_MARGIN: Final = 1024 * 1024
#: Seconds a group of asks may take to settle before the run fails instead of hanging.
BOUND: Final = 30.0
#: Seconds the figures are polled for after a bridge closes, for them all to come back.
#: Past it, a figure made once and kept (a thread pool's thread, after the warm-up)
#: ends the wait: see :data:`MUST_SETTLE`.
SETTLE: Final = 2.0
#: Seconds the figures that must come back may take, on a busy machine, before a
#: run is failed instead of waiting on: it only ends a red run, and never judges speed.
PATIENCE: Final = 120.0
#: The figures that must end exactly where they began.
EXACT: Final = ("fds", "threads", "os_threads", "children", "tasks")
#: What a closed bridge must always give back, however long it takes: no bridge keeps
#: a task or a child once closed, not even the warm-up's, so "before" never counts them.
MUST_SETTLE: Final = ("children", "tasks")


class SoakFailure(AssertionError):
    """An ask that hung or settled as it must not; the message says which."""


@dataclass(frozen=True)
class Sample:
    """The process's figures at one point of the run."""

    #: "before", "10%" ... "100%", "after".
    point: str
    #: Asks done by then.
    asks: int
    fds: int
    threads: int
    os_threads: int
    #: This process's descendants, zombies included.
    children: int
    tasks: int
    #: Bytes traced by tracemalloc (0 when not tracing).
    traced: int
    #: This process's resident set, bytes.
    rss: int
    #: Its descendants' resident sets, summed, bytes.
    child_rss: int


@dataclass(frozen=True)
class Slice:
    """One tenth of the asks: how long each took, on average."""

    asks: int
    #: Milliseconds per ask, wall clock.
    wall_ms: float
    #: Milliseconds per ask of this process's CPU time.
    cpu_ms: float


@dataclass
class Report:
    """One bridge's soak."""

    bridge: Bridge
    asks: int
    seed: int
    trace_memory: bool = True
    #: The far side's name, as its handshake gave it.
    implementation: str = ""
    outcomes: Counter[str] = field(default_factory=Counter[str])
    #: The asks that settled as they must not, described (the first 20).
    wrong: list[str] = field(default_factory=list[str])
    wrong_count: int = 0
    samples: list[Sample] = field(default_factory=list[Sample])
    slices: list[Slice] = field(default_factory=list[Slice])
    seconds: float = 0.0
    #: How long the "after" figures took to come back, in seconds.
    settled_after: float = 0.0

    def sample(self, point: str) -> Sample:
        """The sample taken at *point*."""
        return next(sample for sample in self.samples if sample.point == point)


# -- figures ---------------------------------------------------------------------------------


def _stat_parent(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    # The name is in parentheses and may hold anything: the fields follow the last ')'.
    return int(text[text.rindex(")") + 2 :].split()[1])


def descendants(pid: int | None = None) -> list[int]:
    """Every descendant of *pid* (this process by default), from ``/proc/*/stat``."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = _stat_parent(entry)
            if parent is not None:
                children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = children.get(frontier.pop(), [])
        found += below
        frontier += below
    return found


def _rss(pid: int | str = "self") -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0  # a zombie has no VmRSS


def sample(point: str, asks: int) -> Sample:
    """The figures now, inside the running loop."""
    gc.collect()
    below = descendants()
    return Sample(
        point=point,
        asks=asks,
        fds=len(os.listdir("/proc/self/fd")),
        threads=threading.active_count(),
        os_threads=len(os.listdir("/proc/self/task")),
        children=len(below),
        tasks=len(asyncio.all_tasks()),
        traced=tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0,
        rss=_rss(),
        child_rss=sum(_rss(pid) for pid in below),
    )


# -- judging ---------------------------------------------------------------------------------


def growth(per_ask: Sequence[float], window: int = FLAT_WINDOW) -> float:
    """How much the time per ask grew: median of the last *window* slices over the first's.

    Medians of three, not single slices, so that one slice slowed by other load
    on the machine neither hides growth nor fakes it.

    >>> growth([2.0, 2.2, 1.9, 2.1, 2.0, 9.0, 2.0, 2.1, 2.2, 2.0])
    1.05
    >>> growth([2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0])
    4.5
    """
    if len(per_ask) < 2 * window:
        msg = f"need at least {2 * window} slices to judge growth, got {len(per_ask)}"
        raise ValueError(msg)
    first = statistics.median(per_ask[:window])
    last = statistics.median(per_ask[-window:])
    return last / first if first > 0 else float("inf")


def flat_problem(what: str, per_ask: Sequence[float], factor: float = FLAT_FACTOR) -> str | None:
    """Why *per_ask* (one value per slice) is not flat, or ``None`` when it is."""
    grew = growth(per_ask)
    if grew <= factor:
        return None
    first = statistics.median(per_ask[:FLAT_WINDOW])
    last = statistics.median(per_ask[-FLAT_WINDOW:])
    return (
        f"{what} per ask grew {grew:.2f}x: median of the last {FLAT_WINDOW} slices "
        f"{last:.3f} ms, of the first {FLAT_WINDOW} {first:.3f} ms (allowed {factor:g}x)"
    )


def judge(report: Report) -> dict[str, str]:
    """What did not come back or stay flat, by figure; empty when the run is clean."""
    problems: dict[str, str] = {}
    if report.wrong_count:
        problems["outcomes"] = (
            f"{report.wrong_count} asks settled as they must not, e.g. {report.wrong[0]}"
        )
    done = sum(report.outcomes.values())
    if done != report.asks and not report.wrong_count:
        problems["outcomes"] = f"{done} outcomes checked, for {report.asks} asks"
    before, after = report.sample("before"), report.sample("after")
    for name in EXACT:
        was, now = getattr(before, name), getattr(after, name)
        if now != was:
            problems[name] = f"{name}: {was} before, {now} after close"
    if report.trace_memory:
        kib = 1024
        left = after.traced - before.traced
        if left > MEMORY_MARGIN:
            problems["memory"] = (
                f"traced memory ended {left / kib:,.0f} KiB above before "
                f"(margin {MEMORY_MARGIN / kib:,.0f} KiB)"
            )
        during = [s for s in report.samples if s.point.endswith("%")]
        if len(during) >= 2:
            grew = during[-1].traced - during[0].traced
            if grew > MEMORY_MARGIN:
                problems["memory while open"] = (
                    f"traced memory grew {grew / kib:,.0f} KiB from {during[0].point} to "
                    f"{during[-1].point} of the asks, with the bridge open "
                    f"(margin {MEMORY_MARGIN / kib:,.0f} KiB)"
                )
    if len(report.slices) >= 2 * FLAT_WINDOW:
        for name, values in (
            ("wall time", [s.wall_ms for s in report.slices]),
            ("CPU time", [s.cpu_ms for s in report.slices]),
        ):
            problem = flat_problem(name, values)
            if problem is not None:
                problems[name] = problem
    return problems


# -- the bridges -----------------------------------------------------------------------------


def node_command() -> list[str]:
    """The command of the Node soak UI; ``SoakFailure`` without Node.js."""
    node = shutil.which("node")
    if node is None:
        raise SoakFailure("the stdio-node bridge needs Node.js 20 or newer on PATH")
    return [node, str(ROOT / "bench" / "soak_subject.mjs")]


def _child_env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), path) if p)}


@contextlib.asynccontextmanager
async def opened(
    bridge: Bridge, report: Report | None = None
) -> AsyncGenerator[UserInteractionService]:
    """A service with *bridge* registered and started; closed, child and all, on exit."""
    service = UserInteractionService()
    if bridge == "mcp":
        from dsh_user_interaction.extra.mcp import McpElicitationProvider, elicitation_callback
        from dsh_user_interaction.extra.mcp.testing import Connection

        connection = Connection(elicitation_callback(SoakUI()))
        try:
            context = await connection.open()
            provider = McpElicitationProvider(context)
            if report is not None:
                report.implementation = "McpElicitationProvider over the mcp SDK"
            with service.register_provider(provider):
                yield service
        finally:
            await connection.aclose()
        return
    from dsh_user_interaction.extra.stdio import StdioProvider

    if bridge == "stdio-python":
        command = [
            sys.executable, "-m", "dsh_user_interaction_conformance.child",
            "--provider", "bench.soak_subjects:subject",
        ]  # fmt: skip
    else:
        command = node_command()
    async with StdioProvider(command, cwd=str(ROOT), env=_child_env()) as stdio:
        if report is not None:
            report.implementation = stdio.name
        with service.register_provider(stdio):
            yield service


# -- the asks --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Planned:
    """One ask: what happens to it, and when."""

    number: int
    kind: Kind
    #: Seconds after the start when its abort, cancellation or timeout comes.
    delay: float


def plan(rng: random.Random, start: int, count: int) -> list[list[Planned]]:
    """*count* asks, numbered from *start*, in groups of one to MOST_AT_ONCE pending at once."""
    kinds = list(MIX)
    weights = list(MIX.values())
    groups: list[list[Planned]] = []
    number = start
    while number < start + count:
        size = 1 if rng.random() < 0.5 else rng.randint(2, MOST_AT_ONCE)
        size = min(size, start + count - number)
        group: list[Planned] = []
        for _ in range(size):
            kind = rng.choices(kinds, weights)[0]
            group.append(Planned(number, kind, rng.uniform(*INTERRUPT_AFTER)))
            number += 1
        groups.append(group)
    return groups


async def _timed_out(
    service: UserInteractionService, request: AskUserQuestionRequest, delay: float
) -> AskUserQuestionAnswer:
    async with asyncio.timeout(delay):
        return await service.ask(request)


def _problem(
    planned: Planned, request: AskUserQuestionRequest, task: asyncio.Task[AskUserQuestionAnswer]
) -> str | None:
    """Why *task* settled as *planned* must not, or ``None``."""
    if task.cancelled():
        return None if planned.kind == "cancel" else "it was cancelled"
    error = task.exception()
    if planned.kind == "answer":
        if error is not None:
            return f"it raised {error!r}"
        answer = task.result()
        return None if answer == answer_for(request) else f"it returned {answer!r}"
    if planned.kind in ("abort", "pre-abort"):
        if isinstance(error, UserInteractionError) and error.code is ErrorCode.ASK_ABORTED:
            return None
        return f"it gave {error or task.result()!r}, not ASK_ABORTED"
    if planned.kind == "timeout":
        return None if isinstance(error, TimeoutError) else f"it gave {error or task.result()!r}"
    return f"it was not cancelled but gave {error or task.result()!r}"


async def run_group(service: UserInteractionService, group: list[Planned], report: Report) -> None:
    """Ask *group* at once, interrupt the asks planned so, and check every outcome."""
    loop = asyncio.get_running_loop()
    asks: list[tuple[Planned, AskUserQuestionRequest, asyncio.Task[AskUserQuestionAnswer]]] = []
    timers: list[asyncio.TimerHandle] = []
    for planned in group:
        controller = AbortController()
        held = planned.kind in ("abort", "cancel", "timeout")
        text = f"{HOLD if held else 'answer'} #{planned.number}"
        request: AskUserQuestionRequest = {
            "questions": [{"id": f"q{planned.number}", "question": text}],
            "signal": controller.signal,
        }
        if planned.kind == "pre-abort":
            controller.abort()
        if planned.kind == "timeout":
            task = loop.create_task(_timed_out(service, request, planned.delay))
        else:
            task = loop.create_task(service.ask(request))
        if planned.kind == "abort":
            timers.append(loop.call_later(planned.delay, controller.abort))
        elif planned.kind == "cancel":
            timers.append(loop.call_later(planned.delay, task.cancel))
        asks.append((planned, request, task))
    tasks = [task for _, _, task in asks]
    _, stuck = await asyncio.wait(tasks, timeout=BOUND)
    for timer in timers:
        timer.cancel()
    if stuck:
        for task in stuck:
            task.cancel()
        await asyncio.wait(stuck, timeout=1)
        kinds = [planned.kind for planned, _, task in asks if task in stuck]
        msg = f"{report.bridge}: {len(stuck)} asks ({', '.join(kinds)}) pending {BOUND:g} s on"
        raise SoakFailure(msg)
    for planned, request, task in asks:
        problem = _problem(planned, request, task)
        if problem is None:
            report.outcomes[OUTCOME[planned.kind]] += 1
        else:
            report.wrong_count += 1
            if len(report.wrong) < 20:
                report.wrong.append(f"ask #{planned.number} ({planned.kind}): {problem}")


async def settled_after(
    before: Sample, asks: int, must: tuple[str, ...] = EXACT
) -> tuple[Sample, float]:
    """The "after" figures, polled until they are back where *before* had them.

    Polled until every exact figure is back; after :data:`SETTLE` seconds,
    until those named in *must* are (after the warm-up, :data:`MUST_SETTLE`:
    a figure made once may stay); after :data:`PATIENCE` seconds, the
    figures as they are, to be judged. A busy machine can keep a closed
    bridge's tasks and threads alive for seconds, so the wait for them is no
    time limit on the bridge.
    """
    start = time.perf_counter()
    while True:
        after = sample("after", asks)
        waited = time.perf_counter() - start
        names = EXACT if waited <= SETTLE else must
        back = all(getattr(after, name) == getattr(before, name) for name in names)
        if back or waited > PATIENCE:
            return after, waited
        await asyncio.sleep(0.01)


async def soak_bridge(
    bridge: Bridge, asks: int, seed: int, *, trace_memory: bool = True, quiet: bool = False
) -> Report:
    """Soak *bridge* with *asks* asks, in the running loop; the report, judged by :func:`judge`."""
    if asks < SLICES:
        msg = f"a soak needs at least {SLICES} asks, got {asks}"
        raise ValueError(msg)
    rng = random.Random(seed)
    report = Report(bridge=bridge, asks=asks, seed=seed, trace_memory=trace_memory)
    warm = Report(bridge=bridge, asks=WARM_UP, seed=seed)
    tracing = trace_memory and not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start()
    try:
        start = sample("start", 0)
        async with opened(bridge) as service:
            for group in plan(rng, -WARM_UP, WARM_UP):
                await run_group(service, group, warm)
        if warm.wrong_count:
            raise SoakFailure(f"{bridge}, warming up: {warm.wrong[0]}")
        # The warm-up's child reaped and its threads ended, as after the run.
        warmed, _ = await settled_after(start, 0, MUST_SETTLE)
        before = replace(warmed, point="before")
        report.samples.append(before)
        if not quiet:
            print(_row(before, None, before), flush=True)
        began = time.perf_counter()
        async with opened(bridge, report) as service:
            done = 0
            for index in range(SLICES):
                count = asks * (index + 1) // SLICES - done
                groups = plan(rng, done, count)
                wall, cpu = time.perf_counter(), time.process_time()
                for group in groups:
                    await run_group(service, group, report)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                done += count
                report.slices.append(Slice(count, wall * 1000 / count, cpu * 1000 / count))
                report.samples.append(sample(f"{(index + 1) * 100 // SLICES}%", done))
                if not quiet:
                    print(_row(report.samples[-1], report.slices[-1], before), flush=True)
        report.seconds = time.perf_counter() - began
        after, report.settled_after = await settled_after(before, asks)
        report.samples.append(after)
        if not quiet:
            print(_row(after, None, before), flush=True)
    finally:
        if tracing:
            tracemalloc.stop()
    return report


# -- reporting -------------------------------------------------------------------------------

_HEADER: Final = (
    f"{'point':>7} {'asks':>7} {'fds':>4} {'thr':>4} {'os thr':>6} {'child':>5} {'tasks':>5} "
    f"{'traced KiB':>11} {'RSS MiB':>8} {'child MiB':>9} {'wall ms/ask':>11} {'CPU ms/ask':>10}"
)


def _row(point: Sample, part: Slice | None, before: Sample) -> str:
    mib, kib = 1024 * 1024, 1024
    traced = f"{(point.traced - before.traced) / kib:+,.0f}" if point.point != "before" else "0"
    times = f"{part.wall_ms:>11.3f} {part.cpu_ms:>10.3f}" if part is not None else f"{'':>22}"
    return (
        f"{point.point:>7} {point.asks:>7,} {point.fds:>4} {point.threads:>4} "
        f"{point.os_threads:>6} {point.children:>5} {point.tasks:>5} {traced:>11} "
        f"{point.rss / mib:>8.1f} {point.child_rss / mib:>9.1f} {times}"
    )


def table(report: Report) -> str:
    """The report as a plain-text table; traced memory is relative to "before"."""
    before = report.sample("before")
    lines = [_HEADER]
    parts = iter(report.slices)
    for point in report.samples:
        part = next(parts) if point.point.endswith("%") else None
        lines.append(_row(point, part, before))
    return "\n".join(lines)


def summary(report: Report, problems: dict[str, str]) -> str:
    """Outcomes, growth and verdict, for the command line."""
    walls = [s.wall_ms for s in report.slices]
    cpus = [s.cpu_ms for s in report.slices]
    lines = [
        f"{report.bridge} ({report.implementation}): {report.asks:,} asks in "
        f"{report.seconds:.1f} s, seed {report.seed}",
        "outcomes: "
        + ", ".join(f"{name} {count:,}" for name, count in sorted(report.outcomes.items())),
        f"time per ask, last {FLAT_WINDOW} slices over first {FLAT_WINDOW} (medians): "
        f"wall {growth(walls):.2f}x, CPU {growth(cpus):.2f}x (allowed {FLAT_FACTOR:g}x)",
        f"after close: figures back after {report.settled_after * 1000:.0f} ms",
    ]
    if problems:
        lines += [f"NOT FLAT: {problem}" for problem in problems.values()]
    else:
        lines.append("flat: every figure ended where it began, and the time per ask stayed flat")
    return "\n".join(lines)


def _node_version() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    done = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def write_json(path: Path, reports: list[Report], verdicts: list[dict[str, str]]) -> None:
    """Write *reports* to *path*, keeping the bridges of earlier runs that this one did not soak."""
    found: dict[str, Any] = {}
    if path.exists():
        with contextlib.suppress(ValueError):
            found = json.loads(path.read_text(encoding="utf-8"))
    bridges = cast("dict[str, Any]", found.get("bridges", {}))
    for report, problems in zip(reports, verdicts, strict=True):
        bridges[report.bridge] = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "node": _node_version(),
                "platform": platform.platform(),
            },
            **asdict(report),
            "outcomes": dict(report.outcomes),
            "growth": {
                "wall": growth([s.wall_ms for s in report.slices]),
                "cpu": growth([s.cpu_ms for s in report.slices]),
            },
            "problems": problems,
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {
        "flat_factor": FLAT_FACTOR,
        "flat_window": FLAT_WINDOW,
        "memory_margin": MEMORY_MARGIN,
    }
    document = {"settings": settings, "bridges": bridges}
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak_bridges", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--asks", type=int, default=10_000, help="asks per bridge")
    parser.add_argument("--bridge", choices=[*BRIDGES, "all"], default="all")
    parser.add_argument("--seed", type=int, default=None, help="default: a random one, printed")
    parser.add_argument("--no-memory", action="store_true", help="do not trace memory")
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the figures")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    bridges = BRIDGES if args.bridge == "all" else (cast("Bridge", args.bridge),)
    reports: list[Report] = []
    verdicts: list[dict[str, str]] = []
    failed = False
    for bridge in bridges:
        print(f"\n{bridge}: {args.asks:,} asks, seed {seed}", flush=True)
        print(_HEADER, flush=True)
        try:
            report = asyncio.run(
                soak_bridge(bridge, args.asks, seed, trace_memory=not args.no_memory)
            )
        except SoakFailure as failure:
            print(f"FAILED: {failure}", file=sys.stderr)
            failed = True
            continue
        problems = judge(report)
        reports.append(report)
        verdicts.append(problems)
        print(summary(report, problems), flush=True)
        failed = failed or bool(problems)
    if reports:
        write_json(args.json, reports, verdicts)
        print(f"\nfigures written to {args.json}")
    if failed:
        names = [r.bridge for r, p in zip(reports, verdicts, strict=True) if p]
        print(f"FAILED: not flat: {', '.join(names) or 'see above'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
