"""What a failure's report says about its example: whether it was shrunk, and if not, why."""

from __future__ import annotations

import pytest

from dsh_user_interaction_conformance import run_suite

from .gallery.providers import BROKEN_PROVIDERS


def test_an_example_not_shrunk_because_shrinking_was_off_says_so() -> None:
    """``shrink=False``: the report never calls the example minimal, and says why."""
    report = run_suite(
        subject_factory=BROKEN_PROVIDERS["trims-custom-text"][0],
        kinds=["provider"],
        only=["provider-answers"],
        seed=1,
        shrink=False,
        stop_on=["PRV-TEXT-1"],
    )
    failed = next(r for r in report.results if r.requirement.id == "PRV-TEXT-1")
    assert failed.status == "failed"
    assert not failed.shrunk
    assert failed.not_shrunk_because == "shrinking is off for this run"
    assert failed.as_dict()["not_shrunk_because"] == "shrinking is off for this run"


@pytest.mark.slow
def test_a_shrunk_example_gives_no_reason() -> None:
    """A shrunk example is minimal, and has no reason for not being shrunk."""
    report = run_suite(
        subject_factory=BROKEN_PROVIDERS["trims-custom-text"][0],
        kinds=["provider"],
        only=["provider-answers"],
        seed=1,
        stop_on=["PRV-TEXT-1"],
    )
    failed = next(r for r in report.results if r.requirement.id == "PRV-TEXT-1")
    assert failed.shrunk
    assert failed.not_shrunk_because == ""
    assert "not_shrunk_because" not in failed.as_dict()


@pytest.mark.slow
def test_a_blocked_loop_is_not_shrunk_and_says_why() -> None:
    """A subject that blocks the loop would block it again in each try: not shrunk, and why."""
    report = run_suite(
        subject_factory=BROKEN_PROVIDERS["blocks-the-loop"][0],
        kinds=["provider"],
        only=["provider-answers"],
        seed=1,
        stop_on=["PRV-LOOP-1"],
    )
    failed = next(r for r in report.results if r.requirement.id == "PRV-LOOP-1")
    assert not failed.shrunk
    assert failed.not_shrunk_because.startswith("the event loop was blocked")
