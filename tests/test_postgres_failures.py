"""A PostgreSQL store that fails says why, and the agent agrees with it (``DUR-FAIL-1``, ``DUR-AGREE-1``).

Against a real throwaway server: a schema of a newer layout, one with a
renamed column or without its version, a server out of reach, a read-only
database and backends killed in a row each raise ``STORE_FAILED`` naming
the cause, never a raw :mod:`psycopg` error; and with the change counter's
row lock held by another transaction past the deadline, the agent receives
its defaults only once the store has recorded them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import AsyncGenerator, Generator
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import psycopg
import pytest
from psycopg import sql

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.durable import DurableProvider, Outcome, Settlement, with_ask_id
from dsh_user_interaction.extra.postgres import PostgresStore
from dsh_user_interaction.extra.postgres.testing import (
    PostgresServer,
    ServerUnavailable,
    postgres_server,
)

from .disks import fill, small_disk
from .helpers import patience, unavailable

pytestmark = pytest.mark.slow

T = TypeVar("T")

#: Each test's bound, for everything it awaits (60 s on the idle machine, the
#: calibrated patience on a busy one: it ends a red run).
BOUND = patience(6.0)


def _unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it in CI, where ``.ci/run`` installs PostgreSQL."""
    unavailable(reason)


@pytest.fixture(scope="module")
def server() -> Generator[PostgresServer]:
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(postgres_server())
        except ServerUnavailable as missing:
            _unavailable(f"no PostgreSQL server can be started: {missing}")
        yield running


def run(coro: Any, *, bound: float = BOUND) -> Any:
    async def bounded() -> object:
        async with asyncio.timeout(bound):
            return await coro

    return asyncio.run(bounded())


async def admin(server: PostgresServer) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(server.dsn, autocommit=True)


@contextlib.asynccontextmanager
async def schema_of(server: PostgresServer) -> AsyncGenerator[str]:
    schema = f"dsh_fail_{uuid.uuid4().hex}"
    try:
        yield schema
    finally:
        async with await admin(server) as db:
            await db.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


def store_failure(error: BaseException) -> UserInteractionError:
    assert isinstance(error, UserInteractionError), repr(error)
    assert error.code is ErrorCode.STORE_FAILED
    assert isinstance(error.__cause__, Exception)
    return error


async def connect_fails(server: PostgresServer, schema: str) -> UserInteractionError:
    with pytest.raises(UserInteractionError) as raised:
        await PostgresStore.connect(server.dsn, schema=schema)
    return store_failure(raised.value)


async def tamper(server: PostgresServer, statement: str, schema: str) -> None:
    async with await admin(server) as db:
        await db.execute(sql.SQL(cast("Any", statement)).format(schema=sql.Identifier(schema)))


def test_a_new_schema_is_written_with_its_layout_version(server: PostgresServer) -> None:
    """DUR-LAYOUT-1: ``meta.layout`` is written with the tables, and read at the next opening."""

    async def main() -> None:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            await store.put("a", {"questions": []}, asked_at=1.0)
            await store.close()
            async with await admin(server) as db:
                query = sql.SQL("SELECT value FROM {}.meta WHERE key = 'layout'").format(
                    sql.Identifier(schema)
                )
                assert await (await db.execute(query)).fetchone() == (1,)
            async with PostgresStore(server.dsn, schema=schema) as again:
                assert [record.ask_id for record in await again.pending()] == ["a"]

    run(main())


def test_a_newer_layout_is_refused_at_the_opening(server: PostgresServer) -> None:
    """DUR-LAYOUT-1: a later layout is refused naming both versions; nothing is changed."""

    async def main() -> None:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            await store.put("a", {"questions": []}, asked_at=1.0)
            await store.close()
            await tamper(server, "UPDATE {schema}.meta SET value = 3 WHERE key = 'layout'", schema)
            error = await connect_fails(server, schema)
            assert "has the layout version 3, newer than the version 1" in str(error)

    run(main())


