"""The server-side provider on revision 2026-07-28, as a suite subject: each ask through rounds.

The suite asks a provider and expects the answer back; on 2026-07-28 an ask
lives in a tool call that ends with an input request and is called again.
:class:`RoundTripProvider` is that whole path, in process. Each ``ask()`` is
one call of the tool ``ask`` of a real ``MCPServer``, whose body asks the
request through an :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider`
under :func:`~dsh_user_interaction.extra.mcp.run_tool`; a real ``Client``,
made with ``mode="2026-07-28"``, drives the rounds, and its elicitation
callback is the driver's human (:class:`~dsh_user_interaction.extra.mcp.testing.Human`).

The request object itself reaches the body (by a token in the tool's
arguments, in process), so the body asks with its signal, and the body's
outcome, the answer or the error, comes back as the very object. Between
rounds nobody waits on the server: an abort or a cancellation of ``ask()``
ends the client's call, which withdraws the form from the human.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Final

import mcp_types as types
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from dsh_user_interaction_conformance import Subject, with_capabilities

from ._connection import end_runner
from ._driver import CAPABILITIES, CAPABILITIES_WITHOUT_CUSTOM_TEXT, ElicitationDriver, Human
from ._provider import McpElicitationProvider, abort_future
from ._rounds import ROUND_TRIP_VERSION
from ._run_tool import run_tool

__all__ = [
    "ROUND_TRIP_TOOL",
    "RoundTripProvider",
    "make_round_trip_subject",
    "mcp_round_trip_subject",
]

#: The tool each ask calls.
ROUND_TRIP_TOOL: Final = "ask"
#: Seconds the client's call may take to end once it is cancelled.
_GRACE: Final = 1.0


class RoundTripProvider:
    """A provider whose every ``ask()`` is a tool call on 2026-07-28, answered in rounds.

    *inner* is the server-side provider under test (a fresh
    :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider` by
    default, or a variant of it); *human* is the client's elicitation
    callback. Call :meth:`open` before asking and :meth:`aclose` after: the
    client's connection is entered and left in a task of its own.
    """

    def __init__(self, human: Human, inner: McpElicitationProvider | None = None) -> None:
        self.inner = inner if inner is not None else McpElicitationProvider()
        self.human = human
        self._server = MCPServer("dsh-user-interaction-rounds")
        self._tokens = itertools.count(1)
        self._calls: dict[str, tuple[AskUserQuestionRequest[Any], list[object]]] = {}
        self._keys: dict[str, str] = {}
        self._client: Client | None = None
        self._runner: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._server.tool(name=ROUND_TRIP_TOOL)(self._tool)

    async def _tool(self, ctx: Context, token: str) -> str | types.InputRequiredResult:
        """The server's tool: ask the request of *token* through the provider under test."""
        request, outcome = self._calls[token]

        async def body() -> str:
            try:
                outcome.append(await self.inner.ask(request))
            except UserInteractionError as error:
                outcome.append(error)
            return "settled"

        result = await run_tool(ctx, body)
        if isinstance(result, types.InputRequiredResult):
            # The key of the form the human gets (the body asks once): how the driver finds it.
            for key in result.input_requests or {}:
                self._keys[token] = key
        return result

    async def open(self, limit: float = 5.0) -> None:
        """Connect the client to the server, in a task of its own; within *limit* seconds."""
        opened = asyncio.Event()

        async def run() -> None:
            async with Client(
                self._server, mode=ROUND_TRIP_VERSION, elicitation_callback=self.human
            ) as client:
                self._client = client
                opened.set()
                await self._closing.wait()

        self._runner = asyncio.ensure_future(run())
        waiting = asyncio.ensure_future(opened.wait())
        done, _ = await asyncio.wait(
            {self._runner, waiting}, timeout=limit, return_when="FIRST_COMPLETED"
        )
        waiting.cancel()
        if self._runner in done:
            self._runner.result()  # raises what ended it
        if not opened.is_set():
            await self.aclose()
            msg = f"the MCP client did not connect within {limit:g} s"
            raise TimeoutError(msg)

    async def aclose(self, limit: float = 1.0) -> None:
        """Disconnect; cancel what does not end within *limit* seconds."""
        self._closing.set()
        await end_runner(self._runner, limit)

    def number_of(self, request: AskUserQuestionRequest[Any]) -> str | None:
        """The key of the input request *request*'s last round sent, or ``None``."""
        token = next((t for t, (r, _) in self._calls.items() if r is request), None)
        return None if token is None else self._keys.get(token)

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        """Call the tool for *request* and drive its rounds; the body's answer, or its error."""
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        client = self._client
        if client is None:
            msg = "RoundTripProvider.ask() before open()"
            raise RuntimeError(msg)
        token = str(next(self._tokens))
        outcome: list[object] = []
        self._calls[token] = (request, outcome)
        aborted, remove = abort_future(signal)
        call = asyncio.ensure_future(client.call_tool(ROUND_TRIP_TOOL, {"token": token}))
        either: set[asyncio.Future[Any]] = {call, aborted}
        try:
            try:
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                call.cancel()
                await asyncio.wait({call}, timeout=_GRACE)
                raise
            if not call.done():
                # Between rounds nobody waits on the server: end the client's call.
                call.cancel()
                await asyncio.wait({call}, timeout=_GRACE)
                raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
            result = call.result()
        finally:
            remove()
            del self._calls[token]
            self._keys.pop(token, None)
        if not outcome:
            text = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
            msg = f"the tool call ended without the ask's outcome: {text}"
            raise RuntimeError(msg)
        settled = outcome[-1]
        if isinstance(settled, BaseException):
            raise settled
        return settled  # type: ignore[return-value] # the answer the provider under test gave


async def make_round_trip_subject(
    provider_type: type[McpElicitationProvider] = McpElicitationProvider,
    *,
    custom_text: bool = True,
    name: str = "mcp-rounds",
) -> Subject:
    """A fresh provider under test behind a real server and a 2026-07-28 client (see the module).

    *provider_type* is :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider`
    or a variant of it (the test gallery's broken ones).
    """
    human = Human()
    provider = RoundTripProvider(human, provider_type(custom_text=custom_text))
    await provider.open()
    capabilities = CAPABILITIES if custom_text else CAPABILITIES_WITHOUT_CUSTOM_TEXT
    driver = ElicitationDriver(provider, human, capabilities=capabilities)
    return Subject(provider=provider, driver=driver, name=name, aclose=provider.aclose)


@with_capabilities(CAPABILITIES)
async def mcp_round_trip_subject() -> Subject:
    """The MCP elicitation provider on revision 2026-07-28: every ask in input-required rounds."""
    return await make_round_trip_subject()
