"""A real MCP server and client, connected by the SDK's in-memory streams, with a tool call open.

The conformance subject and the tests need the server side of a tool call
in progress, to build :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider`
on, with a real client at the other end answering through its elicitation
callback. :class:`Connection` runs the low-level ``Server`` and a
``ClientSession`` over ``create_client_server_memory_streams()`` (JSON-RPC
messages, as over any transport), in one task of its own: the SDK's task
groups must be entered and left by the same task, and the suite builds a
subject in one task and closes it in another. The client calls the tool
``hold``, whose handler hands over its request context and waits until the
connection closes. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.client.session import ClientSession, ElicitationFnT
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams

__all__ = ["HOLD_TOOL", "Connection", "end_runner"]

#: The tool the client calls to keep a tool call open.
HOLD_TOOL: Final = "hold"


class Connection:
    """A server and a client over in-memory streams; :meth:`open` returns the open tool call.

    *elicitation_callback* answers the server's elicitation requests; without
    one, the client declares no elicitation capability.
    """

    def __init__(self, elicitation_callback: ElicitationFnT | None = None) -> None:
        self._callback = elicitation_callback
        self._closing = asyncio.Event()
        self._opened: asyncio.Future[ServerRequestContext[Any, Any]] | None = None
        self._runner: asyncio.Task[None] | None = None
        #: The client session, once initialised.
        self.session: ClientSession | None = None

    async def open(self, limit: float = 5.0) -> ServerRequestContext[Any, Any]:
        """Connect, call the ``hold`` tool, and return its server-side request context.

        Raises ``TimeoutError`` when that takes more than *limit* seconds.
        """
        loop = asyncio.get_running_loop()
        opened: asyncio.Future[ServerRequestContext[Any, Any]] = loop.create_future()
        self._opened = opened
        runner = loop.create_task(self._run(), name="dsh-user-interaction mcp connection")
        self._runner = runner
        either: set[asyncio.Future[Any]] = {opened, runner}
        done, _ = await asyncio.wait(either, timeout=limit, return_when="FIRST_COMPLETED")
        if opened in done:
            return opened.result()
        if runner in done:
            runner.result()  # raises what ended it
        await self.aclose()
        msg = f"the MCP connection did not open a tool call within {limit:g} s"
        raise TimeoutError(msg)

    async def aclose(self, limit: float = 1.0) -> None:
        """End the tool call and the connection; cancel what does not end within *limit* s."""
        self._closing.set()
        await end_runner(self._runner, limit)

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tool = types.Tool(name=HOLD_TOOL, input_schema={"type": "object", "properties": {}})
        return types.ListToolsResult(tools=[tool])

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        opened = self._opened
        if opened is not None and not opened.done():
            opened.set_result(ctx)
        await self._closing.wait()
        return types.CallToolResult(content=[types.TextContent(type="text", text="closed")])

    async def _call(self, session: ClientSession) -> None:
        with contextlib.suppress(MCPError):
            await session.call_tool(HOLD_TOOL, {})

    async def _run(self) -> None:
        server: Server[Any] = Server(
            "dsh-user-interaction-test",
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
        )
        async with (
            create_client_server_memory_streams() as (client_streams, server_streams),
            anyio.create_task_group() as group,
        ):
            server_read, server_write = server_streams

            async def serve() -> None:
                await server.run(server_read, server_write, server.create_initialization_options())

            group.start_soon(serve)
            client_read, client_write = client_streams
            async with ClientSession(
                client_read, client_write, elicitation_callback=self._callback
            ) as session:
                await session.initialize()
                self.session = session
                group.start_soon(self._call, session)
                await self._closing.wait()
            group.cancel_scope.cancel()


async def end_runner(runner: asyncio.Task[None] | None, limit: float) -> None:
    """Wait *limit* seconds for a connection's task to end, then cancel it and wait as long."""
    if runner is None or runner.done():
        return
    done, _ = await asyncio.wait({runner}, timeout=limit)
    if not done:
        runner.cancel()
        await asyncio.wait({runner}, timeout=limit)
    if runner.done() and not runner.cancelled():
        runner.exception()  # retrieved: a connection torn down may end either way
