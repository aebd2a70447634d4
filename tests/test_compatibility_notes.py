"""The differences from the original that ``docs/compatibility.md`` states, as they are.

Each was found by a differential against the original and decided, not
matched: these tests keep the page true.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    UserInteractionService,
    answer_of,
    answer_selected,
)
from dsh_user_interaction.plan_review import review_plan
from dsh_user_interaction.tool import ToolResult, ask_user_question

_QUESTION = {"id": "q", "question": "?", "options": [{"label": "a"}, {"label": "b"}]}


class _Answers:
    """A provider that answers every ask with *answer*, whatever its shape."""

    def __init__(self, answer: Mapping[str, object]) -> None:
        self.answer = answer

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        del request
        return self.answer  # type: ignore[return-value]  # any shape, on purpose


def _lenient(answer: Mapping[str, object]) -> UserInteractionService:
    service = UserInteractionService(strict=False)
    service.register_provider(_Answers(answer))
    return service


def _tool(service: UserInteractionService, arguments: object) -> ToolResult:
    return asyncio.run(ask_user_question(service, arguments))


def test_an_integer_beyond_a_doubles_range_in_an_unread_key_is_accepted() -> None:
    """The original refuses it ("losslessly JSON-serializable"); Python reads it exactly."""
    service = UserInteractionService()
    service.register_provider(_Answers(answer_of(answer_selected("q", "a"))))
    arguments = '{"questions": [' + '{"id": "q", "question": "?", "options": [{"label": "a"}]}'
    result = _tool(service, arguments + '], "x": ' + "9" * 400 + "}")
    assert result == ToolResult('{"answers":[{"id":"q","selected":["a"]}]}')


def test_with_strict_false_a_string_selected_is_never_spread_into_characters() -> None:
    """The tool refuses it; a plan review keeps planning, as for any answer it cannot read."""
    result = _tool(
        _lenient({"answers": [{"id": "q", "selected": "ab"}]}), {"questions": [_QUESTION]}
    )
    assert result.is_error
    assert result.text == (
        'Error: tool "ask_user_question" returned invalid output: '
        "$.answers[0].selected: expected an array, got string"
    )
    plan = _lenient({"answers": [{"id": "plan-review", "selected": "Approve"}]})
    verdict = asyncio.run(review_plan(plan, "# Plan\n\nstep"))
    assert verdict.is_error
    assert "keep planning" in verdict.text


def test_with_strict_false_feedback_that_is_not_a_string_is_left_out() -> None:
    """The tool refuses a number as ``custom``; a plan review keeps planning without feedback."""
    answer: dict[str, object] = {"answers": [{"id": "q", "selected": [], "custom": 42}]}
    result = _tool(_lenient(answer), {"questions": [_QUESTION]})
    assert result.text.endswith("$.answers[0].custom: expected a string, got number")
    feedback: dict[str, object] = {"answers": [{"id": "plan-review", "selected": [], "custom": 42}]}
    plan = _lenient(feedback)
    verdict = asyncio.run(review_plan(plan, "# Plan\n\nstep"))
    assert verdict == ToolResult(
        "Error: The user chose to keep planning; revise the plan and present it again.",
        is_error=True,
    )
    assert "42" not in verdict.text
