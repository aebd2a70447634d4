"""How the command line ends: a plain exit, or at once when a subject left something running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import patience

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, cwd: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CI": ""},
        check=False,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.mark.slow
def test_a_profiled_run_writes_its_profile(tmp_path: Path) -> None:
    """``python -m cProfile -o OUT -m dsh_user_interaction_conformance`` writes OUT.

    Nothing is left running after the reference, so the run exits through
    the interpreter's exit handlers, where the profiler writes its file.
    """
    out = tmp_path / "suite.prof"
    status, text, _ = _run(
        "-m", "cProfile", "-o", str(out), "-m", "dsh_user_interaction_conformance",
        "--profile", "quick", "--only", "provider-concurrency", "--seed", "1",
        cwd=tmp_path,
    )  # fmt: skip
    assert status == 0, text
    assert "PASSED" in text
    assert out.is_file()
    assert out.stat().st_size > 1000


def test_a_thread_a_subject_left_running_cannot_hold_the_exit() -> None:
    """A provider whose threads (not daemons) sleep 30 s fails, and the process ends at once."""
    status, text, seconds = _run(
        "-m", "dsh_user_interaction_conformance",
        "--provider", "tests.harness_entries:non_daemon_thread_leaking",
        "--only", "provider-answers", "--profile", "quick", "--seed", "1", "--bound", "0.2",
        cwd=ROOT,
    )  # fmt: skip
    assert status == 1, text
    assert "PRV-LEAK-1" in text
    assert "leaky-poller" in text
    # At once, not after the threads' 30 s: 25 s on the idle machine, more on a busy one.
    assert seconds < min(patience(2.5), 29.0), "the exit waited for the subject's threads"
