"""Test configuration: one Hypothesis profile, and the fast tier's CPU record.

The tests come in two tiers (``pyproject.toml`` declares the ``slow`` marker):
the fast tier runs on every Python (``nox -s tests``), the slow tier, the
tests of the suite's own power, once (``nox -s slow``). When
``DSH_TIER_RECORD`` names a file, a run writes there what each test cost in
CPU time (this process's and that of the child processes it waited for), so
that ``tests/test_budget.py`` can hold the fast tier to its budget.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Hostile text makes large examples on purpose; that is not a health problem here.
_parent = settings.get_profile("ci" if os.environ.get("CI") else "default")
settings.register_profile(
    "dsh",
    parent=_parent,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("dsh")


def _cpu() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    if sys.platform == "win32":
        return time.process_time()
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


#: CPU seconds charged to each test of the fast tier that ran in this session.
_COSTS: dict[str, float] = {}
#: What this session collected and deselected of the fast tier, and how it went.
_TIER = {"collected": 0, "deselected": 0, "failed": 0}
#: The test that judges the record; it runs last, to judge this session's own fast tier.
BUDGET_TEST = "test_the_fast_tier_stays_within_its_cpu_budget"


def _fast(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is None


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Count the fast tier's tests that a ``-m`` or ``-k`` left out."""
    _TIER["deselected"] += sum(_fast(item) for item in items)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Count the fast tier, and move the budget test to the end of the run."""
    _TIER["collected"] = sum(_fast(item) for item in items)
    budget = [item for item in items if item.name == BUDGET_TEST]
    items[:] = [item for item in items if item.name != BUDGET_TEST] + budget


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Charge each test of the fast tier (setup, call and teardown) with its CPU time."""
    started = _cpu()
    try:
        return (yield)
    finally:
        if _fast(item):
            _COSTS[item.nodeid] = _COSTS.get(item.nodeid, 0.0) + _cpu() - started


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count the fast tier's failures (the budget test's own does not count)."""
    if report.failed and "slow" not in report.keywords:
        _TIER["failed"] += 1


def tier_record(session: pytest.Session) -> dict[str, object]:
    """What this session ran of the fast tier, and what it cost."""
    slowest = sorted(_COSTS.items(), key=lambda pair: pair[1], reverse=True)[:15]
    return {
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "whole": session.config.args_source == pytest.Config.ArgsSource.TESTPATHS,
        **_TIER,
        "ran": len(_COSTS),
        "cpu_seconds": round(sum(_COSTS.values()), 3),
        "slowest": [[nodeid, round(cost, 3)] for nodeid, cost in slowest],
        "written": time.time(),
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the fast tier's record when ``DSH_TIER_RECORD`` asks for one and it ran."""
    target = os.environ.get("DSH_TIER_RECORD")
    if not target or not _COSTS:
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tier_record(session), indent=2) + "\n", encoding="utf-8")
