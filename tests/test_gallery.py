"""The suite can fail: every broken implementation in the gallery is caught, by name."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from dsh_user_interaction_conformance import CHECKS, Subject, reference_subject, run_suite

from .gallery.policies import BROKEN_POLICY_SERVICES
from .gallery.providers import BROKEN_PROVIDERS, FOUND_BY, SHOULD_PROVIDERS
from .gallery.services import BROKEN_SERVICES
from .helpers import GALLERY_SEEDS, claimed_only, patience

#: The bound the gallery runs with; a hanging subject costs a few multiples of it.
BOUND = 0.2
#: No gallery entry may take longer than this to be judged (60 s on the idle machine,
#: the calibrated patience on a busy one): every red run ends.
WALL = patience(6.0)


def test_the_reference_passes_everything() -> None:
    """The reference subject and service pass every requirement, each judged by examples."""
    report = run_suite(profile="default", seed=1)
    assert report.ok
    judged = [r for r in report.results if not claimed_only(r.requirement.id)]
    assert {r.status for r in judged} == {"passed"}
    assert all(r.examples > 0 for r in judged)
    # One surface, no HTTP: what only such a UI claims is skipped, never failed.
    assert {r.status for r in report.results if claimed_only(r.requirement.id)} == {"skipped"}
    assert {r.status for r in report.binding} == {"passed"}


def test_the_gallery_is_large_enough() -> None:
    """At least 24 broken providers and 14 broken services."""
    assert len(BROKEN_PROVIDERS) >= 24
    assert len(BROKEN_SERVICES) >= 14


#: Judged by the engine in every example of every check of the kind.
_EVERYWHERE = {"PRV-LOOP-1", "PRV-LEAK-1", "SVC-LOOP-1"}


def covering(name: str, kind: str, requirement: str) -> list[str]:
    """The checks that must catch an entry: those citing its requirement, or where it shows.

    ``nox -s detection`` runs every check of the kind instead, over many seeds.
    """
    if name in FOUND_BY:
        return [FOUND_BY[name]]
    of_kind = [check for check in CHECKS if check.kind == kind]
    if requirement in _EVERYWHERE:
        return [of_kind[0].name]
    wanted = set(requirement.split("|"))
    return [check.name for check in of_kind if wanted & set(check.requirements)]


def _judge(
    name: str, kind: str, factory: Callable[[], Any], requirement: str, seed: int
) -> tuple[set[str], float, bool]:
    """Run the suite of *kind* on *factory* at the default profile and *seed*.

    The checks that must catch the entry run first, and the run stops at the
    first that fails the requirement; when they alone do not name it, the
    whole suite of the kind runs, as a user runs it. ``nox -s detection``
    judges every entry by every check of its kind, over many seeds.

    The requirements returned are those failed, and the loop requirements
    left untested because the machine gave the loop too little CPU to tell
    (the engine's Rule 3b: such a run fails too, never a false green).
    """
    started = time.monotonic()
    factories: dict[str, Any] = (
        {"subject_factory": factory} if kind == "provider" else {"service_factory": factory}
    )
    wanted = set(requirement.split("|"))
    for only in (covering(name, kind, requirement), ()):
        report = run_suite(
            kinds=[kind],
            only=only,
            profile="default",
            seed=seed,
            bound=BOUND,
            shrink=False,
            stop_on=wanted,
            **factories,
        )
        failed = {r.requirement.id for r in report.results if r.status == "failed"}
        failed |= {
            r.requirement.id
            for r in report.results
            if r.status == "untested" and "too little CPU to tell" in r.message
        }
        for result in report.results:
            # A hang says what the loop's thread did meanwhile: idle, busy or starved.
            if "did not settle within" in result.message:
                assert "the loop's thread ran" in result.message, result.message
        if failed & wanted:
            break
    return failed, time.monotonic() - started, report.ok


def _assert_caught(
    name: str, kind: str, factory: Callable[[], Any], requirement: str, seed: int
) -> None:
    """The suite fails the entry, names the requirement it breaks, and ends in time."""
    failed, seconds, ok = _judge(name, kind, factory, requirement, seed)
    assert not ok
    assert failed & set(requirement.split("|")), failed
    assert seconds < WALL


_SEEDS = pytest.mark.parametrize("seed", GALLERY_SEEDS, ids=[f"seed{s}" for s in GALLERY_SEEDS])


@pytest.mark.slow
@_SEEDS
@pytest.mark.parametrize("name", sorted(BROKEN_PROVIDERS))
def test_broken_provider_is_caught(name: str, seed: int) -> None:
    """The suite fails the provider at the default profile, names what it breaks, and ends."""
    factory, requirement = BROKEN_PROVIDERS[name]
    _assert_caught(name, "provider", factory, requirement, seed)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHOULD_PROVIDERS))
def test_should_only_provider_warns_but_passes(name: str) -> None:
    """A SHOULD violation is a warning: reported with its example, but the run still passes."""
    factory, requirement = SHOULD_PROVIDERS[name]
    report = run_suite(
        subject_factory=factory,
        kinds=["provider"],
        only=covering(name, "provider", requirement),
        profile="default",
        seed=7,
        shrink=False,
    )
    warned = {r.requirement.id: r for r in report.results if r.status == "warning"}
    assert report.ok
    assert requirement in warned
    assert warned[requirement].example


@pytest.mark.slow
@_SEEDS
@pytest.mark.parametrize("name", sorted(BROKEN_SERVICES))
def test_broken_service_is_caught(name: str, seed: int) -> None:
    """The suite fails the service at the default profile, names what it breaks, and ends."""
    factory, requirement = BROKEN_SERVICES[name]
    _assert_caught(name, "service", factory, requirement, seed)


@pytest.mark.slow
@_SEEDS
@pytest.mark.parametrize("name", sorted(BROKEN_POLICY_SERVICES))
def test_broken_policy_service_is_caught(name: str, seed: int) -> None:
    """A service that breaks a policy it declares (section 8) fails that policy's rule, and ends."""
    factory, requirement = BROKEN_POLICY_SERVICES[name]
    _assert_caught(name, "service", factory, requirement, seed)


def test_policy_checks_are_skipped_for_a_service_that_declares_none() -> None:
    """A service without declared policies is never failed on section 8: those checks skip."""
    from dsh_user_interaction import UserInteractionService

    report = run_suite(
        service_factory=UserInteractionService,
        kinds=["service"],
        only=["policy-gate", "policy-deadline", "policy-observers"],
        profile="quick",
        seed=1,
    )
    assert report.ok
    assert {outcome.status for outcome in report.outcomes} == {"skipped"}
    assert {r.status for r in report.results} == {"skipped"}


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
