"""Small shared helpers for the tests."""

from __future__ import annotations

import asyncio
import datetime
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

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

#: No test waits longer than this for anything; a hang fails instead.
BOUND = 5.0


def run(coro: Coroutine[Any, Any, T], *, bound: float = BOUND) -> T:
    """Run *coro* in a fresh loop, failing after *bound* seconds (``BOUND`` by default).

    The bound catches a hang; a test whose work alone takes seconds of CPU
    passes a larger one, so a busy machine cannot fail it.
    """

    async def bounded() -> T:
        async with asyncio.timeout(bound):
            return await coro

    return asyncio.run(bounded())


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
