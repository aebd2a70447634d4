"""What a failure's report says of its example and its cause.

Whether the example was shrunk, and if not, why; and whether a warning is
the knock-on of another failure.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction_conformance import Report, RequirementResult, Subject, run_suite
from dsh_user_interaction_conformance.__main__ import main

from .gallery.providers import (
    BROKEN_PROVIDERS,
    SHOULD_PROVIDERS,
    Answer,
    Flaws,
    _items,
    _subject,
)
from .helpers import patience


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
    """A shrunk example is minimal, and has no reason for not being shrunk.

    The suite's shrinking stops after a budget of wall-clock seconds (four
    times its ``bound``, 4 s by default), which a busy machine can spend
    before the example is minimal; the bound here is the calibrated patience
    for ten seconds, so the budget is a hundred times the default on the
    idle machine and more on a busy one (at the patience of one second, a
    CI run beside other work spent all 88 s of it), and shrinking always
    ends on its own first.
    """
    report = run_suite(
        subject_factory=BROKEN_PROVIDERS["trims-custom-text"][0],
        kinds=["provider"],
        only=["provider-answers"],
        seed=1,
        stop_on=["PRV-TEXT-1"],
        bound=patience(10.0),
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


def _answers_run(factory: Callable[[], Subject]) -> Report:
    """``provider-answers`` on *factory*, seed 1, unshrunk: every failure and warning."""
    return run_suite(
        subject_factory=factory, kinds=["provider"], only=["provider-answers"], seed=1, shrink=False
    )


def _of(report: Report, requirement: str) -> RequirementResult:
    return next(r for r in report.results if r.requirement.id == requirement)


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_a_warning_the_same_fault_brought_names_the_failure_it_follows() -> None:
    """A label given twice is also out of option order: that warning is the failure's knock-on.

    The report says so in its JSON and in its printed details, and the
    warning stays a warning.
    """
    report = _answers_run(BROKEN_PROVIDERS["duplicates-labels"][0])
    order = _of(report, "ANS-MULTI-2")
    assert _of(report, "ANS-SEL-2").status == "failed"
    assert order.status == "warning"
    assert order.knock_on_of == ["ANS-SEL-2"]
    assert order.as_dict()["knock_on_of"] == ["ANS-SEL-2"]
    assert all(f.knock_on_of == ("ANS-SEL-2",) for f in order.failures)


@pytest.mark.slow
def test_the_printed_report_says_a_warning_is_a_knock_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The command line's details of the warning name the failure to fix first.

    Slow: the command line shrinks each of the three failures it finds.
    """
    provider = "tests.gallery.providers:FACTORY_DUPLICATES_LABELS"
    argv = ["--provider", provider, "--seed", "1", "--only", "provider-answers"]
    assert main([*argv, "--profile", "quick"]) == 1
    printed = capsys.readouterr().out
    details = printed.partition("=== WARNING: ANS-MULTI-2")[2]
    assert details.startswith(" (SHOULD)"), printed
    assert "knock-on: the fault that fails ANS-SEL-2 breaks this too" in details


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_a_warning_of_its_own_is_no_knock_on() -> None:
    """Labels in reverse order, and nothing else wrong: the warning is its own fault."""
    report = _answers_run(SHOULD_PROVIDERS["multi-select-reversed"][0])
    order = _of(report, "ANS-MULTI-2")
    assert order.status == "warning"
    assert order.knock_on_of == []
    assert "knock_on_of" not in order.as_dict()


def _clears_intent_picks(request: AskUserQuestionRequest, answer: Answer) -> Answer:
    return {
        "answers": [
            {**item, "selected": []} if "intent" in question and item["selected"] else item
            for question, item in zip(request["questions"], _items(answer), strict=True)
        ]
    }


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_an_intent_question_answered_wrong_is_a_knock_on_of_the_wrong_answer() -> None:
    """A UI that loses the pick on an intent question: the PRV-INTENT-1 warning follows.

    It fails PRV-ANSWER-1 (or PRV-REVISE-1), and the warning says it is that
    failure's knock-on.
    """
    report = _answers_run(_subject(Flaws(transform=_clears_intent_picks)))
    intent = _of(report, "PRV-INTENT-1")
    assert intent.status == "warning"
    assert {"PRV-ANSWER-1", "PRV-REVISE-1"} >= set(intent.knock_on_of) > set()
    assert _of(report, intent.knock_on_of[0]).status == "failed"
