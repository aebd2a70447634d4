"""Never a false green: at eight CPU-bound processes, no blocker passes and no correct subject fails.

The stall rule (``spec/user-interaction.md``, section 4, "Never a false
green"; ``spec/harness.md``, ``HAR-PING-1``): a subject whose own code blocks its event loop fails the
loop requirement, or, where the machine gave the loop too little CPU to tell
a blocking subject from a busy machine, the requirement is ``untested`` with
that reason and the run exits non-zero. A correct subject is never failed
for the machine's load: it passes, or is untested saying why.

Here eight CPU-bound processes compete for the cores while the suite runs,
from the command line, all at once, against the blocking Python providers
and services of the gallery (a half-second sleep, half a second of CPU, and
0.7 s spun on the wall clock, which a busy machine mostly preempts), the
blocking Node provider and service (``examples/node/broken/*-blocks-loop.mjs``,
0.7 s spun on the wall clock: the Node provider passed on seed 7 before this
rule), and the correct ones: the reference provider and service in-process,
the reference service in a harness child, and the Node provider and service.
A service that never answers still fails as a hang, given six times its
limit on the busy machine (Rule 3c of the suite's engine).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import need

pytestmark = [
    pytest.mark.slow,
    pytest.mark.alone,
    pytest.mark.skipif(
        sys.platform != "linux", reason="judged by schedstat; tests/test_loop.py covers the rest"
    ),
]

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "examples" / "node"
#: The seed of the false green.
SEED = 7
#: No run may take longer than this; every run is killed after it.
PATIENCE = 420.0
#: How many CPU-bound processes compete with the suite.
BURNERS = 8
#: A CPU-bound process (``while True: pass``) that also ends with the test's
#: process, or after PATIENCE, should the test be killed before it stops them.
_BURN = f"""
import os, time
parent, end = os.getppid(), time.monotonic() + {PATIENCE}
while time.monotonic() < end and os.getppid() == parent:
    for _ in range(200_000):
        pass
