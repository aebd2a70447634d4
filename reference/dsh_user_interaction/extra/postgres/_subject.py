"""The store suite's subject for :class:`PostgresStore`: a fresh schema a test case.

Every subject gets a schema of its own on one server (the process's shared
throwaway server, or ``DSH_POSTGRES_DSN``'s), so test cases never see each
other's asks and need no server of their own.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import final

import psycopg
from psycopg import sql

from ._server import shared_server
from ._store import PostgresStore

__all__ = ["PostgresStoreSubject", "store_subject"]


@final
class PostgresStoreSubject:
    """A new, empty schema on a PostgreSQL server, and stores opened on it.

    *dsn* names the server; by default it is the process's shared server,
    started (in a worker thread) by the first :meth:`open`.
    """

    name = "PostgresStore"

    def __init__(self, dsn: str | None = None, *, poll_interval: float = 1.0) -> None:
        self._dsn = dsn
        self._poll = poll_interval
        self._opened: list[PostgresStore] = []
        #: The schema of this subject: unique, so subjects never share asks.
        self.schema = f"dsh_test_{uuid.uuid4().hex}"

    async def _server_dsn(self) -> str:
        if self._dsn is None:
            self._dsn = (await asyncio.to_thread(shared_server)).dsn
        return self._dsn

    async def open(self) -> PostgresStore:
        """A new store, with a connection of its own, on this subject's schema."""
        store = await PostgresStore.connect(
            await self._server_dsn(), schema=self.schema, poll_interval=self._poll
        )
        self._opened.append(store)
        return store

    async def cleanup(self) -> None:
        """Close any store left open and drop the schema, with its tables."""
        for store in self._opened:
            await store.close()
        self._opened.clear()
        if self._dsn is None:  # never opened: there is nothing to drop
            return
        async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as db:
            await db.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
            )


def store_subject() -> PostgresStoreSubject:
    """A subject on the process's shared server: the store suite's ``--store`` factory."""
    return PostgresStoreSubject()
