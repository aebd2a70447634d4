"""CI's budget: the fast tier, which runs on every Python, stays cheap.

``nox -s slow`` runs the first Python's fast tier, every property at its
full count, with ``DSH_TIER_RECORD`` set, and the conftest writes what each
test cost in CPU time; this test runs after it, alone, and reads that
record. CPU time, summed over the tier, is the
measure: it does not grow when the machine is busy, as wall time does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import cast

import pytest

from .conftest import merge_parts, read_tier_record, tier_record

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
@pytest.mark.alone  # after the fast tier's run has written its whole record
def test_the_fast_tier_stays_within_its_cpu_budget(request: pytest.FixtureRequest) -> None:
    """The fast tier used at most FAST_TIER_CEILING CPU seconds in a whole, passing run.

    When this session ran the fast tier (a plain ``pytest``), that run is
    judged (this test runs last); otherwise (``nox -s slow`` runs it with
    ``-m alone``, after its run of both tiers) the record the fast tier's
    run wrote.
    """
    live = tier_record(request.session)
    worker = hasattr(request.config, "workerinput")  # pytest-xdist: a worker sees its share
    if live["ran"] and not worker:
        record = live
    else:
        target = os.environ.get("DSH_TIER_RECORD")
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        path = Path(target) if target else ROOT / ".tier" / f"fast-{python}.json"
        found = read_tier_record(path)
        if found is None:
            pytest.fail(
                f"no record of the fast tier at {path}: run `nox -s tests-{python}` first, "
                f"or `DSH_TIER_RECORD={path} pytest -m 'not slow'`"
            )
        record = found
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


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_writes_its_tier_record(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: list[str]
) -> None:
    """With DSH_TIER_RECORD set, a run writes each test's CPU cost, in parts under xdist."""
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

def test_quick():
    pass

@pytest.mark.slow
def test_slow():
    pass
""",
        encoding="utf-8",
    )
    target = tmp_path / "record.json"
    monkeypatch.setenv("DSH_TIER_RECORD", str(target))
    (tmp_path / "record.json.gw7.part").write_text("{}", encoding="utf-8")  # a stale part
    result = pytester.runpytest_subprocess("-m", "not slow", "-p", "no:cacheprovider", *parallel)
    result.assert_outcomes(passed=2, deselected=0 if parallel else 1)
    record = read_tier_record(target)
    assert record is not None
    assert _problems(record, FAST_TIER_CEILING) == []
    assert record["collected"] == record["ran"] == 2
    cpu = record["cpu_seconds"]
    assert isinstance(cpu, float)
    assert cpu > 0
    slowest = cast("list[list[object]]", record["slowest"])
    assert [row[0] for row in slowest] == [
        "test_spin.py::test_spin",
        "test_spin.py::test_quick",
    ]


def test_the_parts_of_a_parallel_run_add_up_to_one_record() -> None:
    """Under pytest-xdist each worker writes its share; merged, it is the whole tier."""
    share = {"python": "3.11", "whole": True, "collected": 3, "deselected": 0, "failed": 0}
    merged = merge_parts(
        [
            {**share, "costs": {"a": 1.0, "b": 2.5}},
            {**share, "failed": 1, "costs": {"c": 4.0}},
        ]
    )
    assert merged["processes"] == 2
    assert merged["collected"] == merged["ran"] == 3
    assert merged["failed"] == 1
    assert merged["cpu_seconds"] == 7.5
    assert merged["slowest"] == [["c", 4.0], ["b", 2.5], ["a", 1.0]]
    assert _problems(merged, FAST_TIER_CEILING) == ["the recorded run had 1 failures"]
    assert _problems({**merged, "failed": 0, "ran": 2}, FAST_TIER_CEILING) == [
        "only 2 of 3 tests ran"
    ]