def test_a_renamed_column_is_refused_at_the_opening_not_at_the_first_put(
    server: PostgresServer,
) -> None:
    """DUR-LAYOUT-1: before, the schema was accepted and the first put failed with UndefinedColumn."""

    async def main() -> None:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            await store.close()
            await tamper(server, "ALTER TABLE {schema}.asks RENAME COLUMN via TO ui", schema)
            error = await connect_fails(server, schema)
            assert ".asks has the columns" in str(error)
            assert "'ui'" in str(error)
            assert "changed by hand" in str(error)

    run(main())


def test_a_schema_without_its_layout_row_is_refused(server: PostgresServer) -> None:
    """DUR-LAYOUT-1: a ``meta`` table without the version is not a layout this store knows."""

    async def main() -> None:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            await store.close()
            await tamper(server, "DELETE FROM {schema}.meta WHERE key = 'layout'", schema)
            error = await connect_fails(server, schema)
            assert "has no layout version" in str(error)

    run(main())


def test_a_server_out_of_reach_is_named() -> None:
    """DUR-FAIL-1: connecting to a port nobody listens on raises STORE_FAILED, not OperationalError."""

    async def main() -> UserInteractionError:
        with pytest.raises(UserInteractionError) as raised:
            await PostgresStore.connect("postgresql://127.0.0.1:1/asks?connect_timeout=5")
        return raised.value

    error = store_failure(run(main()))
    assert isinstance(error.__cause__, psycopg.OperationalError)
    assert "the database server cannot be reached" in str(error)


def test_a_read_only_database_is_named(server: PostgresServer) -> None:
    """DUR-FAIL-1: a database whose transactions are read-only says so at the first write."""

    async def main() -> UserInteractionError:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            await store.close()
            options = "-c default_transaction_read_only=on"
            read_only = f"{server.dsn} options='{options}'"
            async with PostgresStore(read_only, schema=schema) as store:
                with pytest.raises(UserInteractionError) as raised:
                    await store.put("a", {"questions": []}, asked_at=1.0)
                assert await store.pending() == []
            return raised.value

    error = store_failure(run(main()))
    assert isinstance(error.__cause__, psycopg.errors.ReadOnlySqlTransaction)
    assert "the database is read-only" in str(error)


def test_backends_killed_twice_in_a_row_reach_the_agent_as_store_failed(
    server: PostgresServer,
) -> None:
    """DUR-FAIL-1: a put whose connection and retry both die raises STORE_FAILED through ask()."""

    async def main() -> UserInteractionError:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            async with await admin(server) as db:

                async def kill_store_backends() -> None:
                    await db.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = 'dsh-ask-store' AND pid <> pg_backend_pid()"
                    )

                await kill_store_backends()
                # The first try's connection is dead; kill the retry's as it connects.
                original = psycopg.AsyncConnection.connect

                async def dying(*args: Any, **kwargs: Any) -> Any:
                    connection = await original(*args, **kwargs)
                    await kill_store_backends()
                    return connection

                service = UserInteractionService()
                service.register_provider(DurableProvider(store, store_patience=0.0))
                request = with_ask_id({"questions": [{"id": "q", "question": "Go?"}]}, "k")
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(psycopg.AsyncConnection, "connect", dying)
                    with pytest.raises(UserInteractionError) as raised:
                        await service.ask(request)
            await store.close()
            return raised.value

    error = store_failure(run(main()))
    assert isinstance(error.__cause__, psycopg.OperationalError)


class SettleSpy:
    """A store that tells when a settlement is asked for, and holds it until let go."""

    def __init__(self, inner: PostgresStore) -> None:
        self.inner = inner
        self.settling = asyncio.Event()
        self.go = asyncio.Event()
        self.go.set()

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        self.settling.set()
        await self.go.wait()
        return await self.inner.settle(ask_id, outcome, settled_at=settled_at)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


