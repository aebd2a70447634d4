"""The PostgreSQL ask store, against a throwaway server of the machine's own PostgreSQL.

What the store must keep across connections, processes and faults: text of
every kind, one record an ask id, one settlement an ask whoever settles at
once, the same answers as the SQLite store to the same operations, prompt
watchers, everything after a reopening, and, when a connection drops in the
middle of a settlement, neither two winners nor a lost answer. ``.ci/run``
installs Debian's PostgreSQL when it is missing; elsewhere the tests skip
without it, and in CI they fail. ``DSH_POSTGRES_DSN`` runs them on an
existing server instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeAlias, TypeVar, cast

import psycopg
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg.conninfo import make_conninfo

from dsh_user_interaction import AskUserQuestionAnswer, UserInteractionError
from dsh_user_interaction.durable import AskRecord, AskStore, Outcome, Settlement, SQLiteStore
from dsh_user_interaction.extra.postgres import (
    DEFAULT_SCHEMA,
    PostgresLedger,
    PostgresStore,
    _store,
)
from dsh_user_interaction.extra.postgres._ledger import FORGET_AFTER
from dsh_user_interaction.extra.postgres._store import _channel
from dsh_user_interaction.extra.postgres.testing import (
    DSN_VARIABLE,
    PostgresServer,
    PostgresStoreSubject,
    ServerUnavailable,
    postgres_bindir,
    postgres_server,
    store_subject,
)
from dsh_user_interaction_conformance import StoreFactory, StoreSubject

from .helpers import json_values, patience, unavailable
from .postgres_proxy import Cut, CuttingProxy

pytestmark = pytest.mark.slow

T = TypeVar("T")
#: Each test's bound, for everything it awaits (60 s on the idle machine, the
#: calibrated patience on a busy one: it ends a red run).
BOUND = patience(6.0)
#: A watcher's poll interval when only a notification may wake it: far beyond any wait here.
NOTIFIED_ONLY = 3600.0


def _unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it in CI, where ``.ci/run`` installs PostgreSQL."""
    unavailable(reason)


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """One server for the module: a throwaway one, or ``DSH_POSTGRES_DSN``'s."""
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(postgres_server())
        except ServerUnavailable as missing:
            _unavailable(f"no PostgreSQL server can be started: {missing}")
        yield running


def run(coro: Coroutine[Any, Any, T], *, bound: float = BOUND) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(bound):
            return await coro

    return asyncio.run(bounded())


def fresh() -> str:
    """A schema name no other test uses."""
    return f"dsh_test_{uuid.uuid4().hex}"


async def admin(server: PostgresServer) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(server.dsn, autocommit=True)


async def drop(server: PostgresServer, schema: str) -> None:
    async with await admin(server) as db:
        await db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@contextlib.asynccontextmanager
async def schema_of(server: PostgresServer) -> AsyncGenerator[str]:
    """A fresh schema for the block, dropped after it."""
    schema = fresh()
    try:
        yield schema
    finally:
        await drop(server, schema)


@contextlib.asynccontextmanager
async def stores(
    dsn: str, schema: str, count: int, *, poll_interval: float = 1.0
) -> AsyncGenerator[list[PostgresStore]]:
    """*count* stores on *schema*, each a connection of its own, closed after the block."""
    opened: list[PostgresStore] = []
    try:
        for _ in range(count):
            opened.append(
                await PostgresStore.connect(dsn, schema=schema, poll_interval=poll_interval)
            )
        yield opened
    finally:
        for store in opened:
            await store.close()


async def wait_for_row(
    db: psycopg.AsyncConnection[Any], query: str, params: tuple[object, ...]
) -> tuple[Any, ...]:
    """The first row *query* returns, polling until it returns one.

    *db* must be in autocommit mode: within a transaction, ``pg_stat_activity``
    shows the same snapshot on every read.
    """
    while True:
        row = await (await db.execute(cast("Any", query), params)).fetchone()
        if row is not None:
            return cast("tuple[Any, ...]", row)
        await asyncio.sleep(0.005)


async def seq_counter(server: PostgresServer, schema: str) -> int:
    async with await admin(server) as db:
        query = sql.SQL("SELECT value FROM {}.meta WHERE key = 'seq'").format(
            sql.Identifier(schema)
        )
        row = await (await db.execute(query)).fetchone()
        assert row is not None
        return int(row[0])


def answer(text: str) -> AskUserQuestionAnswer:
    return cast("AskUserQuestionAnswer", {"answers": [{"id": "q", "selected": [text]}]})


# --- the server and the subject ----------------------------------------------------------


