"""A small soak: thousands of concurrent asks under random interrupts, every outcome judged.

The engine is ``tests/soak_engine.py``; ``nox -s soak`` runs it with 100,000 asks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_user_interaction import UserInteractionService

from .gallery.services import BROKEN_SERVICES
from .soak_engine import Options, SoakFailure, soak

#: Every outcome a run must reach, as the report names them; each is reached whatever the load.
MUST_REACH = {
    "answered",
    "provider error",
    "cancelled by the caller",
    "outer timeout",
    "ASK_ABORTED",
    "ASK_ABORTED before it started",
    "PROVIDER_DISPOSED",
}
#: An answer given after an interrupt, per code: kept on ``error.answer`` when the
#: provider's call ended within the service's grace, or, when a busy machine kept
#: the call past it, reported to the loop's exception handler (``SVC-LEAVE-1``).
#: Which of the two an ask gets depends on how much CPU the machine gives the run,
#: so a run must reach one of them for each code, and may reach both.
LATE_ANSWER = {
    code: {f"{code}, late answer kept", f"{code}, late answer reported"}
    for code in ("ASK_ABORTED", "PROVIDER_DISPOSED")
}
#: Every outcome the spec allows an ask under these events, at any load.
OUTCOMES = MUST_REACH.union(*LATE_ANSWER.values())


def outcome_problems(outcomes: Collection[str]) -> list[str]:
    """What is wrong with a run's outcomes: one it must reach and missed, or one not allowed."""
    reached = set(outcomes)
    problems = [f"never reached {name!r}" for name in sorted(MUST_REACH - reached)]
    problems += [
        f"no late answer for {code}, neither kept nor reported"
        for code, either in LATE_ANSWER.items()
        if not either & reached
    ]
    problems += [
        f"an outcome the spec does not allow: {name!r}" for name in sorted(reached - OUTCOMES)
    ]
    return problems


def test_a_fixed_seed_soaks_clean_and_reaches_every_outcome() -> None:
    """SVC-ABORT-*, SVC-CANCEL-1, SVC-DISPOSE-1, SVC-ERR-1, SVC-LEAK-1 under 2,000 asks."""
    report = soak(Options(asks=2_000, rounds=2, seed=20_240_601))
    assert report.asks == 2_000
    assert outcome_problems(report.outcomes) == [], report.summary()
    assert report.accepted_then_interrupted > 0, report.summary()
    assert report.memory_final - report.memory_baseline <= report.options.memory_margin


def test_a_machine_too_busy_for_the_grace_still_soaks_clean() -> None:
    """A provider kept past the grace has its late answer reported, and the run is still clean.

    A busy machine can keep a swallowing provider's late answer past the
    service's grace (0.25 s); a grace of 0 makes that happen to every one, as
    the busiest machine would, so the fixed seed's run reports late answers
    and must pass the same judgement.
    """
    service = functools.partial(UserInteractionService, cancel_grace=0)
    report = soak(Options(asks=2_000, rounds=2, seed=20_240_601, service_factory=service))
    assert report.asks == 2_000
    assert {"ASK_ABORTED, late answer reported", "PROVIDER_DISPOSED, late answer reported"} <= set(
        report.outcomes
    ), report.summary()
    assert outcome_problems(report.outcomes) == [], report.summary()


def test_the_outcome_judgement_fails_on_a_missed_or_unknown_outcome() -> None:
    """The judgement can fail: a missing outcome, a code without any late answer, a stray name."""
    assert outcome_problems(OUTCOMES) == []
    assert outcome_problems(OUTCOMES - {"outer timeout"}) == ["never reached 'outer timeout'"]
    assert outcome_problems(OUTCOMES - LATE_ANSWER["PROVIDER_DISPOSED"]) == [
        "no late answer for PROVIDER_DISPOSED, neither kept nor reported"
    ]
    assert outcome_problems({*OUTCOMES, "answered twice"}) == [
        "an outcome the spec does not allow: 'answered twice'"
    ]


def test_a_seed_replays_the_same_run() -> None:
    """The run is driven by loop iterations, not the clock: a seed gives the same outcomes."""
    options = Options(asks=600, rounds=1, seed=5, trace_memory=False)
    first, second = soak(options), soak(options)
    assert first.outcomes == second.outcomes
    assert first.accepted_then_interrupted == second.accepted_then_interrupted


@settings(max_examples=2, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_any_seed_soaks_clean(seed: int) -> None:
    """Whatever the seed, every ask settles once, as the spec allows, leaving nothing behind."""
    report = soak(Options(asks=600, rounds=1, seed=seed, trace_memory=False))
    assert report.asks == 600


# The soak sends valid requests and answers, so it cannot see the broken check
# order, messages or answer checks; it must see every broken dynamic behaviour
# that can end (a service that ignores cancellation would outlive the run).
CAUGHT = [
    "copies-request",
    "cancel-as-abort",
    "wraps-provider-errors",
    "copies-answer",
    "rejects-unknown-keys",
    "loses-same-tick-cancel",
    "asks-before-checking",
]


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
@pytest.mark.parametrize("name", CAUGHT)
def test_the_soak_catches_broken_services(name: str) -> None:
    """The soak can fail: each broken service of the gallery listed here fails it."""
    factory: Callable[[], Any] = BROKEN_SERVICES[name][0]
    options = Options(
        asks=400, rounds=1, seed=1, trace_memory=False, bound=0.5, service_factory=factory
    )
    with pytest.raises(SoakFailure, match=r"replay: python -m bench\.soak 400 "):
        soak(options)
