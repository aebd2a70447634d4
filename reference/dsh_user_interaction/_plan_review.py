"""Plan review (``exit_plan_mode``): the question, the verdict, and what the model is told.

The verdict is strict on purpose: a plan is approved only by one answer item
for ``plan-review`` whose ``selected`` is exactly the approve label and which
carries no custom text. Anything else keeps planning, so an ambiguous or
malformed answer can never approve a plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, cast

from ._abort import AbortSignal
from ._checks import is_blank
from ._errors import ErrorCode
from ._tool import AskingService, ToolResult, _answers_of, error_result
from ._types import AskUserQuestionItem, AskUserQuestionRequest

__all__ = [
    "PLAN_APPROVED",
    "PLAN_DISMISSED",
    "PLAN_KEEP_PLANNING",
    "PLAN_KEEP_PLANNING_WITH_FEEDBACK",
    "PLAN_REVIEW_ID",
    "PlanReviewVerdict",
    "plan_review_question",
    "plan_review_verdict",
    "review_plan",
]

#: The id of the plan-review question.
PLAN_REVIEW_ID: Final = "plan-review"
#: Told to the model when the plan is approved.
PLAN_APPROVED: Final = (
    "Plan approved \u2014 plan mode exited; carry out the plan starting with your next step."
)
#: Told to the model when the user keeps planning with feedback; ``{feedback}`` is filled in.
PLAN_KEEP_PLANNING_WITH_FEEDBACK: Final = (
    "The user chose to keep planning; their feedback: {feedback}"
)
#: Told to the model when the user keeps planning without feedback.
PLAN_KEEP_PLANNING: Final = "The user chose to keep planning; revise the plan and present it again."
#: Told to the model when the user dismisses the review (``ASK_CANCELLED``).
PLAN_DISMISSED: Final = (
    "The user dismissed the plan review to speak instead; stay in plan mode, stop here, "
    "and wait for their message."
)


def plan_review_question(
    plan: str, *, approve: str = "Approve", keep: str = "Keep planning"
) -> AskUserQuestionItem:
    """The ``exit_plan_mode`` question for *plan* (Markdown).

    >>> question = plan_review_question("1. Write tests\\n2. Ship")
    >>> question["id"], question["header"], [o["label"] for o in question["options"]]
    ('plan-review', 'Plan review', ['Approve', 'Keep planning'])
    >>> question["intent"]
    {'kind': 'plan-review', 'approve': 'Approve'}
    """
    if not plan:
        msg = "plan must be a non-empty string: a review of nothing cannot be approved"
        raise ValueError(msg)
    if not approve or not keep or approve == keep:
        msg = f"approve and keep must be distinct non-empty labels, got {approve!r} and {keep!r}"
        raise ValueError(msg)
    return {
        "id": PLAN_REVIEW_ID,
        "header": "Plan review",
        "question": "Approve this plan and leave plan mode?",
        "detail": plan,
        "options": [
            {
                "label": approve,
                "description": "Leave plan mode; the plan is carried out from the next step.",
            },
            {"label": keep, "description": "Stay in plan mode; feedback goes back to the model."},
        ],
        "intent": {"kind": "plan-review", "approve": approve},
    }


@dataclass(frozen=True, slots=True)
class PlanReviewVerdict:
    """Whether the plan was approved, and the user's feedback if they gave any."""

    approved: bool
    feedback: str | None = None

    @property
    def message(self) -> str:
        """What the model is told.

        >>> PlanReviewVerdict(approved=False, feedback="split step 2").message
        'The user chose to keep planning; their feedback: split step 2'
        """
        if self.approved:
            return PLAN_APPROVED
        if self.feedback is not None and not is_blank(self.feedback):
            return PLAN_KEEP_PLANNING_WITH_FEEDBACK.format(feedback=self.feedback)
        return PLAN_KEEP_PLANNING


def plan_review_verdict(answer: object, *, approve: str = "Approve") -> PlanReviewVerdict:
    """Read the verdict from an answer to :func:`plan_review_question`.

    *answer* may be anything; what is not an exact approval keeps planning.

    >>> plan_review_verdict({"answers": [{"id": "plan-review", "selected": ["Approve"]}]})
    PlanReviewVerdict(approved=True, feedback=None)
    >>> plan_review_verdict({"answers": [
    ...     {"id": "plan-review", "selected": [], "custom": "drop step 3"}]})
    PlanReviewVerdict(approved=False, feedback='drop step 3')
    """
    items = _answers_of(answer)
    if not isinstance(items, Sequence) or isinstance(items, str):
        return PlanReviewVerdict(approved=False)
    entries = [
        cast("Mapping[str, object]", item)
        for item in cast("Sequence[object]", items)
        if isinstance(item, Mapping)
    ]
    mine = [entry for entry in entries if entry.get("id") == PLAN_REVIEW_ID]
    custom = mine[0].get("custom") if mine else None
    feedback = custom if isinstance(custom, str) and not is_blank(custom) else None
    approved = (
        len(entries) == len(cast("Sequence[object]", items)) == 1
        and len(mine) == 1
        and mine[0].get("selected") == [approve]
        and "custom" not in mine[0]
    )
    return PlanReviewVerdict(approved=approved, feedback=None if approved else feedback)


async def review_plan(
    service: AskingService,
    plan: str,
    *,
    signal: AbortSignal | None = None,
    agent: str | None = None,
    approve: str = "Approve",
    keep: str = "Keep planning",
) -> ToolResult:
    """Run ``exit_plan_mode``: ask for a plan review and tell the model the outcome.

    A dismissal (``ASK_CANCELLED``) is not an error: the model is told to stop
    and wait. Other failures are ``Error: <message>`` results. Cancellation
    propagates.
    """
    request: AskUserQuestionRequest = {
        "questions": [plan_review_question(plan, approve=approve, keep=keep)]
    }
    if agent is not None:
        request["agent"] = agent
    if signal is not None:
        request["signal"] = signal
    try:
        answer = await service.ask(request)
    except Exception as error:  # noqa: BLE001 - the model gets every failure as text
        if getattr(error, "code", None) == ErrorCode.ASK_CANCELLED:
            return ToolResult(PLAN_DISMISSED)
        return error_result(str(error) or type(error).__name__)
    return ToolResult(plan_review_verdict(answer, approve=approve).message)
