"""Benchmarks of the seam, each reported as a ratio against a peer measured in the same run.

Run with ``nox -s bench`` (or ``python -m bench`` with pydantic, msgspec,
jsonschema, pyinstrument and matplotlib installed). ``python -m bench`` runs
every section; ``python -m bench scaling abort_latency`` runs some, and
``python -m bench honest --rounds 60`` or ``python -m bench suite_cost
--profiles default`` runs one of the two larger modules with its own options.

* ``honest`` (:mod:`bench.honest`): a strict ``ask()`` against pydantic
  validating the same request and answer, and other peers, in interleaved
  and shuffled rounds; ``bench/results/honest.json``.
* ``harness`` (:mod:`bench.harness`): the default profile through the
  JSON-lines harness against in-process; ``bench/results/harness.json``.
* ``web`` (:mod:`bench.web`): the web provider's memory per pending ask, a
  keystroke on Send in Chromium until ``ask()`` returns, and the page with
  1,000 asks pending; ``bench/results/web.json``.
* ``durable`` (:mod:`bench.durable`): asks per second through the SQLite and
  PostgreSQL stores, from an answer written to ``ask()`` returning, and both
  with 10,000 asks pending; ``bench/results/durable.json``.
* ``suite_cost`` (:mod:`bench.suite_cost`): the conformance suite's time per
  Hypothesis test case, and where it goes; ``bench/results/suite_cost.json``.
* ``scaling``, ``abort_latency``, ``many_pending``, ``import_cost``: below;
  ``bench/results/results.json``, and the scaling plot in
  ``docs/_static/scaling.png``.

Absolute times are printed for context only: these machines are shared, so
only ratios within one run mean anything. Times are the thread's CPU time
(``time.thread_time``), so the other processes' work is never counted;
``import_cost`` reads ``-X importtime``.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import math
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The clock: this thread's CPU time, in seconds.
clock = time.thread_time

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PLOT = ROOT / "docs" / "_static" / "scaling.png"

from dsh_user_interaction import (  # noqa: E402 - after the constants, for the docstring's sake
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_violations,
    check_request,
)


def request_of(
    questions: int, options: int = 4, *, label: str = "option"
) -> AskUserQuestionRequest:
    return {
        "questions": [
            {
                "id": f"q{i}",
                "question": f"Question {i}?",
                "options": [
                    {"label": f"{label} {j}", "description": "why"} for j in range(options)
                ],
            }
            for i in range(questions)
        ]
    }


def answer_to(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    return {
        "answers": [
            {"id": q["id"], "selected": [q["options"][0]["label"]]}  # type: ignore[index]
            for q in request["questions"]
        ]
    }


def best_of(repeats: int, measure: Callable[[], float]) -> float:
    return min(measure() for _ in range(repeats))


def per_call_sync(function: Callable[[], object], *, budget: float = 0.2) -> float:
    """Seconds per call, best of five runs of about *budget* seconds each."""
    calls = 1
    while True:
        start = clock()
        for _ in range(calls):
            function()
        elapsed = clock() - start
        if elapsed > budget / 5:
            break
        calls *= 2

    def run() -> float:
        start = clock()
        for _ in range(calls):
            function()
        return (clock() - start) / calls

    return best_of(5, run)


def scaling() -> dict[str, Any]:
    """check_request and answer_violations per question x option, up to 10,000 questions."""
    rows = []
    for size in (10, 30, 100, 300, 1_000, 3_000, 10_000):
        request = request_of(size)
        answer = answer_to(request)
        cells = size * 4
        rows.append(
            {
                "questions": size,
                "check_ns_per_cell": per_call_sync(lambda: check_request(request)) / cells * 1e9,
                "answer_ns_per_cell": per_call_sync(lambda: answer_violations(request, answer))
                / cells
                * 1e9,
            }
        )
    hostile = []
    for size in (100, 1_000, 10_000):
        # Huge labels, and an answer that repeats one label many times.
        request = request_of(1, size, label="x" * 1_000)
        label = request["questions"][0]["options"][0]["label"]  # type: ignore[index]
        dup_answer = {"answers": [{"id": "q0", "selected": [label] * size}]}
        hostile.append(
            {
                "size": size,
                "check_ns_per_option": per_call_sync(lambda: check_request(request)) / size * 1e9,
                "duplicates_ns_per_label": per_call_sync(
                    lambda: answer_violations(request, dup_answer)
                )
                / size
                * 1e9,
            }
        )
    return {"rows": rows, "hostile": hostile, "slopes": _slopes(rows)}


def _slopes(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The log-log slope of total time against size: 1.0 is linear, 2.0 quadratic."""
    xs = [math.log(r["questions"]) for r in rows]
    slopes = {}
    for key in ("check_ns_per_cell", "answer_ns_per_cell"):
        ys = [math.log(r[key] * r["questions"]) for r in rows]
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
        slopes[key.split("_")[0]] = covariance / sum((x - mean_x) ** 2 for x in xs)
    return slopes


class Ignoring:
    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError


def abort_latency() -> dict[str, Any]:
    """From ``abort()`` to ``ask()`` raising: loop iterations, and time in ``sleep(0)`` units."""

    async def measure() -> dict[str, float]:
        service = UserInteractionService()
        provider = Ignoring()
        service.register_provider(provider)
        latencies, round_trips, iterations = [], [], []
        for _ in range(2_000):
            controller = AbortController()
            request = {**request_of(1), "signal": controller.signal}
            task = asyncio.ensure_future(service.ask(request))  # type: ignore[arg-type]
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            start = clock()
            controller.abort()
            steps = 0
            while not task.done():
                await asyncio.sleep(0)
                steps += 1
            latencies.append(clock() - start)
            iterations.append(steps)
            assert isinstance(task.exception(), UserInteractionError)
            start = clock()
            await asyncio.sleep(0)
            round_trips.append(clock() - start)
        return {
            "loop_iterations_until_raised": statistics.median(iterations),
            "abort_to_raise_us": statistics.median(latencies) * 1e6,
            "sleep0_us": statistics.median(round_trips) * 1e6,
        }

    result = asyncio.run(measure())
    result["in_sleep0_round_trips"] = result["abort_to_raise_us"] / result["sleep0_us"]
    return result


