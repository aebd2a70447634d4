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
* The layout's version is the file's ``PRAGMA user_version``
  (``DUR-LAYOUT-1``): written when the tables are created, read at every
  opening. A file of layout 0 (the tables of versions 0.3 and earlier of this package,
  which wrote no version) is checked and stamped in one transaction; a
  newer version, or tables that are not the layout their version names (a
  renamed column, say), are refused at the opening with ``STORE_FAILED``,
  never at the first write. The opening also makes a write that changes
  nothing, since SQLite opens a file it cannot write for reading without a
  word: a read-only or immutable file, or a disk with no room, is refused
  then too.
* Every error of the database is raised as ``STORE_FAILED`` naming its
  cause in plain words (``DUR-FAIL-1``): a full disk, a read-only file or
  file system, a lock held longer than *lock_timeout*, a missing directory,
  a corrupt file. A write that fails is rolled back first, and the rollback
  never hides the write's own error.
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

from .._errors import UserInteractionError
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
    store_failed,
)

__all__ = ["LAYOUT_VERSION", "SQLiteStore"]

_T = TypeVar("_T")

#: The version of the tables' layout this store reads and writes (``PRAGMA user_version``).
LAYOUT_VERSION: Final = 1

#: Each table of the layout, with its columns in order.
_LAYOUT: Final[dict[str, tuple[str, ...]]] = {
    "dsh_asks": (
        "ask_id",
        "request",
        "asked_at",
        "seq",
        "state",
        "answer",
        "principal",
        "via",
        "settled_at",
    ),
    "dsh_meta": ("key", "value"),
}

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
INSERT OR IGNORE INTO dsh_meta (key, value) VALUES ('seq', 0)
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

    *lock_timeout* is how long a write waits for another connection's lock
    (30 s by default) before it raises ``STORE_FAILED``. Opening a file that
    cannot be used (a missing directory, a corrupt file, a read-only file
    or file system, a layout of a newer version) raises ``STORE_FAILED``
    at once, naming the cause.

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

    __slots__ = (
        "_closed",
        "_connection",
        "_executor",
        "_lock",
        "_lock_timeout",
        "_path",
        "_poll",
        "_wake",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        poll_interval: float = 0.05,
        lock_timeout: float = 30.0,
    ) -> None:
        poll = checked_time(poll_interval, "poll_interval")
        if poll <= 0:
            msg = f"poll_interval must be positive, got {poll_interval!r}"
            raise ValueError(msg)
        wait = checked_time(lock_timeout, "lock_timeout")
        if wait < 0:
            msg = f"lock_timeout must not be negative, got {lock_timeout!r}"
            raise ValueError(msg)
        self._path = Path(path)
        self._poll = poll
        self._lock_timeout = wait
        self._closed = False
        self._lock = threading.Lock()
        try:
            # isolation_level=None: no implicit transactions; each write opens its own.
            connection = sqlite3.connect(
                self._path, timeout=wait, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise self._failed(f"open {str(self._path)!r}", error) from error
        try:
            _open(connection)
        except sqlite3.Error as error:
            connection.close()
            raise self._failed(f"open {str(self._path)!r}", error) from error
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsh-sqlite-store")
        self._wake: set[asyncio.Event] = set()

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _run(self, work: Callable[[sqlite3.Connection], _T], doing: str) -> _T:
        if self._closed:
            msg = "the store is closed"
            raise RuntimeError(msg)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._locked, work, doing)

    def _locked(self, work: Callable[[sqlite3.Connection], _T], doing: str) -> _T:
        with self._lock:
            try:
                return work(self._connection)
            except sqlite3.Error as error:
                raise self._failed(doing, error) from error

    def _failed(self, doing: str, error: sqlite3.Error) -> UserInteractionError:
        """*error* as ``STORE_FAILED``, its cause in plain words (``DUR-FAIL-1``)."""
        return store_failed(doing, _reason(error, self._path, self._lock_timeout), error)

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
                _rollback(db)
                raise
            return True, AskRecord(ask_id, cast("StoredRequest", decode_json(text)), when, seq)

        added, record = await self._run(work, f"add the ask {ask_id!r}")
        if added:
            self._changed()
        return record

    async def get(self, ask_id: str) -> AskRecord | None:
        """The record of *ask_id*, or ``None``."""
        key = encode_json(ask_id)
        row = await self._run(
            lambda db: db.execute(_SELECT_ONE, (key,)).fetchone(), f"read the ask {ask_id!r}"
        )
        return None if row is None else _record(row)

    async def pending(self) -> list[AskRecord]:
        """Every pending ask, oldest first."""
        rows = await self._run(
            lambda db: db.execute(_SELECT_PENDING).fetchall(), "read the pending asks"
        )
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
                _rollback(db)
                raise
            settled = (*row[:3], seq, outcome.state, answer, principal, via, when)
            return Settlement(won=True, record=_record(cast("_Row", settled)))

        settlement = await self._run(work, f"settle the ask {ask_id!r}")
        if settlement.won:
            self._changed()
        return settlement

    async def changes(self, after: int) -> list[AskRecord]:
        """The records changed after change number *after*, in change order."""
        rows = await self._run(
            lambda db: db.execute(_SELECT_CHANGES, (after,)).fetchall(), "read the changes"
        )
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
        rows = await self._run(
            lambda db: db.execute(_SELECT_SETTLED, (since,)).fetchall(), "read the audit record"
        )
        return [_record(row) for row in rows]

    async def purge(self, *, settled_before: float) -> int:
        """Delete the records settled before *settled_before*; return how many."""
        before = checked_time(settled_before, "settled_before")

        def work(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "DELETE FROM dsh_asks WHERE state != 'pending' AND settled_at < ?", (before,)
            )
            return cursor.rowcount

        return await self._run(work, "purge the settled asks")

    async def close(self) -> None:
        """Close the connection; the file stays. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._locked, _close, "close the store")
        # The worker thread's end is awaited in another thread, not joined here: on a
        # busy machine the worker can wait a while for a CPU to end, and the loop runs
        # meanwhile (PRV-LOOP-1).
        await asyncio.to_thread(self._executor.shutdown, wait=True)
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


def _rollback(db: sqlite3.Connection) -> None:
    """End a failed write's transaction, if SQLite has not already (a full disk ends it).

    Never raises: the write's own error is the one to tell.
    """
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


def _open(db: sqlite3.Connection) -> None:
    """Prepare a new connection, and create, check or migrate the layout (``DUR-LAYOUT-1``)."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    if _user_version(db) == LAYOUT_VERSION:
        _check_layout(db, LAYOUT_VERSION)
        # A write that changes nothing: a file SQLite could open only for reading
        # (read-only, immutable) or a disk with no room is refused now, not at the
        # first put.
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("UPDATE dsh_meta SET value = value WHERE key = 'seq'")
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        # Read again under the write lock: another process may have just created it.
        version = _user_version(db)
        if version > LAYOUT_VERSION:
            raise _newer(version)
        if version == 0 and not _tables(db):
            for statement in _SCHEMA.split(";"):
                db.execute(statement)
        else:
            # Layout 0: the tables of 0.3 and earlier, without a version: layout 1's.
            _check_layout(db, version)
        db.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        _rollback(db)
        raise