DEFAULTS: AskUserQuestionAnswer = {
    "answers": [{"id": "go", "selected": ["Yes"]}],
    "defaulted": True,
}


def test_defaults_reach_the_agent_only_once_recorded_with_the_counter_held(
    server: PostgresServer,
) -> None:
    """DUR-AGREE-1: the change counter's row lock held past the deadline: the agent waits for it.

    Before, the provider gave up after 0.2 s and returned the defaults
    while the ask stayed pending on every UI.
    """

    async def main() -> None:
        async with schema_of(server) as schema:
            agent_store = await PostgresStore.connect(server.dsn, schema=schema, poll_interval=0.05)
            ui_store = await PostgresStore.connect(server.dsn, schema=schema, poll_interval=0.05)
            service = UserInteractionService(enforce_deadlines=False, enforce_aborts=False)
            spy = SettleSpy(agent_store)
            service.register_provider(DurableProvider(cast("Any", spy), via="agent"))
            request = with_ask_id(
                cast(
                    "AskUserQuestionRequest",
                    {
                        "questions": [
                            {
                                "id": "go",
                                "question": "Deploy?",
                                "options": [{"label": "Yes"}, {"label": "No"}],
                                "default": {"selected": ["Yes"]},
                            }
                        ],
                        "deadline": time.time() + 0.2,
                    },
                ),
                "held",
            )
            spy.go.clear()
            asking = asyncio.ensure_future(service.ask(request))
            await spy.settling.wait()  # the deadline passed: the defaults are being offered
            async with await admin(server) as holder:
                await holder.execute("BEGIN")
                counter = sql.SQL("SELECT value FROM {}.meta WHERE key = 'seq' FOR UPDATE")
                await holder.execute(counter.format(sql.Identifier(schema)))
                spy.go.set()
                done, _ = await asyncio.wait({asking}, timeout=0.6)
                assert not done, "the agent had its defaults while the store could not record them"
                records = await ui_store.pending()
                assert [record.ask_id for record in records] == ["held"]
                await holder.execute("COMMIT")
            answer = await asking
            record = await ui_store.get("held")
            assert record is not None
            assert (answer, record.state, record.answer) == (DEFAULTS, "answered", DEFAULTS)
            late = await ui_store.settle(
                "held",
                Outcome.answered({"answers": [{"id": "go", "selected": ["No"]}]}),
                settled_at=1.0,
            )
            assert not late.won
            await agent_store.close()
            await ui_store.close()

    run(main())


def test_an_abort_reaches_the_agent_only_once_recorded_with_the_counter_held(
    server: PostgresServer,
) -> None:
    """DUR-AGREE-1: an abort while another transaction holds the change counter waits for it."""

    async def main() -> None:
        async with schema_of(server) as schema:
            agent_store = await PostgresStore.connect(server.dsn, schema=schema, poll_interval=0.05)
            ui_store = await PostgresStore.connect(server.dsn, schema=schema, poll_interval=0.05)
            spy = SettleSpy(agent_store)
            service = UserInteractionService(enforce_deadlines=False, enforce_aborts=False)
            service.register_provider(DurableProvider(cast("Any", spy), via="agent"))
            controller = AbortController()
            request = with_ask_id(
                {"questions": [{"id": "q", "question": "Go?"}], "signal": controller.signal}, "ab"
            )
            spy.go.clear()
            asking = asyncio.ensure_future(service.ask(request))
            while not await ui_store.pending():  # noqa: ASYNC110 - the store has no event to wait on
                await asyncio.sleep(0.01)
            controller.abort()
            await spy.settling.wait()
            async with await admin(server) as holder:
                await holder.execute("BEGIN")
                counter = sql.SQL("SELECT value FROM {}.meta WHERE key = 'seq' FOR UPDATE")
                await holder.execute(counter.format(sql.Identifier(schema)))
                spy.go.set()
                done, _ = await asyncio.wait({asking}, timeout=0.6)
                assert not done, "the agent was told 'aborted' while the store could not record it"
                await holder.execute("COMMIT")
            with pytest.raises(UserInteractionError) as raised:
                await asking
            assert raised.value.code is ErrorCode.ASK_ABORTED
            record = await ui_store.get("ab")
            assert record is not None
            assert (record.state, record.via) == ("aborted", "agent")
            await agent_store.close()
            await ui_store.close()

    run(main())


