"""The tests' own footing on a busy machine: no Hypothesis deadline, and patient bounds.

A test's time is the machine's as much as the code's: on a 2-core machine
with other work running, the seam's cheapest properties took 241 to 658 ms
an example, against Hypothesis's default deadline of 200 ms. Speed is
judged in ``bench/``; here, every profile the tests load has no deadline,
and every wait's bound (``tests/helpers.py``: ``patience``) is what the wait
takes on the idle machine, ten times, times how much slower the machine
runs a fixed piece of work when the tests start: it ends a red run, and
never judges speed.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from . import helpers

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.mark.parametrize("profile", ["dsh", "versions"])
def test_no_profile_of_the_tests_has_a_deadline(profile: str) -> None:
    """Every profile ``tests/conftest.py`` registers runs examples without a deadline."""
    # Typed as Any: some Hypothesis releases leave the attribute partly unannotated.
    chosen: Any = settings.get_profile(profile)
    assert chosen.deadline is None


@pytest.mark.parametrize("ci", ["", "true"])
def test_the_loaded_profile_has_no_deadline_in_or_out_of_ci(ci: str) -> None:
    """Whether ``CI`` is set or not, the profile the tests load has no deadline.

    The README's ``nox`` runs without ``CI``; it must be no stricter than CI.
    """
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    if ci:
        env["CI"] = ci
    env.pop("DSH_HYPOTHESIS_PROFILE", None)
    code = "import tests.conftest; from hypothesis import settings; print(settings().deadline)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"


def test_no_test_sets_a_deadline_of_its_own() -> None:
    """No test's ``@settings`` brings a deadline back (``deadline=None`` only)."""
    pattern = re.compile(r"settings\([^)]*\bdeadline=(?!None\b)", re.DOTALL)
    setting = [
        path.name for path in sorted(TESTS.rglob("*.py")) if pattern.search(path.read_text())
    ]
    assert setting == []


def test_the_patience_is_the_idle_time_times_the_margin_and_the_slowdown() -> None:
    """A wait's bound: what it takes on the idle machine, ten times, times how busy this one is."""
    assert helpers.slowdown() >= 1.0
    assert helpers.patience(2.0) == 2.0 * helpers.PATIENCE_MARGIN * helpers.slowdown()
    assert helpers.patience(helpers.IDLE_BOUND) == helpers.BOUND


@pytest.mark.parametrize(
    ("measured", "extra", "expected"),
    [(10.0, "", 10.0), (10.0, "4", 40.0), (0.5, "", 1.0), (0.5, "3", 3.0), (1.0, "0.5", 1.0)],
)
def test_a_slower_or_busier_machine_gets_more_patience(
    monkeypatch: pytest.MonkeyPatch, measured: float, extra: str, expected: float
) -> None:
    """The slowdown is the calibration's time over the idle machine's, at least 1, times ``DSH_TEST_PATIENCE``."""
    monkeypatch.setattr(
        helpers, "calibration_workload", lambda: measured * helpers.IDLE_CALIBRATION
    )
    monkeypatch.setenv("DSH_TEST_PATIENCE", extra)
    assert abs(helpers.slowdown.__wrapped__() - expected) < 1e-9


def test_the_calibration_workload_does_the_same_work_each_time() -> None:
    """It takes some time, and no wait: its CPU time is most of its wall-clock time at idle."""
    assert helpers.calibration_workload() > 0


def test_a_hang_still_ends_the_run() -> None:
    """The bound is patient, not absent: a wait that never ends fails with TimeoutError."""

    async def hangs() -> None:
        await asyncio.Event().wait()

    with pytest.raises(TimeoutError):
        helpers.run(hangs(), bound=0.001)
