"""Claude's permission callback answered by the seam: ``AskUserQuestion`` and ``ExitPlanMode``.

Design notes:

* Claude Code asks the application for permission to run a tool through the
  SDK's ``can_use_tool`` callback. For ``AskUserQuestion`` the application
  *is* the UI: it allows the call with the human's answers in
  ``updated_input["answers"]``, or denies it with a message the model reads.
* Every outcome of the seam maps to one result, and the model can tell them
  apart by the message, which is the seam's own text where it has one
  (``MESSAGES``, ``TIMED_OUT_MESSAGE``, the plan-review texts). A dismissal
  and an abort interrupt the turn (the human wants to speak, or the program
  stopped); a timeout, a disposed provider and a defaulted answer do not.
* Once the settings are checked (``check_settings``, when a callback is
  made), nothing here raises but cancellation: an input the seam cannot
  represent, a broken answer and a failing service are each a denial that
  names the problem, so the run goes on and the model can try again.
* Claude's tool-use id (``ToolPermissionContext.tool_use_id``) becomes the
  request's ``askId``: with a durable provider, the same call asked again
  after a restart finds the same ask (``DUR-REASK-1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from claude_agent_sdk import (
    CanUseTool,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from ..._abort import AbortSignal
from ..._errors import ErrorCode, UserInteractionError
from ..._json import js_stringify
from ..._plan_review import PLAN_DISMISSED, review_plan
from ..._tool import DEFAULTED_NOTE as _DEFAULTED_NOTE
from ..._tool import ask_through, checked_answer_within, describe_error
from ..._types import AskingService, AskUserQuestionAnswer
from ._questions import ASK_USER_QUESTION, answers_of, request_of

__all__ = [
    "DEFAULTED_NOTE",
    "EXIT_PLAN_MODE",
    "answer_question",
    "can_use_tool_for",
    "check_settings",
    "deny_of",
    "review_exit_plan",
]

#: The name of Claude Code's built-in plan-review tool.
EXIT_PLAN_MODE: Final = "ExitPlanMode"

#: What the model reads before the answers when the application's defaults answered
#: (``TOOL-DEFAULT-1``): the words the ``ask_user_question`` tool uses.
DEFAULTED_NOTE: Final = _DEFAULTED_NOTE

#: The codes whose denial interrupts the turn: the human or the program stopped it.
_INTERRUPTING: Final = frozenset({ErrorCode.ASK_CANCELLED, ErrorCode.ASK_ABORTED})


def check_settings(answer_within: float | None, recommended_defaults: bool) -> None:
    """Raise now what a question would raise later for these settings.

    ``TypeError`` or ``ValueError`` for an *answer_within* that is not a
    positive number of seconds, or *recommended_defaults* without it.
    """
    if answer_within is not None or recommended_defaults:
        checked_answer_within(answer_within)


def deny_of(error: BaseException) -> PermissionResultDeny:
    """The denial that tells Claude's model how an ask failed with *error*.

    The message is the error's own (the seam's fixed texts for its codes).
    A dismissal (``ASK_CANCELLED``) and an abort (``ASK_ABORTED``) interrupt
    the turn; a timeout (an ``ASK_ABORTED`` that ``timed_out``), a disposed
    provider and every other failure let the model go on. Never raises.

    >>> from dsh_user_interaction import ErrorCode, UserInteractionError
    >>> deny_of(UserInteractionError.of(ErrorCode.ASK_CANCELLED))
    PermissionResultDeny(behavior='deny', message='the user cancelled ask_user_question', \
interrupt=True)
    """
    code = getattr(error, "code", None)
    timed_out = getattr(error, "timed_out", False) is True
    interrupt = isinstance(code, ErrorCode) and code in _INTERRUPTING and not timed_out
    return PermissionResultDeny(message=describe_error(error), interrupt=interrupt)


async def answer_question(
    service: AskingService,
    tool_input: Mapping[str, Any],
    *,
    tool_use_id: str | None = None,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> PermissionResult:
    """Ask Claude's ``AskUserQuestion`` *tool_input* through *service*; Claude's result.

    An answer allows the call with ``updated_input`` holding the input and
    ``answers`` (question text to label, ``"A, B"`` or free text; a skipped
    question left out). Every other outcome is a denial (``deny_of``);
    an answer made of the application's defaults is a denial too, whose
    message is ``DEFAULTED_NOTE``, ``" answers: "`` and the answers as
    JSON, so the model never takes them for the human's. An input
    the seam cannot represent is denied with the ``BAD_REQUEST`` message
    naming the field, and nobody is asked. *tool_use_id* becomes the ask's
    ``askId``; *signal* aborts the ask (the SDK gives the callback none:
    the application's own, say for a shutdown); *agent*, *answer_within*
    and *recommended_defaults* are as for ``request_of``. Raises
    ``TypeError`` or ``ValueError`` for a bad *tool_use_id* or
    *answer_within*, and lets cancellation through.

    >>> import asyncio
    >>> from dsh_user_interaction import ScriptedProvider, UserInteractionService
    >>> service = UserInteractionService()
    >>> _ = service.register_provider(ScriptedProvider(
    ...     respond=lambda request: {"answers": [{"id": "q1", "selected": ["Tabs"]}]}))
    >>> tool_input = {"questions": [{"question": "Indent?", "header": "Style",
    ...     "options": [{"label": "Tabs"}, {"label": "Spaces"}], "multiSelect": False}]}
    >>> asyncio.run(answer_question(service, tool_input)).updated_input["answers"]
    {'Indent?': 'Tabs'}
    """
    try:
        request = request_of(
            tool_input,
            ask_id=tool_use_id,
            answer_within=answer_within,
            recommended_defaults=recommended_defaults,
        )
    except UserInteractionError as error:
        return deny_of(error)
    if agent is not None:
        cast("dict[str, object]", request)["agent"] = agent
    if signal is not None:
        cast("dict[str, object]", request)["signal"] = signal
    answer, failure = await ask_through(service, request)
    if failure is not None:
        return deny_of(failure)
    try:
        answers = answers_of(tool_input, cast("AskUserQuestionAnswer", answer))
    except UserInteractionError as error:
        return deny_of(error)
    if type(answer) is dict and cast("dict[str, object]", answer).get("defaulted") is True:
        # TOOL-DEFAULT-1: Claude's answers cannot say "defaulted"; the model reads it instead.
        return PermissionResultDeny(message=f"{DEFAULTED_NOTE} answers: {js_stringify(answers)}")
    return PermissionResultAllow(updated_input={**tool_input, "answers": answers})


async def review_exit_plan(
    service: AskingService,
    tool_input: Mapping[str, Any],
    *,
    tool_use_id: str | None = None,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
) -> PermissionResult:
    """Review the plan of Claude's ``ExitPlanMode`` *tool_input* through *service*.

    The plan (``tool_input["plan"]``) is shown as the seam's plan review
    (``dsh_user_interaction.plan_review``). Approval allows the call as
    Claude sent it; keeping planning denies it with the human's feedback; a
    dismissal denies it with ``PLAN_DISMISSED`` and interrupts the turn;
    a plan without a ``#`` heading, a timeout or a failure deny it with the
    seam's text. *tool_use_id* becomes the ask's ``askId``; *signal* aborts
    it. Raises
    ``TypeError`` or ``ValueError`` for a bad *tool_use_id* or
    *answer_within*; lets cancellation through.
    """
    result = await review_plan(
        service,
        tool_input.get("plan"),
        signal=signal,
        agent=agent,
        ask_id=tool_use_id,
        answer_within=answer_within,
    )
    if not result.is_error:
        return PermissionResultAllow(updated_input=dict(tool_input))
    message = result.text.removeprefix("Error: ")
    return PermissionResultDeny(message=message, interrupt=message == PLAN_DISMISSED)


def can_use_tool_for(
    service: AskingService,
    *,
    otherwise: CanUseTool | None = None,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
    plan_review: bool = True,
) -> CanUseTool:
    """A ``can_use_tool`` callback that asks the human through *service*.

    ``AskUserQuestion`` goes to ``answer_question`` and, unless
    *plan_review* is false, ``ExitPlanMode`` to ``review_exit_plan``,
    each with Claude's tool-use id as the ``askId`` and *signal* (the
    application's, since the SDK gives none) as the request's signal, so
    aborting it ends every ask in flight. Every other tool goes
    to *otherwise*, or is allowed unchanged when there is none. Raises
    ``TypeError`` or ``ValueError`` at once for a bad *answer_within*, or
    for *recommended_defaults* without it.

    >>> from claude_agent_sdk import ClaudeAgentOptions
    >>> from dsh_user_interaction import UserInteractionService
    >>> options = ClaudeAgentOptions(can_use_tool=can_use_tool_for(UserInteractionService()))
    """
    check_settings(answer_within, recommended_defaults)

    async def can_use_tool(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        if tool_name == ASK_USER_QUESTION:
            return await answer_question(
                service,
                tool_input,
                tool_use_id=context.tool_use_id,
                signal=signal,
                agent=agent,
                answer_within=answer_within,
                recommended_defaults=recommended_defaults,
            )
        if plan_review and tool_name == EXIT_PLAN_MODE:
            return await review_exit_plan(
                service,
                tool_input,
                tool_use_id=context.tool_use_id,
                signal=signal,
                agent=agent,
                answer_within=answer_within,
            )
        if otherwise is not None:
            return await otherwise(tool_name, tool_input, context)
        return PermissionResultAllow()

    return can_use_tool
