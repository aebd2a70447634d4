"""What the JSON-lines harness costs: the default profile through a child against in-process.

For each role (provider, service) and each subject, one command-line run of
the suite at the ``default`` profile with a fixed seed, in a fresh
interpreter, wall clock start-up included, with ``--json`` for the counts:

* ``in-process``: the reference (``--provider`` or ``--service``), the
  baseline every ratio divides by;
* ``python-child``: the same reference served by
  ``python -m dsh_user_interaction_conformance.child`` (the harness's whole
  cost, both ends in Python);
* ``node``: the JavaScript seam of ``examples/node/``;
* ``node -V``: the same with every message checked against the schema.

The runs are interleaved and their order shuffled in each of the rounds, so
that a noisy neighbour slows every candidate alike; each ratio is reported
as median, min and max over the rounds. The overhead per example is the
extra wall clock divided by the run's Hypothesis test cases. The goal
(issue: "no more than 3 times the in-process run") is checked on the
median.

``python -m bench.harness [--rounds N] [--seed S]`` (or ``nox -s bench --
harness``); results go to ``bench/results/harness.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SUITE = [sys.executable, "-m", "dsh_user_interaction_conformance"]
CHILD = f"{sys.executable} -m dsh_user_interaction_conformance.child"
GOAL = 3.0


def candidates(role: str) -> dict[str, list[str]]:
    """The command-line options of each candidate for *role*."""
    kind = "subject" if role == "provider" else "service"
    reference = f"dsh_user_interaction_conformance:reference_{kind}"
    found = {
        "in-process": [f"--{role}", reference],
        "python-child": [f"--{role}-cmd", f"{CHILD} --{role} {reference}"],
    }
    node = shutil.which("node")
    if node is not None:
        script = ROOT / "examples" / "node" / f"{role}.mjs"
        found["node"] = [f"--{role}-cmd", f"{node} {script}"]
        found["node -V"] = [f"--{role}-cmd", f"{node} {script}", "-V"]
    return found


def run_once(options: list[str], seed: int) -> dict[str, Any]:
    """One run: its wall clock, status and Hypothesis test cases."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        started = time.perf_counter()
        done = subprocess.run(
            [*SUITE, *options, "--seed", str(seed), "--json", str(report)],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
            env={**os.environ, "CI": ""},
        )
        seconds = time.perf_counter() - started
        found = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    cases = sum(check["examples"] for check in found.get("checks", []))
    return {"seconds": seconds, "status": done.returncode, "cases": cases}


def main(argv: list[str]) -> dict[str, Any]:
    """Run the rounds, print a table and write ``bench/results/harness.json``."""
    parser = argparse.ArgumentParser(prog="python -m bench.harness")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    shuffle = random.Random(args.seed)
    results: dict[str, Any] = {"rounds": args.rounds, "seed": args.seed, "roles": {}}
    for role in ("provider", "service"):
        options = candidates(role)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in options}
        for _ in range(args.rounds):
            order = list(options)
            shuffle.shuffle(order)
            for name in order:
                runs[name].append(run_once(options[name], args.seed))
        base = [run["seconds"] for run in runs["in-process"]]
        summary: dict[str, Any] = {}
        for name, measured in runs.items():
            ratios = [run["seconds"] / b for run, b in zip(measured, base, strict=True)]
            cases = statistics.median(run["cases"] for run in measured)
            extra = [
                (run["seconds"] - b) / max(run["cases"], 1)
                for run, b in zip(measured, base, strict=True)
            ]
            summary[name] = {
                "seconds_median": round(statistics.median(r["seconds"] for r in measured), 2),
                "ratio_median": round(statistics.median(ratios), 2),
                "ratio_min": round(min(ratios), 2),
                "ratio_max": round(max(ratios), 2),
                "test_cases": cases,
                "extra_ms_per_case_median": round(1000 * statistics.median(extra), 2),
                "all_passed": all(run["status"] == 0 for run in measured),
            }
        results["roles"][role] = summary
    for role, summary in results["roles"].items():
        print(f"{role}:")
        for name, row in summary.items():
            print(
                f"  {name:<13} {row['seconds_median']:>6.2f} s  x{row['ratio_median']:.2f} "
                f"[{row['ratio_min']:.2f}, {row['ratio_max']:.2f}]  "
                f"{row['extra_ms_per_case_median']:+.2f} ms/case  "
                f"{'passed' if row['all_passed'] else 'FAILED'}"
            )
    goal = {
        f"{role}/{name}": row["ratio_median"] <= GOAL
        for role, summary in results["roles"].items()
        for name, row in summary.items()
        if name in {"python-child", "node"}
    }
    results["goal_3x_met"] = goal
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "harness.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
