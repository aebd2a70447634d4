"""Small shared helpers for the tests."""

from __future__ import annotations

import asyncio
import datetime
import functools
import os
import shutil
import statistics
import time
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, TypeVar

import pytest
from hypothesis import strategies as st

from dsh_user_interaction import AbortSignal, AskUserQuestionRequest
from dsh_user_interaction_conformance import Report, run_suite

T = TypeVar("T")

#: Any JSON value: what a model, or another language, may send where a shape is expected.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)


def rotating_seed(today: datetime.date | None = None) -> int:
    """A seed that changes once a day, so that over time CI judges the gallery on many seeds.

    ``DSH_ROTATING_SEED`` overrides it, to replay a day's failure: the seed
    is in the failing test's id.
    """
    pinned = os.environ.get("DSH_ROTATING_SEED")
    if pinned:
        return int(pinned)
    day = today or datetime.datetime.now(datetime.UTC).date()
    return 100 + day.toordinal() % 10_000


#: The seeds CI judges each broken implementation on: a fixed one, and the day's.
GALLERY_SEEDS = (7, rotating_seed())

#: How many times its idle time a wait may take before it counts as a hang.
PATIENCE_MARGIN = 10.0
#: Wall-clock seconds :func:`calibration_workload` takes on the 2-core machine when it
#: has the process's core to itself (2026-12-07: its CPU time, median of 60 runs, 15.3 ms;
#: the fastest of them by the clock, 16.5 ms); a machine that takes longer now is
#: slower or busier.
IDLE_CALIBRATION = 0.0155
#: Rounds of the calibration workload's loop.
_CALIBRATION_ROUNDS = 200_000


def calibration_workload() -> float:
    """Wall-clock seconds a fixed piece of pure-Python work takes here, now.

    It neither waits nor allocates, so it is slower only when the machine is
    slower or gives this process less of its CPU.
    """
    started = time.perf_counter()
    total = 0
    for number in range(_CALIBRATION_ROUNDS):
        total += number * number % 7
    assert total > 0
    return time.perf_counter() - started


@functools.cache
def slowdown() -> float:
    """How many times slower than the idle 2-core machine this one runs now, at least 1.

    The median of three calibration runs, once a process, times
    ``DSH_TEST_PATIENCE`` when set (for a machine busier than any calibration
    shows, such as one whose load comes and goes).
    """
    measured = statistics.median(calibration_workload() for _ in range(3))
    extra = float(os.environ.get("DSH_TEST_PATIENCE") or 1.0)
    return max(1.0, measured / IDLE_CALIBRATION) * max(1.0, extra)


def patience(idle_seconds: float) -> float:
    """How long to wait for what takes at most *idle_seconds* on the idle machine.

    A bound that only ends a red run (a hang must fail, and a red run must
    end): ``PATIENCE_MARGIN`` times *idle_seconds*, times :func:`slowdown`.
    It never judges speed: nothing that passes within it is slow, and a test
    whose outcome depends on how fast the machine is does not belong here.
    """
    return idle_seconds * PATIENCE_MARGIN * slowdown()


#: The longest an ordinary wait of a test takes on the idle machine, in seconds.
IDLE_BOUND = 5.0
#: No test waits longer than this for anything ordinary; a hang fails instead.
BOUND = patience(IDLE_BOUND)


def run(coro: Coroutine[Any, Any, T], *, bound: float = IDLE_BOUND) -> T:
    """Run *coro* in a fresh loop, failing once :func:`patience` for *bound* seconds has passed.

    *bound* is what the work takes at most on the idle machine (``IDLE_BOUND``
    by default); the wait is patient beyond it (:func:`patience`), so the
    bound catches a hang and a busy machine cannot fail a test by it.
    """

    async def bounded() -> T:
        async with asyncio.timeout(patience(bound)):
            return await coro

    return asyncio.run(bounded())


#: What the tests drive from outside Python, by the name a test's skip gives, and the
#: Debian package that brings it (the README's apt line installs them all).
TOOLS = {
    "tmux": "tmux",
    "chromium-headless-shell": "chromium-headless-shell",
    "PostgreSQL": "postgresql",
    "node": "nodejs",
}


def unavailable(reason: str) -> NoReturn:
    """Skip the test for *reason* (a missing tool, named), or fail it in CI.

    CI (``CI`` set, as ``.ci/run``'s machines have it) installs every tool,
    so there a missing one is a red run, never a quiet skip.
    """
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def need(tool: str, found: str | None = None) -> str:
    """Where *tool* is (*found*, or else on PATH); :func:`unavailable` naming it when it is nowhere.

    *tool* is one of :data:`TOOLS`; the skip names it and its package.
    """
    where = found if found is not None and os.path.exists(found) else shutil.which(tool)
    if where is None:
        unavailable(f"needs {tool}, which is not installed (Debian: apt-get install {TOOLS[tool]})")
    return where


def one_question(
    question_id: str = "q", *, signal: AbortSignal | None = None
) -> AskUserQuestionRequest:
    """A minimal well-formed request, with *signal* if given."""
    if signal is None:
        return {"questions": [{"id": question_id, "question": "Proceed?"}]}
    return {"questions": [{"id": question_id, "question": "Proceed?"}], "signal": signal}


def judge_provider(factory: Callable[[], Any], check: str, *, seed: int, bound: float) -> Report:
    """One quick, unshrunk provider run of *check* on *factory*: how the extras' galleries judge."""
    return run_suite(
        subject_factory=factory,
        kinds=["provider"],
        only=[check],
        profile="quick",
        seed=seed,
        bound=bound,
        shrink=False,
    )


def caught_within(
    factory: Callable[[], Any], requirement: str, check: str, *, bound: float
) -> tuple[Report, set[str]]:
    """Judge a broken provider on seeds 1 to 3, stopping at the first that fails *requirement*.

    Returns the last report and the requirements it failed.
    """
    failed: set[str] = set()
    for seed in (1, 2, 3):
        report = judge_provider(factory, check, seed=seed, bound=bound)
        failed = {r.requirement.id for r in report.results if r.status == "failed"}
        if requirement in failed:
            break
    return report, failed


def policy_requirements() -> frozenset[str]:
    """The requirements only a service's declared policies bring (spec section 8).

    A service that declares none (a child through the harness, say) has them
    skipped, never passed.
    """
    from dsh_user_interaction_conformance import CHECKS

    implicit = {"SVC-LOOP-1", "SVC-LEAK-1"}
    return frozenset(r for c in CHECKS if c.policy for r in c.requirements if r not in implicit)


def claimed_only(requirement: str) -> bool:
    """Whether *requirement* is judged only for a UI that claims it, else skipped.

    A UI of several surfaces claims ``SURF-*`` (``Capabilities.surfaces``);
    a browser-facing UI claims the web profile's ``WEB-*``
    (``Capabilities.serves_http``).
    """
    return requirement.startswith(("SURF-", "WEB-"))