class _LayoutError(sqlite3.DatabaseError):
    """The file's tables are not a layout this store knows; the message says how."""


def _newer(version: int) -> _LayoutError:
    return _LayoutError(
        f"the file's layout is version {version}, newer than the version"
        f" {LAYOUT_VERSION} this package reads; open it with a newer dsh-user-interaction"
    )


def _user_version(db: sqlite3.Connection) -> int:
    row = db.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def _tables(db: sqlite3.Connection) -> set[str]:
    rows = db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'").fetchall()
    return {str(row[0]) for row in rows} & set(_LAYOUT)


def _check_layout(db: sqlite3.Connection, version: int) -> None:
    """Raise :class:`_LayoutError` unless the tables are the layout of *version* (0 or 1)."""
    if version > LAYOUT_VERSION:
        raise _newer(version)
    for table, columns in _LAYOUT.items():
        found = tuple(str(row[1]) for row in db.execute(f"PRAGMA table_info({table})"))
        if found != columns:
            msg = (
                f"the file's table {table} has the columns {list(found)}, not"
                f" {list(columns)} of layout version {version}: it was changed by hand"
                " or by another program, and this store does not use it"
            )
            raise _LayoutError(msg)
    if db.execute("SELECT value FROM dsh_meta WHERE key = 'seq'").fetchone() is None:
        msg = "the file's dsh_meta table has no change counter (its 'seq' row)"
        raise _LayoutError(msg)


#: The SQLite errors whose cause a plain sentence names, by their primary code's name.
_REASONS: Final[dict[str, str]] = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_CORRUPT": "the database file is corrupt",
    "SQLITE_NOTADB": "the file is not an SQLite database, or is corrupt",
    "SQLITE_IOERR": "the disk failed to read or write",
    "SQLITE_PERM": "permission to the database file is denied",
}


def _reason(error: sqlite3.Error, path: Path, lock_timeout: float) -> str:
    """The cause of *error* in plain words, for ``STORE_FAILED``."""
    if isinstance(error, _LayoutError):
        return str(error)
    name = str(getattr(error, "sqlite_errorname", "") or "")
    primary = "_".join(name.split("_")[:2])
    if primary in {"SQLITE_BUSY", "SQLITE_LOCKED"}:
        return (
            f"the database is locked by another connection for longer than"
            f" lock_timeout ({lock_timeout:g} s)"
        )
    if primary in {"SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN"} and _full(path):
        # A full disk shows as an I/O error when SQLite cannot map its shared memory.
        return f"the disk holding {str(path)!r} is full"
    if primary == "SQLITE_READONLY":
        return _read_only(path) or "the database is read-only"
    if primary == "SQLITE_CANTOPEN":
        return _cannot_open(path)
    if primary in _REASONS:
        return _REASONS[primary]
    if "disk is full" in str(error):
        return "the disk is full"
    return "the database refused the operation"


def _cannot_open(path: Path) -> str:
    folder = path.parent
    if not folder.exists():
        return f"the directory {str(folder)!r} does not exist"
    if not folder.is_dir():
        return f"{str(folder)!r} is not a directory"
    if path.is_dir():
        return f"{str(path)!r} is a directory"
    return _read_only(path) or "the file cannot be opened (permission denied?)"


def _full(path: Path) -> bool:
    """Whether the file system holding *path* has no free block left."""
    where = path if path.exists() else path.parent
    try:
        return os.statvfs(where).f_bavail == 0
    except OSError:
        return False


def _read_only(path: Path) -> str | None:
    """Why *path* cannot be written, when it is plainly read-only; else ``None``."""
    where = path if path.exists() else path.parent
    try:
        flags = os.statvfs(where).f_flag
    except OSError:
        return None
    if flags & os.ST_RDONLY:
        return f"the file system holding {str(path)!r} is mounted read-only"
    if path.exists() and not os.access(path, os.W_OK):
        return f"the file {str(path)!r} is read-only"
    if not os.access(path.parent, os.W_OK):
        return f"the directory {str(path.parent)!r} is read-only (SQLite writes beside the file)"
    return None
