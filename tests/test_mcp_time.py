"""Time that holds across rounds (MCP-ROUND-6): an ask's time limit is fixed when it is first asked.

On revision 2026-07-28 every retry runs the tool's body again from the
top, so a timeout signal or a ``deadline`` made in the body starts anew on
each round. ``run_tool`` carries, in the sealed state, the moment each
ask's wait ends as the round that first asked it saw it: a retry that
brings the answer after that moment ends the ask as a legacy connection
does when time runs out, with the same text for the model.

The human here answers well after the limit (never sooner): a slow machine
only makes the answer later, and the verdict is the same.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import Context, MCPServer

from dsh_user_interaction import (
    AbortSignal,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra.mcp import McpElicitationProvider, run_tool
from dsh_user_interaction.tool import ask_user_question

from .helpers import run

ROUND_TRIP = "2026-07-28"
#: The limit of every timed ask, and how long after the form arrives the late human answers.
LIMIT = 0.15
LATE_BY = 0.6
TIMED_OUT = "Error: ask_user_question timed out before the user answered; do not assume an answer"
ARGUMENTS: Any = {
    "questions": [
        {
            "id": "mode",
            "question": "Which mode?",
            "header": "Mode",
            "options": [{"label": "Safe (Recommended)"}, {"label": "Fast"}],
        }
    ]
}
#: Each way an ask's wait is limited, and what the model reads when the human answers late.
KINDS: dict[str, str] = {
    "signal": TIMED_OUT,
    "deadline": "ASK_ABORTED timed out",
    "answer_within": TIMED_OUT,
}
#: What a legacy connection gives when the defaults answer: the form was withdrawn at the
#: deadline, so no answer of the human's came. On 2026-07-28 the late answer comes with the
#: retry, and is never replaced by a default (POL-DEFAULT-1): the ask times out, keeping it.
DEFAULTED = (
    '{"answers":[{"id":"mode","selected":["Safe (Recommended)"]}],"defaulted":true,'
    '"note":"The user did not answer in time; these are the default answers the '
    "application set, not the user's choice.\"}"
)


async def _ask(service: UserInteractionService, kind: str, seconds: float) -> str:
    """One ask limited to *seconds* the *kind* way; what the model (or the tool) reads."""
    if kind == "deadline":
        request: Any = {**ARGUMENTS, "deadline": time.time() + seconds}
        try:
            answer = await service.ask(request)
        except UserInteractionError as error:
            return f"{error.code} {'timed out' if error.timed_out else 'aborted'}"
        return json.dumps(answer["answers"])
    options: Any = {
        "signal": {"signal": AbortSignal.timeout(seconds)},
        "answer_within": {"answer_within": seconds},
        "defaults": {"answer_within": seconds, "recommended_defaults": True},
    }[kind]
    return (await ask_user_question(service, ARGUMENTS, **options)).text


class _Timed:
    """A server whose tool asks once, limited the drawn way; and the bodies' runs."""

    def __init__(self, kind: str, seconds: float) -> None:
        self.server = MCPServer("timed")
        self.service = UserInteractionService()
        self.service.register_provider(McpElicitationProvider())
        self.runs = 0
        timed = self

        @self.server.tool()
        async def timed_ask(ctx: Context) -> str | types.InputRequiredResult:
            """Ask once, with a time limit."""

            async def body() -> str:
                timed.runs += 1
                return await _ask(timed.service, kind, seconds)

            return await run_tool(ctx, body)


def _human(late_by: float) -> Any:
    """An elicitation callback that picks "Fast" *late_by* seconds after the form arrives."""

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        await asyncio.sleep(late_by)
        return types.ElicitResult(action="accept", content={"q1": "Fast"})

    return answer


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def _call(server: MCPServer, mode: str, late_by: float) -> str:
    async with Client(server, mode=mode, elicitation_callback=_human(late_by)) as client:
        return _text(await client.call_tool("timed_ask", {}))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_late_answer_ends_the_ask_as_on_a_legacy_connection(kind: str) -> None:
    """The same tool, the human answering after the limit: the same text on both revisions."""
    legacy = _Timed(kind, LIMIT)
    rounds = _Timed(kind, LIMIT)
    on_legacy = run(_call(legacy.server, "legacy", LATE_BY))
    on_rounds = run(_call(rounds.server, ROUND_TRIP, LATE_BY))
    assert on_legacy == KINDS[kind]
    assert on_rounds == on_legacy
    # The retry ran the body again, with a fresh limit it would have met: the carried one held.
    assert rounds.runs == 2


