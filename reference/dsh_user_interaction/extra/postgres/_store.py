"""The PostgreSQL ask store: one database, any number of processes and machines.

Design notes:

* Two tables in a schema of the caller's choosing (``dsh_user_interaction``
  by default): ``asks``, one row an ask, and ``meta``, whose ``seq`` row is
  the change counter. The first store to open a schema creates them, under
  a transaction-scoped advisory lock, so that stores starting at the same
  moment in several processes neither fail nor create twice.
* Every text a caller gives (the ask id, the request, the answer, the
  principal and the UI's name) is kept as :func:`encode_json` text in a
  ``text`` column. PostgreSQL's ``text`` refuses NUL and its UTF-8 refuses
  lone surrogates, and ``jsonb`` refuses both escaped; the escapes of
  ``encode_json`` are plain ASCII, so every Python string comes back as it
  was written. (An ask id ``call-1`` is the column value ``"call-1"``.)
* Every write is one transaction that first takes the next change number
  with ``UPDATE meta SET value = value + 1 ... RETURNING value`` and then
  changes the ask. The counter is a row, not a ``SEQUENCE``, on purpose: the
  row's lock is held until the writer commits, so the next writer gets its
  number only after the previous one has committed, and commits become
  visible in ``seq`` order. A watcher that reads ``seq > cursor`` therefore
  never skips a change that was numbered earlier and committed later (with
  a sequence, number 6 could commit before number 5, and a watcher that saw
  6 would never read 5). A write that changes nothing rolls back, so the
  counter has no gaps. The price: the writes to one schema take turns,
  each holding the counter for a few round trips to the server.
* Settling is one conditional ``UPDATE ... WHERE ask_id = ... AND state =
  'pending'``: whichever transaction commits first wins, on every machine
  (``DUR-ONCE-1``); the others find no pending row and return the winner.
* A connection lost in the middle of a write leaves its fate unknown: the
  commit may or may not have happened. :meth:`PostgresStore.put` and
  :meth:`PostgresStore.settle` reconnect and try once more. A put is
  idempotent; a settlement writes a random token of its own call with the
  outcome, so the second try recognises the first one's commit (the row is
  settled with its own token) and reports the win instead of a loss. An
  answer is never settled twice, and never reported lost when it was kept.
  Reads are tried again the same way; a purge is not (a second try could not
  count what the first one deleted), its error tells the caller.
* Each write sends ``pg_notify`` in its own transaction, so the notification
  is delivered exactly when the change is visible. :meth:`PostgresStore.watch`
  listens on a connection of its own (one a store, shared by its watchers)
  and also re-reads the changes every *poll_interval* seconds, in case a
  notification was lost; the listening connection reconnects when it drops,
  and a watcher whose reads fail waits and reads again: a watch never ends
  because the server was out of reach for a while.
* One connection a store for everything else, used by one call at a time (an
  :class:`asyncio.Lock`), so a store is safe to share between tasks of one
  event loop. Open one store a process, or several for parallel writes.
* The layout's version is ``meta``'s ``layout`` row (``DUR-LAYOUT-1``),
  written with the tables and read, with the tables' columns, the first
  time a store object connects: a newer version, a missing one, or tables
  that are not the layout their version names (a renamed column, say) are
  refused then with ``STORE_FAILED``, never at the first write. Layout 1 is
  the only one so far, so there is nothing yet to migrate.
* Every error of the database is raised as ``STORE_FAILED`` naming its
  cause in plain words (``DUR-FAIL-1``): a server out of reach or a
  connection lost twice, a full disk, a read-only database, a lock not
  granted, a permission refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final, LiteralString, TypeVar, cast, final

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow

from dsh_user_interaction._durable._store import (
    AskRecord,
    AskState,
    Outcome,
    Settlement,
    StoredRequest,
    checked_ask_id,
    checked_time,
    decode_json,
    encode_json,
    store_failed,
)
from dsh_user_interaction._errors import UserInteractionError

__all__ = ["DEFAULT_SCHEMA", "LAYOUT_VERSION", "PostgresStore", "open_connection"]

_T = TypeVar("_T")
_Connection = psycopg.AsyncConnection[TupleRow]

#: The schema a store keeps its tables in, unless told otherwise.
DEFAULT_SCHEMA: Final = "dsh_user_interaction"

#: The version of the tables' layout this store reads and writes, kept in ``meta``.
LAYOUT_VERSION: Final = 1

#: Each table of the layout, with its columns in order.
_LAYOUT: Final[dict[str, tuple[str, ...]]] = {
    "asks": (
        "ask_id",
        "request",
        "asked_at",
        "seq",
        "state",
        "answer",
        "principal",
        "via",
        "settled_at",
        "settle_token",
    ),
    "meta": ("key", "value"),
}

#: The first key of the advisory lock taken while creating the tables; the
#: second is the hash of the schema's name.
SCHEMA_LOCK_CLASS: Final = 0x0D5A5C

#: The first pause before reconnecting, in seconds; it doubles up to the poll interval.
_FIRST_PAUSE: Final = 0.05

#: The longest name PostgreSQL keeps whole (NAMEDATALEN - 1 bytes).
_MAX_NAME_BYTES: Final = 63

_COLUMNS: Final = sql.SQL(
    "ask_id, request, asked_at, seq, state, answer, principal, via, settled_at, settle_token"
)

_CREATE: Final[tuple[LiteralString, ...]] = (
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    """CREATE TABLE IF NOT EXISTS {schema}.asks (
        ask_id text PRIMARY KEY,
        request text NOT NULL,
        asked_at double precision NOT NULL,
        seq bigint NOT NULL,
        state text NOT NULL
            CHECK (state IN ('pending', 'answered', 'cancelled', 'aborted', 'expired')),
        answer text,
        principal text,
        via text,
        settled_at double precision,
        settle_token text
    )""",
    "CREATE INDEX IF NOT EXISTS asks_by_seq ON {schema}.asks (seq)",
    "CREATE INDEX IF NOT EXISTS asks_pending ON {schema}.asks (seq) WHERE state = 'pending'",
    """CREATE INDEX IF NOT EXISTS asks_settled ON {schema}.asks (settled_at, seq)
        WHERE state <> 'pending'""",
    "CREATE TABLE IF NOT EXISTS {schema}.meta (key text PRIMARY KEY, value bigint NOT NULL)",
    """INSERT INTO {schema}.meta (key, value) VALUES ('seq', 0), ('layout', {layout})
        ON CONFLICT (key) DO NOTHING""",
)

_Row = tuple[str, str, float, int, str, "str | None", "str | None", "str | None", "float | None"]


def _record(row: TupleRow) -> AskRecord:
    ask_id, request, asked_at, seq, state, answer, principal, via, settled_at = cast(
        "_Row", row[:9]
    )
    return AskRecord(
        ask_id=cast("str", decode_json(ask_id)),
        request=cast("StoredRequest", decode_json(request)),
        asked_at=asked_at,
        seq=seq,
        state=cast("AskState", state),
        answer=None if answer is None else decode_json(answer),
        principal=None if principal is None else cast("str", decode_json(principal)),
        via=None if via is None else cast("str", decode_json(via)),
        settled_at=settled_at,
    )


def _optional(text: str | None) -> str | None:
    return None if text is None else encode_json(text)


def _checked_schema(schema: object) -> str:
    if not isinstance(schema, str):
        msg = f"schema must be a string, got {schema!r}"
        raise TypeError(msg)
    size = len(schema.encode("utf-8", "surrogatepass"))
    if not 0 < size <= _MAX_NAME_BYTES or "\x00" in schema:
        msg = f"schema must be 1 to {_MAX_NAME_BYTES} bytes of UTF-8 without NUL, got {schema!r}"
        raise ValueError(msg)
    return schema


def _checked_conninfo(conninfo: object) -> str:
    if not isinstance(conninfo, str):
        msg = f"conninfo must be a string, got {type(conninfo).__name__}"
        raise TypeError(msg)
    return conninfo


def _channel(schema: str) -> str:
    """The notification channel of *schema*: short and plain, whatever the schema's name."""
    digest = hashlib.sha256(schema.encode("utf-8", "surrogatepass")).hexdigest()
    return f"dsh_asks_{digest[:32]}"


