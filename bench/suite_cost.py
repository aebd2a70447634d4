"""What the conformance suite costs per Hypothesis test case, and where that time goes.

Four measurements, each against the reference subject and service:

0. **Against a calibration workload, by CPU time.** The ``default`` and
   ``quick`` profiles' command line (seed 1, start-up included) and the
   calibration workload (:func:`calibration`: a fixed Hypothesis run of a
   trivial property), each in a fresh interpreter, interleaved and shuffled
   in rounds; the ratio of their process CPU times (every thread, user plus
   system), median over the rounds. Both scale with the interpreter and the
   machine, so the ratio says what the suite costs whatever the machine.
   ``--against DIR`` measures another source tree in the same rounds (an
   earlier commit: ``git archive COMMIT conformance reference spec | tar -x -C DIR``).
1. **Per test case.** ``python -m dsh_user_interaction_conformance --profile P
   --seed S --json FILE`` in a fresh interpreter, for the ``default`` and
   ``thorough`` profiles. A *test case* is one call of a check's Hypothesis
   test function: the report's ``checks[].examples`` counts them over every
   repetition of every check (``CheckOutcome.examples``). The time per test
   case divides the wall clock (start-up included) and the checks' own time
   by that count, not by factory calls (a scenario may build several
   subjects or services, or none).
2. **Where the time goes, unprofiled.** One in-process run with timing
   wrappers only (a few microseconds each, against milliseconds per test
   case): drawing the inputs, writing them down for the report, making and
   closing each example's event loop, the scenarios, the subjects' teardown,
   the rest of the per-example thread hand-off, and what is left: the
   Hypothesis engine itself.
3. **cProfile.** One in-process run with a profiler on the main thread and
   one on every example's worker thread, merged; shares of the run, and the
   top functions by cumulative time. The tracer slows Python-heavy code
   (Hypothesis's drawing) far more than C calls (socket pairs, epoll), so
   these shares lean towards the engine; read them with measurement 2.

``python -m bench.suite_cost`` (or ``nox -s bench -- suite_cost``); results go
to ``bench/results/suite_cost.json``. Nothing here changes the suite: the
wrappers replace module attributes for one run and put them back.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pprint
import pstats
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


# --- 0. against a calibration workload, by CPU time ---------------------------------------

#: Test cases of the calibration workload, and its Hypothesis seed.
CALIBRATION_EXAMPLES = 500
CALIBRATION_SEED = 20260101


def calibration() -> int:
    """The calibration workload; returns how many test cases it ran (always the same).

    A Hypothesis ``@given`` run of a trivial property, with a fixed seed, a
    fixed number of examples (:data:`CALIBRATION_EXAMPLES`), the generate
    phase only and no database: CPU-bound pure Python that exercises the same
    interpreter, and the same engine, as the suite. Nothing in it waits or
    depends on the clock, so every run does the same work.
    """
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st

    calls = [0]

    @seed(CALIBRATION_SEED)
    @settings(
        max_examples=CALIBRATION_EXAMPLES,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(st.integers(), max_size=10), st.text(max_size=10))
    def trivial(numbers: list[int], text: str) -> None:
        calls[0] += 1
        assert len(numbers) <= 10
        assert len(text) <= 10

    trivial()
    return calls[0]


def calibration_child() -> None:
    """Run :func:`calibration` alone and print its process CPU seconds and test cases as JSON.

    The clock starts after the imports, so start-up is not part of it.
    """
    import hypothesis  # noqa: F401 - imported before the clock starts

    started = time.process_time()
    cases = calibration()
    print(json.dumps({"cpu_seconds": time.process_time() - started, "test_cases": cases}))


def _child_cpu(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run *command*; the CPU seconds of the process (every thread), and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done.stdout


def _tree_env(tree: Path | None) -> dict[str, str]:
    """The environment of a child that imports the suite from *tree* (``None``: installed)."""
    env = dict(os.environ)
    if tree is not None:
        paths = [str(tree / "conformance"), str(tree / "reference")]
        env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def calibrated(
    profiles: list[str], rounds: int, seed: int, against: list[Path] | None = None
) -> dict[str, Any]:
    """Each profile's CPU time over the calibration workload's, in interleaved rounds.

    Every round runs the calibration and each (tree, profile) once, in a
    shuffled order, each in a fresh interpreter; the ratio of a round divides
    a profile's CPU time by the calibration's of the same round. The suite's
    time includes its start-up, as a user pays it; the calibration's does not.
    """
    trees: dict[str, Path | None] = {"installed": None}
    for tree in against or []:
        trees[str(tree)] = tree
    jobs = [("calibration", None, "")]
    jobs += [(label, tree, profile) for label, tree in trees.items() for profile in profiles]
    shuffler = random.Random(seed)
    seconds: dict[tuple[str, str], list[float]] = {(label, p): [] for label, _, p in jobs}
    ratios: dict[tuple[str, str], list[float]] = {(label, p): [] for label, _, p in jobs[1:]}
    for round_ in range(rounds):
        order = list(jobs)
        shuffler.shuffle(order)
        found: dict[tuple[str, str], float] = {}
        for label, tree, profile in order:
            if label == "calibration":
                command = [sys.executable, "-c", "from bench.suite_cost import calibration_child; "
                           "calibration_child()"]  # fmt: skip
                _, out = _child_cpu(command, _tree_env(None))
                measured = json.loads(out)
                if measured["test_cases"] != CALIBRATION_EXAMPLES:
                    raise RuntimeError(f"the calibration ran {measured['test_cases']} test cases")
                found[label, profile] = measured["cpu_seconds"]
            else:
                command = [sys.executable, "-m", "dsh_user_interaction_conformance",
                           "--profile", profile, "--seed", str(seed)]  # fmt: skip
                found[label, profile], _ = _child_cpu(command, _tree_env(tree))
        for key, value in found.items():
            seconds[key].append(value)
            if key in ratios:
                ratios[key].append(value / found["calibration", ""])
        print(f"  round {round_ + 1}: " + ", ".join(
            f"{label} {profile or ''} {value:.2f} s".replace("  ", " ")
            for (label, profile), value in found.items()
        ))  # fmt: skip
    return {
        "calibration": {
            "examples": CALIBRATION_EXAMPLES,
            "seed": CALIBRATION_SEED,
            "cpu_seconds_median": statistics.median(seconds["calibration", ""]),
        },
        "rounds": rounds,
        "seed": seed,
        "runs": [
            {
                "tree": label,
                "profile": profile,
                "cpu_seconds_median": statistics.median(seconds[label, profile]),
                "ratio_median": statistics.median(values),
                # The calibration is short, so noisier than the suite: the ratio of
                # the medians damps a round whose calibration ran slow or fast.
                "ratio_of_medians": statistics.median(seconds[label, profile])
                / statistics.median(seconds["calibration", ""]),
                "ratio_min": min(values),
                "ratio_max": max(values),
                "ratios": values,
            }
            for (label, profile), values in ratios.items()
        ],
    }


# --- 1. per test case, from the command line ----------------------------------------------


def _cli_command(profile: str, seed: int, report: Path) -> list[str]:
    arguments = ["--profile", profile, "--seed", str(seed), "--json", str(report)]
    return [sys.executable, "-m", "dsh_user_interaction_conformance", *arguments]


def cli_run(profile: str, seed: int, *, count: bool = False) -> dict[str, Any]:
    """One run of the suite's command line in a fresh interpreter.

    With *count*, the same command line runs through :func:`child`, which also
    counts the calls of the Hypothesis test functions (test cases rejected
    while drawing included, which the report does not count).
    """
    with tempfile.TemporaryDirectory() as folder:
        report_path = Path(folder) / "report.json"
        counts_path = Path(folder) / "test_cases"
        command = _cli_command(profile, seed, report_path)
        if count:
            command[1:3] = ["-c", "from bench.suite_cost import child; child()"]
        env = {**os.environ, "BENCH_TEST_CASES": str(counts_path)}
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}")
        report = json.loads(report_path.read_text())
        test_cases = int(counts_path.read_text()) if count else None
    checks = report["checks"]
    examples = sum(c["examples"] for c in checks)
    return {
        "wall_seconds": wall,
        "checks_seconds": sum(c["seconds"] for c in checks),
        "report_examples": examples,
        "hypothesis_test_cases": test_cases,
        "ok": report["ok"],
        "per_check": {c["name"]: [c["examples"], c["seconds"]] for c in checks},
    }


def child() -> None:
    """The suite's command line, counting Hypothesis test cases into ``$BENCH_TEST_CASES``."""
    from dsh_user_interaction_conformance import __main__ as cli
    from dsh_user_interaction_conformance import _engine

    calls = [0]
    original = _engine.Draws.__init__

    def counting(self: Any, data: Any) -> None:
        calls[0] += 1
        original(self, data)

    _engine.Draws.__init__ = counting  # type: ignore[method-assign]
    status = cli.main(sys.argv[1:])
    Path(os.environ["BENCH_TEST_CASES"]).write_text(str(calls[0]))
    sys.stdout.flush()
    os._exit(status)


