"""Plan review (PLAN-* in spec/tool.md)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    check_request,
)
from dsh_user_interaction.plan_review import (
    PLAN_APPROVED,
    PLAN_DISMISSED,
    PLAN_KEEP_PLANNING,
    PlanReviewVerdict,
    plan_review_question,
    plan_review_verdict,
    review_plan,
)
from dsh_user_interaction.tool import ToolResult
from dsh_user_interaction_conformance.strategies import custom_texts, hostile_text

from .helpers import run


def test_the_question_is_the_original_exit_plan_mode_question() -> None:
    """PLAN-Q-1: every field, byte for byte, and it passes the seam's checks."""
    question = plan_review_question("# Plan\n1. Do it")
    assert question == {
        "id": "plan-review",
        "header": "Plan review",
        "question": "Approve this plan and leave plan mode?",
        "detail": "# Plan\n1. Do it",
        "options": [
            {"label": "Approve", "description": "Leave plan mode; the plan is carried out from the next step."},
            {"label": "Keep planning", "description": "Stay in plan mode; feedback goes back to the model."},
        ],
        "intent": {"kind": "plan-review", "approve": "Approve"},
    }  # fmt: skip
    check_request({"questions": [question]})


def test_custom_labels_and_refusals() -> None:
    """PLAN-Q-1: labels are configurable; an empty plan or equal labels are refused."""
    question = plan_review_question("p", approve="Ship it", keep="Not yet")
    assert question.get("intent") == {"kind": "plan-review", "approve": "Ship it"}
    with pytest.raises(ValueError, match="non-empty"):
        plan_review_question("")
    with pytest.raises(ValueError, match="distinct"):
        plan_review_question("p", approve="Same", keep="Same")


def test_only_an_exact_single_approval_approves() -> None:
    """PLAN-VERDICT-1: each near miss keeps planning."""
    approve: dict[str, object] = {"id": "plan-review", "selected": ["Approve"]}
    assert plan_review_verdict({"answers": [approve]}) == PlanReviewVerdict(approved=True)
    near_misses: list[object] = [
        {"answers": [approve, {"id": "x", "selected": []}]},
        {"answers": [{**approve, "custom": "but change step 2"}]},
        {"answers": [{**approve, "id": "other"}]},
        {"answers": [{"id": "plan-review", "selected": ["Approve", "Keep planning"]}]},
        {"answers": [{"id": "plan-review", "selected": ["approve"]}]},
        {"answers": [{"id": "plan-review", "selected": []}]},
        {"answers": []},
        {"answers": "Approve"},
        None,
    ]
    for answer in near_misses:
        assert plan_review_verdict(answer).approved is False, answer
    assert plan_review_verdict({"answers": [{**approve, "custom": "x"}]}).feedback == "x"


@given(custom_texts())
def test_feedback_is_the_custom_text(text: str) -> None:
    """PLAN-VERDICT-1 and PLAN-TEXT-1: keep planning with the custom text as feedback."""
    answer: AskUserQuestionAnswer = {
        "answers": [{"id": "plan-review", "selected": [], "custom": text}]
    }
    verdict = plan_review_verdict(answer)
    assert verdict == PlanReviewVerdict(approved=False, feedback=text)
    assert verdict.message == f"The user chose to keep planning; their feedback: {text}"


@given(
    st.one_of(st.none(), hostile_text(), st.lists(st.text()), st.dictionaries(st.text(), st.text()))
)
def test_junk_never_approves(answer: object) -> None:
    """PLAN-VERDICT-1: malformed answers keep planning."""
    assert not plan_review_verdict(answer).approved


def test_the_wording_the_model_sees() -> None:
    """PLAN-TEXT-1: the original's sentences, byte for byte."""
    assert (
        PLAN_APPROVED
        == "Plan approved \u2014 plan mode exited; carry out the plan starting with your next step."
    )
    assert (
        PLAN_KEEP_PLANNING
        == "The user chose to keep planning; revise the plan and present it again."
    )
    assert PLAN_DISMISSED == (
        "The user dismissed the plan review to speak instead; stay in plan mode, stop here, "
        "and wait for their message."
    )
    assert PlanReviewVerdict(approved=False, feedback="  ").message == PLAN_KEEP_PLANNING
    assert PlanReviewVerdict(approved=True).message == PLAN_APPROVED


def _service(respond: object) -> UserInteractionService:
    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=respond))  # type: ignore[arg-type]
    return service


def test_review_plan_end_to_end() -> None:
    """PLAN-TEXT-1: approval, keep planning, dismissal and errors, through the service."""

    def approve(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        assert request["questions"][0].get("detail") == "the plan"
        return {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}

    def keep(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {"answers": [{"id": "plan-review", "selected": [], "custom": "more tests"}]}

    async def dismiss(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)

    assert run(review_plan(_service(approve), "the plan")) == ToolResult(PLAN_APPROVED)
    assert run(review_plan(_service(keep), "p")) == ToolResult(
        "The user chose to keep planning; their feedback: more tests"
    )
    assert run(review_plan(_service(dismiss), "p")) == ToolResult(PLAN_DISMISSED)
    assert run(review_plan(UserInteractionService(), "p")) == ToolResult(
        "Error: no user-interaction provider is registered", is_error=True
    )
