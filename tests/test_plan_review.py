"""Plan review (PLAN-* in spec/tool.md)."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_violations,
    check_request,
)
from dsh_user_interaction.plan_review import (
    EXIT_PLAN_MODE_TOOL,
    PLAN_APPROVED,
    PLAN_DISMISSED,
    PLAN_KEEP_PLANNING,
    PLAN_NEEDS_HEADING,
    PlanReviewVerdict,
    exit_plan_mode,
    has_plan_heading,
    plan_review_question,
    plan_review_verdict,
    review_plan,
)
from dsh_user_interaction.tool import ToolResult, anthropic_tool, openai_tool
from dsh_user_interaction_conformance._stand_ins import Ignoring
from dsh_user_interaction_conformance.strategies import custom_texts, hostile_text

from .helpers import run


def test_the_question_is_the_original_exit_plan_mode_question() -> None:
    """PLAN-Q-1: every field, byte for byte, and it passes the seam's checks."""
    question = plan_review_question("# Plan\n1. Do it")
    assert dict(question) == {
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
    assert dict(question.get("intent") or {}) == {"kind": "plan-review", "approve": "Ship it"}
    with pytest.raises(ValueError, match="non-empty"):
        plan_review_question("")
    with pytest.raises(ValueError, match="distinct"):
        plan_review_question("p", approve="Same", keep="Same")


def test_only_an_exact_single_approval_approves() -> None:
    """PLAN-VERDICT-1: each near miss keeps planning; items for other ids are ignored."""
    approve: dict[str, object] = {"id": "plan-review", "selected": ["Approve"]}
    assert plan_review_verdict({"answers": [approve]}) == PlanReviewVerdict(approved=True)
    others = {"id": "x", "selected": ["anything"], "custom": "ignored"}
    assert plan_review_verdict({"answers": [others, approve]}) == PlanReviewVerdict(approved=True)
    assert plan_review_verdict({"answers": [approve, 7]}).approved
    near_misses: list[object] = [
        {"answers": [approve, approve]},
        {"answers": [{**approve, "custom": "but change step 2"}]},
        {"answers": [{**approve, "id": "other"}]},
        {"answers": [{"id": "plan-review", "selected": ["Approve", "Keep planning"]}]},
        {"answers": [{"id": "plan-review", "selected": ["approve"]}]},
        {"answers": [{"id": "plan-review", "selected": ("Approve",)}]},
        {"answers": [{"id": "plan-review", "selected": "Approve"}]},
        {"answers": [{"id": "plan-review", "selected": []}]},
        {"answers": [{"id": "plan-review"}]},
        {"answers": []},
        {"answers": "Approve"},
        None,
    ]
    for answer in near_misses:
        assert plan_review_verdict(answer).approved is False, answer
    assert plan_review_verdict({"answers": [{**approve, "custom": "x"}]}).feedback == "x"
    # Feedback comes only from the one plan-review item.
    two = {"answers": [{**approve, "custom": "a"}, {**approve, "custom": "b"}]}
    assert plan_review_verdict(two) == PlanReviewVerdict(approved=False)
    elsewhere: object = {"answers": [{"id": "x", "selected": ["y"], "custom": "not mine"}]}
    assert plan_review_verdict(elsewhere) == PlanReviewVerdict(approved=False)


def test_the_verdict_and_the_strict_answer_check_agree_on_tuples() -> None:
    """PLAN-VERDICT-1 and ANS-SEL-1: a tuple is not a list, for the verdict and the strict check."""
    request: AskUserQuestionRequest = {"questions": [plan_review_question("# P\n1. x")]}
    as_tuple: object = {"answers": [{"id": "plan-review", "selected": ("Approve",)}]}
    assert [v.requirement for v in answer_violations(request, as_tuple)] == ["ANS-SEL-1"]
    assert not plan_review_verdict(as_tuple).approved
    as_list: AskUserQuestionAnswer = {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}
    assert answer_violations(request, as_list) == []
    assert plan_review_verdict(as_list).approved


@given(custom_texts())
def test_feedback_is_the_custom_text_verbatim(text: str) -> None:
    """PLAN-VERDICT-1 and PLAN-TEXT-1: keep planning, with the custom text verbatim as feedback."""
    answer: AskUserQuestionAnswer = {
        "answers": [{"id": "plan-review", "selected": [], "custom": text}]
    }
    verdict = plan_review_verdict(answer)
    assert verdict == PlanReviewVerdict(approved=False, feedback=text)
    assert verdict.message == f"The user chose to keep planning; their feedback: {text}"
    result = verdict.result()
    assert result.is_error
    expected = f"Error: The user chose to keep planning; their feedback: {text}"
    assert result.text == re.sub("[\ud800-\udfff]", "\ufffd", expected)
    result.text.encode("utf-8")  # strict UTF-8, whatever the feedback holds


def test_feedback_with_a_lone_surrogate_is_valid_utf8() -> None:
    """PLAN-TEXT-1: a lone surrogate in the feedback becomes U+FFFD; line breaks stay."""
    verdict = PlanReviewVerdict(approved=False, feedback="no\ud800\nway")
    assert verdict.result() == ToolResult(
        "Error: The user chose to keep planning; their feedback: no\ufffd\nway", is_error=True
    )


@given(
    st.one_of(st.none(), hostile_text(), st.lists(st.text()), st.dictionaries(st.text(), st.text()))
)
def test_junk_never_approves(answer: object) -> None:
    """PLAN-VERDICT-1: malformed answers keep planning."""
    assert not plan_review_verdict(answer).approved


def test_a_hostile_answer_keeps_planning() -> None:
    """PLAN-VERDICT-1: an answer whose own methods raise keeps planning; nothing escapes."""

    class Hostile(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise RuntimeError("no")

    assert plan_review_verdict(Hostile(answers=[])) == PlanReviewVerdict(approved=False)
    assert plan_review_verdict({"answers": [Hostile(id="plan-review")]}) == PlanReviewVerdict(
        approved=False
    )


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
    assert PLAN_NEEDS_HEADING == (
        "exit_plan_mode requires a non-empty markdown plan starting with a # heading"
    )
    assert PlanReviewVerdict(approved=False).message == PLAN_KEEP_PLANNING
    assert PlanReviewVerdict(approved=True).message == PLAN_APPROVED
    assert PlanReviewVerdict(approved=True).result() == ToolResult(PLAN_APPROVED)


def _service(respond: object) -> UserInteractionService:
    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=respond))  # type: ignore[arg-type]
    return service


