"""The suite can fail: every broken implementation in the gallery is caught, by name."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from dsh_user_interaction_conformance import Subject, reference_subject, run_suite

from .gallery.providers import BROKEN_PROVIDERS, SHOULD_PROVIDERS
from .gallery.services import BROKEN_SERVICES

#: The bound the gallery runs with; a hanging subject costs a few multiples of it.
BOUND = 0.2
#: No gallery entry may take longer than this to be judged: every red run ends.
WALL = 60.0


def test_the_reference_passes_everything() -> None:
    """The reference subject and service pass every requirement, each judged by examples."""
    report = run_suite(profile="default", seed=1)
    assert report.ok
    assert {r.status for r in report.results} == {"passed"}
    assert all(r.examples > 0 for r in report.results)
    assert {r.status for r in report.binding} == {"passed"}


def test_the_gallery_is_large_enough() -> None:
    """At least 24 broken providers and 14 broken services."""
    assert len(BROKEN_PROVIDERS) >= 24
    assert len(BROKEN_SERVICES) >= 14


def _judge(kind: str, factory: Callable[[], Any]) -> tuple[set[str], float, bool]:
    started = time.monotonic()
    factories: dict[str, Any] = (
        {"subject_factory": factory} if kind == "provider" else {"service_factory": factory}
    )
    report = run_suite(
        kinds=[kind], profile="default", seed=7, bound=BOUND, shrink=False, **factories
    )
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    return failed, time.monotonic() - started, report.ok


@pytest.mark.parametrize("name", sorted(BROKEN_PROVIDERS))
def test_broken_provider_is_caught(name: str) -> None:
    """The whole provider suite fails the provider, names what it breaks, and ends."""
    factory, requirement = BROKEN_PROVIDERS[name]
    failed, seconds, ok = _judge("provider", factory)
    assert not ok
    assert failed & set(requirement.split("|")), failed
    assert seconds < WALL


@pytest.mark.parametrize("name", sorted(SHOULD_PROVIDERS))
def test_should_only_provider_warns_but_passes(name: str) -> None:
    """A SHOULD violation is a warning: reported with its example, but the run still passes."""
    factory, requirement = SHOULD_PROVIDERS[name]
    report = run_suite(
        subject_factory=factory, kinds=["provider"], profile="default", seed=7, shrink=False
    )
    warned = {r.requirement.id: r for r in report.results if r.status == "warning"}
    assert report.ok
    assert requirement in warned
    assert warned[requirement].example


@pytest.mark.parametrize("name", sorted(BROKEN_SERVICES))
def test_broken_service_is_caught(name: str) -> None:
    """The whole service suite fails the service, names what it breaks, and ends."""
    factory, requirement = BROKEN_SERVICES[name]
    failed, seconds, ok = _judge("service", factory)
    assert not ok
    assert failed & set(requirement.split("|")), failed
    assert seconds < WALL


def test_a_subject_factory_is_called_fresh_per_example_inside_the_loop() -> None:
    """Each example gets a fresh subject, built inside that example's running loop."""
    import asyncio

    made: list[Subject] = []
    loops: list[asyncio.AbstractEventLoop] = []  # held, so no id is reused

    def counting() -> Subject:
        loops.append(asyncio.get_running_loop())
        made.append(reference_subject())
        return made[-1]

    run_suite(
        subject_factory=counting,
        kinds=["provider"],
        only=["provider-answers"],
        profile="quick",
        seed=3,
    )
    assert len({id(s.provider) for s in made}) == len(made) > 2
    assert len({id(loop) for loop in loops}) == len(made)