def _lost(connection: _Connection) -> bool:
    """Whether *connection* is gone: an error on it says nothing of what the server did."""
    return connection.closed


@final
class PostgresStore:
    """An :class:`~dsh_user_interaction.durable.AskStore` in a PostgreSQL database.

    Open one with ``await PostgresStore.connect(conninfo)`` (a libpq
    connection string or URI) and close it with :meth:`close`, or use it as
    an ``async with`` block, which connects on entry. Every store opened on
    the same database and *schema*, in any process on any machine, shares
    the same asks. A store reconnects by itself when its connection drops.

    *poll_interval* is how often a watcher re-reads the changes when no
    notification arrives (1 s by default); notifications wake a watcher
    within milliseconds of a commit.
    """

    __slots__ = (
        "_channel",
        "_closed",
        "_connection",
        "_conninfo",
        "_listener",
        "_lock",
        "_poll",
        "_queries",
        "_ready",
        "_schema",
        "_wake",
    )

    def __init__(
        self, conninfo: str, *, schema: str = DEFAULT_SCHEMA, poll_interval: float = 1.0
    ) -> None:
        poll = checked_time(poll_interval, "poll_interval")
        if poll <= 0:
            msg = f"poll_interval must be positive, got {poll_interval!r}"
            raise ValueError(msg)
        self._conninfo = _checked_conninfo(conninfo)
        self._schema = _checked_schema(schema)
        self._channel = _channel(self._schema)
        self._poll = poll
        self._closed = False
        self._ready = False
        self._connection: _Connection | None = None
        self._listener: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._wake: set[asyncio.Event] = set()
        self._queries = _Queries(self._schema)

    @classmethod
    async def connect(
        cls, conninfo: str, *, schema: str = DEFAULT_SCHEMA, poll_interval: float = 1.0
    ) -> PostgresStore:
        """Connect to the database of *conninfo*, creating the tables in *schema* if absent.

        Raises ``STORE_FAILED`` when the server cannot be reached or the
        tables are of another layout (``DUR-LAYOUT-1``), and
        :class:`TypeError` or :class:`ValueError` for a bad argument.
        """
        store = cls(conninfo, schema=schema, poll_interval=poll_interval)
        await store.open()
        return store

    @property
    def schema(self) -> str:
        """The schema holding this store's tables."""
        return self._schema

    @property
    def poll_interval(self) -> float:
        """How often a watcher re-reads the changes without a notification, in seconds."""
        return self._poll

    async def open(self) -> None:
        """Connect now, and create the tables if absent; the first call of any method does too."""
        async with self._lock:
            try:
                await self._connected()
            except (psycopg.Error, _LayoutError) as error:
                raise _failed("connect to the database", error) from error

    async def __aenter__(self) -> PostgresStore:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _connected(self) -> _Connection:
        """The store's connection, opened (and the tables created) when there is none."""
        if self._closed:
            msg = "the store is closed"
            raise RuntimeError(msg)
        connection = self._connection
        if connection is not None and not _lost(connection):
            return connection
        self._connection = None
        for last in (False, True):
            connection = await open_connection(self._conninfo, "dsh-ask-store")
            try:
                if not self._ready:
                    await _create_tables(connection, self._schema)
                    await _check_layout(connection, self._schema)
                    self._ready = True
            except psycopg.OperationalError:
                # A connection lost while the tables are made or read (a terminated
                # backend, a restarted server) is tried once more on a new one, as
                # every operation is: only a connection lost twice fails (DUR-FAIL-1).
                lost = _lost(connection)
                await connection.close()
                if last or not lost:
                    raise
                continue
            except BaseException:
                await connection.close()
                raise
            self._connection = connection
            return connection
        raise AssertionError  # pragma: no cover - the loop returns or raises

    async def _run(
        self, work: Callable[[_Connection], Awaitable[_T]], doing: str, *, retry: bool = True
    ) -> _T:
        """Run *work* on the connection, alone; once more on a new one if it was lost.

        A database error is raised as ``STORE_FAILED`` (``DUR-FAIL-1``).
        """
        async with self._lock:
            try:
                if retry:
                    connection = await self._connected()
                    try:
                        return await _attempt(work, connection)
                    except psycopg.OperationalError:
                        if not _lost(connection):
                            raise
                return await _attempt(work, await self._connected())
            except (psycopg.Error, _LayoutError) as error:
                raise _failed(doing, error) from error

    def _changed(self) -> None:
        for event in self._wake:
            event.set()

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        """Add a pending ask unless *ask_id* is known; return the kept record."""
        key = encode_json(checked_ask_id(ask_id))
        when = checked_time(asked_at, "asked_at")
        text = encode_json(request)
        queries = self._queries
        channel = self._channel

        async def work(db: _Connection) -> tuple[bool, TupleRow]:
            while True:
                row = await (await db.execute(queries.get, (key,))).fetchone()
                if row is not None:
                    return False, row
                row = await _write(
                    db, queries, queries.insert, lambda seq: (key, text, when, seq, channel)
                )
                if row is not None:
                    return True, row
                # Another store added the ask since the read above: read its
                # record (or, if it was purged meanwhile, add the ask after all).

        added, row = await self._run(work, f"add the ask {ask_id!r}")
        if added:
            self._changed()
        return _record(row)

    async def get(self, ask_id: str) -> AskRecord | None:
        """The record of *ask_id*, or ``None``."""
        key = encode_json(ask_id)
        query = self._queries.get

        async def work(db: _Connection) -> TupleRow | None:
            return await (await db.execute(query, (key,))).fetchone()

        row = await self._run(work, f"read the ask {ask_id!r}")
        return None if row is None else _record(row)

    async def pending(self) -> list[AskRecord]:
        """Every pending ask, oldest first."""
        return await self._select(self._queries.pending, (), "read the pending asks")

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        """Settle *ask_id* with *outcome* if it is pending; the first settlement wins.

        Raises :class:`KeyError` when the store has no such ask. When the
        connection drops mid-settlement, the store reconnects and tries once
        more; that try knows whether the first one committed.
        """
        when = checked_time(settled_at, "settled_at")
        key = encode_json(ask_id)
        answer = None if outcome.answer is None else encode_json(outcome.answer)
        principal, via = _optional(outcome.principal), _optional(outcome.via)
        token = secrets.token_hex(16)
        queries = self._queries
        channel = self._channel

        async def work(db: _Connection) -> tuple[bool, TupleRow]:
            row = await _write(
                db,
                queries,
                queries.settle,
                lambda seq: (outcome.state, answer, principal, via, when, seq, token, key, channel),
            )
            if row is not None:
                return True, row
            row = await (await db.execute(queries.get, (key,))).fetchone()
            if row is None:
                msg = f"no ask with the id {ask_id!r} in the store"
                raise KeyError(msg)
            # Settled with this call's token: an earlier try committed before
            # its connection was lost, so this call is the one that won.
            return row[9] == token, row

        won, row = await self._run(work, f"settle the ask {ask_id!r}")
        if won:
            self._changed()
        return Settlement(won=won, record=_record(row))

    async def changes(self, after: int) -> list[AskRecord]:
        """The records changed after change number *after*, in change order."""
        return await self._select(self._queries.changes, (after,), "read the changes")

    async def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        """Yield each record that changes after *after*, as it changes.

        A commit by any store on the same schema wakes the watcher through
        a notification, within milliseconds; without one, the watcher reads
        the changes every *poll_interval* seconds anyway. A server out of
        reach never ends the watch: it reads again after a pause that grows
        to *poll_interval*, and carries on from its cursor once it can.
        """
        event = asyncio.Event()
        self._wake.add(event)
        self._start_listener()
        try:
            cursor = after
            delay = _FIRST_PAUSE
            while True:
                event.clear()
                try:
                    changed = await self.changes(cursor)
                except UserInteractionError as error:
                    if not isinstance(error.__cause__, psycopg.OperationalError):
                        raise
                    # Out of reach: the read was already tried again on a new connection.
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, self._poll)
                    continue
                delay = _FIRST_PAUSE
                for record in changed:
                    cursor = max(cursor, record.seq)
                    yield record
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._poll):
                        await event.wait()
        finally:
            self._wake.discard(event)

    def _start_listener(self) -> None:
        if self._listener is None and not self._closed:
            self._listener = asyncio.get_running_loop().create_task(
                self._listen(), name=f"dsh-ask-store-listener-{self._schema}"
            )

    async def _listen(self) -> None:
        """Wake the watchers on each notification; reconnect whenever the connection drops."""
        listen = sql.SQL("LISTEN {}").format(sql.Identifier(self._channel))
        delay = _FIRST_PAUSE
        while True:
            try:
                connection = await open_connection(self._conninfo, "dsh-ask-store-listener")
            except psycopg.Error:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._poll)
                continue
            try:
                await connection.execute(listen)
                delay = _FIRST_PAUSE
                # Whatever committed before the LISTEN took effect sent no
                # notification here: the watchers read the changes once more.
                self._changed()
                async for _ in connection.notifies():
                    self._changed()
            except psycopg.Error:
                await asyncio.sleep(0 if _lost(connection) else delay)
            finally:
                await connection.close()

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        """The settled records, oldest settlement first."""
        if settled_after is None:
            return await self._select(self._queries.records, (), "read the audit record")
        since = checked_time(settled_after, "after")
        return await self._select(self._queries.records_after, (since,), "read the audit record")

    async def purge(self, *, settled_before: float) -> int:
        """Delete the records settled before *settled_before*; return how many.

        Not retried when the connection drops (a second try could not count
        what the first one deleted): it raises ``STORE_FAILED``, and the next
        call reconnects.
        """
        before = checked_time(settled_before, "settled_before")
        query = self._queries.purge

        async def work(db: _Connection) -> int:
            cursor = await db.execute(query, (before,))
            return cursor.rowcount

        return await self._run(work, "purge the settled asks", retry=False)

    async def close(self) -> None:
        """Close the connections; the data stays. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
        async with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None:
                await connection.close()
        self._changed()

    async def _select(
        self, query: sql.Composed, params: tuple[object, ...], doing: str
    ) -> list[AskRecord]:
        async def work(db: _Connection) -> list[TupleRow]:
            return await (await db.execute(query, params)).fetchall()

        return [_record(row) for row in await self._run(work, doing)]

    def __repr__(self) -> str:
        # Never the connection string: it may hold a password.
        state = "closed" if self._closed else "open"
        return f"<PostgresStore {state} schema={self._schema!r}>"


@final
class _Queries:
    """The store's statements, with its schema's name quoted in."""

    __slots__ = (
        "changes",
        "get",
        "insert",
        "next_seq",
        "pending",
        "purge",
        "records",
        "records_after",
        "settle",
    )

    def __init__(self, schema: str) -> None:
        def query(text: LiteralString) -> sql.Composed:
            return sql.SQL(text).format(schema=sql.Identifier(schema), columns=_COLUMNS)

        self.get = query("SELECT {columns} FROM {schema}.asks WHERE ask_id = %s")
        self.pending = query(
            "SELECT {columns} FROM {schema}.asks WHERE state = 'pending' ORDER BY seq"
        )
        self.changes = query("SELECT {columns} FROM {schema}.asks WHERE seq > %s ORDER BY seq")
        self.records = query(
            "SELECT {columns} FROM {schema}.asks WHERE state <> 'pending' ORDER BY settled_at, seq"
        )
        self.records_after = query(
            "SELECT {columns} FROM {schema}.asks WHERE state <> 'pending' AND settled_at > %s"
            " ORDER BY settled_at, seq"
        )
        self.purge = query("DELETE FROM {schema}.asks WHERE state <> 'pending' AND settled_at < %s")
        self.next_seq = query(
            "UPDATE {schema}.meta SET value = value + 1 WHERE key = 'seq' RETURNING value"
        )
        # pg_notify in RETURNING: it runs only for a row that was written,
        # and the notification is delivered when the transaction commits.
        self.insert = query(
            "INSERT INTO {schema}.asks (ask_id, request, asked_at, seq, state)"
            " VALUES (%s, %s, %s, %s, 'pending') ON CONFLICT (ask_id) DO NOTHING"
            " RETURNING {columns}, pg_notify(%s, seq::text)"
        )
        self.settle = query(
            "UPDATE {schema}.asks SET state = %s, answer = %s, principal = %s, via = %s,"
            " settled_at = %s, seq = %s, settle_token = %s"
            " WHERE ask_id = %s AND state = 'pending'"
            " RETURNING {columns}, pg_notify(%s, seq::text)"
        )


async def open_connection(conninfo: str, application_name: str) -> _Connection:
    """A new connection in autocommit mode, named for ``pg_stat_activity`` unless *conninfo* is."""
    if "application_name" not in conninfo_to_dict(conninfo):
        conninfo = make_conninfo(conninfo, application_name=application_name)
    return await psycopg.AsyncConnection.connect(conninfo, autocommit=True)


async def _create_tables(db: _Connection, schema: str) -> None:
    """Create the schema and its tables unless they exist, one process at a time.

    They are created in one transaction, so a ``meta`` table means all is there.
    """
    exists = "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = 'meta'"
    if await (await db.execute(exists, (schema,))).fetchone() is not None:
        return
    async with db.transaction():
        await db.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (SCHEMA_LOCK_CLASS, schema)
        )
        if await (await db.execute(exists, (schema,))).fetchone() is not None:
            return
        for statement in _CREATE:
            await db.execute(
                sql.SQL(statement).format(
                    schema=sql.Identifier(schema), layout=sql.Literal(LAYOUT_VERSION)
                )
            )


async def _attempt(work: Callable[[_Connection], Awaitable[_T]], connection: _Connection) -> _T:
    """Run *work*; if it fails mid-transaction, close *connection*, which rolls back."""
    try:
        return await work(connection)
    except BaseException:
        # Cancelled or failed inside a transaction: end it now (the server
        # rolls back a closed connection's transaction), so the change
        # counter's row lock is never left held for other writers to wait on.
        if not connection.closed and connection.info.transaction_status != TransactionStatus.IDLE:
            await connection.close()
        raise


class _Unchanged(Exception):
    """The write found nothing to change: its transaction rolls back."""


async def _write(
    db: _Connection,
    queries: _Queries,
    statement: sql.Composed,
    params: Callable[[int], tuple[object, ...]],
) -> TupleRow | None:
    """Take the next change number and run *statement* with it, in one transaction.

    The counter row stays locked until the commit (see the design notes).
    Returns the written row, or ``None`` when *statement* wrote nothing: then
    the transaction rolls back, and the counter with it.
    """
    try:
        async with db.transaction():
            row = await (await db.execute(queries.next_seq)).fetchone()
            if row is None:
                msg = "the store's change counter is missing from its meta table"
                raise RuntimeError(msg)
            written = await (await db.execute(statement, params(int(row[0])))).fetchone()
            if written is None:
                raise _Unchanged
            return written
    except _Unchanged:
        return None


class _LayoutError(Exception):
    """The schema's tables are not a layout this store knows; the message says how."""