def per_test_case(profile: str, seed: int, repeats: int) -> dict[str, Any]:
    from dsh_user_interaction_conformance._engine import PROFILES

    runs = [cli_run(profile, seed) for _ in range(repeats)]
    counted = cli_run(profile, seed, count=True)
    if counted["report_examples"] != runs[0]["report_examples"]:
        raise RuntimeError("the counting run is not the same run: its report differs")
    test_cases = counted["hypothesis_test_cases"]
    examples = runs[0]["report_examples"]

    def spread(values: list[float]) -> dict[str, float]:
        return {"min": min(values), "median": statistics.median(values)}

    walls = [r["wall_seconds"] for r in runs]
    checks = [r["checks_seconds"] for r in runs]
    return {
        "profile": profile,
        "examples_per_check_setting": PROFILES[profile],
        "seed": seed,
        "repeats": repeats,
        "hypothesis_test_cases": test_cases,
        "report_examples": examples,
        "wall_seconds": spread(walls),
        "checks_seconds": spread(checks),
        "ms_per_test_case_wall": spread([w / test_cases * 1e3 for w in walls]),
        "ms_per_test_case_checks": spread([c / test_cases * 1e3 for c in checks]),
        "ms_per_report_example_wall": spread([w / examples * 1e3 for w in walls]),
        "ok": all(r["ok"] for r in runs),
        "per_check_of_first_run": runs[0]["per_check"],
    }


