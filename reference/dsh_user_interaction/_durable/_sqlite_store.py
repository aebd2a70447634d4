"""The embedded ask store: one SQLite file, safe for several processes on one machine.

Design notes:

* The standard library's :mod:`sqlite3`, in WAL mode, so readers never wait
  for the writer; every write is one ``BEGIN IMMEDIATE`` transaction, so two
  processes that settle the same ask at once are serialised by SQLite's own
  lock and the second finds the ask settled (``DUR-ONCE-1``).
* Text is kept as JSON (``encode_json``): the ask id, the principal and the
  UI's name too, since :mod:`sqlite3` refuses a lone surrogate in plain
  text, and any text must round-trip (``DUR-STORE-3``).
* ``synchronous=FULL``: a settlement that returned survives a crash of the
  process and of the machine, which is the point of the store.
* Each store object owns one connection, used from one worker thread of its
  own, so the event loop never waits on the disk or on another process's
  lock (``PRV-LOOP-1``).
* SQLite has no notifications between processes, so :meth:`SQLiteStore.watch`
  polls the change sequence, every *poll_interval* seconds (50 ms by
  default); a change made through the same store object wakes its watchers
  at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, TypeVar, cast, final

from ._store import (
    AskRecord,
    AskState,
    Outcome,
    Settlement,
    StoredRequest,
    checked_ask_id,
    checked_time,
    decode_json,
    encode_json,
)

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS dsh_asks (
    ask_id TEXT PRIMARY KEY NOT NULL,
    request TEXT NOT NULL,
    asked_at REAL NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    answer TEXT,
    principal TEXT,
    via TEXT,
    settled_at REAL
);
CREATE INDEX IF NOT EXISTS dsh_asks_by_seq ON dsh_asks (seq);
CREATE INDEX IF NOT EXISTS dsh_asks_pending ON dsh_asks (seq) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS dsh_asks_settled ON dsh_asks (settled_at) WHERE state != 'pending';
CREATE TABLE IF NOT EXISTS dsh_meta (key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
INSERT OR IGNORE INTO dsh_meta (key, value) VALUES ('seq', 0);
"""

_SELECT_ONE: Final = (
    "SELECT ask_id, request, asked_at, seq, state, answer, principal, via, settled_at"
    " FROM dsh_asks WHERE ask_id = ?"
)
_SELECT_PENDING: Final = (
    "SELECT ask_id, request, asked_at, seq, state, answer, principal, via, settled_at"
    " FROM dsh_asks WHERE state = 'pending' ORDER BY seq"
)
_SELECT_CHANGES: Final = (
    "SELECT ask_id, request, asked_at, seq, state, answer, principal, via, settled_at"
    " FROM dsh_asks WHERE seq > ? ORDER BY seq"
)
_SELECT_SETTLED: Final = (
    "SELECT ask_id, request, asked_at, seq, state, answer, principal, via, settled_at"
    " FROM dsh_asks WHERE state != 'pending' AND settled_at > ? ORDER BY settled_at, seq"
)

_Row = tuple[str, str, float, int, str, "str | None", "str | None", "str | None", "float | None"]


def _record(row: _Row) -> AskRecord:
    ask_id, request, asked_at, seq, state, answer, principal, via, settled_at = row
    return AskRecord(
        ask_id=decode_json(ask_id),
        request=cast("StoredRequest", decode_json(request)),
        asked_at=asked_at,
        seq=seq,
        state=cast("AskState", state),
        answer=None if answer is None else decode_json(answer),
        principal=None if principal is None else decode_json(principal),
        via=None if via is None else decode_json(via),
        settled_at=settled_at,
    )


def _text(value: str | None) -> str | None:
    """*value* as the store keeps text: JSON, so NUL and lone surrogates survive (DUR-STORE-3)."""
    return None if value is None else encode_json(value)