async def _check_layout(db: _Connection, schema: str) -> None:
    """Raise :class:`_LayoutError` unless *schema* holds this layout (``DUR-LAYOUT-1``)."""
    columns = (
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position"
    )
    meta = sql.SQL("SELECT value FROM {schema}.meta WHERE key = %s").format(
        schema=sql.Identifier(schema)
    )
    for table in ("meta", "asks"):
        rows = await (await db.execute(columns, (schema, table))).fetchall()
        found = tuple(str(row[0]) for row in rows)
        if table == "meta" and found == _LAYOUT["meta"]:
            row = await (await db.execute(meta, ("layout",))).fetchone()
            if row is None:
                msg = f"the schema {schema!r} has no layout version (meta's 'layout' row)"
                raise _LayoutError(msg)
            if int(row[0]) > LAYOUT_VERSION:
                msg = (
                    f"the schema {schema!r} has the layout version {int(row[0])}, newer than"
                    f" the version {LAYOUT_VERSION} this package reads;"
                    " open it with a newer dsh-user-interaction"
                )
                raise _LayoutError(msg)
            if int(row[0]) < 1:
                msg = f"the schema {schema!r} has the unknown layout version {int(row[0])}"
                raise _LayoutError(msg)
            if await (await db.execute(meta, ("seq",))).fetchone() is None:
                msg = f"the schema {schema!r} has no change counter (meta's 'seq' row)"
                raise _LayoutError(msg)
        elif found != _LAYOUT[table]:
            msg = (
                f"the table {schema}.{table} has the columns {list(found)}, not"
                f" {list(_LAYOUT[table])} of layout version {LAYOUT_VERSION}: it was changed"
                " by hand or by another program, and this store does not use it"
            )
            raise _LayoutError(msg)


def _failed(doing: str, error: psycopg.Error | _LayoutError) -> UserInteractionError:
    """*error* as ``STORE_FAILED``, its cause in plain words (``DUR-FAIL-1``)."""
    return store_failed(doing, _reason(error), error)


def _reason(error: psycopg.Error | _LayoutError) -> str:
    """The cause of *error* in plain words."""
    if isinstance(error, _LayoutError):
        return str(error)
    if isinstance(error, psycopg.errors.DiskFull):
        return "the database server's disk is full"
    if isinstance(error, psycopg.errors.ReadOnlySqlTransaction):
        return "the database is read-only (a standby, or read-only transactions by default)"
    if isinstance(error, (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled)):
        return "the database is locked: a lock was not granted in time"
    if isinstance(error, psycopg.errors.InsufficientPrivilege):
        return "the database refused the store's user the permission"
    if isinstance(error, (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)):
        return "the store's tables are not the layout this package writes"
    if isinstance(error, psycopg.OperationalError):
        return "the database server cannot be reached, or the connection to it was lost"
    return "the database refused the operation"