def test_a_lock_not_granted_in_time_is_named(server: PostgresServer) -> None:
    """DUR-FAIL-1: with the server's ``lock_timeout`` set, a held change counter says 'locked'."""

    async def main() -> UserInteractionError:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            await store.close()
            impatient = f"{server.dsn} options='-c lock_timeout=50'"
            async with (
                PostgresStore(impatient, schema=schema) as store,
                await admin(server) as holder,
            ):
                await holder.execute("BEGIN")
                counter = sql.SQL("SELECT value FROM {}.meta WHERE key = 'seq' FOR UPDATE")
                await holder.execute(counter.format(sql.Identifier(schema)))
                with pytest.raises(UserInteractionError) as raised:
                    await store.put("a", {"questions": []}, asked_at=1.0)
                await holder.execute("ROLLBACK")
                assert await store.pending() == []
                await store.put("a", {"questions": []}, asked_at=1.0)
                assert [record.ask_id for record in await store.pending()] == ["a"]
            return raised.value

    error = store_failure(run(main()))
    assert isinstance(error.__cause__, psycopg.errors.LockNotAvailable)
    assert "the database is locked" in str(error)


def test_a_full_disk_under_the_tables_is_named_and_loses_nothing(server: PostgresServer) -> None:
    """DUR-FAIL-1: the tables on a small tmpfs, filled: STORE_FAILED says the disk is full.

    What was written before stays readable, and once space is freed the
    store writes again.
    """
    if server.folder is None:
        pytest.skip("the server is DSH_POSTGRES_DSN's: its disks are not this machine's to fill")
    owner = server.folder.stat()

    async def main(disk: Path) -> UserInteractionError:
        async with schema_of(server) as schema:
            store = await PostgresStore.connect(server.dsn, schema=schema)
            await store.close()
            space = f"dsh_small_{schema[-12:]}"
            async with await admin(server) as db:
                await db.execute(
                    sql.SQL("CREATE TABLESPACE {} LOCATION {}").format(
                        sql.Identifier(space), sql.Literal(str(disk))
                    )
                )
                try:
                    for table in ("asks", "meta"):
                        await db.execute(
                            sql.SQL("ALTER TABLE {}.{} SET TABLESPACE {}").format(
                                sql.Identifier(schema), sql.Identifier(table), sql.Identifier(space)
                            )
                        )
                    async with PostgresStore(server.dsn, schema=schema) as store:
                        await store.put("kept", {"questions": []}, asked_at=1.0)
                        filler = fill(disk)
                        big: dict[str, object] = {"questions": [], "pad": "x" * 200_000}

                        async def overflow() -> None:
                            for number in range(50):
                                await store.put(f"big-{number}", big, asked_at=2.0)

                        with pytest.raises(UserInteractionError) as raised:
                            await overflow()
                        assert "kept" in [record.ask_id for record in await store.pending()]
                        filler.unlink()
                        await store.put("after", {"questions": []}, asked_at=3.0)
                    await db.execute(
                        sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema))
                    )
                finally:
                    await db.execute(
                        sql.SQL("DROP TABLESPACE IF EXISTS {}").format(sql.Identifier(space))
                    )
            return raised.value

    # Beside the cluster, where the server's own user may go (pytest's folders are root's).
    with small_disk(server.folder, size="2m") as disk:
        os.chown(disk, owner.st_uid, owner.st_gid)
        error = store_failure(run(main(disk)))
    assert isinstance(error.__cause__, psycopg.errors.DiskFull)
    assert "the database server's disk is full" in str(error)
