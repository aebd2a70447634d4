"""An MCP server on stdio whose one tool, ``ask_user_question``, asks the client's user.

Run as a subprocess by ``tests/test_mcp.py`` and others (``tests/test_mcp_rounds.py``
runs several at once, as workers): the model-facing tool of
``dsh_user_interaction.tool`` runs on the server, with an
:class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider` registered
on its service, so every call asks the client through elicitation: by
``elicitation/create`` on a legacy connection, and by input-required rounds
on revision 2026-07-28 (``run_tool``).

What it reads from the environment:

* ``DSH_TEST_STATE_KEY``: the key that seals request states (else one of
  its own), so that workers given the same key accept each other's states.
* ``DSH_TEST_STATE_LEDGER``: the ledger of used request states that workers
  share (else each remembers its own, ``run_tool``'s default). A libpq URI,
  ``postgresql://...`` or ``postgres://...``, names a PostgreSQL database:
  a :class:`~dsh_user_interaction.extra.postgres.PostgresLedger` on it, in
  the schema ``DSH_TEST_STATE_LEDGER_SCHEMA`` (else the extra's default).
  Anything else is the path of a SQLite file: a
  :class:`~dsh_user_interaction.extra.mcp.SQLiteLedger` on it.
* ``DSH_TEST_ANSWER_WITHIN``: seconds, passed to the tool as
  ``answer_within=`` (else none): each ask's time limit.
* ``DSH_TEST_RECOMMENDED_DEFAULTS``: ``1`` passes ``recommended_defaults=True``
  to the tool (with ``answer_within=``, the defaults answer at the deadline).
* ``DSH_TEST_STATE_TTL``: seconds a request state lives, ``run_tool``'s
  ``ttl=`` (else its default).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server

from dsh_user_interaction import UserInteractionService
from dsh_user_interaction.extra.mcp import (
    DEFAULT_STATE_TTL,
    McpElicitationProvider,
    SQLiteLedger,
    StateLedger,
    run_tool,
)
from dsh_user_interaction.tool import ASK_USER_QUESTION_TOOL, ask_user_question

#: The environment variable holding the key that seals request states (else one of its own).
STATE_KEY_VARIABLE = "DSH_TEST_STATE_KEY"

#: The environment variable naming the ledger of used request states that workers
#: share: a SQLite file, or a PostgreSQL database by a ``postgresql://`` URI.
LEDGER_VARIABLE = "DSH_TEST_STATE_LEDGER"
#: The environment variable naming a PostgreSQL ledger's schema (else the extra's default).
LEDGER_SCHEMA_VARIABLE = "DSH_TEST_STATE_LEDGER_SCHEMA"
#: How a libpq URI begins, as opposed to a file's path.
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def ledger_from(environment: Mapping[str, str]) -> StateLedger | None:
    """The ledger *environment* names (see the module's docstring); ``None``: this process's own."""
    named = environment.get(LEDGER_VARIABLE)
    if not named:
        return None
    if not named.startswith(POSTGRES_SCHEMES):
        return SQLiteLedger(named)
    # Imported here: without a PostgreSQL ledger, the server needs no psycopg.
    from dsh_user_interaction.extra.postgres import DEFAULT_SCHEMA, PostgresLedger

    return PostgresLedger(named, schema=environment.get(LEDGER_SCHEMA_VARIABLE) or DEFAULT_SCHEMA)


LEDGER = ledger_from(os.environ)
#: The environment variable holding the request states' time to live, in seconds.
STATE_TTL_VARIABLE = "DSH_TEST_STATE_TTL"
STATE_TTL = float(os.environ.get(STATE_TTL_VARIABLE) or DEFAULT_STATE_TTL)
#: The environment variable holding the tool's ``answer_within=``, in seconds (else none).
ANSWER_WITHIN_VARIABLE = "DSH_TEST_ANSWER_WITHIN"
ANSWER_WITHIN = (
    float(os.environ[ANSWER_WITHIN_VARIABLE]) if os.environ.get(ANSWER_WITHIN_VARIABLE) else None
)
#: Whether the tool is given ``recommended_defaults=True``.
RECOMMENDED_DEFAULTS = os.environ.get("DSH_TEST_RECOMMENDED_DEFAULTS") == "1"

service = UserInteractionService()
service.register_provider(McpElicitationProvider())


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tool = types.Tool(
        name=ASK_USER_QUESTION_TOOL["name"],
        description=ASK_USER_QUESTION_TOOL["description"],
        input_schema=ASK_USER_QUESTION_TOOL["input_schema"],
    )
    return types.ListToolsResult(tools=[tool])


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    async def body() -> types.CallToolResult:
        result = await ask_user_question(
            service,
            params.arguments or {},
            answer_within=ANSWER_WITHIN,
            recommended_defaults=RECOMMENDED_DEFAULTS,
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], is_error=result.is_error
        )

    # One code path: elicitation requests on a legacy connection, rounds on 2026-07-28.
    return await run_tool(ctx, body, params=params, ledger=LEDGER, ttl=STATE_TTL)


async def main() -> None:
    name = "dsh-user-interaction-stdio"
    server: Server[Any] = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
    # A low-level server seals its request states only with this middleware (MCPServer
    # adds it). Workers given the same key (STATE_KEY_VARIABLE) accept each other's states.
    key = os.environ.get(STATE_KEY_VARIABLE)
    security = RequestStateSecurity(keys=[key]) if key else RequestStateSecurity.ephemeral()
    server.middleware.append(RequestStateBoundary(security, default_audience=name))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
