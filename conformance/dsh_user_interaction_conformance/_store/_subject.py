"""What the store suite tests: fresh data, opened as many times as it likes.

A store implementer writes a :data:`StoreFactory`: each call makes a
:class:`StoreSubject` holding empty data of its own (a new file, a new
database schema). The suite opens it several times at once, as several
processes or machines would, closes stores and opens them again, and finally
cleans the data away.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias, final

from dsh_user_interaction.durable import AskStore, SQLiteStore

__all__ = ["SQLiteStoreSubject", "StoreFactory", "StoreSubject", "sqlite_store_subject"]


class StoreSubject(Protocol):
    """Empty data for one test case, and the way to open a store on it."""

    #: What the report calls the store under test.
    name: str

    async def open(self) -> AskStore:
        """A new store object on this subject's data: a connection of its own."""
        ...

    async def cleanup(self) -> None:
        """Delete the data; every store opened on it is closed by then."""
        ...


#: Makes a :class:`StoreSubject` with fresh, empty data (``--store mod:factory``).
StoreFactory: TypeAlias = Callable[[], "StoreSubject | Awaitable[StoreSubject]"]


@final
class SQLiteStoreSubject:
    """A new SQLite file in a temporary folder of its own."""

    name = "SQLiteStore"

    def __init__(self, *, poll_interval: float = 0.01) -> None:
        self._folder = tempfile.mkdtemp(prefix="dsh-store-")
        self._path = os.path.join(self._folder, "asks.db")
        self._poll = poll_interval

    async def open(self) -> AskStore:
        """Open the file (it is created by the first opening), in a thread: it blocks."""
        return await asyncio.to_thread(SQLiteStore, self._path, poll_interval=self._poll)

    async def cleanup(self) -> None:
        """Remove the folder and the file."""
        shutil.rmtree(self._folder, ignore_errors=True)


def sqlite_store_subject() -> SQLiteStoreSubject:
    """The embedded store, the suite's default (``--store`` names another)."""
    return SQLiteStoreSubject()