def test_with_defaults_a_late_answer_times_out_and_is_never_replaced_by_them() -> None:
    """Legacy: the defaults (no answer came). 2026-07-28: timed out, the late answer kept."""
    assert run(_call(_Timed("defaults", LIMIT).server, "legacy", LATE_BY)) == DEFAULTED
    assert run(_call(_Timed("defaults", LIMIT).server, ROUND_TRIP, LATE_BY)) == TIMED_OUT


async def _never_answered(server: MCPServer, mode: str) -> str:
    """The call's text when the human never answers its form: a retry, late, without answers.

    On a legacy connection the form stays open until the limit ends the
    ask; on 2026-07-28 the client retries after the limit with the state
    alone, as a client whose human walked away does.
    """

    async def away(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        await asyncio.Event().wait()  # the human never comes back; the limit ends the ask
        raise AssertionError

    async with Client(server, mode=mode, elicitation_callback=away) as client:
        if mode != ROUND_TRIP:
            return _text(await client.call_tool("timed_ask", {}))
        first = await client.session.call_tool("timed_ask", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        await asyncio.sleep(LATE_BY)
        last = await client.session.call_tool(
            "timed_ask", {}, request_state=first.request_state, allow_input_required=True
        )
        assert isinstance(last, types.CallToolResult)
        return _text(last)


#: What the model reads when nobody answers, by the way the ask's wait is limited.
UNANSWERED = {**KINDS, "defaults": DEFAULTED}


@pytest.mark.parametrize("kind", sorted(UNANSWERED))
def test_a_late_retry_without_an_answer_ends_the_ask_as_on_a_legacy_connection(kind: str) -> None:
    """MCP-ROUND-6: no answer by the limit gives the same text on both revisions.

    With defaults and an ``answer_within`` deadline, the defaults answer on
    both (before, a late retry without answers timed out on 2026-07-28:
    the fresh round's service had its own deadline still ahead); a signal's
    timeout or a deadline without defaults times out on both.
    """
    on_legacy = run(_never_answered(_Timed(kind, LIMIT).server, "legacy"))
    rounds = _Timed(kind, LIMIT)
    on_rounds = run(_never_answered(rounds.server, ROUND_TRIP))
    assert on_legacy == UNANSWERED[kind]
    assert on_rounds == on_legacy
    assert rounds.runs == 2


@pytest.mark.parametrize("kind", [*sorted(KINDS), "defaults"])
def test_an_answer_in_time_is_the_answer_on_both_revisions(kind: str) -> None:
    """With a limit far off, the human's answer comes back on either revision."""
    for mode in ("legacy", ROUND_TRIP):
        text = run(_call(_Timed(kind, 600.0).server, mode, 0.0))
        assert "Fast" in text, (mode, text)
        assert "defaulted" not in text


def test_an_ask_first_sent_in_a_later_round_counts_from_that_round() -> None:
    """Each ask's limit is fixed in the round that first asks it, not by an earlier one."""
    server = MCPServer("two")
    service = UserInteractionService()
    service.register_provider(McpElicitationProvider())

    @server.tool()
    async def two(ctx: Context) -> str | types.InputRequiredResult:
        async def body() -> str:
            first = await ask_user_question(service, ARGUMENTS, answer_within=600.0)
            second = await ask_user_question(service, ARGUMENTS, answer_within=LATE_BY * 3)
            return f"{first.text} {second.text}"

        return await run_tool(ctx, body)

    async def main() -> str:
        # The first answer comes after the second ask's limit would have passed, had it
        # been fixed when the call first ran; the second comes at once.
        answers = iter([LATE_BY * 4, 0.0])

        async def human(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult:
            await asyncio.sleep(next(answers))
            return types.ElicitResult(action="accept", content={"q1": "Fast"})

        async with Client(server, mode=ROUND_TRIP, elicitation_callback=human) as client:
            return _text(await client.call_tool("two", {}))

    text = run(main())
    assert text.count('"selected":["Fast"]') == 2, text


def test_the_late_answer_is_kept_on_the_timed_out_error() -> None:
    """A late answer is never dropped silently: the timed-out error keeps it."""
    server = MCPServer("kept")
    service = UserInteractionService()
    service.register_provider(McpElicitationProvider())
    errors: list[UserInteractionError] = []

    @server.tool()
    async def kept(ctx: Context) -> str | types.InputRequiredResult:
        async def body() -> str:
            try:
                request: Any = {**ARGUMENTS, "signal": AbortSignal.timeout(LIMIT)}
                await service.ask(request)
            except UserInteractionError as error:
                errors.append(error)
                return str(error.code)
            return "answered"

        return await run_tool(ctx, body)

    async def main() -> str:
        async with Client(server, mode=ROUND_TRIP, elicitation_callback=_human(LATE_BY)) as c:
            return _text(await c.call_tool("kept", {}))

    assert run(main()) == str(ErrorCode.ASK_ABORTED)
    [error] = errors
    assert error.timed_out
    assert error.answer == {"answers": [{"id": "mode", "selected": ["Fast"]}]}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_over_stdio_a_late_answer_times_out_on_either_revision(mode: str) -> None:
    """The stdio server's tool with ``answer_within=``, the SDK's client in its default mode too.

    ``"auto"`` negotiates 2026-07-28 with this server: the round trips.
    """
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(Path(__file__).with_name("mcp_stdio_server.py"))],
        env={"PYTHONPATH": os.pathsep.join(sys.path), "DSH_TEST_ANSWER_WITHIN": str(LIMIT)},
    )

    async def main() -> tuple[str, str]:
        async with Client(server, mode=mode, elicitation_callback=_human(LATE_BY)) as client:
            result = await client.call_tool("ask_user_question", ARGUMENTS)
            return client.protocol_version or "", _text(result)

    version, text = run(main(), bound=60)
    assert version == ("2025-11-25" if mode == "legacy" else ROUND_TRIP)
    assert text == TIMED_OUT


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_over_stdio_nobody_answering_gives_the_defaults_on_either_revision(mode: str) -> None:
    """MCP-ROUND-6 over stdio: ``answer_within=`` with defaults, and a human who never answers.

    On 2026-07-28 (``"auto"``) the client retries after the limit with the
    state alone; it timed out before, where a legacy connection gives the
    defaults.
    """
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(Path(__file__).with_name("mcp_stdio_server.py"))],
        env={
            "PYTHONPATH": os.pathsep.join(sys.path),
            "DSH_TEST_ANSWER_WITHIN": str(LIMIT),
            "DSH_TEST_RECOMMENDED_DEFAULTS": "1",
        },
    )

    async def away(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        await asyncio.Event().wait()
        raise AssertionError

    async def main() -> tuple[str, str]:
        async with Client(server, mode=mode, elicitation_callback=away) as client:
            if mode == "legacy":
                result = await client.call_tool("ask_user_question", ARGUMENTS)
                return client.protocol_version or "", _text(result)
            first = await client.session.call_tool(
                "ask_user_question", ARGUMENTS, allow_input_required=True
            )
            assert isinstance(first, types.InputRequiredResult)
            await asyncio.sleep(LATE_BY)
            last = await client.session.call_tool(
                "ask_user_question",
                ARGUMENTS,
                request_state=first.request_state,
                allow_input_required=True,
            )
            assert isinstance(last, types.CallToolResult)
            return client.protocol_version or "", _text(last)

    version, text = run(main(), bound=60)
    assert version == ("2025-11-25" if mode == "legacy" else ROUND_TRIP)
    assert text == DEFAULTED


def test_a_deadline_past_in_the_first_round_is_the_services_as_on_a_legacy_connection() -> None:
    """A limit the first round computes is enforced by the service: the defaults answer."""
    request: Any = {
        "deadline": 0.0,  # long past
        "questions": [{**ARGUMENTS["questions"][0], "default": {"selected": ["Fast"]}}],
    }

    def server() -> MCPServer:
        served = MCPServer("past")
        service = UserInteractionService()
        service.register_provider(McpElicitationProvider())

        @served.tool()
        async def timed_ask(ctx: Context) -> str | types.InputRequiredResult:
            async def body() -> str:
                return json.dumps(await service.ask(request))

            return await run_tool(ctx, body)

        return served

    defaults = '{"answers": [{"id": "mode", "selected": ["Fast"]}], "defaulted": true}'
    assert run(_call(server(), "legacy", 0.0)) == defaults
    assert run(_call(server(), ROUND_TRIP, 0.0)) == defaults
