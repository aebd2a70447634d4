"""Plan review (``exit_plan_mode``): the tool, the question, the verdict, the wording.

Design notes, as the original runs it:

* A plan must start with a level-one Markdown heading (after trimming,
  ``^#\\s+\\S``). Otherwise nobody is asked and the model gets
  :data:`PLAN_NEEDS_HEADING` as an error result; a bad plan never raises.
* The verdict reads only the answer items whose id is ``plan-review``. It
  approves only when there is exactly one, its ``selected`` is exactly
  ``[approve]`` (a list) and it has no ``custom``. Anything else keeps
  planning, so an ambiguous or malformed answer can never approve a plan.
* Only an approval is a normal result. Keeping planning (with or without
  feedback), a dismissal and every other failure are error results,
  ``Error: <message>``, because the model must not carry on as if approved.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from ._abort import AbortSignal
from ._checks import is_blank
from ._deadline import DEADLINE_KEY
from ._durable._store import ASK_ID_KEY
from ._errors import ErrorCode
from ._json import JsonError, read_json, replace_surrogates
from ._tool import (
    DEFAULT_MAX_ARGUMENT_BYTES,
    AskingService,
    ToolDefinition,
    ToolResult,
    ask_through,
    checked_answer_within,
    checked_tool_ask_id,
    describe_error,
    error_result,
)
from ._types import AskUserQuestionItem, AskUserQuestionRequest
from ._violations import json_type

__all__ = [
    "EXIT_PLAN_MODE_TOOL",
    "PLAN_APPROVED",
    "PLAN_DISMISSED",
    "PLAN_KEEP_PLANNING",
    "PLAN_KEEP_PLANNING_WITH_FEEDBACK",
    "PLAN_NEEDS_HEADING",
    "PLAN_REVIEW_ID",
    "PlanReviewVerdict",
    "exit_plan_mode",
    "has_plan_heading",
    "plan_review_question",
    "plan_review_verdict",
    "review_plan",
]

#: The id of the plan-review question.
PLAN_REVIEW_ID: Final = "plan-review"
#: Told to the model when the plan is approved; the only normal result.
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
#: Told to the model, and nobody asked, when the plan has no level-one heading.
PLAN_NEEDS_HEADING: Final = (
    "exit_plan_mode requires a non-empty markdown plan starting with a # heading"
)

#: The ``exit_plan_mode`` definition the model sees, with the original's text byte for byte.
EXIT_PLAN_MODE_TOOL: Final[ToolDefinition] = {
    "name": "exit_plan_mode",
    "description": (
        "Use only in plan mode. Present your plan for the user's review and, on approval, "
        "leave plan mode. Send the COMPLETE plan as markdown, starting with a # heading that "
        "names it. The user may approve (carry out the plan from your next step) or keep "
        "planning \u2014 their feedback comes back in the tool result; revise and present again."
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


def has_plan_heading(plan: object) -> bool:
    """Whether *plan* starts with a level-one heading once trimmed (``^#\\s+\\S``).

    Trimming and ``\\s`` are ECMAScript's whitespace, as in the original.

    >>> [has_plan_heading(p) for p in ["  # Ship\\n1. go", "## Ship", "#Ship", "#", "", 3]]
    [True, False, False, False, False, False]
    """
    if not isinstance(plan, str):
        return False
    text = str.__str__(plan)
    start = 0
    while start < len(text) and is_blank(text[start]):
        start += 1
    # After the "#", one or more whitespace characters and then anything else. The
    # trimmed text ends with a non-whitespace character, so one space is enough.
    return (
        text.startswith("#", start)
        and start + 1 < len(text)
        and is_blank(text[start + 1])
        and not is_blank(text[start + 1 :])
    )


def plan_review_question(
    plan: str, *, approve: str = "Approve", keep: str = "Keep planning"
) -> AskUserQuestionItem:
    """The ``exit_plan_mode`` question for *plan* (Markdown).

    >>> question = plan_review_question("# Release\\n1. Write tests\\n2. Ship")
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
        """What the model is told (as an error result unless approved).

        >>> PlanReviewVerdict(approved=False, feedback="split step 2").message
        'The user chose to keep planning; their feedback: split step 2'
        """
        if self.approved:
            return PLAN_APPROVED
        if self.feedback:
            return PLAN_KEEP_PLANNING_WITH_FEEDBACK.format(feedback=self.feedback)
        return PLAN_KEEP_PLANNING

    def result(self) -> ToolResult:
        """The tool result: approval is a normal result, keeping planning an error.

        The feedback is kept verbatim, line breaks included; only lone
        surrogates become U+FFFD, so the text is valid UTF-8.

        >>> PlanReviewVerdict(approved=False).result()
        ToolResult(text='Error: The user chose to keep planning; revise the plan and \
present it again.', is_error=True)
        """
        if self.approved:
            return ToolResult(PLAN_APPROVED)
        return ToolResult(replace_surrogates(f"Error: {self.message}"), is_error=True)


def plan_review_verdict(answer: object, *, approve: str = "Approve") -> PlanReviewVerdict:
    """Read the verdict from an answer to :func:`plan_review_question`.

    *answer* may be anything; what is not an exact approval keeps planning.
    Only the items whose id is ``plan-review`` count; others are ignored. The
    feedback is the ``custom`` of the one such item, verbatim.

    >>> plan_review_verdict({"answers": [{"id": "plan-review", "selected": ["Approve"]}]})
    PlanReviewVerdict(approved=True, feedback=None)
    >>> plan_review_verdict({"answers": [
    ...     {"id": "plan-review", "selected": [], "custom": "drop step 3"}]})
    PlanReviewVerdict(approved=False, feedback='drop step 3')
    """
    try:
        return _verdict(answer, approve)
    except Exception:  # noqa: BLE001 - an answer that cannot be read approves nothing
        return PlanReviewVerdict(approved=False)


def _is_exactly(value: object, text: str) -> bool:
    """Whether *value* is a string equal to *text*, judged by ``str`` itself.

    A str subclass whose ``__eq__`` always says yes cannot pass for another id.
    """
    return isinstance(value, str) and str.__eq__(value, text) is True


def _verdict(answer: object, approve: str) -> PlanReviewVerdict:
    if not isinstance(answer, Mapping):
        return PlanReviewVerdict(approved=False)
    items = cast("Mapping[str, object]", answer).get("answers")
    if not isinstance(items, list | tuple):
        return PlanReviewVerdict(approved=False)
    mine = [
        cast("Mapping[str, object]", item)
        for item in cast("Sequence[object]", items)
        if isinstance(item, Mapping)
        and _is_exactly(cast("Mapping[str, object]", item).get("id"), PLAN_REVIEW_ID)
    ]
    if len(mine) != 1:
        return PlanReviewVerdict(approved=False)
    (item,) = mine
    selected = item.get("selected")
    # Note: ``selected`` must be a list, as ANS-SEL-1 says; a tuple never approves.
    if (
        "custom" not in item
        and type(selected) is list
        and len(cast("list[object]", selected)) == 1
        and _is_exactly(cast("list[object]", selected)[0], approve)
    ):
        return PlanReviewVerdict(approved=True)
    custom = item.get("custom")
    feedback = str.__str__(custom) if isinstance(custom, str) and custom else None
    return PlanReviewVerdict(approved=False, feedback=feedback)


async def review_plan(
    service: AskingService,
    plan: object,
    *,
    signal: AbortSignal | None = None,
    agent: object = None,
    approve: str = "Approve",
    keep: str = "Keep planning",
    ask_id: str | None = None,
    answer_within: float | None = None,
) -> ToolResult:
    """Run ``exit_plan_mode`` for *plan*: ask for a review and tell the model the outcome.

    A plan without a level-one heading asks nobody and gives
    ``Error:`` and ``PLAN_NEEDS_HEADING``. Only an approval is a normal
    result; keeping planning, a dismissal and other failures are error
    results. *agent* is passed through untouched (``None`` means none).
    Cancellation propagates. *ask_id* names the ask for a durable provider,
    as for :func:`~dsh_user_interaction.tool.ask_user_question`.

    *answer_within*, in seconds, gives the human that long to review, as the
    tool's does (``PLAN-TIMEOUT-1``): UIs count it down, and when it passes
    the model reads that the user did not answer in time. A review has no
    defaults: a plan is never approved because nobody answered.

    >>> import asyncio
    >>> from dsh_user_interaction import ScriptedProvider, UserInteractionService
    >>> service = UserInteractionService()
    >>> _ = service.register_provider(ScriptedProvider(respond=lambda request: {
    ...     "answers": [{"id": "plan-review", "selected": [], "custom": "add a rollback step"}]}))
    >>> asyncio.run(review_plan(service, "# Release\\n1. Tag\\n2. Publish"))
    ToolResult(text='Error: The user chose to keep planning; their feedback: add a rollback \
step', is_error=True)
    >>> asyncio.run(review_plan(service, "1. Tag"))
    ToolResult(text='Error: exit_plan_mode requires a non-empty markdown plan starting with a # \
heading', is_error=True)
    """
    checked_id = checked_tool_ask_id(ask_id)
    seconds = checked_answer_within(answer_within) if answer_within is not None else None
    if not has_plan_heading(plan):
        return error_result(PLAN_NEEDS_HEADING)
    # The plain text of the plan: a str subclass's own methods are never called.
    question = plan_review_question(str.__str__(cast("str", plan)), approve=approve, keep=keep)
    request: dict[str, object] = {"questions": [question]}
    if agent is not None:
        request["agent"] = agent
    if signal is not None:
        request["signal"] = signal
    if checked_id is not None:
        request[ASK_ID_KEY] = checked_id
    if seconds is not None:
        request[DEADLINE_KEY] = time.time() + seconds
    answer, failure = await ask_through(service, cast("AskUserQuestionRequest[Any]", request))
    if failure is not None:
        if _is_dismissal(failure):
            return error_result(PLAN_DISMISSED)
        return error_result(describe_error(failure))
    return plan_review_verdict(answer, approve=approve).result()


def _is_dismissal(error: BaseException) -> bool:
    """Whether *error* is an ``ASK_CANCELLED``; a code that cannot be read is not one."""
    try:
        code = getattr(error, "code", None)
        return isinstance(code, str) and str.__eq__(code, ErrorCode.ASK_CANCELLED.value) is True
    except Exception:  # noqa: BLE001 - a hostile error is not a dismissal
        return False


async def exit_plan_mode(
    service: AskingService,
    arguments: object,
    *,
    signal: AbortSignal | None = None,
    agent: object = None,
    max_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
    ask_id: str | None = None,
    answer_within: float | None = None,
) -> ToolResult:
    """Run the ``exit_plan_mode`` tool on the model's raw *arguments* (a mapping or JSON text).

    Malformed arguments give one ``Error: <path>: <problem>`` line, as for
    ``ask_user_question``; then :func:`review_plan` runs on ``plan``, with
    the application's *ask_id* and *answer_within* (never the model's).

    >>> import asyncio
    >>> from dsh_user_interaction import UserInteractionService
    >>> asyncio.run(exit_plan_mode(UserInteractionService(), '{"plan": 7}'))
    ToolResult(text='Error: $.plan: expected a string, got number', is_error=True)
    """
    try:
        plain = read_json(arguments, max_bytes=max_bytes)
    except JsonError as error:
        return error_result(str(error))
    if not isinstance(plain, dict):
        return error_result(f"$: expected an object, got {json_type(plain)}")
    fields = cast("dict[str, object]", plain)
    if "plan" not in fields:
        return error_result("$.plan: required")
    plan = fields["plan"]
    if not isinstance(plan, str):
        return error_result(f"$.plan: expected a string, got {json_type(plan)}")
    return await review_plan(
        service, plan, signal=signal, agent=agent, ask_id=ask_id, answer_within=answer_within
    )
