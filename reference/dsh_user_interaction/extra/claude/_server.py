"""The seam's own tools, ``ask_user_question`` and ``exit_plan_mode``, as Claude's native tools.

Design notes:

* The SDK serves an in-process MCP server to Claude Code (``type: "sdk"``);
  its tools reach the model as ``mcp__<server>__<tool>``. Each call runs the
  package's tool function, so the model reads exactly the texts it reads
  anywhere else (``ToolResult.text``, an error flagged ``isError``).
* Claude Code names the tool use of each call in the request's
  ``_meta["claudecode/toolUseId"]``. ``question_server`` reads it and
  makes it the ask's ``askId``, so a durable ask survives a restart. The
  SDK's ``tool`` decorator hands a handler the arguments only, so
  ``question_tools`` (for a server of your own, with your other tools)
  cannot, and its asks are not named.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any, Final

from claude_agent_sdk import McpSdkServerConfig, SdkMcpTool, tool
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from ..._plan_review import EXIT_PLAN_MODE_TOOL, exit_plan_mode
from ..._tool import ASK_USER_QUESTION_TOOL, ToolDefinition, ToolResult, ask_user_question
from ..._types import AskingService
from ..._version import __version__

__all__ = ["TOOL_USE_ID_META", "question_server", "question_tools", "tool_name"]

#: The ``_meta`` key in which Claude Code names the tool use of an MCP tool call.
TOOL_USE_ID_META: Final = "claudecode/toolUseId"

_Run = Callable[[AskingService, object, "str | None"], Awaitable[ToolResult]]


async def _run_question(
    service: AskingService, arguments: object, ask_id: str | None
) -> ToolResult:
    return await ask_user_question(service, arguments, ask_id=ask_id)


async def _run_plan(service: AskingService, arguments: object, ask_id: str | None) -> ToolResult:
    return await exit_plan_mode(service, arguments, ask_id=ask_id)


def _tools(plan_review: bool) -> list[tuple[ToolDefinition, _Run]]:
    chosen: list[tuple[ToolDefinition, _Run]] = [(ASK_USER_QUESTION_TOOL, _run_question)]
    if plan_review:
        chosen.append((EXIT_PLAN_MODE_TOOL, _run_plan))
    return chosen


def tool_name(server: str, tool: str = "ask_user_question") -> str:
    """The name Claude's model sees for *tool* of the SDK MCP server named *server*.

    Use it in ``allowed_tools`` or to recognise the call in messages.

    >>> tool_name("user")
    'mcp__user__ask_user_question'
    """
    return f"mcp__{server}__{tool}"


def question_server(
    service: AskingService, *, name: str = "user", plan_review: bool = True
) -> McpSdkServerConfig:
    """An in-process MCP server offering the seam's tools to Claude, asking through *service*.

    Put it in ``ClaudeAgentOptions(mcp_servers={name: ...})``. It offers
    ``ask_user_question`` and, unless *plan_review* is false,
    ``exit_plan_mode``; each call's tool-use id becomes its ``askId``. Raises
    ``ValueError`` for an empty *name*.

    >>> from dsh_user_interaction import UserInteractionService
    >>> question_server(UserInteractionService())["type"]
    'sdk'
    """
    if not name:
        msg = "name must be a non-empty server name"
        raise ValueError(msg)
    chosen = _tools(plan_review)
    runs = {definition["name"]: run for definition, run in chosen}
    wire = [
        Tool(
            name=definition["name"],
            description=definition["description"],
            # A copy: nothing the server or a client does may change the definitions.
            input_schema=copy.deepcopy(definition["input_schema"]),
        )
        for definition, _ in chosen
    ]

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=wire)

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        run = runs.get(params.name)
        if run is None:
            return _result(ToolResult(f"Error: unknown tool {params.name!r}", is_error=True))
        meta: dict[str, object] = dict(params.meta or {})
        tool_use_id = meta.get(TOOL_USE_ID_META)
        ask_id = tool_use_id if isinstance(tool_use_id, str) and tool_use_id else None
        return _result(await run(service, params.arguments or {}, ask_id))

    server: Server[Any] = Server(
        name, version=__version__, on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )
    return McpSdkServerConfig(type="sdk", name=name, instance=server)


def _result(result: ToolResult) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=result.text)], is_error=result.is_error
    )


def question_tools(service: AskingService, *, plan_review: bool = True) -> list[SdkMcpTool[Any]]:
    """The seam's tools as the SDK's ``SdkMcpTool`` objects, for ``create_sdk_mcp_server``.

    For a server of your own that holds other tools too. The SDK hands a
    tool the arguments only, so these asks carry no ``askId``: prefer
    ``question_server`` for durable asks. The SDK also checks the arguments
    against the tool's schema first, and words what breaks it itself
    (``Input validation error: ...``). Never raises.

    >>> from claude_agent_sdk import create_sdk_mcp_server
    >>> from dsh_user_interaction import UserInteractionService
    >>> tools = question_tools(UserInteractionService())
    >>> [t.name for t in tools]
    ['ask_user_question', 'exit_plan_mode']
    >>> create_sdk_mcp_server("mine", tools=tools)["name"]
    'mine'
    """
    made: list[SdkMcpTool[Any]] = []
    for definition, run in _tools(plan_review):

        def handler_for(run: _Run) -> Callable[[Any], Awaitable[dict[str, Any]]]:
            async def handler(arguments: Any) -> dict[str, Any]:  # noqa: ANN401 - the SDK's own type
                result = await run(service, arguments, None)
                return {
                    "content": [{"type": "text", "text": result.text}],
                    "is_error": result.is_error,
                }

            return handler

        schema = copy.deepcopy(definition["input_schema"])
        decorate = tool(definition["name"], definition["description"], schema)
        made.append(decorate(handler_for(run)))
    return made