def many_pending(count: int = 10_000) -> dict[str, Any]:
    """Memory per pending ask, time to abort them all, and nothing left behind."""

    async def measure() -> dict[str, Any]:
        service = UserInteractionService()
        provider = ScriptedProvider()
        service.register_provider(provider)
        controller = AbortController()
        request = {**request_of(1), "signal": controller.signal}
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tasks = [asyncio.ensure_future(service.ask(request)) for _ in range(count)]  # type: ignore[arg-type]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        pending_memory = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert len(provider.pending) == count, len(provider.pending)
        start = clock()
        controller.abort()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        abort_all = clock() - start
        assert all(isinstance(r, UserInteractionError) for r in results)
        leftover_tasks = len(asyncio.all_tasks()) - 1
        return {
            "pending": count,
            "bytes_per_pending_ask": pending_memory / count,
            "abort_all_ms": abort_all * 1e3,
            "abort_us_per_ask": abort_all / count * 1e6,
            "tasks_left": leftover_tasks,
            "listeners_left": controller.signal.listener_count,
            "service_records_left": service.pending_count,
            "provider_queue_left": len(provider.pending),
        }

    return asyncio.run(measure())


def _import_time(module: str) -> float:
    """Best-of-seven cumulative import time of *module*, in microseconds."""
    best = float("inf")
    pattern = re.compile(rf"^import time:\s+\d+ \|\s+(\d+) \| {re.escape(module)}$", re.M)
    for _ in range(7):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        best = min(best, int(pattern.findall(out)[-1]))
    return best


def import_cost() -> dict[str, Any]:
    """``import dsh_user_interaction`` against ``import asyncio`` alone."""
    ours = _import_time("dsh_user_interaction")
    asyncio_alone = _import_time("asyncio")
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, dsh_user_interaction;"
            "print(sorted({'hypothesis','pytest','pydantic','jsonschema'} & set(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {
        "ours_us": ours,
        "asyncio_us": asyncio_alone,
        "ratio": ours / asyncio_alone,
        "heavy_modules_imported": heavy,
    }


def plot(scaling_result: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = scaling_result["rows"]
    sizes = [r["questions"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=120)
    for key, label, marker in (
        ("check_ns_per_cell", "check_request", "o"),
        ("answer_ns_per_cell", "answer_violations", "s"),
    ):
        ax.plot(
            sizes, [r[key] * r["questions"] * 4 / 1e6 for r in rows], marker=marker, label=label
        )
    first = rows[0]["check_ns_per_cell"] * rows[0]["questions"] * 4 / 1e6
    ax.plot(sizes, [first * s / sizes[0] for s in sizes], "k--", lw=1, label="linear reference")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("questions (4 options each)")
    ax.set_ylabel("ms per call")
    slopes = scaling_result["slopes"]
    ax.set_title(
        f"Checks are linear (log-log slopes {slopes['check']:.2f} and {slopes['answer']:.2f})"
    )
    ax.legend()
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT)


def honest_section() -> dict[str, Any]:
    """A strict ``ask()`` against validation; see :mod:`bench.honest`."""
    from bench import honest

    honest.main([])
    return {"written_to": "bench/results/honest.json"}


def suite_cost_section() -> dict[str, Any]:
    """The suite per Hypothesis test case; see :mod:`bench.suite_cost`."""
    from bench import suite_cost

    suite_cost.main([])
    return {"written_to": "bench/results/suite_cost.json"}


def harness_section() -> dict[str, Any]:
    """The harness against in-process; see :mod:`bench.harness`."""
    from bench import harness

    harness.main([])
    return {"written_to": "bench/results/harness.json"}


def web_section() -> dict[str, Any]:
    """The web provider in Chromium; see :mod:`bench.web`."""
    from bench import web

    return web.main()


def durable_section() -> dict[str, Any]:
    """Durable asks through both stores; see :mod:`bench.durable`."""
    from bench import durable

    return durable.main()


SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "honest": honest_section,
    "harness": harness_section,
    "web": web_section,
    "durable": durable_section,
    "scaling": scaling,
    "abort_latency": abort_latency,
    "many_pending": many_pending,
    "import_cost": import_cost,
    "suite_cost": suite_cost_section,
}

#: Sections that are modules of their own, with their own options.
MODULES = {"honest": "bench.honest", "suite_cost": "bench.suite_cost", "harness": "bench.harness"}


def main(argv: list[str]) -> None:
    if len(argv) > 1 and argv[0] in MODULES and argv[1].startswith("-"):
        # ``python -m bench honest --rounds 60``: the module's own options.
        sys.exit(importlib.import_module(MODULES[argv[0]]).main(argv[1:]))
    chosen = argv or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        sys.exit(f"unknown section {unknown[0]!r}; the sections are {', '.join(SECTIONS)}")
    results: dict[str, Any] = {"python": sys.version.split()[0]}
    for name in chosen:
        sys.stdout.write(f"== {name}\n")
        results[name] = SECTIONS[name]()
        sys.stdout.write(json.dumps(results[name], indent=2) + "\n")
    if "scaling" in results:
        plot(results["scaling"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
