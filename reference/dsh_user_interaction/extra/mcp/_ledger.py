"""Which request states were used: so that a state is accepted once, by every worker that shares it.

``run_tool`` gives each ``requestState`` a nonce and asks a ledger to mark it
used when a retry brings it (``_rounds.py``, Rule 3). The ledger decides how
far "once" reaches:

* :class:`ProcessLedger`, the default: this process's memory. Workers that
  share the sealing keys accept each other's states, so a state replayed to
  another worker within its time to live is accepted there.
* :class:`SQLiteLedger`: a SQLite file that every worker on one machine
  opens. Marking a nonce is one ``INSERT OR IGNORE`` in its own
  transaction, so of two workers that get the same state at once exactly
  one wins.

A ledger forgets a nonce ``FORGET_AFTER`` (600) seconds after its state has
expired, never at the moment of expiry: ``run_tool`` reads the expiry before
it marks the nonce, and a mark that waits (on another worker's write lock,
say) may land after the expiry. Forgotten then, a used nonce would be new
to the ledger, and a state replayed just before it expired accepted again.
The margin also covers clocks of workers that differ by less than it, as in
the PostgreSQL ledger.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from typing import Final, Protocol

__all__ = ["FORGET_AFTER", "ProcessLedger", "SQLiteLedger", "StateLedger"]

#: Seconds a SQLite write waits for another worker's before it fails.
_BUSY_SECONDS: Final = 10.0
#: Seconds after its state expired that a nonce is forgotten: longer than any wait to mark it.
FORGET_AFTER: Final = 600.0


class StateLedger(Protocol):
    """Marks a request state's nonce used; says whether it was the first use.

    ``use`` must be atomic across everyone who shares the ledger: of two
    calls with one nonce, exactly one returns ``True``. *expires* is when the
    state expires (seconds since the epoch); the nonce must be refused for as
    long as the state could still be presented, so a ledger forgets it only a
    margin after (``FORGET_AFTER``), never at *expires*.
    """

    async def use(self, nonce: str, expires: float) -> bool: ...


class ProcessLedger:
    """The nonces used in this process, in memory (``run_tool``'s default).

    One lock guards it, so event loops on several threads share it safely.
    """

    def __init__(self) -> None:
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()

    async def use(self, nonce: str, expires: float) -> bool:
        """Mark *nonce* used; ``False`` when it already was. Forgets long-expired ones."""
        forget_before = time.time() - FORGET_AFTER
        with self._lock:
            for old in [n for n, until in self._used.items() if until < forget_before]:
                del self._used[old]
            if nonce in self._used:
                return False
            self._used[nonce] = expires
            return True


class SQLiteLedger:
    """The nonces used by every worker that opens the SQLite file *path* (one machine).

    The table ``dsh_used_request_states`` is made on first use. Each call
    runs in a thread, on a connection of its own, so the event loop never
    waits on the file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._ready = False
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self._path, timeout=_BUSY_SECONDS, isolation_level=None)
        if not self._ready:
            with self._lock:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS dsh_used_request_states"
                    " (nonce TEXT PRIMARY KEY, expires REAL NOT NULL)"
                )
                self._ready = True
        return connection

    def _use(self, nonce: str, expires: float) -> bool:
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(
                    "DELETE FROM dsh_used_request_states WHERE expires < ?",
                    (time.time() - FORGET_AFTER,),
                )
                added = connection.execute(
                    "INSERT OR IGNORE INTO dsh_used_request_states (nonce, expires) VALUES (?, ?)",
                    (nonce, expires),
                ).rowcount
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            return added == 1
        finally:
            connection.close()

    async def use(self, nonce: str, expires: float) -> bool:
        """Mark *nonce* used in the file; ``False`` when any worker already had."""
        return await asyncio.to_thread(self._use, nonce, expires)
