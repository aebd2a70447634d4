"""Limits on what a request state carries (MCP-ROUND-7): answers kept, and size.

Every answer a round is given goes into the state the client sends back on
each later round. ``run_tool`` refuses a round whose state would keep more
answers than ``max_answers`` or be larger than ``max_state_bytes``, with
``INVALID_PARAMS`` and a message that names the limit, instead of sending
the client a state that grows with every answer.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from dsh_user_interaction import UserInteractionService
from dsh_user_interaction.extra.mcp import (
    DEFAULT_MAX_ANSWERS,
    DEFAULT_MAX_STATE_BYTES,
    McpElicitationProvider,
    run_tool,
)

from .helpers import run

ROUND_TRIP = "2026-07-28"
NOTE: Any = {"id": "note", "question": "A note?"}


def _server(
    asks: int,
    *,
    max_answers: Any = DEFAULT_MAX_ANSWERS,
    max_state_bytes: Any = DEFAULT_MAX_STATE_BYTES,
) -> MCPServer:
    """A tool that asks for *asks* notes in turn, under run_tool with *limits*."""
    server = MCPServer("notes")
    service = UserInteractionService()
    service.register_provider(McpElicitationProvider())

    @server.tool()
    async def notes(ctx: Context) -> str | types.InputRequiredResult:
        async def body() -> str:
            lengths: list[int] = []
            for _ in range(asks):
                answer = await service.ask({"questions": [NOTE]})
                lengths.append(len(answer["answers"][0].get("custom", "")))
            return str(lengths)

        try:
            return await run_tool(
                ctx, body, max_answers=max_answers, max_state_bytes=max_state_bytes
            )
        except ValueError as error:  # a bad limit: the application's mistake, named
            return f"refused: {error}"

    return server


async def _unused(context: Any, params: Any) -> types.ElicitResult:
    """The client's callback, declaring forms; the test answers each round itself."""
    raise AssertionError(params)  # pragma: no cover - rounds are answered by hand


async def _drive(server: MCPServer, texts: list[str]) -> str | MCPError:
    """Answer each round's form with the next of *texts*, retrying until the call ends."""
    async with Client(server, mode=ROUND_TRIP, elicitation_callback=_unused) as client:
        result = await client.session.call_tool("notes", {}, allow_input_required=True)
        for text in texts:
            assert isinstance(result, types.InputRequiredResult)
            (key,) = result.input_requests or {}
            answer = types.ElicitResult(action="accept", content={"q1": text})
            try:
                result = await client.session.call_tool(
                    "notes",
                    {},
                    input_responses={key: answer},
                    request_state=result.request_state,
                    allow_input_required=True,
                )
            except MCPError as error:
                return error
        assert isinstance(result, types.CallToolResult)
        content = result.content[0]
        assert isinstance(content, types.TextContent)
        return content.text


def test_a_state_larger_than_the_limit_is_refused_with_a_message_naming_it() -> None:
    """1 MB of text, then another ask: the state would carry it; refused, naming the limit."""
    refused = run(_drive(_server(2), ["x" * 1_000_000, "short"]), bound=30)
    assert isinstance(refused, MCPError)
    assert refused.code == types.INVALID_PARAMS
    assert re.fullmatch(
        r"inputResponses refused: the answers kept so far would make a requestState of "
        rf"\d+ bytes, over this server's limit of {DEFAULT_MAX_STATE_BYTES} "
        r"\(run_tool's max_state_bytes\); call the tool again from the start, "
        r"with shorter answers",
        refused.message,
    ), refused.message


def test_the_size_limit_is_the_applications_to_set() -> None:
    """With a larger limit the same answers go through; the last answer makes no state at all."""
    assert run(_drive(_server(2, max_state_bytes=4_000_000), ["x" * 1_000_000, "ok"])) == (
        "[1000000, 2]"
    )
    # The last round's answer is never kept in a state: no limit applies to it.
    assert run(_drive(_server(1), ["x" * 1_000_000])) == "[1000000]"


def test_more_answers_than_the_limit_are_refused_with_a_message_naming_it() -> None:
    """A state keeps at most max_answers answers; the round that would keep more is refused."""
    assert run(_drive(_server(3, max_answers=2), ["a", "b", "c"])) == "[1, 1, 1]"
    refused = run(_drive(_server(4, max_answers=2), ["a", "b", "c", "d"]))
    assert isinstance(refused, MCPError)
    assert refused.code == types.INVALID_PARAMS
    assert refused.message == (
        "inputResponses refused: the call would keep 3 answers, over this server's limit of 2 "
        "(run_tool's max_answers); call the tool again from the start"
    )
    assert DEFAULT_MAX_ANSWERS == 100


@pytest.mark.parametrize(
    ("limits", "problem"),
    [
        ({"max_answers": 0}, "max_answers must be a positive int, got 0"),
        ({"max_answers": True}, "max_answers must be a positive int, got True"),
        ({"max_state_bytes": 1.5}, "max_state_bytes must be a positive int, got 1.5"),
        ({"max_state_bytes": -1}, "max_state_bytes must be a positive int, got -1"),
    ],
)
def test_a_limit_that_is_not_a_positive_int_is_refused(limits: Any, problem: str) -> None:
    """A bad limit is refused when the tool runs, naming the setting, before anything is asked."""

    async def main() -> str:
        async with Client(_server(1, **limits), mode=ROUND_TRIP, elicitation_callback=_unused) as c:
            result = await c.session.call_tool("notes", {}, allow_input_required=True)
            assert isinstance(result, types.CallToolResult)
            content = result.content[0]
            assert isinstance(content, types.TextContent)
            return content.text

    assert run(main()) == f"refused: {problem}"