def test_a_throwaway_server_starts_in_seconds_and_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A throwaway server takes TCP and Unix-socket connections, and leaves no trace.

    It starts well within the bound (about half a second here), runs with
    ``fsync`` off, and on exit its folder is gone and its port refuses.
    ``DSH_POSTGRES_DSN``, when set, is used instead, and nothing is started.
    """
    try:
        with postgres_server(from_environment=False) as running:
            assert running.owned
            assert running.folder is not None
            assert running.socket_dsn is not None
            assert running.started_in < 20, running.started_in
            for dsn in (running.dsn, running.socket_dsn):
                with psycopg.connect(dsn) as db:
                    assert db.execute("SELECT current_setting('fsync')").fetchone() == ("off",)
            folder = running.folder
    except ServerUnavailable as missing:
        _unavailable(f"no PostgreSQL server can be started: {missing}")
    assert not folder.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(running.dsn, connect_timeout=2).close()
    monkeypatch.setenv(DSN_VARIABLE, "host=db.example port=6543")
    with postgres_server() as existing:
        assert existing == PostgresServer("host=db.example port=6543")
        assert not existing.owned
        assert existing.socket_dsn is None


#: A process that starts the shared server, says where it is, and waits to be killed.
_OWNER = """
from dsh_user_interaction.extra.postgres.testing import shared_server
import json, sys, time
server = shared_server()
print(json.dumps({"dsn": server.dsn, "folder": str(server.folder)}), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_server_does_not_outlive_a_process_killed_by_a_signal(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed by a signal, its starter runs no clean-up: the reaper stops the server all the same.

    ``SIGKILL`` runs nothing in the process, and a ``SIGTERM`` nobody handles
    runs no ``atexit``; either way, the server stops and its folder goes
    within seconds.
    """
    monkeypatch.delenv(DSN_VARIABLE, raising=False)
    try:
        postgres_bindir()
    except ServerUnavailable as missing:
        _unavailable(f"no PostgreSQL server can be started: {missing}")
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != DSN_VARIABLE},
    )
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, owner.communicate(timeout=BOUND)[1]
        started = json.loads(line)
        folder = Path(started["folder"])
        with psycopg.connect(started["dsn"], connect_timeout=10) as db:
            assert db.execute("SELECT 1").fetchone() == (1,)
        owner.send_signal(getattr(signal, how))
        owner.communicate(timeout=BOUND)
        deadline = time.monotonic() + BOUND
        while folder.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not folder.exists(), f"{folder} is still there after {how}"
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(started["dsn"], connect_timeout=2).close()
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.communicate()


def test_the_store_subject_opens_stores_on_a_schema_of_its_own_and_drops_it(
    server: PostgresServer,
) -> None:
    """Two subjects never share asks; a subject's stores share them; cleanup drops the schema.

    ``store_subject()`` (the ``--store`` factory) starts the process's shared
    server on its first opening, or uses ``DSH_POSTGRES_DSN``'s.
    """

    async def main() -> None:
        factory: StoreFactory = store_subject
        shared = factory()
        assert not isinstance(shared, Awaitable)
        first: StoreSubject = PostgresStoreSubject(server.dsn)
        second = PostgresStoreSubject(server.dsn)
        assert first.name == "PostgresStore"
        one, other, apart = await first.open(), await first.open(), await second.open()
        await one.put("a", {"questions": []}, asked_at=1.0)
        assert await other.get("a") is not None
        assert await apart.get("a") is None
        assert await (await shared.open()).get("a") is None
        for store in (one, other, apart):
            await store.close()
        await first.cleanup()
        await second.cleanup()
        await shared.cleanup()
        async with await admin(server) as db:
            query = "SELECT count(*) FROM pg_namespace WHERE nspname = ANY(%s)"
            row = await (await db.execute(query, ([second.schema],))).fetchone()
            assert row == (0,)

    run(main())


def test_arguments_are_checked_and_a_closed_store_refuses_work(server: PostgresServer) -> None:
    """Bad arguments are refused before any connection; a closed store raises.

    A bad schema, poll interval or connection string raises at construction;
    the store's repr never shows the connection string (it may hold a password).
    """
    with pytest.raises(ValueError, match="schema"):
        PostgresStore(server.dsn, schema="")
    with pytest.raises(ValueError, match="schema"):
        PostgresStore(server.dsn, schema="x" * 64)
    with pytest.raises(TypeError, match="schema"):
        PostgresStore(server.dsn, schema=cast("str", 1))
    with pytest.raises(ValueError, match="poll_interval"):
        PostgresStore(server.dsn, poll_interval=0)
    with pytest.raises(TypeError, match="conninfo"):
        PostgresStore(cast("str", b"host=x"))
    secret = PostgresStore("host=127.0.0.1 password=hunter2")
    assert "hunter2" not in repr(secret)
    assert secret.schema == DEFAULT_SCHEMA

    async def main() -> None:
        async with schema_of(server) as schema:
            async with PostgresStore(server.dsn, schema=schema) as store:
                await store.put("a", {}, asked_at=1.0)
                with pytest.raises(ValueError, match="empty"):
                    await store.put("", {}, asked_at=1.0)
                with pytest.raises(ValueError, match="finite"):
                    await store.settle("a", Outcome.expired(), settled_at=float("inf"))
            await store.close()  # twice: nothing
            with pytest.raises(RuntimeError, match="closed"):
                await store.get("a")

    run(main())


def test_many_stores_opening_a_new_schema_at_once_create_it_once(server: PostgresServer) -> None:
    """Twelve stores opening one new schema at once all succeed and share one counter.

    The advisory lock serialises the creation; their puts get distinct numbers.
    """

    async def main() -> None:
        async with schema_of(server) as schema:
            opened = await asyncio.gather(
                *(PostgresStore.connect(server.dsn, schema=schema) for _ in range(12))
            )
            try:
                records = await asyncio.gather(
                    *(store.put(f"ask-{i}", {}, asked_at=1.0) for i, store in enumerate(opened))
                )
                assert sorted(record.seq for record in records) == list(range(1, 13))
            finally:
                for store in opened:
                    await store.close()

    run(main())


# --- records, text and idempotence ---------------------------------------------------------

#: Any Python text, lone surrogates and NUL included.
any_text = st.text(st.characters(codec=None, categories=None), max_size=12)


@dataclass(frozen=True)
class Texts:
    """The texts of one record: an ask id, a request's, an answer's, a principal, a UI."""

    ask_id: str
    request: str
    answer: str
    principal: str | None
    via: str | None


awkward = Texts("\x00\ud800😀", "\x00\udfff\ud83d", "😀\x00", "\udc00", "\x00")


@settings(max_examples=25, deadline=None)
@given(
    texts=st.builds(
        Texts, any_text.filter(bool), any_text, any_text, st.none() | any_text, st.none() | any_text
    ),
    asked_at=st.floats(allow_nan=False, allow_infinity=False),
)
@example(texts=awkward, asked_at=-0.0)
def test_records_round_trip_text_of_every_kind(
    server: PostgresServer, texts: Texts, asked_at: float
) -> None:
    """Text of every kind comes back unchanged, through another connection too.

    NUL, lone surrogates and emoji in the ask id, the request, the answer, the
    principal and the UI's name (PostgreSQL's ``text`` refuses the first two).
    """

    async def main() -> None:
        async with schema_of(server) as schema, stores(server.dsn, schema, 2) as (one, other):
            ask_id = texts.ask_id
            request = {"questions": [{"id": texts.request, "question": texts.request}]}
            put = await one.put(ask_id, request, asked_at=asked_at)
            assert put == AskRecord(ask_id, request, asked_at, 1)
            assert await other.get(ask_id) == put
            outcome = Outcome.answered(
                answer(texts.answer), principal=texts.principal, via=texts.via
            )
            settled = await other.settle(ask_id, outcome, settled_at=asked_at)
            assert settled.won
            assert settled.record.outcome == outcome
            assert await one.get(ask_id) == settled.record
            assert await one.records() == [settled.record]
            assert await one.changes(0) == [settled.record]

    run(main())


def test_a_put_of_a_known_ask_keeps_its_record(server: PostgresServer) -> None:
    """A put of a known ask id returns the kept record unchanged and takes no number.

    Pending or settled, from any connection; two puts of one new id at once
    add one record, with one change number.
    """

    async def main() -> None:
        async with schema_of(server) as schema, stores(server.dsn, schema, 2) as (one, other):
            first = await one.put("a", {"n": 1}, asked_at=1.0)
            assert await other.put("a", {"n": 2}, asked_at=2.0) == first
            assert await one.put("a", {"n": 3}, asked_at=3.0) == first
            settled = await other.settle("a", Outcome.cancelled(), settled_at=4.0)
            assert await one.put("a", {"n": 4}, asked_at=5.0) == settled.record
            assert await one.changes(0) == [settled.record]
            assert await seq_counter(server, schema) == 2
            # Puts of one new id from many connections at once: one record, one number.
            racers = await asyncio.gather(
                *(store.put("b", {"n": n}, asked_at=6.0) for n, store in enumerate([one, other]))
            )
            assert racers[0] == racers[1]
            assert await seq_counter(server, schema) == 3

    run(main())


def test_settling_an_unknown_ask_raises_key_error(server: PostgresServer) -> None:
    """``settle`` of an id the store does not hold raises ``KeyError`` and changes nothing."""

    async def main() -> None:
        async with schema_of(server) as schema, stores(server.dsn, schema, 1) as (store,):
            with pytest.raises(KeyError, match="nope"):
                await store.settle("nope", Outcome.cancelled(), settled_at=1.0)
            assert await store.changes(0) == []
            assert await seq_counter(server, schema) == 0

    run(main())


# --- one settlement ------------------------------------------------------------------------


def test_the_first_settlement_wins_across_connections(server: PostgresServer) -> None:
    """Of settlements made at the same moment on several connections, exactly one wins.

    Three stores settle each of 300 asks at once with different outcomes:
    each ask has one winner, every caller gets the winner's record, and each
    settlement took exactly one change number.
    """

    async def main() -> None:
        count = 300
        async with schema_of(server) as schema, stores(server.dsn, schema, 3) as racers:
            for i in range(count):
                await racers[i % 3].put(f"ask-{i}", {}, asked_at=float(i))

            async def race(i: int) -> list[Settlement]:
                return list(
                    await asyncio.gather(
                        *(
                            store.settle(
                                f"ask-{i}", Outcome.cancelled(via=f"ui-{n}"), settled_at=float(i)
                            )
                            for n, store in enumerate(racers)
                        )
                    )
                )

            results = await asyncio.gather(*(race(i) for i in range(count)))
            winners: dict[str, int] = {}
            for i, settlements in enumerate(results):
                won = [s for s in settlements if s.won]
                assert len(won) == 1, (i, settlements)
                assert all(s.record == won[0].record for s in settlements)
                assert await racers[0].get(f"ask-{i}") == won[0].record
                via = won[0].record.via
                assert via is not None
                winners[via] = winners.get(via, 0) + 1
            assert await seq_counter(server, schema) == 2 * count
            changes = await racers[1].changes(0)
            assert sorted(record.seq for record in changes) == list(range(count + 1, 2 * count + 1))

    run(main())


# --- watching ------------------------------------------------------------------------------


@dataclass
class Heard:
    record: AskRecord
    at: float


@contextlib.asynccontextmanager
async def listening(
    store: PostgresStore, after: int = 0
) -> AsyncGenerator[Callable[[], Awaitable[Heard]]]:
    """Watch *store* from *after* for the block; yields the way to the next record heard.

    Waiting for a record fails after the calibrated patience for 5 s (50 s on
    the idle machine), whatever the poll interval: a bound that ends a red run.
    """
    bound = patience(5.0)
    heard: asyncio.Queue[Heard] = asyncio.Queue()

    async def watch() -> None:
        async for record in store.watch(after):
            heard.put_nowait(Heard(record, time.monotonic()))

    async def next_heard() -> Heard:
        try:
            return await asyncio.wait_for(heard.get(), bound)
        except TimeoutError:
            pytest.fail(f"the watcher heard nothing for {bound:.0f} s")

    task = asyncio.create_task(watch())
    try:
        yield next_heard
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_a_watcher_is_woken_by_another_connections_commit(server: PostgresServer) -> None:
    """A watcher hears of another store's changes by notification, each one.

    The poll interval is an hour, far beyond the wait's bound, so only the
    notification can wake it: each put and settlement is heard. How soon is
    the machine's to say, not a test's (the delays are no verdict here).
    """

    async def main() -> list[float]:
        async with (
            schema_of(server) as schema,
            stores(server.dsn, schema, 1, poll_interval=NOTIFIED_ONLY) as (watcher,),
            stores(server.dsn, schema, 1) as (writer,),
        ):
            delays: list[float] = []
            async with listening(watcher) as heard:
                await asyncio.sleep(0.2)  # the listening connection is up
                for i in range(20):
                    started = time.monotonic()
                    await writer.put(f"ask-{i}", {}, asked_at=1.0)
                    got = await heard()
                    delays.append(got.at - started)
                    assert got.record.ask_id == f"ask-{i}"
                    started = time.monotonic()
                    await writer.settle(f"ask-{i}", Outcome.expired(), settled_at=2.0)
                    got = await heard()
                    delays.append(got.at - started)
                    assert got.record.state == "expired"
            return delays

    delays = run(main())
    assert len(delays) == 40, delays


def test_a_watcher_survives_the_loss_of_its_listening_connection(server: PostgresServer) -> None:
    """A watcher keeps hearing changes after its listening connection is terminated.

    The store reconnects the listener, and another store's next change
    arrives without a poll (the poll interval is an hour).
    """

    async def main() -> None:
        async with (
            schema_of(server) as schema,
            stores(server.dsn, schema, 1, poll_interval=NOTIFIED_ONLY) as (watcher,),
            stores(server.dsn, schema, 1) as (writer,),
            await admin(server) as db,
            listening(watcher) as heard,
        ):
            find = (
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'dsh-ask-store-listener'"
                " AND query LIKE %s AND pid <> ALL(%s)"
            )
            pattern = f"%{_channel(schema)}%"
            (first,) = await wait_for_row(db, find, (pattern, []))
            await db.execute("SELECT pg_terminate_backend(%s)", (first,))
            (second,) = await wait_for_row(db, find, (pattern, [first]))
            assert second != first
            started = time.monotonic()
            await writer.put("after-the-loss", {}, asked_at=1.0)
            got = await heard()
            assert got.record.ask_id == "after-the-loss"
            assert got.at - started < 2.0

    run(main())


def test_a_watcher_outlives_an_outage_of_the_server(server: PostgresServer) -> None:
    """A watch never ends because the server is out of reach for a while.

    Every connection of the watching store drops and none can be made for
    half a second, so its reads fail even when tried again; once the server
    is back, the watcher carries on from its cursor and hears what changed
    meanwhile and after.
    """

    async def main() -> None:
        async with (
            schema_of(server) as schema,
            CuttingProxy(server.dsn) as proxy,
            stores(proxy.dsn, schema, 1, poll_interval=0.1) as (watcher,),
            stores(server.dsn, schema, 1) as (writer,),
            listening(watcher) as heard,
        ):
            await writer.put("before", {}, asked_at=1.0)
            assert (await heard()).record.ask_id == "before"
            proxy.down = True
            proxy.sever()
            await writer.put("during", {}, asked_at=1.0)
            await asyncio.sleep(0.5)  # the watcher's reads fail, again and again
            proxy.down = False
            assert (await heard()).record.ask_id == "during"
            await writer.put("after", {}, asked_at=1.0)
            assert (await heard()).record.ask_id == "after"

    run(main())


def test_a_watcher_reads_from_its_cursor_and_sees_changes_in_order(
    server: PostgresServer,
) -> None:
    """A watcher yields what changed after its cursor, in change order, missing nothing.

    Writers on three connections interleave puts and settlements; the numbers
    heard rise strictly, and every record's last change is among them.
    """

    async def main() -> None:
        async with (
            schema_of(server) as schema,
            stores(server.dsn, schema, 3) as writers,
            stores(server.dsn, schema, 1) as (watcher,),
            listening(watcher, after=1) as heard,
        ):
            await writers[0].put("before", {}, asked_at=0.0)

            async def write(n: int, store: PostgresStore) -> None:
                for i in range(30):
                    await store.put(f"{n}-{i}", {}, asked_at=1.0)
                    if i % 2:
                        await store.settle(f"{n}-{i}", Outcome.cancelled(), settled_at=2.0)

            await asyncio.gather(*(write(n, store) for n, store in enumerate(writers)))
            total = await seq_counter(server, schema)
            seen: list[int] = []
            while not seen or seen[-1] < total:
                seen.append((await heard()).record.seq)
            # A record read after it changed twice shows its last change only:
            # numbers may be skipped, never repeated or out of order.
            assert seen == sorted(set(seen))
            assert seen[0] > 1
            latest = {record.ask_id: record.seq for record in await watcher.changes(1)}
            assert set(latest.values()) <= set(seen)

    run(main())


# --- the same answers as SQLite ------------------------------------------------------------

#: Text that SQLite also keeps (no lone surrogates), NUL included.
plain_text = st.text(st.characters(codec=None, exclude_categories=["Cs"]), max_size=6)
#: Few ids, so that scripts settle and put known asks.
ids = st.sampled_from(["a", "b", "c", "d", "e", "\x00😀"])
#: Times that tie often (the order of records with equal times is by change number).
times = st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0]) | st.floats(
    -1e12, 1e12, allow_nan=False, allow_infinity=False
)
optional_text = st.none() | plain_text


def _answered(
    selected: list[str], principal: str | None, via: str | None
) -> Outcome:  # a helper, so that the answer's type is the TypedDict
    body = {"answers": [{"id": "q", "selected": selected}]}
    return Outcome.answered(cast("AskUserQuestionAnswer", body), principal=principal, via=via)


outcomes = st.one_of(
    st.builds(_answered, st.lists(plain_text, max_size=2), optional_text, optional_text),
    st.builds(Outcome.cancelled, principal=optional_text, via=optional_text),
    st.builds(Outcome.aborted, via=optional_text),
    st.builds(Outcome.expired, via=optional_text),
)


@dataclass(frozen=True)
class Put:
    ask_id: str
    request: dict[str, Any]
    asked_at: float


@dataclass(frozen=True)
class Settle:
    ask_id: str
    outcome: Outcome
    settled_at: float


@dataclass(frozen=True)
class Get:
    ask_id: str


@dataclass(frozen=True)
class Pending:
    pass


@dataclass(frozen=True)
class Changes:
    after: int


@dataclass(frozen=True)
class Records:
    settled_after: float | None


@dataclass(frozen=True)
class Purge:
    settled_before: float


@dataclass(frozen=True)
class Reopen:
    pass


Operation: TypeAlias = Put | Settle | Get | Pending | Changes | Records | Purge | Reopen

puts = st.builds(Put, ids, st.dictionaries(plain_text, json_values, max_size=3), times)
settles = st.builds(Settle, ids, outcomes, times)
#: Mostly writes and the reads that show their order: several settled records
#: build up between the purges and reopenings.
operations: st.SearchStrategy[Operation] = st.one_of(
    *[puts, settles, settles] * 2,
    st.builds(Get, ids),
    st.just(Pending()),
    st.builds(Changes, st.integers(-1, 16)),
    st.builds(Changes, st.integers(-1, 16)),
    st.builds(Records, st.none() | times),
    st.builds(Records, st.sampled_from([-1.0, 0.0, 1.0])),
    st.builds(Purge, times),
    st.just(Reopen()),
)


async def close_all(opened: list[AskStore]) -> None:
    for store in opened:
        await store.close()


async def perform(store: AskStore, operation: Operation) -> object:
    """What *operation* returned on *store*, or the name of the error it raised."""
    try:
        match operation:
            case Put(ask_id, request, asked_at):
                return await store.put(ask_id, request, asked_at=asked_at)
            case Settle(ask_id, outcome, settled_at):
                return await store.settle(ask_id, outcome, settled_at=settled_at)
            case Get(ask_id):
                return await store.get(ask_id)
            case Pending():
                return await store.pending()
            case Changes(after):
                return await store.changes(after)
            case Records(settled_after):
                return await store.records(settled_after=settled_after)
            case Purge(settled_before):
                return await store.purge(settled_before=settled_before)
            case Reopen():  # pragma: no cover - the script's runner reopens
                return None
    except (KeyError, TypeError, ValueError) as error:
        return type(error).__name__


@settings(max_examples=40, deadline=None)
@given(
    script=st.tuples(
        st.lists(st.tuples(st.booleans(), puts), min_size=3, max_size=8),
        st.lists(st.tuples(st.booleans(), operations), min_size=10, max_size=40),
    ).map(lambda parts: parts[0] + parts[1])
)
def test_changes_records_and_purge_answer_as_sqlite_does(
    server: PostgresServer, script: list[tuple[bool, Operation]]
) -> None:
    """On any script of operations, PostgreSQL answers exactly as SQLite does.

    Puts, settlements, reads, purges and reopenings, spread over two
    connections: every result is equal, change numbers included, and so are
    the records held at the end.
    """

    async def main() -> None:
        async with schema_of(server) as schema:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "asks.db"

                async def reopen() -> tuple[SQLiteStore, list[PostgresStore]]:
                    return SQLiteStore(path), [
                        await PostgresStore.connect(server.dsn, schema=schema) for _ in range(2)
                    ]

                reference, postgres = await reopen()
                try:
                    for step, (which, operation) in enumerate(script):
                        if isinstance(operation, Reopen):
                            await close_all([reference, *postgres])
                            reference, postgres = await reopen()
                            continue
                        expected = await perform(reference, operation)
                        actual = await perform(postgres[which], operation)
                        assert actual == expected, (step, operation)
                    for read in (Changes(0), Pending(), Records(None)):
                        assert await perform(postgres[0], read) == await perform(reference, read)
                finally:
                    await close_all([reference, *postgres])

    run(main())


def test_reopening_loses_nothing(server: PostgresServer) -> None:
    """Closing every store and opening a new one loses nothing.

    Every record, pending or settled, survives, and the next change takes
    the next number.
    """

    async def main() -> None:
        async with schema_of(server) as schema:
            async with stores(server.dsn, schema, 2) as (one, other):
                for i in range(40):
                    await (one, other)[i % 2].put(f"ask-{i}", {"i": i}, asked_at=float(i))
                for i in range(0, 40, 3):
                    outcome = Outcome.answered(answer(f"{i}\x00"), principal="p", via="v")
                    await (other, one)[i % 2].settle(f"ask-{i}", outcome, settled_at=float(i))
                before = (await one.changes(0), await one.pending(), await one.records())
            async with stores(server.dsn, schema, 1) as (again,):
                after = (await again.changes(0), await again.pending(), await again.records())
                assert after == before
                last = max(record.seq for record in before[0])
                assert (await again.put("new", {}, asked_at=99.0)).seq == last + 1

    run(main())


# --- faults --------------------------------------------------------------------------------


@pytest.mark.parametrize("rival", [False, True], ids=["alone", "with-a-rival"])
@pytest.mark.parametrize("cut", ["before", "after"], ids=["before-commit", "after-commit"])
def test_a_settlement_whose_connection_drops_at_its_commit_settles_once(
    server: PostgresServer, cut: Cut, rival: bool
) -> None:
    """A settlement cut at its commit settles once, and its answer is never lost.

    The connection drops before the server receives the ``COMMIT`` (it rolls
    back), or after it committed and before the client hears so. The store
    reconnects and tries once more; when the first try committed, the second
    knows it won (its token). Exactly one caller wins, a rival settling
    meanwhile included, and the stored outcome is the winner's.
    """

    async def once(proxy: CuttingProxy, schema: str) -> None:
        async with (
            stores(proxy.dsn, schema, 1) as (cut_store,),
            stores(server.dsn, schema, 1) as (rival_store,),
        ):
            await cut_store.put("ask", {}, asked_at=1.0)
            done = proxy.arm(b"COMMIT", cut)
            mine = Outcome.answered(answer("mine"), via="cut")
            settling = asyncio.create_task(cut_store.settle("ask", mine, settled_at=2.0))
            await done.wait()
            results: list[Settlement] = []
            if rival:
                theirs = Outcome.answered(answer("theirs"), via="rival")
                results.append(await rival_store.settle("ask", theirs, settled_at=3.0))
            results.append(await settling)
            won = [result for result in results if result.won]
            assert len(won) == 1, results
            stored = await rival_store.get("ask")
            assert stored is not None
            assert stored == won[0].record
            assert all(result.record == stored for result in results)
            if cut == "after" or not rival:
                assert results[-1].won  # the cut store's answer stands
                assert stored.outcome == mine
            assert await seq_counter(server, schema) == 2  # one put, one settlement

    async def main() -> None:
        async with CuttingProxy(server.dsn) as proxy:
            for _ in range(5):
                async with schema_of(server) as schema:
                    await once(proxy, schema)
            assert proxy.cuts == 5

    run(main())


@pytest.mark.parametrize("cut", ["before", "after"], ids=["before-commit", "after-commit"])
def test_a_put_whose_connection_drops_at_its_commit_adds_the_ask_once(
    server: PostgresServer, cut: Cut
) -> None:
    """A put cut at its commit adds the ask once and returns its pending record.

    Whether or not the first try committed; the ask took one change number.
    """

    async def main() -> None:
        async with (
            schema_of(server) as schema,
            CuttingProxy(server.dsn) as proxy,
            stores(proxy.dsn, schema, 1) as (store,),
        ):
            await store.get("warm-up")  # the tables exist before the proxy is armed
            proxy.arm(b"COMMIT", cut)
            record = await store.put("ask", {"q": 1}, asked_at=1.0)
            assert proxy.cuts == 1
            assert record == AskRecord("ask", {"q": 1}, 1.0, 1)
            assert await store.changes(0) == [record]
            assert await seq_counter(server, schema) == 1

    run(main())


def test_a_settlement_whose_backend_is_terminated_while_it_waits_settles_once(
    server: PostgresServer,
) -> None:
    """A settlement whose backend the server terminates mid-transaction settles once.

    Two stores settle one ask while another transaction holds the change
    counter, and the first store's backend is terminated. Exactly one
    settlement wins, and the terminated one, tried again, reports the truth.
    """

    async def main() -> None:
        for _ in range(5):
            async with (
                schema_of(server) as schema,
                stores(server.dsn, schema, 2) as (victim, rival),
                await admin(server) as db,
                await admin(server) as monitor,
            ):
                await victim.put("ask", {}, asked_at=1.0)
                lock = sql.SQL("SELECT value FROM {}.meta WHERE key = 'seq' FOR UPDATE").format(
                    sql.Identifier(schema)
                )
                waiting = (
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE %s AND pid <> ALL(%s)"
                )
                pattern = f"%{schema}%"
                async with db.transaction():
                    await db.execute(lock)
                    mine = asyncio.create_task(
                        victim.settle("ask", Outcome.cancelled(via="victim"), settled_at=2.0)
                    )
                    (pid,) = await wait_for_row(monitor, waiting, (pattern, []))
                    theirs = asyncio.create_task(
                        rival.settle("ask", Outcome.cancelled(via="rival"), settled_at=3.0)
                    )
                    await wait_for_row(monitor, waiting, (pattern, [pid]))
                    await db.execute("SELECT pg_terminate_backend(%s)", (pid,))
                results = [await mine, await theirs]
                assert sum(result.won for result in results) == 1, results
                stored = await rival.get("ask")
                assert all(result.record == stored for result in results)
                assert await seq_counter(server, schema) == 2

    run(main())


def test_a_store_reconnects_after_its_idle_connection_is_terminated(
    server: PostgresServer,
) -> None:
    """A store whose idle connection the server ended carries on, on a new one.

    Reads, puts and settlements retry; a purge, which cannot know what a lost
    try deleted, raises ``STORE_FAILED`` once, and the next call reconnects.
    """

    async def main() -> None:
        async with (
            schema_of(server) as schema,
            stores(server.dsn, schema, 1) as (store,),
            await admin(server) as db,
        ):

            async def terminate() -> None:
                connection = store._connection
                assert connection is not None
                await db.execute("SELECT pg_terminate_backend(%s)", (connection.info.backend_pid,))

            await store.put("a", {}, asked_at=1.0)
            await terminate()
            assert await store.get("a") is not None
            await terminate()
            assert (await store.put("b", {}, asked_at=1.0)).seq == 2
            await terminate()
            assert (await store.settle("b", Outcome.expired(), settled_at=2.0)).won
            await terminate()
            with pytest.raises(UserInteractionError, match="cannot be reached") as failed:
                await store.purge(settled_before=3.0)
            assert isinstance(failed.value.__cause__, psycopg.OperationalError)
            assert await store.purge(settled_before=3.0) == 1
            assert [record.ask_id for record in await store.pending()] == ["a"]

    run(main())


@pytest.mark.parametrize("losses", [1, 2])
def test_a_connection_lost_while_the_store_opens_is_tried_once_more(
    server: PostgresServer, monkeypatch: pytest.MonkeyPatch, losses: int
) -> None:
    """The server ends the opening connection while the tables are made: once, then twice.

    Once, the store opens on a new connection, as every operation retries a
    lost one; twice, ``connect`` raises ``STORE_FAILED``. Opening used not to
    retry: an agent process that connected while a slow-tier test
    terminated backends every 100 ms exited with "the connection to it was
    lost", and its answers were never asked.
    """
    made: list[int] = []
    create = _store._create_tables

    async def terminated_while_making(db: Any, schema: str) -> None:
        made.append(db.info.backend_pid)
        if len(made) <= losses:
            await db.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        await create(db, schema)

    monkeypatch.setattr(_store, "_create_tables", terminated_while_making)

    async def main() -> None:
        async with schema_of(server) as schema:
            if losses == 1:
                store = await PostgresStore.connect(server.dsn, schema=schema)
                try:
                    assert (await store.put("a", {}, asked_at=1.0)).seq == 1
                finally:
                    await store.close()
            else:
                with pytest.raises(UserInteractionError, match="cannot be reached") as failed:
                    await PostgresStore.connect(server.dsn, schema=schema)
                assert isinstance(failed.value.__cause__, psycopg.OperationalError)
        assert len(made) == 2
        assert made[0] != made[1]  # a new connection, a new backend

    run(main())


def test_a_cancelled_settlement_never_holds_the_change_counter(server: PostgresServer) -> None:
    """A settlement cancelled while it waits for the change counter ends its transaction.

    Once the counter is free another store settles at once, and the cancelled
    store carries on.
    """

    async def main() -> None:
        async with (
            schema_of(server) as schema,
            stores(server.dsn, schema, 2) as (cancelled, other),
            await admin(server) as db,
            await admin(server) as monitor,
        ):
            await cancelled.put("ask", {}, asked_at=1.0)
            lock = sql.SQL("SELECT value FROM {}.meta WHERE key = 'seq' FOR UPDATE").format(
                sql.Identifier(schema)
            )
            waiting = (
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s"
            )
            async with db.transaction():
                await db.execute(lock)
                task = asyncio.create_task(
                    cancelled.settle("ask", Outcome.cancelled(via="cancelled"), settled_at=2.0)
                )
                await wait_for_row(monitor, waiting, (f"%{schema}%",))
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            async with asyncio.timeout(2.0):
                settled = await other.settle("ask", Outcome.cancelled(via="other"), settled_at=3.0)
            assert settled.won
            assert await cancelled.get("ask") == settled.record
            assert await seq_counter(server, schema) == 2

    run(main())


# --- many processes ------------------------------------------------------------------------


#: The project's folder, where ``python -m tests.postgres_processes`` runs.
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Child:
    """A process of ``tests/postgres_processes.py``, the JSON lines it printed, its stderr."""

    name: str
    process: asyncio.subprocess.Process
    lines: list[dict[str, Any]]
    reader: asyncio.Task[None]
    stderr: Path

    def diagnosis(self) -> str:
        return f"{self.name}: {self.stderr.read_text(errors='replace')[-3000:]}"


@dataclass
class Launcher:
    """Starts the children of one test: in *folder*, on *schema*; *progress* is set on each line."""

    folder: Path
    progress: asyncio.Event
    dsn: str
    schema: str
    #: Every child started, so that a failed test ends them all (:meth:`reap`).
    spawned: list[Child] = field(default_factory=list[Child])

    async def reap(self) -> None:
        """Kill every child still running and wait for it: a red test leaves none behind."""
        for child in self.spawned:
            if child.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()
                await child.process.wait()
            child.reader.cancel()
            await asyncio.gather(child.reader, return_exceptions=True)

    async def spawn(self, role: str, name: str, *rest: str) -> Child:
        stderr = self.folder / f"{name}.stderr"
        with stderr.open("wb") as errors:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.postgres_processes",
                role,
                self.dsn,
                self.schema,
                name,
                *rest,
                cwd=ROOT,
                stdout=asyncio.subprocess.PIPE,
                stderr=errors,
            )
        lines: list[dict[str, Any]] = []

        async def read() -> None:
            assert process.stdout is not None
            while line := await process.stdout.readline():
                lines.append(json.loads(line))
                self.progress.set()

        child = Child(name, process, lines, asyncio.create_task(read()), stderr)
        self.spawned.append(child)
        return child


async def until(progress: asyncio.Event, condition: Callable[[], bool]) -> None:
    """Wait until *condition* holds, checking it each time a child prints."""
    while not condition():
        progress.clear()
        await progress.wait()


def test_two_agents_and_three_uis_settle_a_thousand_asks_once_through_faults(
    server: PostgresServer, tmp_path: Path
) -> None:
    """Two agent processes ask 1,000 questions; three UI processes answer each at once.

    Meanwhile the server terminates one of their connections every 100 ms,
    and one UI process is killed (SIGKILL) a third of the way through and
    replaced. Every ask is answered, settled exactly once (one put and one
    winning settlement a change number, no more), each agent receives the
    answer the store kept, and no UI's report claims an ask another UI won.
    """
    count = 500  # an agent
    launchers: list[Launcher] = []

    async def main() -> None:
        async with schema_of(server) as schema:
            tag = f"dsh-faults-{uuid.uuid4().hex[:12]}"
            dsn = make_conninfo(server.dsn, application_name=tag)
            await (await PostgresStore.connect(dsn, schema=schema)).close()  # the tables
            progress = asyncio.Event()
            launcher = Launcher(tmp_path, progress, dsn, schema)
            launchers.append(launcher)
            uis = [await launcher.spawn("ui", f"ui-{n}") for n in range(3)]
            await until(progress, lambda: all(child.lines for child in uis))
            agents = [await launcher.spawn("agent", f"agent-{k}", str(count)) for k in range(2)]
            terminated = 0

            async def chaos() -> None:
                nonlocal terminated
                async with await admin(server) as db:
                    while True:
                        await asyncio.sleep(0.1)
                        row = await (
                            await db.execute(
                                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                " WHERE application_name = %s ORDER BY random() LIMIT 1",
                                (tag,),
                            )
                        ).fetchone()
                        terminated += row is not None and bool(row[0])

            faults = asyncio.create_task(chaos())

            def answered() -> bool:
                return sum(len(child.lines) for child in agents) >= 2 * count // 3

            await until(progress, answered)
            killed = uis[0]
            killed.process.kill()
            uis.append(await launcher.spawn("ui", "ui-3"))
            for child in agents:
                assert await child.process.wait() == 0, child.diagnosis()
                await child.reader
            faults.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await faults
            for child in uis:
                if child is not killed:
                    # A UI that ended by itself failed: say why, not ProcessLookupError.
                    assert child.process.returncode is None, child.diagnosis()
                    child.process.terminate()
                    assert await child.process.wait() == 0, child.diagnosis()
                await child.reader

            async with stores(server.dsn, schema, 1) as (store,):
                kept = {record.ask_id: record for record in await store.changes(0)}
            assert await seq_counter(server, schema) == 2 * 2 * count
            given = [line for child in agents for line in child.lines]
            assert len(given) == len({line["askId"] for line in given}) == 2 * count
            for line in given:
                record = kept[line["askId"]]
                assert record.state == "answered"
                assert record.answer == line["answer"]
                assert record.via == line["answer"]["answers"][0]["selected"][0]
            wins = [
                (child.name, line["won"]) for child in uis for line in child.lines if "won" in line
            ]
            assert len(wins) == len({ask_id for _, ask_id in wins})  # nobody won an ask twice
            for name, ask_id in wins:
                assert kept[ask_id].via == name
            survivors = {child.name: child.lines[-1] for child in uis if child is not killed}
            for name, report in survivors.items():
                assert report["ui"] == name
                assert {a for n, a in wins if n == name} == set(report["wins"])
            assert {record.via for record in kept.values()} <= {child.name for child in uis}
            assert terminated > 0
            tries = [line["tries"] for line in given]
            print(  # shown with -s: what the faults did
                f"{terminated} connections terminated; asks tried again: "
                f"{sum(t > 1 for t in tries)}; wins by UI: "
                f"{ {n: sum(1 for w, _ in wins if w == n) for n in (c.name for c in uis)} }; "
                f"errors: { {n: len(r['errors']) for n, r in survivors.items()} }"
            )

    async def reaped() -> None:
        try:
            await main()
        finally:
            for launcher in launchers:
                await launcher.reap()

    run(reaped(), bound=300.0)


def test_the_ledger_says_yes_once_per_nonce_to_every_worker(server: PostgresServer) -> None:
    """The MCP bridge's ledger in PostgreSQL: each nonce once, long-expired ones forgotten, one racer wins.

    A nonce is kept ``FORGET_AFTER`` seconds past its state's expiry, so a
    worker whose clock runs ahead (here, the state expired a second ago on
    this clock) forgets nothing another worker still accepts.
    """
    schema = f"ledger_{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        first, second = (PostgresLedger(server.dsn, schema=schema) for _ in range(2))
        assert await first.use("a", time.time() + 60)
        assert not await second.use("a", time.time() + 60)
        assert await second.use("recent", time.time() - 1)
        assert await second.use("old", time.time() - FORGET_AFTER - 1)
        # "old" expired long ago: forgotten at the next use, and then new to the ledger.
        assert await first.use("old", time.time() + 60)
        # "recent" expired within the skew allowed: still remembered.
        assert not await first.use("recent", time.time() + 60)
        won = await asyncio.gather(
            *(ledger.use("race", time.time() + 60) for ledger in (first, second) * 4)
        )
        assert sorted(won) == [False] * 7 + [True]
        with psycopg.connect(server.dsn, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))

    run(main())


def test_a_ledger_and_a_store_start_together_on_a_new_schema(server: PostgresServer) -> None:
    """The ledger makes its table under the store's lock: starting both at once never fails.

    Two ``CREATE SCHEMA IF NOT EXISTS`` at once can both find no schema; with
    locks of their own, a store and a ledger failed most such starts.
    """

    async def main() -> None:
        for _ in range(12):
            schema = f"both_{uuid.uuid4().hex[:8]}"

            async def store(schema: str = schema) -> None:
                opened = await PostgresStore.connect(server.dsn, schema=schema)
                await opened.close()

            ledger = PostgresLedger(server.dsn, schema=schema)
            await asyncio.gather(store(), ledger.use("n", time.time() + 60))
            with psycopg.connect(server.dsn, autocommit=True) as db:
                db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))

    run(main(), bound=120.0)


def test_a_worker_that_may_only_use_the_ledgers_table_opens_it(server: PostgresServer) -> None:
    """A role with no CREATE on the database, granted the table alone, marks nonces."""
    schema = f"least_{uuid.uuid4().hex[:8]}"
    role = f"worker_{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        assert await PostgresLedger(server.dsn, schema=schema).use("setup", time.time() + 60)
        with psycopg.connect(server.dsn, autocommit=True) as db:
            db.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
            db.execute(
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                    sql.Identifier(schema), sql.Identifier(role)
                )
            )
            db.execute(
                sql.SQL("GRANT SELECT, INSERT, DELETE ON {}.used_request_states TO {}").format(
                    sql.Identifier(schema), sql.Identifier(role)
                )
            )
            db.execute(sql.SQL("REVOKE CREATE ON DATABASE {} FROM PUBLIC").format(database))
        try:
            worker = PostgresLedger(make_conninfo(server.dsn, user=role), schema=schema)
            assert await worker.use("n", time.time() + 60)
            assert not await worker.use("setup", time.time() + 60)
        finally:
            with psycopg.connect(server.dsn, autocommit=True) as db:
                db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
                db.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
                db.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO PUBLIC").format(database))

    with psycopg.connect(server.dsn, autocommit=True) as db:
        name = db.execute("SELECT current_database()").fetchone()
    assert name is not None
    database = sql.Identifier(name[0])
    run(main())
