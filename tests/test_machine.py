"""The tests' own footing on a busy machine: no Hypothesis deadline in any profile.

A test's time is the machine's as much as the code's: on a 2-core machine
with other work running, the seam's cheapest properties took 241 to 658 ms
an example, against Hypothesis's default deadline of 200 ms. Speed is
judged in ``bench/``; here, every profile the tests load has no deadline.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.mark.parametrize("profile", ["dsh", "versions"])
def test_no_profile_of_the_tests_has_a_deadline(profile: str) -> None:
    """Every profile ``tests/conftest.py`` registers runs examples without a deadline."""
    chosen = settings.get_profile(profile)
    # Hypothesis leaves the attribute partly unannotated.
    assert chosen.deadline is None  # pyright: ignore[reportUnknownMemberType]


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
