"""The bridge soak (``bench/soak_bridges.py``): its verdict, and a small run through each bridge.

``nox -s soak`` runs it with 10,000 asks per bridge. Here the judging is fed
synthetic figures (fast tier), and each bridge is soaked with 200 asks
(slow tier): every outcome checked, every figure back where it began.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

import pytest

from bench import soak_bridges
from bench.soak_bridges import (
    BRIDGES,
    EXACT,
    FLAT_FACTOR,
    MEMORY_MARGIN,
    MIX,
    MUST_SETTLE,
    OUTCOME,
    SLICES,
    Bridge,
    Report,
    Sample,
    Slice,
    flat_problem,
    growth,
    judge,
    soak_bridge,
    table,
)

from .helpers import run

_BEFORE = Sample(
    point="before", asks=0, fds=9, threads=1, os_threads=1, children=0, tasks=1,
    traced=1_000_000, rss=30_000_000, child_rss=0,
)  # fmt: skip


def _report(
    walls: list[float], *, after: Sample = _BEFORE, open_traced: tuple[int, int] = (0, 0)
) -> Report:
    """A report of a clean run of 1,000 asks, with the given wall times and figures."""
    report = Report(bridge="mcp", asks=1_000, seed=0)
    report.outcomes = Counter({"answered": 1_000})
    report.samples.append(_BEFORE)
    for index, wall in enumerate(walls):
        traced = open_traced[0] + (open_traced[1] - open_traced[0]) * index // (len(walls) - 1)
        point = replace(
            _BEFORE, point=f"{(index + 1) * 10}%", asks=(index + 1) * 100, fds=12, threads=3,
            children=1, tasks=7, traced=_BEFORE.traced + traced,
        )  # fmt: skip
        report.samples.append(point)
        report.slices.append(Slice(100, wall, wall / 2))
    report.samples.append(replace(after, point="after", asks=1_000))
    return report


FLAT = [2.0, 2.4, 1.9, 2.2, 3.1, 2.0, 2.1, 2.3, 1.8, 2.2]
GROWING = [2.0, 3.5, 4.6, 6.0, 7.7, 9.4, 10.8, 13.0, 14.1, 16.4]


def test_flat_slices_pass_and_one_slow_slice_does_not_fail_them() -> None:
    """Medians of three: noise in one slice, even at either end, is not growth."""
    assert growth(FLAT) < FLAT_FACTOR
    assert flat_problem("wall time", FLAT) is None
    assert flat_problem("wall time", [*FLAT[:-1], 9.0]) is None
    assert flat_problem("wall time", [1.0, *FLAT[1:]]) is None


def test_growing_slices_fail_naming_the_figure_and_the_growth() -> None:
    """The pre-fix stdio bridge's shape (2 ms to 16 ms per ask) fails, and says by how much."""
    problem = flat_problem("wall time", GROWING)
    assert problem is not None
    assert problem.startswith("wall time per ask grew 4.03x")
    assert "allowed 1.5x" in problem
    assert flat_problem("wall time", [2.0] * 7 + [3.1] * 3) is not None


def test_growth_needs_two_windows_of_slices() -> None:
    """Fewer than six slices cannot be judged; it says so rather than guessing."""
    with pytest.raises(ValueError, match="at least 6 slices"):
        growth([1.0] * 5)


def test_a_clean_run_has_no_problem() -> None:
    """Every figure back where it began, memory within the margin, time flat: no problem."""
    assert judge(_report(FLAT)) == {}


@pytest.mark.parametrize("name", EXACT)
def test_a_figure_one_above_before_after_close_fails(name: str) -> None:
    """Descriptors, threads, child processes and tasks must end exactly where they began."""
    after = replace(_BEFORE, **{name: getattr(_BEFORE, name) + 1})
    assert set(judge(_report(FLAT, after=after))) == {name}


def test_memory_left_after_close_or_grown_while_open_fails() -> None:
    """Traced memory: within the margin of before after close, and flat while the bridge is open."""
    left = replace(_BEFORE, traced=_BEFORE.traced + MEMORY_MARGIN + 1)
    assert set(judge(_report(FLAT, after=left))) == {"memory"}
    grown = _report(FLAT, open_traced=(100_000, 100_000 + 9 * 1024 * 1024))
    assert set(judge(grown)) == {"memory while open"}
    assert judge(_report(FLAT, open_traced=(100_000, 100_000 + MEMORY_MARGIN))) == {}


def test_growing_time_and_wrong_outcomes_fail() -> None:
    """A growing time per ask fails (wall and CPU), and so does any wrong outcome."""
    assert set(judge(_report(GROWING))) == {"wall time", "CPU time"}
    wrong = _report(FLAT)
    wrong.outcomes["answered"] -= 1
    wrong.wrong_count, wrong.wrong = 1, ["ask #5 (answer): it returned {}"]
    assert judge(wrong)["outcomes"].startswith("1 asks settled as they must not")
    unchecked = _report(FLAT)
    unchecked.outcomes["answered"] -= 1
    assert "999 outcomes checked" in judge(unchecked)["outcomes"]


@pytest.mark.slow
@pytest.mark.parametrize("bridge", BRIDGES)
def test_a_small_soak_through_each_bridge_checks_every_outcome_and_leaves_nothing(
    bridge: Bridge,
) -> None:
    """200 asks: every kind of outcome seen and checked; fds, threads, children, tasks back.

    The time per ask is not judged at this size (20 asks a slice is noise);
    ``nox -s soak`` judges it at 10,000.
    """
    report = asyncio.run(soak_bridge(bridge, 200, seed=7, quiet=True))
    assert report.wrong == []
    assert sum(report.outcomes.values()) == 200
    assert set(report.outcomes) == {OUTCOME[kind] for kind in MIX}, report.outcomes
    assert len(report.slices) == SLICES
    problems = judge(report)
    resources = {name: problem for name, problem in problems.items() if "time" not in name}
    assert resources == {}, table(report)
    during = report.sample("50%")
    assert during.tasks >= 1
    if bridge != "mcp":
        assert during.children >= 1, "the bridge's child ran during the soak"


def test_before_is_taken_once_the_warm_ups_tasks_are_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm-up's task still alive when the figures are polled is waited for, not counted.

    A busy machine can keep a closed bridge's task alive past :data:`SETTLE`;
    here it is zero, and the lingering task ends only on the tenth look at
    the figures, so the "before" figures must have been polled until then.
    """
    monkeypatch.setattr(soak_bridges, "SETTLE", 0.0)
    looks = [0]
    ended = asyncio.Event()
    taken = soak_bridges.sample

    def counted(point: str, asks: int) -> Sample:
        looks[0] += 1
        if looks[0] == 10:
            ended.set()
        return taken(point, asks)

    async def main() -> tuple[Sample, Sample]:
        start = taken("start", 0)
        lingering = asyncio.ensure_future(ended.wait())
        monkeypatch.setattr(soak_bridges, "sample", counted)
        warmed, _ = await soak_bridges.settled_after(start, 0, MUST_SETTLE)
        ended.set()
        await lingering
        return start, warmed

    start, warmed = run(main())
    assert warmed.tasks == start.tasks
    assert looks[0] >= 10
