"""Our ``ask_user_question`` and ``exit_plan_mode`` as native pydantic-ai tools.

Design notes:

* Each tool carries our definition byte for byte (name, description, JSON
  Schema): pydantic-ai does not validate the arguments, so our tool reads
  them, as it does for any harness, and words a malformed one with its JSON
  path.
* The body calls our tool function with the call's ``tool_call_id`` as the
  ask's ``askId``, so a durable provider asked again for the same call (a
  re-run after a restart) finds the same ask and never shows it twice.
* A normal result is the tool's exact text in a successful
  ``ToolReturnPart``; an error result (``Error: ...``) is the same text,
  raised as ``ToolFailed``, so the part's ``outcome`` is ``failed`` and the
  model neither retries nor mistakes it for an answer.
* The deferred variant checks the arguments exactly as the tool and the
  service do (``check_request``), then raises ``CallDeferred``: the run
  ends with ``DeferredToolRequests`` and nobody has been asked yet
  (``answer_deferred`` asks). Malformed arguments are a failed result at
  once, never a deferred call.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Final, final

from pydantic_ai import RunContext, Tool
from pydantic_ai.exceptions import CallDeferred, ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from dsh_user_interaction import (
    AbortSignal,
    AskingService,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    check_request,
)
from dsh_user_interaction.durable import ASK_ID_KEY
from dsh_user_interaction.plan_review import EXIT_PLAN_MODE_TOOL, exit_plan_mode
from dsh_user_interaction.tool import (
    ASK_USER_QUESTION_TOOL,
    ToolDefinition,
    ToolResult,
    ask_user_question,
)

__all__ = [
    "ASK_USER_QUESTION",
    "EXIT_PLAN_MODE",
    "SEAM_TOOLS",
    "checked_options",
    "checked_seconds",
    "deferred_seam_toolset",
    "run_seam_tool",
    "seam_toolset",
]

#: The name of our question tool.
ASK_USER_QUESTION: Final = ASK_USER_QUESTION_TOOL["name"]
#: The name of our plan-review tool.
EXIT_PLAN_MODE: Final = EXIT_PLAN_MODE_TOOL["name"]
#: Our tools' definitions, by name.
SEAM_TOOLS: Final[dict[str, ToolDefinition]] = {
    ASK_USER_QUESTION: ASK_USER_QUESTION_TOOL,
    EXIT_PLAN_MODE: EXIT_PLAN_MODE_TOOL,
}


async def run_seam_tool(
    name: str,
    service: AskingService,
    arguments: object,
    *,
    ask_id: str | None,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> ToolResult:
    """Run our tool *name* on the model's *arguments* through *service*, the ask named *ask_id*.

    *signal*, *agent*, *answer_within* and *recommended_defaults* are our
    tools' own (``exit_plan_mode`` has no defaults, and ignores the last).
    Raises ``ValueError`` for a name that is not one of ``SEAM_TOOLS`` and
    for what our tools refuse of these options; otherwise never raises but
    ``CancelledError``: every outcome is the tool's ``ToolResult``.
    """
    if name == ASK_USER_QUESTION:
        return await ask_user_question(
            service,
            arguments,
            signal=signal,
            agent=agent,
            ask_id=ask_id,
            answer_within=answer_within,
            recommended_defaults=recommended_defaults,
        )
    if name == EXIT_PLAN_MODE:
        return await exit_plan_mode(
            service,
            arguments,
            signal=signal,
            agent=agent,
            ask_id=ask_id,
            answer_within=answer_within,
        )
    msg = f"tool {name!r} is not one of ours ({', '.join(sorted(SEAM_TOOLS))})"
    raise ValueError(msg)


def checked_seconds(seconds: object) -> float | None:
    """*seconds* (an ``answer_within``), checked: ``None`` or a positive, finite number.

    Raises ``ValueError`` otherwise, naming the value.
    """
    if seconds is None:
        return None
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds <= 0
    ):
        msg = f"answer_within must be a positive, finite number of seconds, got {seconds!r}"
        raise ValueError(msg)
    return float(seconds)


def checked_options(answer_within: object, *, recommended_defaults: bool) -> None:
    """Check our tools' timing options: ``ValueError`` for a bad pair, naming the problem."""
    checked_seconds(answer_within)
    if recommended_defaults and answer_within is None:
        msg = "recommended_defaults needs answer_within: defaults answer only when time runs out"
        raise ValueError(msg)


