"""Deferred questions: Claude's run stops at a question, and resumes once it is answered.

Design notes:

* A ``PreToolUse`` hook that returns ``permissionDecision: "defer"`` stops a
  headless run at the tool call; the ``ResultMessage`` carries it as
  ``deferred_tool_use`` (``id``, ``name``, ``input``). The application asks
  (``answer_deferred``, through a durable provider), and the session is
  resumed later, by this process or another.
* Rule: the ask's ``askId`` is Claude's tool-use id, on both sides. The
  deferred call and the resumed session's call carry the same id, so with a
  ``DurableProvider`` the resumed session finds the ask already in the
  store: answered (returned at once), or still pending (waited for). It is
  shown once, answered once.
* The resumed session may settle the call by its ``PreToolUse`` hooks or by
  its permission request; ``answer_hooks`` and ``can_use_tool_for`` ask
  the same ask with the same id, so either, or both, give the one outcome.
"""

from __future__ import annotations

from typing import Any, Final, cast

from claude_agent_sdk import (
    DeferredToolUse,
    HookCallback,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    PermissionResult,
    PermissionResultAllow,
)
from claude_agent_sdk.types import (
    HookEvent,
    PreToolUseHookSpecificOutput,
    SyncHookJSONOutput,
)

from ..._abort import AbortSignal
from ..._types import AskingService
from ._permission import EXIT_PLAN_MODE, answer_question, check_settings, review_exit_plan
from ._questions import ASK_USER_QUESTION

__all__ = [
    "DEFER_REASON",
    "answer_deferred",
    "answer_hooks",
    "defer_hooks",
    "defer_questions",
    "hook_output_of",
]

#: The reason given with each deferral.
DEFER_REASON: Final = "the question waits for the user; the run resumes once it is answered"


async def defer_questions(
    hook_input: HookInput, tool_use_id: str | None, context: HookContext
) -> HookJSONOutput:
    """A ``PreToolUse`` hook deferring ``AskUserQuestion`` and ``ExitPlanMode``; never raises.

    Other tools get no decision (``{}``).

    >>> import asyncio
    >>> asyncio.run(defer_questions({"hook_event_name": "PreToolUse",
    ...     "tool_name": "AskUserQuestion"}, "toolu_1", {"signal": None}))["hookSpecificOutput"]
    {'hookEventName': 'PreToolUse', 'permissionDecision': 'defer', 'permissionDecisionReason': \
'the question waits for the user; the run resumes once it is answered'}
    """
    fields = cast("dict[str, object]", hook_input)
    if fields.get("hook_event_name") != "PreToolUse" or fields.get("tool_name") not in (
        ASK_USER_QUESTION,
        EXIT_PLAN_MODE,
    ):
        return {}
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "defer",
            "permissionDecisionReason": DEFER_REASON,
        }
    }


def defer_hooks() -> dict[HookEvent, list[HookMatcher]]:
    """``ClaudeAgentOptions.hooks`` that defer every question and plan review; never raises.

    >>> list(defer_hooks())
    ['PreToolUse']
    """
    callback: HookCallback = defer_questions
    return {
        "PreToolUse": [
            HookMatcher(matcher=f"{ASK_USER_QUESTION}|{EXIT_PLAN_MODE}", hooks=[callback])
        ]
    }


async def answer_deferred(
    service: AskingService,
    deferred: DeferredToolUse,
    *,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> PermissionResult:
    """Ask the question of a run's *deferred* tool use through *service*; Claude's result.

    ``deferred.id`` becomes the ``askId``, as ``can_use_tool_for`` makes
    the tool-use id of the resumed session's permission request: with a
    durable provider, both find the same ask. *signal* aborts the ask. Raises ``ValueError`` for a
    tool other than ``AskUserQuestion`` or ``ExitPlanMode`` (naming it) or a
    bad *answer_within*; every outcome of the ask is a result, as for
    ``answer_question`` and ``review_exit_plan``.
    """
    if deferred.name == ASK_USER_QUESTION:
        return await answer_question(
            service,
            deferred.input,
            tool_use_id=deferred.id,
            signal=signal,
            agent=agent,
            answer_within=answer_within,
            recommended_defaults=recommended_defaults,
        )
    if deferred.name == EXIT_PLAN_MODE:
        return await review_exit_plan(
            service,
            deferred.input,
            tool_use_id=deferred.id,
            agent=agent,
            answer_within=answer_within,
        )
    msg = (
        f"deferred tool use {deferred.id!r} is a call of {deferred.name!r}, "
        f"not of {ASK_USER_QUESTION} or {EXIT_PLAN_MODE}"
    )
    raise ValueError(msg)


def hook_output_of(result: PermissionResult) -> SyncHookJSONOutput:
    """A ``PreToolUse`` hook's output that decides a call as *result* does; never raises.

    An allow becomes ``permissionDecision: "allow"`` with its
    ``updatedInput``; a denial ``"deny"`` with its message as the reason,
    and, when it interrupts, ``continue: false`` with the message as the
    stop reason.

    >>> from claude_agent_sdk import PermissionResultDeny
    >>> hook_output_of(PermissionResultDeny(message="no", interrupt=True))["continue_"]
    False
    """
    if isinstance(result, PermissionResultAllow):
        allowed: PreToolUseHookSpecificOutput = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
        }
        if result.updated_input is not None:
            allowed["updatedInput"] = result.updated_input
        return {"hookSpecificOutput": allowed}
    denied: PreToolUseHookSpecificOutput = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": result.message,
    }
    if result.interrupt:
        return {"hookSpecificOutput": denied, "continue_": False, "stopReason": result.message}
    return {"hookSpecificOutput": denied}


def answer_hooks(
    service: AskingService,
    *,
    timeout: float | None = None,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> dict[HookEvent, list[HookMatcher]]:
    """``ClaudeAgentOptions.hooks`` that answer questions and plan reviews through *service*.

    A ``PreToolUse`` hook for ``AskUserQuestion`` and ``ExitPlanMode``: it
    asks as ``can_use_tool_for`` does, with the tool-use id as the
    ``askId`` and *signal* as the request's signal, and decides the call
    with ``hook_output_of``. For a resumed session, so that the call a run
    deferred is settled from the durable store whichever way Claude Code
    settles it. Claude Code gives a hook 60
    seconds unless *timeout* (seconds) says otherwise: pass a longer one when
    a human may still be answering. Raises ``TypeError`` or ``ValueError``
    at once for a bad *answer_within*, or for *recommended_defaults* without it.
    """
    check_settings(answer_within, recommended_defaults)

    async def answer(
        hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        fields = cast("dict[str, Any]", hook_input)
        tool_input = cast("dict[str, Any]", fields.get("tool_input") or {})
        named = tool_use_id or cast("str | None", fields.get("tool_use_id"))
        if fields.get("tool_name") == ASK_USER_QUESTION:
            result = await answer_question(
                service,
                tool_input,
                tool_use_id=named,
                signal=signal,
                agent=agent,
                answer_within=answer_within,
                recommended_defaults=recommended_defaults,
            )
        elif fields.get("tool_name") == EXIT_PLAN_MODE:
            result = await review_exit_plan(
                service,
                tool_input,
                tool_use_id=named,
                signal=signal,
                agent=agent,
                answer_within=answer_within,
            )
        else:
            return {}
        return hook_output_of(result)

    callback: HookCallback = answer
    matcher = HookMatcher(
        matcher=f"{ASK_USER_QUESTION}|{EXIT_PLAN_MODE}", hooks=[callback], timeout=timeout
    )
    return {"PreToolUse": [matcher]}
