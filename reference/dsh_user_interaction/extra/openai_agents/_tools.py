"""Our two tools as the OpenAI Agents SDK's own ``FunctionTool``.

Design notes:

* The model sees our definitions byte for byte: the name, the description
  and the JSON Schema of :data:`~dsh_user_interaction.tool.ASK_USER_QUESTION_TOOL`
  and :data:`~dsh_user_interaction.plan_review.EXIT_PLAN_MODE_TOOL`. Note:
  ``strict_json_schema`` is off. The SDK's strict mode would mark every
  property required (``header``, ``options``, ``multi_select``, an option's
  ``description``), which changes what the model is asked to send; our own
  checks read the arguments instead, and word each problem for the model.
* The body runs our tool functions, which never raise but for cancellation:
  every outcome is the text the model reads, ``Error: ...`` on failure.
* The call's ``call_id`` is the ask's ``askId``: a durable provider asked
  again for the same call (the step re-run after a restart) finds the ask it
  kept, and the human is never asked twice (``DUR-ID-1``).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from agents import FunctionTool
from agents.tool_context import ToolContext

from ..._tool import checked_answer_within
from ...plan_review import EXIT_PLAN_MODE_TOOL, exit_plan_mode
from ...tool import (
    ASK_USER_QUESTION_TOOL,
    DEFAULT_MAX_ARGUMENT_BYTES,
    AskingService,
    ToolDefinition,
    ToolResult,
    ask_user_question,
)

__all__ = [
    "ASK_USER_QUESTION",
    "EXIT_PLAN_MODE",
    "ToolOptions",
    "ask_user_question_tool",
    "checked_options",
    "exit_plan_mode_tool",
    "function_tool_of",
]

#: The name of the question tool, as the model calls it.
ASK_USER_QUESTION: Final = ASK_USER_QUESTION_TOOL["name"]
#: The name of the plan-review tool, as the model calls it.
EXIT_PLAN_MODE: Final = EXIT_PLAN_MODE_TOOL["name"]

#: A tool body: the SDK's context and the model's arguments as JSON text.
Invoke = Callable[[ToolContext[Any], str], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """What the application decides for every call of the tools (never the model)."""

    #: Seconds the human has to answer; ``None`` waits for as long as it takes.
    answer_within: float | None = None
    #: With *answer_within*: a question's recommended first option is its default.
    recommended_defaults: bool = False
    #: Arguments larger than this many bytes of JSON are refused.
    max_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES

    async def run(
        self, name: str, service: AskingService, arguments: str, call_id: str, agent: object
    ) -> ToolResult:
        """Run the tool *name* on the model's *arguments*, asking through *service*.

        The ask is named *call_id*. Raises ``ValueError`` for an empty
        *call_id* and propagates cancellation; every other outcome is the
        returned result.
        """
        if name == EXIT_PLAN_MODE:
            return await exit_plan_mode(
                service,
                arguments,
                agent=agent,
                max_bytes=self.max_bytes,
                ask_id=call_id,
                answer_within=self.answer_within,
            )
        return await ask_user_question(
            service,
            arguments,
            agent=agent,
            max_bytes=self.max_bytes,
            ask_id=call_id,
            answer_within=self.answer_within,
            recommended_defaults=self.recommended_defaults,
        )


def function_tool_of(
    definition: ToolDefinition, invoke: Invoke, *, needs_approval: bool
) -> FunctionTool:
    """The SDK tool for *definition*, run by *invoke*, its schema exactly ours (strict off)."""
    return FunctionTool(
        name=definition["name"],
        description=definition["description"],
        params_json_schema=copy.deepcopy(definition["input_schema"]),
        on_invoke_tool=invoke,
        strict_json_schema=False,
        needs_approval=needs_approval,
    )


def _direct(name: str, service: AskingService, options: ToolOptions) -> Invoke:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        result = await options.run(name, service, arguments, context.tool_call_id, context.agent)
        return result.text

    return invoke


def ask_user_question_tool(
    service: AskingService,
    *,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
    max_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
) -> FunctionTool:
    """``ask_user_question`` as a ``FunctionTool`` that asks through *service* while the run waits.

    The model reads exactly what
    :func:`~dsh_user_interaction.tool.ask_user_question` returns; the call's
    ``call_id`` is the ask's ``askId``. The options are the tool function's.
    Raises ``TypeError`` or ``ValueError`` for an *answer_within* that is
    not a positive number of seconds, or *recommended_defaults* without it.

    >>> from dsh_user_interaction import UserInteractionService
    >>> tool = ask_user_question_tool(UserInteractionService())
    >>> tool.name, tool.strict_json_schema, tool.needs_approval
    ('ask_user_question', False, False)
    """
    options = checked_options(answer_within, recommended_defaults, max_bytes)
    invoke = _direct(ASK_USER_QUESTION, service, options)
    return function_tool_of(ASK_USER_QUESTION_TOOL, invoke, needs_approval=False)


def exit_plan_mode_tool(
    service: AskingService,
    *,
    answer_within: float | None = None,
    max_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
) -> FunctionTool:
    """``exit_plan_mode`` as a ``FunctionTool`` that asks through *service* while the run waits.

    The model reads exactly what
    :func:`~dsh_user_interaction.plan_review.exit_plan_mode` returns: only
    an approval is a normal result. Raises as :func:`ask_user_question_tool`.

    >>> from dsh_user_interaction import UserInteractionService
    >>> exit_plan_mode_tool(UserInteractionService()).params_json_schema["required"]
    ['plan']
    """
    options = checked_options(answer_within, False, max_bytes)
    invoke = _direct(EXIT_PLAN_MODE, service, options)
    return function_tool_of(EXIT_PLAN_MODE_TOOL, invoke, needs_approval=False)


def checked_options(answer_within: float | None, recommended: bool, max_bytes: int) -> ToolOptions:
    """The options, checked now rather than at the model's first call."""
    if answer_within is not None or recommended:
        checked_answer_within(answer_within)  # the tool function's own check and words
    if isinstance(max_bytes, bool) or max_bytes <= 0:
        msg = f"max_bytes must be a positive number of bytes, got {max_bytes!r}"
        raise ValueError(msg)
    return ToolOptions(answer_within, recommended, max_bytes)
