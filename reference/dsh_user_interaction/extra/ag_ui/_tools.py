"""Our tools as AG-UI tools, and an AG-UI tool call run through them.

:func:`ag_ui_tools` gives ``ask_user_question`` and ``exit_plan_mode`` as the
protocol's ``Tool`` models, the exact definitions a model of ours sees.
:func:`run_tool_call` runs one of them for an AG-UI ``ToolCall`` and returns
the ``TOOL_CALL_RESULT`` event the model reads: the call's id becomes the
ask's ``askId`` (so a step run again after a restart finds the same durable
ask, and the same interrupt id) and its ``agUiToolCallId`` (so the interrupt
names the call it pauses). The result's text is the tool's own, byte for
byte; a failed call's text starts with ``Error:``, as the model always reads it.
"""

from __future__ import annotations

import copy
from typing import Any, Final, cast, final

from ag_ui.core import Tool, ToolCall, ToolCallResultEvent

from dsh_user_interaction import AbortSignal, AskingService, AskUserQuestionAnswer
from dsh_user_interaction import AskUserQuestionRequest as Request
from dsh_user_interaction.plan_review import EXIT_PLAN_MODE_TOOL, exit_plan_mode
from dsh_user_interaction.tool import ASK_USER_QUESTION_TOOL, ToolDefinition, ask_user_question

from ._interrupt import TOOL_CALL_ID_KEY

__all__ = ["TOOL_NAMES", "ag_ui_tool", "ag_ui_tools", "run_tool_call"]

#: The names of the tools :func:`run_tool_call` runs.
TOOL_NAMES: Final = frozenset({ASK_USER_QUESTION_TOOL["name"], EXIT_PLAN_MODE_TOOL["name"]})


def ag_ui_tool(definition: ToolDefinition = ASK_USER_QUESTION_TOOL) -> Tool:
    """*definition* as an AG-UI ``Tool``: the same name, description and JSON Schema.

    The schema is a copy each time, so a harness that edits it never changes
    the definition every later call serialises.

    >>> ag_ui_tool().name
    'ask_user_question'
    """
    return Tool(
        name=definition["name"],
        description=definition["description"],
        parameters=copy.deepcopy(definition["input_schema"]),
    )


def ag_ui_tools() -> list[Tool]:
    """``ask_user_question`` and ``exit_plan_mode``, as AG-UI tools, in that order."""
    return [ag_ui_tool(ASK_USER_QUESTION_TOOL), ag_ui_tool(EXIT_PLAN_MODE_TOOL)]


@final
class _NamedByCall:
    """A service that marks each request with the AG-UI tool call it came from."""

    __slots__ = ("_call", "_service")

    def __init__(self, service: AskingService, call: str) -> None:
        self._service = service
        self._call = call

    async def ask(self, request: Request[Any], /) -> AskUserQuestionAnswer:
        named = dict(request)
        named[TOOL_CALL_ID_KEY] = self._call
        return await self._service.ask(cast("Request[Any]", named))


async def run_tool_call(
    service: AskingService,
    tool_call: ToolCall,
    *,
    message_id: str,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> ToolCallResultEvent:
    """Run *tool_call* (``ask_user_question`` or ``exit_plan_mode``) through *service*.

    Returns the ``TOOL_CALL_RESULT`` event, as the tool message *message_id*,
    holding exactly the text our tool gives the model. The call's id is the
    ask's ``askId``. *answer_within* and *recommended_defaults* are the
    tools' own (``exit_plan_mode`` takes no defaults). Raises
    :class:`ValueError` for a tool this package does not have; everything else,
    a malformed argument included, is an ``Error:`` result the model reads.
    Cancellation propagates.
    """
    name = tool_call.function.name
    named = _NamedByCall(service, tool_call.id)
    arguments = tool_call.function.arguments
    if name == ASK_USER_QUESTION_TOOL["name"]:
        result = await ask_user_question(
            named,
            arguments,
            signal=signal,
            agent=agent,
            ask_id=tool_call.id,
            answer_within=answer_within,
            recommended_defaults=recommended_defaults,
        )
    elif name == EXIT_PLAN_MODE_TOOL["name"]:
        result = await exit_plan_mode(
            named,
            arguments,
            signal=signal,
            agent=agent,
            ask_id=tool_call.id,
            answer_within=answer_within,
        )
    else:
        msg = (
            f"tool call {tool_call.id!r}: no tool {name!r} here; the tools are {sorted(TOOL_NAMES)}"
        )
        raise ValueError(msg)
    return ToolCallResultEvent(
        message_id=message_id, tool_call_id=tool_call.id, content=result.text
    )