"""

_CHILD = f"{shlex.quote(sys.executable)} -m dsh_user_interaction_conformance.child"
_PROVIDER_CHECK = ("--only", "provider-answers")
_SERVICE_CHECK = ("--only", "service-pass-through")


def _node(script: str) -> str:
    return f"node {shlex.quote(str(NODE / script))}"


#: Subjects whose own code blocks the loop: (name, options, the loop requirement).
BLOCKING: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "python provider sleeps",
        ("--provider", "tests.gallery.providers:SLEEPS_HALF_A_SECOND", *_PROVIDER_CHECK),
        "PRV-LOOP-1",
    ),
    (
        "python provider spins on the CPU",
        ("--provider", "tests.gallery.providers:SPINS_HALF_A_SECOND", *_PROVIDER_CHECK),
        "PRV-LOOP-1",
    ),
    (
        "python provider spins on the wall clock",
        ("--provider", "tests.gallery.providers:SPINS_ON_THE_WALL_CLOCK", *_PROVIDER_CHECK),
        "PRV-LOOP-1",
    ),
    (
        "python service sleeps",
        ("--service", "tests.gallery.services:BlocksTheLoop", *_SERVICE_CHECK),
        "SVC-LOOP-1",
    ),
    (
        "python service spins on the wall clock",
        ("--service", "tests.gallery.services:SpinsTheLoop", *_SERVICE_CHECK),
        "SVC-LOOP-1",
    ),
    (
        "node provider",
        ("--provider-cmd", _node("broken/provider-blocks-loop.mjs"), *_PROVIDER_CHECK),
        "PRV-LOOP-1",
    ),
    (
        "node service",
        ("--service-cmd", _node("broken/service-blocks-loop.mjs"), *_SERVICE_CHECK),
        "SVC-LOOP-1",
    ),
)
#: Correct subjects: (name, options, the loop requirement).
CORRECT: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("reference provider", _PROVIDER_CHECK, "PRV-LOOP-1"),
    ("reference service", _SERVICE_CHECK, "SVC-LOOP-1"),
    (
        "reference service in a harness child",
        (
            "--service-cmd",
            f"{_CHILD} --service dsh_user_interaction_conformance:reference_service",
            *_SERVICE_CHECK,
        ),
        "SVC-LOOP-1",
    ),
    ("node provider", ("--provider-cmd", _node("provider.mjs"), *_PROVIDER_CHECK), "PRV-LOOP-1"),
    ("node service", ("--service-cmd", _node("service.mjs"), *_SERVICE_CHECK), "SVC-LOOP-1"),
)
#: What an untested loop requirement must say.
TOO_LITTLE_CPU = "too little CPU to tell"


@pytest.fixture
def busy_machine() -> Iterator[int]:
    """Eight CPU-bound processes competing for the cores, for the whole test; always stopped."""
    burners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(BURNERS):
            burners.append(
                subprocess.Popen(
                    [sys.executable, "-c", _BURN],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        time.sleep(0.5)
        yield len(burners)
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait(timeout=30)


def _start(options: tuple[str, ...], report: Path) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "dsh_user_interaction_conformance", *options,
        "--profile", "quick", "--seed", str(SEED), "--json", str(report),
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "CI": ""},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(
    runs: dict[str, tuple[subprocess.Popen[str], Path]],
) -> dict[str, tuple[int, dict[str, Any]]]:
    """Wait for every run (killing any past the patience); exit status and report, by name."""
    deadline = time.monotonic() + PATIENCE
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    try:
        for name, (process, path) in runs.items():
            try:
                out, _ = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"{name} did not finish within {PATIENCE:g} s")
            assert path.exists(), f"{name} wrote no report (status {process.returncode}):\n{out}"
            report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            report["output"] = out
            found[name] = (process.returncode, report)
    finally:
        for process, _ in runs.values():
            if process.poll() is None:
                process.kill()
            process.communicate()  # reaps it, and closes its pipe
    return found


def _loop(report: dict[str, Any], requirement: str) -> dict[str, Any]:
    return next(r for r in report["results"] if r["id"] == requirement)


def test_at_eight_cpu_bound_processes_no_blocker_passes_and_no_correct_subject_fails(
    tmp_path: Path, busy_machine: int
) -> None:
    """Blockers: failed, or untested saying why and a non-zero exit. Correct: never failed."""
    assert busy_machine == BURNERS
    need("node")  # for the Node subjects; skipped without it, failed in CI
    runs: dict[str, tuple[subprocess.Popen[str], Path]] = {}
    for name, options, requirement in BLOCKING:
        path = tmp_path / f"{name.replace(' ', '-')}.json"
        runs[name] = (_start((*options, "--stop-on", requirement), path), path)
    for name, options, _ in CORRECT:
        path = tmp_path / f"correct-{name.replace(' ', '-')}.json"
        runs[f"correct {name}"] = (_start(options, path), path)
    hang = ("--service", "tests.gallery.services:NeverAnswers", "--bound", "0.2", *_SERVICE_CHECK)
    runs["hang"] = (_start(hang, tmp_path / "hang.json"), tmp_path / "hang.json")
    verdicts = _finish(runs)

    # A hang on the busy machine is given six times the time (Rule 3c), and still fails.
    status, report = verdicts["hang"]
    assert status != 0
    hung = _loop(report, "SVC-PASS-1")
    assert hung["status"] == "failed", hung
    assert "did not settle within 15.6 s" in hung["message"], hung
    assert "run again with 6x the time" in hung["message"], hung

    seen: list[str] = []
    for name, _, requirement in BLOCKING:
        status, report = verdicts[name]
        loop = _loop(report, requirement)
        seen.append(f"{name}: {loop['status']} (exit {status})")
        assert status != 0, (name, report["output"][-3000:])
        assert not report["ok"]
        assert loop["status"] in {"failed", "untested"}, (name, loop)
        if loop["status"] == "untested":
            assert TOO_LITTLE_CPU in loop["message"], (name, loop)
    for name, _, requirement in CORRECT:
        status, report = verdicts[f"correct {name}"]
        loop = _loop(report, requirement)
        seen.append(f"correct {name}: {loop['status']} (exit {status})")
        assert loop["status"] in {"passed", "untested"}, (name, loop, report["output"][-3000:])
        if loop["status"] == "untested":
            assert TOO_LITTLE_CPU in loop["message"], (name, loop)
            assert status != 0
        stalls = [s for check in report["checks"] for s in check["stalls"]]
        assert "blocked" not in {s["judged"] for s in stalls}, (name, stalls)
    print("\n".join(seen))  # the verdicts, for the record of a run with -s