PLAN = "# Release\n1. Tag\n2. Publish"


def test_review_plan_end_to_end() -> None:
    """PLAN-TEXT-1: only an approval is a normal result; the rest are error results."""
    agent = object()
    seen: list[AskUserQuestionRequest] = []

    def approve(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        seen.append(request)
        return {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}

    def keep(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {"answers": [{"id": "plan-review", "selected": [], "custom": "more\ntests"}]}

    def keep_silently(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {"answers": [{"id": "plan-review", "selected": ["Keep planning"]}]}

    async def dismiss(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)

    async def abort(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise UserInteractionError.of(ErrorCode.ASK_ABORTED)

    controller = AbortController()
    result = run(review_plan(_service(approve), PLAN, agent=agent, signal=controller.signal))
    assert result == ToolResult(PLAN_APPROVED)
    (request,) = seen
    assert request["questions"] == [plan_review_question(PLAN)]
    assert request.get("agent") is agent
    assert request.get("signal") is controller.signal
    assert run(review_plan(_service(keep), PLAN)) == ToolResult(
        "Error: The user chose to keep planning; their feedback: more\ntests", is_error=True
    )
    assert run(review_plan(_service(keep_silently), PLAN)) == ToolResult(
        f"Error: {PLAN_KEEP_PLANNING}", is_error=True
    )
    assert run(review_plan(_service(dismiss), PLAN)) == ToolResult(
        f"Error: {PLAN_DISMISSED}", is_error=True
    )
    assert run(review_plan(_service(abort), PLAN)) == ToolResult(
        "Error: ask_user_question was aborted before the user answered", is_error=True
    )
    assert run(review_plan(UserInteractionService(), PLAN)) == ToolResult(
        "Error: no user-interaction provider is registered", is_error=True
    )


@pytest.mark.parametrize(
    ("plan", "accepted"),
    [
        ("# Plan", True),
        ("  \n# Plan\n1. x", True),
        ("#\tPlan", True),
        ("#\n\nPlan", True),
        ("\ufeff# Plan", True),
        ("#\u3000Plan", True),
        ("## Plan", False),
        ("#Plan", False),
        ("#", False),
        ("#   ", False),
        ("", False),
        ("   ", False),
        ("Plan\n# Heading", False),
        ("\x1c# Plan", False),  # Python whitespace, not ECMAScript's
        (None, False),
        (7, False),
    ],
)
def test_a_plan_must_start_with_a_level_one_heading(plan: object, accepted: bool) -> None:
    """PLAN-HEADING-1: ^#\\s+\\S after trimming, or nobody is asked and the model gets an error."""
    assert has_plan_heading(plan) is accepted
    provider = ScriptedProvider(
        respond=lambda request: {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}
    )
    service = UserInteractionService()
    service.register_provider(provider)
    result = run(review_plan(service, plan))
    if accepted:
        assert result == ToolResult(PLAN_APPROVED)
        assert provider.asked == 1
    else:
        assert result == ToolResult(f"Error: {PLAN_NEEDS_HEADING}", is_error=True)
        assert provider.asked == 0


def test_the_exit_plan_mode_definition_is_the_original() -> None:
    """PLAN-DEF-1: name, description and the plan parameter, byte for byte, and stable."""
    assert EXIT_PLAN_MODE_TOOL == {
        "name": "exit_plan_mode",
        "description": (
            "Use only in plan mode. Present your plan for the user's review and, on approval, "
            "leave plan mode. Send the COMPLETE plan as markdown, starting with a # heading that "
            "names it. The user may approve (carry out the plan from your next step) or keep "
            "planning \u2014 their feedback comes back in the tool result; revise and present "
            "again."
        ),
        "input_schema": {
            "type": "object",
            "required": ["plan"],
            "properties": {
                "plan": {
                    "type": "string",
                    "description": (
                        "The complete plan, as markdown, starting with a # heading that names it."
                    ),
                }
            },
        },
    }
    first = json.dumps(EXIT_PLAN_MODE_TOOL)
    assert json.dumps(EXIT_PLAN_MODE_TOOL) == first
    assert openai_tool(EXIT_PLAN_MODE_TOOL)["function"]["name"] == "exit_plan_mode"
    assert json.dumps(anthropic_tool(EXIT_PLAN_MODE_TOOL)["input_schema"]) == json.dumps(
        EXIT_PLAN_MODE_TOOL["input_schema"]
    )


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ('{"plan": "# P\\n1. x"}', PLAN_APPROVED),
        ({"plan": "# P"}, PLAN_APPROVED),
        ({}, "Error: $.plan: required"),
        ({"plan": 3}, "Error: $.plan: expected a string, got number"),
        ("[]", "Error: $: expected an object, got array"),
        ('{"plan": NaN}', "Error: $.plan: NaN is not a JSON number"),
        ({"plan": "# P", "x": float("inf")}, "Error: $.x: Infinity is not a JSON number"),
        ("{", "Error: $: arguments are not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ({"plan": "no heading"}, f"Error: {PLAN_NEEDS_HEADING}"),
    ],
)  # fmt: skip
def test_exit_plan_mode_reads_raw_arguments(arguments: object, text: str) -> None:
    """PLAN-ARGS-1: a mapping or JSON text, with JSON-path errors; nobody asked on an error."""
    provider = ScriptedProvider(
        respond=lambda request: {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}
    )
    service = UserInteractionService()
    service.register_provider(provider)
    result = run(exit_plan_mode(service, arguments))
    assert result == ToolResult(text, is_error=text != PLAN_APPROVED)
    assert provider.asked == (0 if result.is_error else 1)


def test_the_application_s_time_limit_ends_a_review_as_a_timeout() -> None:
    """PLAN-TIMEOUT-1: answer_within sets the deadline; time running out never approves."""
    service = UserInteractionService()
    provider = _Silent()
    service.register_provider(provider)
    before = time.time()
    result = run(exit_plan_mode(service, {"plan": PLAN}, answer_within=0.05, ask_id="call-7"))
    assert result == ToolResult(
        "Error: ask_user_question timed out before the user answered; do not assume an answer",
        is_error=True,
    )
    (request,) = provider.seen
    assert before + 0.05 <= request.get("deadline", 0) <= time.time() + 0.05
    assert request.get("askId") == "call-7"
    assert all("default" not in question for question in request["questions"])
    # The model's arguments cannot set one; the application's is checked.
    forged = {"plan": PLAN, "deadline": 0, "answer_within": 1}
    assert run(exit_plan_mode(_service(_approving), forged)) == ToolResult(PLAN_APPROVED)
    bad_limits: list[tuple[Any, type[Exception]]] = [
        (0, ValueError),
        (float("nan"), ValueError),
        ("5", TypeError),
    ]
    for bad, error in bad_limits:
        with pytest.raises(error, match="answer_within"):
            run(review_plan(service, PLAN, answer_within=bad))


class _Silent(Ignoring):
    """Nobody reviews: it waits until the service interrupts it, keeping each request."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[AskUserQuestionRequest] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.seen.append(request)
        return await super().ask(request)


def _approving(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    assert "deadline" not in request
    return {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}
