"""The fast tier's load-sensitive tests pass beside two CPU-bound processes a core.

``nox -s loaded`` runs the whole fast tier that way, before landing; here a
part of it runs once, in the slow tier (marked ``alone``, since it loads
every core on purpose): the files whose tests failed on a busy machine
before their waits and outcomes stopped depending on its speed (the soak's
outcomes, Hypothesis's deadline in the service's and the spec's properties,
the policies' deadlines, the terminal's countdown, the durable provider's
calls of one request), with 20 examples a property (the ``versions``
profile), to keep it to a minute or two.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.loaded import default_burners, run_loaded

from .helpers import patience

pytestmark = [pytest.mark.slow, pytest.mark.alone]

ROOT = Path(__file__).resolve().parent.parent
#: The part of the fast tier run under load.
PART = [
    "tests/test_soak.py",
    "tests/test_service.py",
    "tests/test_spec.py",
    "tests/test_policies.py",
    "tests/test_terminal_deadline.py",
    "tests/test_machine.py",
    "tests/test_durable.py",
]


def test_the_fast_tiers_load_sensitive_tests_pass_beside_two_cpu_bound_processes_a_core() -> None:
    """Exit status 0 with every burner spinning to the end; the load seen is in the message."""
    count = default_burners()
    env = {
        **{key: value for key, value in os.environ.items() if key != "DSH_TIER_RECORD"},
        "DSH_HYPOTHESIS_PROFILE": "versions",
    }
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
        "-n", str(os.cpu_count() or 1), *PART,
    ]  # fmt: skip
    # A minute on the idle machine without the burners; the bound only ends a red run.
    run = run_loaded(command, count, capture=True, env=env, timeout=patience(60))
    tail = "\n".join(run.output.splitlines()[-40:])
    assert run.status == 0, f"{run.line()}\n{tail}"
    assert run.burners_at_end == count, run.line()
    print(run.line())