# --- 2. where the time goes, with timing wrappers only -----------------------------------


class _Clock:
    """Seconds and counts per part, added to from the main and the worker threads."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, part: str, seconds: float) -> None:
        with self._lock:
            self.seconds[part] = self.seconds.get(part, 0.0) + seconds
            self.counts[part] = self.counts.get(part, 0) + 1

    def timed(self, part: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(part, time.perf_counter() - started)

        return wrapper

    def timed_coroutine(
        self, part: str, function: Callable[[], Coroutine[Any, Any, Any]]
    ) -> Callable[[], Coroutine[Any, Any, Any]]:
        async def wrapper() -> Any:
            started = time.perf_counter()
            try:
                return await function()
            finally:
                self.add(part, time.perf_counter() - started)

        return wrapper


_ABSENT = object()


@contextmanager
def _replaced(target: object, name: str, value: object) -> Iterator[None]:
    # A module may lack the name (a builtin it uses): it is set, then deleted again.
    original = getattr(target, name, _ABSENT)
    setattr(target, name, value)
    try:
        yield
    finally:
        if original is _ABSENT:
            delattr(target, name)
        else:
            setattr(target, name, original)


def attribute(profile: str, seed: int) -> dict[str, Any]:
    """Wall-clock shares of one in-process run, measured by wrappers, with no profiler."""
    from dsh_user_interaction_conformance import _engine, _loop, run_suite

    clock = _Clock()
    original_run_bounded = _loop.run_bounded  # what _engine imported
    original_new_loop = asyncio.new_event_loop
    original_executor = ThreadPoolExecutor  # what _loop imported
    original_heartbeat = _loop._Heartbeat  # noqa: SLF001 - wrapped for one run, then restored
    original_init = _engine.Draws.__init__

    def run_bounded(
        scenario: Callable[[], Coroutine[Any, Any, object]],
        *,
        teardown: Callable[[], Coroutine[Any, Any, None]],
        **options: Any,
    ) -> Any:
        return original_run_bounded(
            clock.timed_coroutine("scenario", scenario),
            teardown=clock.timed_coroutine("subjects' teardown", teardown),
            **options,
        )

    def new_event_loop() -> asyncio.AbstractEventLoop:
        started = time.perf_counter()
        loop = original_new_loop()
        clock.add("loop, executor, heartbeat", time.perf_counter() - started)
        loop.close = clock.timed("loop, executor, heartbeat", loop.close)  # type: ignore[method-assign]
        return loop

    def executor(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        made = original_executor(*args, **kwargs)
        clock.add("loop, executor, heartbeat", time.perf_counter() - started)
        made.shutdown = clock.timed("loop, executor, heartbeat", made.shutdown)  # type: ignore[method-assign]
        return made

    def heartbeat(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        made = original_heartbeat(*args, **kwargs)
        clock.add("loop, executor, heartbeat", time.perf_counter() - started)
        made.stop = clock.timed("loop, executor, heartbeat", made.stop)  # type: ignore[method-assign]
        return made

    def phase(part: str, function: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                clock.add(part, time.perf_counter() - started)

        return wrapper

    def draws_init(self: Any, data: Any) -> None:
        clock.add("test case", 0.0)
        original_init(self, data)

    # Note: private names of the suite, wrapped for this one run and put back after it.
    patches = [
        (_engine, "run_bounded", clock.timed("per-example thread", run_bounded)),
        (_engine.Draws, "__call__", clock.timed("drawing inputs", _engine.Draws.__call__)),
        (_engine.Draws, "__init__", draws_init),
        (_engine, "_call_factory", _counted(clock, _engine._call_factory)),  # noqa: SLF001
        (pprint, "pformat", clock.timed("writing inputs down", pprint.pformat)),
        # Draws keeps each value's repr, and pretty-prints it only for a failure.
        (_engine, "repr", clock.timed("writing inputs down", repr)),
        (asyncio, "new_event_loop", new_event_loop),
        (_loop, "ThreadPoolExecutor", executor),
        (_loop, "_Heartbeat", heartbeat),
        (_loop, "_scenario_phase", phase("scenario phase", _loop._scenario_phase)),  # noqa: SLF001
        (_loop, "_cleanup_phase", phase("clean-up phase", _loop._cleanup_phase)),  # noqa: SLF001
        (gc, "collect", clock.timed("gc.collect", gc.collect)),
        (threading.Thread, "run", clock.timed("worker body", threading.Thread.run)),
    ]
    with _all_replaced(patches):
        started = time.perf_counter()
        report = run_suite(profile=profile, seed=seed)
        total = time.perf_counter() - started
    seconds, counts = clock.seconds, clock.counts

    def spent(part: str) -> float:
        return seconds.get(part, 0.0)

    drawing, writing, thread = (
        spent("drawing inputs"),
        spent("writing inputs down"),
        spent("per-example thread"),
    )
    isolation = spent("loop, executor, heartbeat")
    scenario_phase, cleanup_phase = spent("scenario phase"), spent("clean-up phase")
    parts = {
        "the rest: Hypothesis engine, building and judging examples": total - drawing - thread,
        "drawing inputs (strategies; Hypothesis)": drawing - writing,
        "writing inputs down for the report (repr; pprint for a failure)": writing,
        "worker thread: creation, start, hand-offs, join (outside its body)": (
            thread - spent("worker body")
        ),
        "event loop, executor and heartbeat: creation and close": isolation,
        "run_until_complete around the two phases": (
            spent("worker body") - isolation - scenario_phase - cleanup_phase
        ),
        "waiting on the scenario's task (asyncio.wait, timers)": (
            scenario_phase - spent("scenario")
        ),
        "scenarios (driving the subject, judging it)": spent("scenario") - spent("gc.collect"),
        "gc.collect() inside scenarios (the binding checks)": spent("gc.collect"),
        "clean-up phase (subjects' teardown, leftover tasks)": cleanup_phase,
    }
    test_cases = counts.get("test case", 0)
    loops = counts.get("scenario phase", 0)
    factories = counts.get("factory call", 0)
    return {
        "profile": profile,
        "seed": seed,
        "ok": report.ok,
        "wall_seconds": total,
        "hypothesis_test_cases": test_cases,
        "report_examples": sum(o.examples for o in report.outcomes),
        "event_loops": loops,
        "factory_calls": factories,
        "ms_per_test_case": total / test_cases * 1e3 if test_cases else None,
        "ms_per_factory_call": total / factories * 1e3 if factories else None,
        "shares": {part: value / total for part, value in parts.items()},
        "ms_per_test_case_by_part": {
            part: value / test_cases * 1e3 for part, value in parts.items() if test_cases
        },
    }


def _counted(clock: _Clock, function: Callable[..., Any]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        clock.add("factory call", 0.0)
        return await function(*args, **kwargs)

    return wrapper


@contextmanager
def _all_replaced(patches: list[tuple[object, str, object]]) -> Iterator[None]:
    if not patches:
        yield
        return
    (target, name, value), *rest = patches
    with _replaced(target, name, value), _all_replaced(rest):
        yield


def fixed_costs(repeats: int = 300) -> dict[str, dict[str, float]]:
    """Milliseconds for an empty example: what every test case pays before its scenario."""
    from dsh_user_interaction_conformance._loop import run_bounded

    async def nothing() -> None:
        return None

    def bounded() -> None:
        run_bounded(nothing, teardown=nothing, limit=5.0, bound=1.0)

    def loop_alone() -> None:
        loop = asyncio.new_event_loop()
        loop.run_until_complete(nothing())
        loop.close()

    def thread_alone() -> None:
        thread = threading.Thread(target=lambda: None)
        thread.start()
        thread.join()

    found = {}
    for name, function in (
        ("run_bounded(empty scenario)", bounded),
        ("new_event_loop + run_until_complete + close", loop_alone),
        ("Thread start + join", thread_alone),
    ):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            function()
            times.append((time.perf_counter() - started) * 1e3)
        found[name] = {"min": min(times), "median": statistics.median(times)}
    return found


# --- 3. cProfile, every thread ---------------------------------------------------------


def _key_matches(key: tuple[str, int, str], file_end: str, function: str) -> bool:
    filename, _line, name = key
    return name == function and filename.replace("\\", "/").endswith(file_end)


def _cumulative(raw: dict[Any, Any], file_end: str, function: str) -> float:
    return float(sum(v[3] for k, v in raw.items() if _key_matches(k, file_end, function)))


def _largest(raw: dict[Any, Any], file_end: str, function: str) -> float:
    return float(
        max((v[3] for k, v in raw.items() if _key_matches(k, file_end, function)), default=0.0)
    )


def _own(raw: dict[Any, Any], file_end: str, function: str) -> float:
    return float(sum(v[2] for k, v in raw.items() if _key_matches(k, file_end, function)))


def profiled(profile: str, seed: int, top: int = 25) -> dict[str, Any]:
    """One in-process run under cProfile, with a profiler on every thread."""
    from dsh_user_interaction_conformance import run_suite

    workers: list[cProfile.Profile] = []
    lock = threading.Lock()
    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profiler = cProfile.Profile()
        with lock:
            workers.append(profiler)
        profiler.enable()
        try:
            original_run(self)
        finally:
            profiler.disable()

    main = cProfile.Profile()
    with _replaced(threading.Thread, "run", run):
        started = time.perf_counter()
        main.enable()
        report = run_suite(profile=profile, seed=seed)
        main.disable()
        total = time.perf_counter() - started
    main_raw: dict[Any, Any] = pstats.Stats(main).stats  # type: ignore[attr-defined]
    merged = pstats.Stats(main)
    worker_stats = pstats.Stats(workers[0]) if workers else None
    for profiler in workers[1:]:
        worker_stats.add(profiler)  # type: ignore[union-attr]
    worker_raw: dict[Any, Any] = worker_stats.stats if worker_stats else {}  # type: ignore[attr-defined]
    if worker_stats is not None:
        merged.add(worker_stats)

    run_seconds = _cumulative(main_raw, "_runner.py", "run_suite")
    drawing = _cumulative(main_raw, "_engine.py", "__call__")
    writing = _cumulative(main_raw, "pprint.py", "pformat") + _own(
        main_raw, "~", "<built-in method builtins.repr>"
    )
    validating = _cumulative(main_raw, "strategies/_internal/strategies.py", "validate")
    handing_off = _cumulative(main_raw, "_loop.py", "run_bounded")
    worker_total = _cumulative(worker_raw, "_loop.py", "work")
    creation = (
        # asyncio.new_event_loop calls the policy's new_event_loop: take the outer one.
        _largest(worker_raw, "asyncio/events.py", "new_event_loop")
        + _cumulative(worker_raw, "concurrent/futures/thread.py", "__init__")
        + _cumulative(worker_raw, "_loop.py", "__init__")
    )
    teardown = (
        _cumulative(worker_raw, "asyncio/unix_events.py", "close")
        + _cumulative(worker_raw, "concurrent/futures/thread.py", "shutdown")
        + _cumulative(worker_raw, "_loop.py", "_forget_at_exit")
        + _cumulative(worker_raw, "_loop.py", "stop")
    )
    scenarios = _cumulative(worker_raw, "_engine.py", "run")
    collecting = _own(worker_raw, "~", "<built-in method gc.collect>")
    cleanup = _cumulative(worker_raw, "_loop.py", "_cleanup_phase")
    idle = _own(worker_raw, "~", "<method 'poll' of 'select.epoll' objects>")
    parts = {
        "the rest: Hypothesis engine, building and judging examples": (
            run_seconds - drawing - handing_off
        ),
        "drawing inputs (strategies; Hypothesis)": drawing - writing,
        "  of which strategy validation (SearchStrategy.validate)": validating,
        "writing inputs down for the report (repr; pprint for a failure)": writing,
        "event loop and executor creation": creation,
        "event loop and executor teardown": teardown,
        "scenarios, run steps (driving the subject, judging it)": scenarios,
        "  of which gc.collect() in the binding checks": collecting,
        "clean-up phase (teardown, leftover tasks)": cleanup,
        "loop idle in epoll (timers, sleeps)": idle,
        "rest of the worker (event loop machinery)": (
            worker_total - creation - teardown - scenarios - cleanup - idle
        ),
        "thread start and join (run_bounded outside the worker)": handing_off - worker_total,
    }

    def rows(raw: dict[Any, Any]) -> list[dict[str, Any]]:
        ordered = sorted(raw.items(), key=lambda item: item[1][3], reverse=True)[:top]
        return [
            {
                "function": f"{_short(k[0])}:{k[1]}({k[2]})" if k[1] else k[2],
                "calls": v[1],
                "own_seconds": v[2],
                "cumulative_seconds": v[3],
                "cumulative_share": v[3] / run_seconds,
            }
            for k, v in ordered
        ]

    return {
        "profile": profile,
        "seed": seed,
        "ok": report.ok,
        "wall_seconds_profiled": total,
        "threads_profiled": len(workers),
        "shares": {part: value / run_seconds for part, value in parts.items()},
        "top_main_by_cumulative": rows(main_raw),
        "top_workers_by_cumulative": rows(worker_raw),
    }


def _short(filename: str) -> str:
    short = filename.replace("\\", "/")
    for marker in ("site-packages/", "python3.11/", "python3.12/", "python3.13/", "wt-bench/"):
        if marker in short:
            return short.split(marker, 1)[1]
    return short


# --- the command line ------------------------------------------------------------------


def _print_shares(title: str, shares: dict[str, float], ms: dict[str, float] | None = None) -> None:
    print(title)
    for part, share in shares.items():
        each = f"{ms[part]:6.2f} ms  " if ms is not None else ""
        print(f"  {share:6.1%}  {each}{part}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.suite_cost", description=__doc__)
    parser.add_argument("--profiles", default="default,thorough", help="comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="command-line runs per profile")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--no-profile", action="store_true", help="skip the in-process runs (2 and 3)"
    )
    parser.add_argument(
        "--rounds", type=int, default=7, help="rounds against the calibration (0 skips them)"
    )
    parser.add_argument(
        "--calibrated-profiles", default="default,quick", help="comma-separated, for 0"
    )
    parser.add_argument(
        "--against",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="also measure the suite of this source tree (conformance/, reference/, spec/) in 0",
    )
    parser.add_argument("--calibrated-only", action="store_true", help="run 0 alone")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}

    if args.rounds > 0:
        print(
            f"== 0. CPU time over the calibration workload ({CALIBRATION_EXAMPLES} test cases "
            f"of a trivial property), {args.rounds} interleaved rounds"
        )
        found = calibrated(
            args.calibrated_profiles.split(","), args.rounds, args.seed, args.against
        )
        results["calibrated"] = found
        print(f"  calibration: {found['calibration']['cpu_seconds_median']:.2f} s CPU (median)")
        for row in found["runs"]:
            print(
                f"  {row['tree']}, {row['profile']}: {row['cpu_seconds_median']:.2f} s CPU, "
                f"{row['ratio_median']:.2f} times the calibration "
                f"[{row['ratio_min']:.2f}, {row['ratio_max']:.2f}]; "
                f"{row['ratio_of_medians']:.2f} over the medians"
            )
    if args.calibrated_only:
        args.profiles, args.no_profile = "", True
    if args.profiles:
        print("== 1. per Hypothesis test case, from the command line")
    results["per_test_case"] = []
    for profile in filter(None, args.profiles.split(",")):
        row = per_test_case(profile, args.seed, args.repeats)
        results["per_test_case"].append(row)
        wall, case = row["wall_seconds"], row["ms_per_test_case_wall"]
        checks = row["ms_per_test_case_checks"]
        print(
            f"  {profile}: {row['hypothesis_test_cases']} test cases "
            f"({row['report_examples']} reached a scenario; "
            f"{row['examples_per_check_setting']} examples per check), {args.repeats} runs\n"
            f"    wall with start-up {wall['min']:.2f} s min, {wall['median']:.2f} s median: "
            f"{case['min']:.2f} / {case['median']:.2f} ms per test case\n"
            f"    the checks' own time: {checks['min']:.2f} / {checks['median']:.2f} ms "
            "per test case"
        )
    if not args.no_profile:
        found = attribute("default", args.seed)
        results["attribution"] = found
        print(
            f"\n== 2. default, in process, timing wrappers only: {found['wall_seconds']:.2f} s; "
            f"{found['hypothesis_test_cases']} test cases, {found['event_loops']} event loops, "
            f"{found['factory_calls']} factory calls; {found['ms_per_test_case']:.2f} ms per "
            f"test case ({found['ms_per_factory_call']:.2f} ms per factory call)"
        )
        _print_shares("  share of the wall clock (ms per test case):", found["shares"],
                      found["ms_per_test_case_by_part"])  # fmt: skip
        fixed = fixed_costs()
        results["fixed_costs_ms"] = fixed
        print("  an empty example, for scale (ms, min / median of 300):")
        for name, spread in fixed.items():
            print(f"    {spread['min']:6.3f} / {spread['median']:6.3f}  {name}")
        traced = profiled("default", args.seed)
        results["cprofile"] = traced
        print(
            f"\n== 3. default under cProfile, every thread ({traced['threads_profiled']} "
            f"threads): {traced['wall_seconds_profiled']:.2f} s"
        )
        _print_shares("  share of run_suite's profiled time:", traced["shares"])
        for key, what in (
            ("top_main_by_cumulative", "main thread"),
            ("top_workers_by_cumulative", "example threads, merged"),
        ):
            print(f"  top by cumulative time, {what} (share of run_suite, calls):")
            for row in traced[key]:
                print(f"    {row['cumulative_share']:6.1%}  {row['calls']:>7}  {row['function']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "suite_cost.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
