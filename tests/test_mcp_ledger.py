"""Single use that cannot race (MCP-ROUND-3): a used state stays refused while a ledger is busy.

``run_tool`` reads a state's expiry, then marks its nonce in the ledger. A
mark that waits for another worker's lock can land after the expiry; a
ledger that forgot a nonce at its state's expiry would then take a used
state for a new one, and the tool's body would run twice. Here a second
connection holds the ledger's table while a used state is replayed just
before it expires, and lets go only once it has: the replay is refused, and
the body ran once. Real SDK client and server, in process; the wait is on
events and on the clock passing a moment, never on a duration.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import psycopg
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from psycopg import sql

from dsh_user_interaction import AskUserQuestionAnswer, ScriptedProvider, UserInteractionService
from dsh_user_interaction.extra.mcp import (
    McpElicitationProvider,
    ProcessLedger,
    SQLiteLedger,
    StateLedger,
    elicitation_callback,
    run_tool,
)
from dsh_user_interaction.extra.mcp._ledger import FORGET_AFTER
from dsh_user_interaction.extra.postgres import PostgresLedger
from dsh_user_interaction.extra.postgres.testing import ServerUnavailable, shared_server

from .helpers import run, unavailable

ROUND_TRIP = "2026-07-28"
#: The states' time to live: long enough for a round and a replay, short to wait out.
TTL = 2.0
MODE: Any = {"id": "mode", "question": "Which mode?", "options": [{"label": "Safe"}]}
USED_ALREADY = "requestState refused: it was used already; call the tool again from the start"


class _Watched:
    """A ledger that says when a use has begun: the replay has passed the expiry check."""

    def __init__(self, inner: StateLedger) -> None:
        self.inner = inner
        self.uses = 0
        self.second: asyncio.Event | None = None

    async def use(self, nonce: str, expires: float) -> bool:
        self.uses += 1
        if self.uses == 2 and self.second is not None:
            self.second.set()
        return await self.inner.use(nonce, expires)


def _server(ledger: StateLedger, finished: list[str]) -> MCPServer:
    server = MCPServer("once")
    service = UserInteractionService()
    service.register_provider(McpElicitationProvider())

    @server.tool()
    async def deploy(ctx: Context) -> str | types.InputRequiredResult:
        """Ask once, then deploy: the side effect after the last ask."""

        async def body() -> str:
            answer = await service.ask({"questions": [MODE]})
            finished.append("deployed")
            return str(answer["answers"][0]["selected"])

        return await run_tool(ctx, body, ttl=TTL, ledger=ledger)

    return server


def _safe(request: object) -> AskUserQuestionAnswer:
    return {"answers": [{"id": "q1", "selected": ["Safe"]}, {"id": "q1_other", "selected": []}]}


async def _replay_while_held(
    ledger: StateLedger, hold: Callable[[], AbstractAsyncContextManager[None]]
) -> tuple[list[str], MCPError | None]:
    """Use a state, then replay it while *hold* keeps the ledger busy until the state expired."""
    watched = _Watched(ledger)
    watched.second = asyncio.Event()
    finished: list[str] = []
    server = _server(watched, finished)
    callback = elicitation_callback(ScriptedProvider(respond=_safe))
    async with Client(server, mode=ROUND_TRIP, elicitation_callback=callback) as client:
        first = await client.session.call_tool("deploy", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        (key,) = first.input_requests or {}
        issued = time.time()
        answer: dict[str, Any] = {key: types.ElicitResult(action="accept", content={"q1": "Safe"})}
        done = await client.session.call_tool(
            "deploy", {}, input_responses=answer, request_state=first.request_state
        )
        assert not done.is_error
        assert finished == ["deployed"]
        async with hold():
            replay = asyncio.ensure_future(
                client.session.call_tool(
                    "deploy", {}, input_responses=answer, request_state=first.request_state
                )
            )
            await watched.second.wait()  # past the expiry check, marking
            # The state expires while the mark waits: the moment, on the clock of the expiry.
            await asyncio.sleep(max(0.0, issued + TTL - time.time()) + 0.1)
            assert time.time() > issued + TTL
        try:
            await replay
        except MCPError as error:
            return finished, error
    return finished, None


def test_a_used_state_replayed_while_sqlite_is_locked_stays_refused(tmp_path: Path) -> None:
    """Another connection holds SQLite's write lock across the state's expiry: still refused."""
    path = tmp_path / "states.db"
    ledger = SQLiteLedger(path)

    @asynccontextmanager
    async def hold() -> AsyncGenerator[None]:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the write lock, as a busy worker holds it
        try:
            yield
        finally:
            other.execute("COMMIT")
            other.close()

    finished, error = run(_replay_while_held(ledger, hold), bound=30)
    assert error is not None
    assert error.message == USED_ALREADY
    assert finished == ["deployed"]


def test_a_used_state_replayed_while_postgres_is_locked_stays_refused() -> None:
    """The same against PostgreSQL: another connection locks the ledger's table meanwhile."""
    try:
        dsn = shared_server().dsn
    except ServerUnavailable as missing:
        unavailable(f"needs PostgreSQL: no server can be started: {missing}")
    schema = f"dsh_test_{uuid.uuid4().hex}"
    ledger = PostgresLedger(dsn, schema=schema)

    @asynccontextmanager
    async def hold() -> AsyncGenerator[None]:
        async with await psycopg.AsyncConnection.connect(dsn) as other:
            table = sql.SQL("LOCK TABLE {}.used_request_states IN EXCLUSIVE MODE").format(
                sql.Identifier(schema)
            )
            await other.execute(table)  # held until this transaction ends
            yield
            await other.commit()

    try:
        finished, error = run(_replay_while_held(ledger, hold), bound=30)
    finally:
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    assert error is not None
    assert error.message == USED_ALREADY
    assert finished == ["deployed"]


