"""Test configuration: one Hypothesis profile, and the fast tier's CPU record.

The tests come in two tiers (``pyproject.toml`` declares the ``slow`` marker):
the fast tier runs on every Python (``nox -s versions``, CI's), the slow
tier, the tests of the suite's own power, once (``nox -s slow``). When
``DSH_TIER_RECORD`` names a file, a run writes there what each test cost in
CPU time (this process's and that of the child processes it waited for), so
that ``tests/test_budget.py`` can hold the fast tier to its budget.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import cast

import pytest
from hypothesis import HealthCheck, settings

# Hostile text makes large examples on purpose; that is not a health problem here.
# No deadline, in every profile: an example's time is the machine's, not the
# code's, and on a busy machine the seam's cheapest examples took 241 to 658 ms
# against Hypothesis's 200 ms. Speed is judged in bench/, never by a test.
_parent = settings.get_profile("ci" if os.environ.get("CI") else "default")
settings.register_profile(
    "dsh",
    parent=_parent,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: The fast tier on the other Pythons (``DSH_HYPOTHESIS_PROFILE=versions``, set by
#: nox): what differs between Pythons shows in a few examples, and every
#: property runs its full count on the first Python of the matrix.
settings.register_profile("versions", parent=settings.get_profile("dsh"), max_examples=20)
settings.load_profile(os.environ.get("DSH_HYPOTHESIS_PROFILE") or "dsh")


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
    """Count the fast tier; start the long tests first, and move the budget test to the end.

    Under pytest-xdist the workers take tests in this order, so a test that
    takes minutes, started last, would end the tier alone while the other
    workers idle.
    """
    _TIER["collected"] = sum(_fast(item) for item in items)
    target = os.environ.get("DSH_TIER_RECORD")
    if target and _TIER["collected"]:
        # This run records the fast tier: the parts an earlier run left are stale.
        path = Path(target)
        for stale in path.parent.glob(f"{path.name}.*.part"):
            stale.unlink(missing_ok=True)
    budget = [item for item in items if item.name == BUDGET_TEST]
    long = [item for item in items if item.get_closest_marker("long") is not None]
    rest = [item for item in items if item.name != BUDGET_TEST and item not in long]
    items[:] = long + rest + budget


def pytest_collection_finish(session: pytest.Session) -> None:
    """Set aside from garbage collection what the imports and the collection built.

    A test process imports every extra's framework (LangChain, pydantic-ai,
    the MCP SDK...), and each full collection walked all of it again: a
    test whose code collects ten times, or a Hypothesis property whose
    allocations trigger the oldest generation, paid most of a second for
    objects that live until the exit. Frozen (``gc.freeze``), they are
    never walked; what the tests make is collected as before.
    """
    del session
    gc.collect()
    gc.freeze()


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


def _worker(config: pytest.Config) -> str:
    """This process's name in the run: ``main``, or the pytest-xdist worker's id."""
    workerinput: object = getattr(config, "workerinput", None)
    if isinstance(workerinput, dict):
        return str(cast("dict[str, object]", workerinput).get("workerid", "worker"))
    return "main"


def _part(session: pytest.Session) -> dict[str, object]:
    """What this process ran of the fast tier, and what each test cost."""
    return {
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "whole": session.config.args_source == pytest.Config.ArgsSource.TESTPATHS,
        **_TIER,
        "costs": {nodeid: round(cost, 4) for nodeid, cost in _COSTS.items()},
    }


def merge_parts(parts: list[dict[str, object]]) -> dict[str, object]:
    """One record of the fast tier from the parts its processes wrote (one, or one a worker).

    Every process collects the whole selection, so the counts of what was
    collected are the same in each; what ran, failed and cost adds up.
    """
    costs: dict[str, float] = {}
    for part in parts:
        costs.update(cast("dict[str, float]", part.get("costs", {})))
    slowest = sorted(costs.items(), key=lambda pair: pair[1], reverse=True)[:15]

    def most(key: str) -> object:
        return max((cast("int", part.get(key, 0)) for part in parts), default=0)

    return {
        "python": parts[0].get("python") if parts else None,
        "whole": bool(parts) and all(part.get("whole") is True for part in parts),
        "processes": len(parts),
        "collected": most("collected"),
        "deselected": most("deselected"),
        "failed": sum(cast("int", part.get("failed", 0)) for part in parts),
        "ran": len(costs),
        "cpu_seconds": round(sum(costs.values()), 3),
        "slowest": [[nodeid, round(cost, 3)] for nodeid, cost in slowest],
    }


def tier_record(session: pytest.Session) -> dict[str, object]:
    """What this process ran of the fast tier, and what it cost, as one record."""
    return merge_parts([_part(session)])


def read_tier_record(path: Path) -> dict[str, object] | None:
    """The record the last run of the fast tier wrote at *path* (its parts merged), if any."""
    parts = sorted(path.parent.glob(f"{path.name}.*.part"))
    if not parts:
        return None
    return merge_parts([json.loads(part.read_text(encoding="utf-8")) for part in parts])


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write this process's part of the record when ``DSH_TIER_RECORD`` asks and tests ran.

    Under pytest-xdist each worker writes its own part; the reader merges them.
    """
    target = os.environ.get("DSH_TIER_RECORD")
    if not target or not _COSTS:
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.parent / f"{path.name}.{_worker(session.config)}.part"
    part.write_text(json.dumps(_part(session)) + "\n", encoding="utf-8")
