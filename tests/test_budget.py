"""CI's budget: the fast tier, which runs on every Python, stays cheap.

``nox -s tests`` runs the fast tier with ``DSH_TIER_RECORD`` set, and the
conftest writes what each test cost in CPU time; ``nox -s slow`` runs after
it and reads that record here. CPU time, summed over the tier, is the
measure: it does not grow when the machine is busy, as wall time does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from .conftest import tier_record

pytest_plugins = ["pytester"]

#: The whole fast tier on one Python may use this many CPU seconds (children included).
FAST_TIER_CEILING = 180.0

ROOT = Path(__file__).resolve().parents[1]


def _problems(record: dict[str, object], ceiling: float) -> list[str]:
    """What is wrong with *record* as proof that the fast tier kept within *ceiling*."""
    problems: list[str] = []
    if not record.get("collected"):
        problems.append("no test of the fast tier was collected")
    if record.get("deselected") != 0:
        problems.append(f"{record.get('deselected')} tests of the fast tier were deselected")
    if record.get("whole") is not True:
        problems.append("the record is of a run of some paths only, not of the whole tier")
    if record.get("failed") != 0:
        problems.append(f"the recorded run had {record.get('failed')} failures")
    if record.get("ran") != record.get("collected"):
        problems.append(f"only {record.get('ran')} of {record.get('collected')} tests ran")
    cpu = record.get("cpu_seconds")
    if not isinstance(cpu, float | int):
        problems.append(f"the record has no CPU time: {cpu!r}")
    elif cpu > ceiling:
        problems.append(
            f"the fast tier used {cpu:.0f} CPU seconds, over its ceiling of {ceiling:.0f}; "
            f"the costliest tests: {record.get('slowest')}"
        )
    return problems


@pytest.mark.slow
def test_the_fast_tier_stays_within_its_cpu_budget(request: pytest.FixtureRequest) -> None:
    """The fast tier used at most FAST_TIER_CEILING CPU seconds in a whole, passing run.

    When this session ran the fast tier (a plain ``pytest``), that run is
    judged (this test runs last); otherwise (``nox -s slow``, which is
    ``-m slow``) the record the fast tier's session wrote.
    """
    live = tier_record(request.session)
    if live["ran"]:
        record = live
    else:
        target = os.environ.get("DSH_TIER_RECORD")
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        path = Path(target) if target else ROOT / ".tier" / f"fast-{python}.json"
        if not path.is_file():
            pytest.fail(
                f"no record of the fast tier at {path}: run `nox -s tests-{python}` first, "
                f"or `DSH_TIER_RECORD={path} pytest -m 'not slow'`"
            )
        record = json.loads(path.read_text(encoding="utf-8"))
    assert _problems(record, FAST_TIER_CEILING) == []


_GOOD: dict[str, object] = {
    "deselected": 0,
    "whole": True,
    "collected": 500,
    "ran": 500,
    "failed": 0,
    "cpu_seconds": 95.5,
    "slowest": [["tests/test_x.py::test_y", 12.0]],
}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"cpu_seconds": 181.0}, "over its ceiling of 180"),
        ({"deselected": 3}, "3 tests of the fast tier were deselected"),
        ({"whole": False}, "some paths only"),
        ({"failed": 2}, "had 2 failures"),
        ({"ran": 20}, "only 20 of 500 tests ran"),
        ({"cpu_seconds": None}, "no CPU time"),
        ({"collected": 0, "ran": 0}, "no test of the fast tier"),
    ],
)
def test_the_budget_check_refuses_a_record_that_proves_nothing(
    change: dict[str, object], named: str
) -> None:
    """A tier over budget, a partial or failing run, or a record without a time is refused."""
    assert _problems(_GOOD, FAST_TIER_CEILING) == []
    problems = _problems({**_GOOD, **change}, FAST_TIER_CEILING)
    assert len(problems) == 1
    assert named in problems[0]


def test_a_run_writes_its_tier_record(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With DSH_TIER_RECORD set, a run writes each test's CPU cost and what was run."""
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\ntestpaths = .\n")
    (pytester.path / "test_spin.py").write_text(
        """
import pytest

def test_spin():
    total = 0
    for i in range(300_000):
        total += i
    assert total

@pytest.mark.slow
def test_slow():
    pass
""",
        encoding="utf-8",
    )
    target = tmp_path / "record.json"
    monkeypatch.setenv("DSH_TIER_RECORD", str(target))
    result = pytester.runpytest_subprocess("-m", "not slow", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=1)
    record = json.loads(target.read_text(encoding="utf-8"))
    assert _problems(record, FAST_TIER_CEILING) == []
    assert record["collected"] == record["ran"] == 1
    assert record["cpu_seconds"] > 0
    assert record["slowest"][0][0] == "test_spin.py::test_spin"