@pytest.mark.parametrize("kind", ["process", "sqlite"])
def test_a_ledger_refuses_a_nonce_until_a_margin_after_its_state_expired(
    kind: str, tmp_path: Path
) -> None:
    """Just expired: still used. Expired longer ago than the margin: forgotten."""
    ledger: StateLedger = (
        SQLiteLedger(tmp_path / "states.db") if kind == "sqlite" else ProcessLedger()
    )

    async def main() -> list[bool]:
        now = time.time()
        marks: list[Awaitable[bool]] = []
        assert await ledger.use("recent", now - 1)
        assert await ledger.use("old", now - FORGET_AFTER - 1)
        marks.append(ledger.use("recent", now + 60))  # still refused
        marks.append(ledger.use("old", now + 60))  # forgotten: new to the ledger
        return [await mark for mark in marks]

    assert run(main()) == [False, True]


@pytest.mark.slow
def test_over_stdio_a_replay_waiting_on_sqlites_lock_past_expiry_is_refused(
    tmp_path: Path,
) -> None:
    """The stdio server with a SQLiteLedger file: the replay's mark waits on our write lock.

    The lock is taken before the replay is sent and let go only once the
    state has expired, so the server reads the expiry in time and marks the
    nonce after it. The state lives 3 s: ample for the replay to reach the
    server, which reads the expiry as the request arrives.
    """
    path = tmp_path / "states.db"
    ttl = 3.0
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(Path(__file__).with_name("mcp_stdio_server.py"))],
        env={
            "PYTHONPATH": os.pathsep.join(sys.path),
            "DSH_TEST_STATE_LEDGER": str(path),
            "DSH_TEST_STATE_TTL": str(ttl),
        },
    )
    arguments: Any = {"questions": [MODE]}
    callback = elicitation_callback(ScriptedProvider(respond=_safe))

    async def main() -> str:
        async with Client(server, mode=ROUND_TRIP, elicitation_callback=callback) as client:
            first = await client.session.call_tool(
                "ask_user_question", arguments, allow_input_required=True
            )
            assert isinstance(first, types.InputRequiredResult)
            issued = time.time()
            (key,) = first.input_requests or {}
            answer: dict[str, Any] = {
                key: types.ElicitResult(action="accept", content={"q1": "Safe"})
            }
            done = await client.session.call_tool(
                "ask_user_question", arguments, input_responses=answer,
                request_state=first.request_state,
            )  # fmt: skip
            assert not done.is_error
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            try:
                replay = asyncio.ensure_future(
                    client.session.call_tool(
                        "ask_user_question",
                        arguments,
                        input_responses=answer,
                        request_state=first.request_state,
                    )
                )
                await asyncio.sleep(max(0.0, issued + ttl - time.time()) + 0.2)
            finally:
                other.execute("COMMIT")
                other.close()
            try:
                await replay
            except MCPError as error:
                return error.message
            return "accepted"

    assert run(main(), bound=60) == USED_ALREADY