@final
class SQLiteStore:
    """An :class:`~dsh_user_interaction.durable.AskStore` in one SQLite file.

    Open as many stores on the same file as you like, in one process or in
    several: each is one connection. Close each with :meth:`close` (or use
    it as an ``async with`` block).

    >>> import asyncio, tempfile, os
    >>> async def main(path):
    ...     async with SQLiteStore(path) as store:
    ...         await store.put("call-1", {"questions": []}, asked_at=1.0)
    ...         settled = await store.settle("call-1", Outcome.cancelled(), settled_at=2.0)
    ...         return settled.won, (await store.get("call-1")).state
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     asyncio.run(main(os.path.join(folder, "asks.db")))
    (True, 'cancelled')
    """

    __slots__ = ("_closed", "_connection", "_executor", "_lock", "_path", "_poll", "_wake")

    def __init__(self, path: str | os.PathLike[str], *, poll_interval: float = 0.05) -> None:
        poll = checked_time(poll_interval, "poll_interval")
        if poll <= 0:
            msg = f"poll_interval must be positive, got {poll_interval!r}"
            raise ValueError(msg)
        self._path = Path(path)
        self._poll = poll
        self._closed = False
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsh-sqlite-store")
        self._wake: set[asyncio.Event] = set()
        # isolation_level=None: no implicit transactions; each write opens its own.
        self._connection = sqlite3.connect(
            self._path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        try:
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=FULL")
            self._connection.execute("PRAGMA busy_timeout=30000")
            self._connection.executescript(_SCHEMA)
        except BaseException:
            self._connection.close()
            self._executor.shutdown(wait=False)
            raise

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            msg = "the store is closed"
            raise RuntimeError(msg)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._locked, work)

    def _locked(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            return work(self._connection)

    def _changed(self) -> None:
        for event in self._wake:
            event.set()

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        """Add a pending ask unless *ask_id* is known; return the kept record."""
        checked_ask_id(ask_id)
        when = checked_time(asked_at, "asked_at")
        text = encode_json(request)
        key = encode_json(ask_id)

        def work(db: sqlite3.Connection) -> tuple[bool, AskRecord]:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(_SELECT_ONE, (key,)).fetchone()
                if row is not None:
                    db.execute("COMMIT")
                    return False, _record(row)
                seq = _next_seq(db)
                db.execute(
                    "INSERT INTO dsh_asks (ask_id, request, asked_at, seq, state)"
                    " VALUES (?, ?, ?, ?, 'pending')",
                    (key, text, when, seq),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return True, AskRecord(ask_id, cast("StoredRequest", decode_json(text)), when, seq)

        added, record = await self._run(work)
        if added:
            self._changed()
        return record

    async def get(self, ask_id: str) -> AskRecord | None:
        """The record of *ask_id*, or ``None``."""
        key = encode_json(ask_id)
        row = await self._run(lambda db: db.execute(_SELECT_ONE, (key,)).fetchone())
        return None if row is None else _record(row)

    async def pending(self) -> list[AskRecord]:
        """Every pending ask, oldest first."""
        rows = await self._run(lambda db: db.execute(_SELECT_PENDING).fetchall())
        return [_record(row) for row in rows]

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        """Settle *ask_id* with *outcome* if it is pending; the first settlement wins."""
        when = checked_time(settled_at, "settled_at")
        answer = None if outcome.answer is None else encode_json(outcome.answer)
        key = encode_json(ask_id)
        principal, via = _text(outcome.principal), _text(outcome.via)

        def work(db: sqlite3.Connection) -> Settlement:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(_SELECT_ONE, (key,)).fetchone()
                if row is None:
                    db.execute("COMMIT")
                    msg = f"no ask with the id {ask_id!r} in the store"
                    raise KeyError(msg)
                if row[4] != "pending":
                    db.execute("COMMIT")
                    return Settlement(won=False, record=_record(row))
                seq = _next_seq(db)
                db.execute(
                    "UPDATE dsh_asks SET state = ?, answer = ?, principal = ?, via = ?,"
                    " settled_at = ?, seq = ? WHERE ask_id = ?",
                    (outcome.state, answer, principal, via, when, seq, key),
                )
                db.execute("COMMIT")
            except KeyError:
                raise
            except BaseException:
                db.execute("ROLLBACK")
                raise
            settled = (*row[:3], seq, outcome.state, answer, principal, via, when)
            return Settlement(won=True, record=_record(cast("_Row", settled)))

        settlement = await self._run(work)
        if settlement.won:
            self._changed()
        return settlement

    async def changes(self, after: int) -> list[AskRecord]:
        """The records changed after change number *after*, in change order."""
        rows = await self._run(lambda db: db.execute(_SELECT_CHANGES, (after,)).fetchall())
        return [_record(row) for row in rows]

    async def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        """Yield each record that changes after *after*, polling every *poll_interval*.

        Ends when the store is closed.
        """
        event = asyncio.Event()
        self._wake.add(event)
        try:
            cursor = after
            while not self._closed:
                event.clear()
                for record in await self.changes(cursor):
                    cursor = max(cursor, record.seq)
                    yield record
                # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that
                # lands as the event is set, and the watch would never end.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._poll):
                        await event.wait()
        finally:
            self._wake.discard(event)

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        """The settled records, oldest settlement first."""
        since = float("-inf") if settled_after is None else checked_time(settled_after, "after")
        rows = await self._run(lambda db: db.execute(_SELECT_SETTLED, (since,)).fetchall())
        return [_record(row) for row in rows]

    async def purge(self, *, settled_before: float) -> int:
        """Delete the records settled before *settled_before*; return how many."""
        before = checked_time(settled_before, "settled_before")

        def work(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "DELETE FROM dsh_asks WHERE state != 'pending' AND settled_at < ?", (before,)
            )
            return cursor.rowcount

        return await self._run(work)

    async def close(self) -> None:
        """Close the connection; the file stays. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._locked, _close)
        self._executor.shutdown(wait=True)
        self._changed()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SQLiteStore {state} {str(self._path)!r}>"


def _close(db: sqlite3.Connection) -> None:
    db.close()


def _next_seq(db: sqlite3.Connection) -> int:
    row = db.execute("UPDATE dsh_meta SET value = value + 1 WHERE key = 'seq' RETURNING value")
    value = row.fetchone()
    return int(value[0])