def _returned(result: ToolResult) -> str:
    """The model's text for *result*: returned, or raised as ``ToolFailed`` for an error."""
    if result.is_error:
        raise ToolFailed(result.text)
    return result.text


def _tool(definition: ToolDefinition, function: Callable[..., Awaitable[str]]) -> Tool[Any]:
    return Tool.from_schema(
        function,
        name=definition["name"],
        description=definition["description"],
        json_schema=definition["input_schema"],
        takes_ctx=True,
    )


def seam_toolset(
    service: AskingService,
    *,
    plan_review: bool = True,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> FunctionToolset[Any]:
    """A toolset of our ``ask_user_question`` (and ``exit_plan_mode``) asking through *service*.

    Pass it as ``Agent(..., toolsets=[seam_toolset(service)])``. Each call
    asks with its ``tool_call_id`` as ``askId``; the model reads our tool's
    exact text in the ``ToolReturnPart`` (an error result as a failed one).
    *plan_review* adds ``exit_plan_mode``; *signal* (aborts every pending
    ask), *agent*, *answer_within* (seconds) and *recommended_defaults* are
    passed to each ask, as our tools take them. Raises ``ValueError`` for an
    *answer_within* that is not a positive, finite number, or
    *recommended_defaults* without it.
    """
    checked_options(answer_within, recommended_defaults=recommended_defaults)

    def bind(name: str) -> Callable[..., Awaitable[str]]:
        async def call(ctx: RunContext[Any], **arguments: object) -> str:
            result = await run_seam_tool(
                name,
                service,
                dict(arguments),
                ask_id=ctx.tool_call_id or None,
                signal=signal,
                agent=agent,
                answer_within=answer_within,
                recommended_defaults=recommended_defaults,
            )
            return _returned(result)

        return call

    names = list(SEAM_TOOLS) if plan_review else [ASK_USER_QUESTION]
    return FunctionToolset([_tool(SEAM_TOOLS[name], bind(name)) for name in names])


@final
class _Probed(Exception):
    """Raised by the probe once the tool has checked the arguments and is about to ask."""


@final
class _Probe:
    """A service that runs the service's request checks, records a pass, and asks nobody."""

    __slots__ = ("asked",)

    def __init__(self) -> None:
        self.asked = False

    async def ask(self, request: AskUserQuestionRequest[Any], /) -> AskUserQuestionAnswer:
        check_request(request)  # what ask() raises before any provider (SVC-ORDER-*)
        self.asked = True
        raise _Probed


def deferred_seam_toolset(*, plan_review: bool = True) -> FunctionToolset[Any]:
    """A toolset of our tools whose well-formed calls are deferred, for a durable pause.

    A call whose arguments our tool accepts raises ``CallDeferred`` (its
    metadata holds the ``askId``, the ``tool_call_id``), so the run ends with
    ``DeferredToolRequests``; ``answer_deferred`` asks them and builds the
    ``DeferredToolResults`` to resume the run with. Malformed arguments get
    the tool's error text at once, as a failed ``ToolReturnPart``.
    """

    def bind(name: str) -> Callable[..., Awaitable[str]]:
        async def call(ctx: RunContext[Any], **arguments: object) -> str:
            probe = _Probe()
            ask_id = ctx.tool_call_id or None
            result = await run_seam_tool(name, probe, dict(arguments), ask_id=ask_id)
            if probe.asked:
                raise CallDeferred(metadata={ASK_ID_KEY: ask_id})
            return _returned(result)

        return call

    names = list(SEAM_TOOLS) if plan_review else [ASK_USER_QUESTION]
    return FunctionToolset([_tool(SEAM_TOOLS[name], bind(name)) for name in names])
