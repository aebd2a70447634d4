"""The suite can fail: every broken implementation in the gallery is caught, by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dsh_user_interaction_conformance import CHECKS, Subject, run_suite

from .gallery.providers import BROKEN_PROVIDERS, SHOULD_PROVIDERS
from .gallery.services import BROKEN_SERVICES


def test_the_reference_passes_everything() -> None:
    """The reference subject and service pass every requirement."""
    report = run_suite(profile="quick", seed=1)
    assert report.ok
    assert {r.status for r in report.results} == {"passed"}


def test_the_gallery_is_large_enough() -> None:
    """At least 12 broken providers and 8 broken services."""
    assert len(BROKEN_PROVIDERS) >= 12
    assert len(BROKEN_SERVICES) >= 8


def covering(requirement: str) -> list[str]:
    """The checks that cite *requirement*: the ones that must catch its breakage."""
    wanted = set(requirement.split("|"))
    return [check.name for check in CHECKS if wanted & set(check.requirements)]


@pytest.mark.parametrize("name", sorted(BROKEN_PROVIDERS))
def test_broken_provider_is_caught(name: str) -> None:
    """The suite fails the provider and names the requirement it breaks."""
    factory, requirement = BROKEN_PROVIDERS[name]
    report = run_suite(
        subject_factory=factory,
        kinds=["provider"],
        only=covering(requirement),
        profile="default",
        seed=7,
        bound=0.2,
        shrink=False,
    )
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    assert not report.ok
    assert failed & set(requirement.split("|")), failed


@pytest.mark.parametrize("name", sorted(SHOULD_PROVIDERS))
def test_should_only_provider_warns_but_passes(name: str) -> None:
    """A SHOULD violation is a warning: reported, but the run still passes."""
    factory, requirement = SHOULD_PROVIDERS[name]
    report = run_suite(
        subject_factory=factory,
        kinds=["provider"],
        only=covering(requirement),
        profile="thorough",
        seed=7,
        shrink=False,
    )
    warned = {r.requirement.id for r in report.results if r.status == "warning"}
    assert report.ok
    assert requirement in warned


@pytest.mark.parametrize("name", sorted(BROKEN_SERVICES))
def test_broken_service_is_caught(name: str) -> None:
    """The suite fails the service and names the requirement it breaks."""
    factory, requirement = BROKEN_SERVICES[name]
    service_factory: Callable[[], Any] = factory
    report = run_suite(
        service_factory=service_factory,
        kinds=["service"],
        only=covering(requirement),
        profile="default",
        seed=7,
        bound=0.2,
        shrink=False,
    )
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    assert not report.ok
    assert failed & set(requirement.split("|")), failed


def test_a_subject_factory_is_called_fresh_per_example() -> None:
    """Each example gets a fresh subject, so state cannot leak between examples."""
    from dsh_user_interaction_conformance import reference_subject

    made: list[Subject] = []

    def counting() -> Subject:
        made.append(reference_subject())
        return made[-1]

    run_suite(
        subject_factory=counting,
        kinds=["provider"],
        only=["provider-cancel"],
        profile="quick",
        seed=3,
    )
    assert len({id(s.provider) for s in made}) == len(made) > 2
