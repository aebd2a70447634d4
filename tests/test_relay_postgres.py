"""A real PostgreSQL stopped and restarted while humans answer through a relay.

``DUR-KEEP-1``: answers given while the server is down are kept by the relay,
which reports each failed write and tries again; once the server is back
every one is written, each UI hears that it was saved (``DUR-ACK-1``), and
each agent waiting on its ask returns it. The server is a throwaway one
(``dsh_user_interaction.extra.postgres.testing``), stopped with ``pg_ctl``
and started again on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from dsh_user_interaction import UserInteractionService, answer_custom, answer_of
from dsh_user_interaction.durable import AskRecord, DurableProvider, serve, with_ask_id
from dsh_user_interaction.extra.postgres import PostgresStore, _server
from dsh_user_interaction.extra.postgres.testing import (
    PostgresServer,
    ServerUnavailable,
    postgres_bindir,
    postgres_server,
)

from .helpers import run
from .test_relay_keeps import Hearing, stopped

pytestmark = pytest.mark.slow

QUESTION: Any = {"questions": [{"id": "q", "question": "Deploy?"}]}
#: Asks answered while the server is down.
ASKS = 5


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """A throwaway server of this process's own: only such a one can be stopped and started."""
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(postgres_server(from_environment=False))
        except ServerUnavailable as missing:
            _unavailable(f"no PostgreSQL server can be started: {missing}")
        yield running


def pg_ctl(server: PostgresServer, action: str) -> None:
    """Stop the server (fast: connections are cut), or start it again as it was started."""
    assert server.folder is not None
    assert server.port is not None
    folder: Path = server.folder
    data = folder / "data"
    command = [str(postgres_bindir() / "pg_ctl"), f"--pgdata={data}", "--wait"]
    if action == "stop":
        command += ["--mode=fast", "stop"]
    else:
        options = [
            "-c listen_addresses=127.0.0.1",
            f"-p {server.port}",
            f"-k {folder}",
            *(f"-c {setting}" for setting in _server._FAST_SETTINGS),
        ]
        command += [f"--log={folder / 'server.log'}", f"--options={' '.join(options)}", "start"]
    done = _server._RunAs.choose().run(command, folder)
    assert done.returncode == 0, done.stderr


def test_answers_given_while_postgres_is_down_are_written_once_it_is_back(
    server: PostgresServer,
) -> None:
    """DUR-KEEP-1, DUR-ACK-1: five answers while the server is stopped; all written after."""
    schema = f"dsh_test_{uuid.uuid4().hex}"

    async def main() -> None:
        agent_store = await PostgresStore.connect(server.dsn, schema=schema, poll_interval=0.2)
        relay_store = await PostgresStore.connect(server.dsn, schema=schema, poll_interval=0.2)
        errors: list[BaseException] = []

        def on_error(_record: AskRecord, error: BaseException) -> None:
            errors.append(error)

        try:
            service = UserInteractionService()
            service.register_provider(DurableProvider(agent_store))
            asking = [
                asyncio.ensure_future(service.ask(with_ask_id(QUESTION, f"call-{n}")))
                for n in range(ASKS)
            ]
            ui = Hearing()
            relay = asyncio.ensure_future(
                serve(relay_store, ui, via="desk", principal="ana", on_error=on_error)
            )
            while len(ui.scripted.pending) < ASKS:  # noqa: ASYNC110 - the relay shows them all
                await asyncio.sleep(0.01)
            shown = ui.scripted.pending
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, pg_ctl, server, "stop")
            for ask in shown:
                ask_id = dict(ask.request)["askId"]
                ask.answer(answer_of(answer_custom("q", f"while down: {ask_id}")))
            while len(errors) < ASKS:  # noqa: ASYNC110 - every write failed at least once
                await asyncio.sleep(0.05)
            assert not any(verdict.done() for verdict in ui.verdicts.values())
            await asyncio.sleep(3)  # down a while longer, as an outage is
            await loop.run_in_executor(None, pg_ctl, server, "start")
            # Each agent gets the answer given while the server was down (DUR-KEEP-1)...
            async with asyncio.timeout(60):
                got = await asyncio.gather(*asking)
            assert got == [
                answer_of(answer_custom("q", f"while down: call-{n}")) for n in range(ASKS)
            ]
            # ...and each UI heard that it was saved (DUR-ACK-1).
            told = {ask_id: await verdict for ask_id, verdict in ui.verdicts.items()}
            assert {ask_id: verdict.state for ask_id, verdict in told.items()} == {
                f"call-{n}": "saved" for n in range(ASKS)
            }
            await stopped(relay)
        finally:
            await agent_store.close()
            await relay_store.close()
        fresh = await PostgresStore.connect(server.dsn, schema=schema)
        try:
            records = [await fresh.get(f"call-{n}") for n in range(ASKS)]
        finally:
            await fresh.close()
        assert [(r.state, r.principal, r.via) for r in records if r is not None] == [
            ("answered", "ana", "desk")
        ] * ASKS

    run(main(), bound=180)
