"""A small soak: thousands of concurrent asks under random interrupts, every outcome judged.

The engine is ``tests/soak_engine.py``; ``nox -s soak`` runs it with 100,000 asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .gallery.services import BROKEN_SERVICES
from .soak_engine import Options, SoakFailure, soak

#: Every outcome the spec allows an ask under these events, as the report names them.
OUTCOMES = {
    "answered",
    "provider error",
    "cancelled by the caller",
    "outer timeout",
    "ASK_ABORTED",
    "ASK_ABORTED before it started",
    "ASK_ABORTED, late answer kept",
    "PROVIDER_DISPOSED",
    "PROVIDER_DISPOSED, late answer kept",
}


def test_a_fixed_seed_soaks_clean_and_reaches_every_outcome() -> None:
    """SVC-ABORT-*, SVC-CANCEL-1, SVC-DISPOSE-1, SVC-ERR-1, SVC-LEAK-1 under 2,000 asks."""
    report = soak(Options(asks=2_000, rounds=2, seed=20_240_601))
    assert report.asks == 2_000
    assert set(report.outcomes) == OUTCOMES, report.summary()
    assert report.accepted_then_interrupted > 0, report.summary()
    assert report.memory_final - report.memory_baseline <= report.options.memory_margin


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


@pytest.mark.parametrize("name", CAUGHT)
def test_the_soak_catches_broken_services(name: str) -> None:
    """The soak can fail: each broken service of the gallery listed here fails it."""
    factory: Callable[[], Any] = BROKEN_SERVICES[name][0]
    options = Options(
        asks=400, rounds=1, seed=1, trace_memory=False, bound=0.5, service_factory=factory
    )
    with pytest.raises(SoakFailure, match=r"replay: python -m bench\.soak 400 "):
        soak(options)
