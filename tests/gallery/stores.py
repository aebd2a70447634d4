"""Deliberately broken ask stores, each wrong in one way a real store might be.

Each entry wraps :class:`~dsh_user_interaction.durable.SQLiteStore` in
:class:`Wrapped`, which keeps every call as it is, and changes one method.
``BROKEN_STORES`` maps each entry's subject factory to the requirement the
store suite must name (``A|B``: either one).

:class:`Wrapped` passes every call to a :class:`SQLiteStore`, whose columns
keep text as JSON (a statement of a broken store's own writes its ask ids
so). :data:`FAITHFUL` is the wrapper unbroken, which passes the suite.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar, cast

from dsh_user_interaction import AskUserQuestionAnswer, ErrorCode, UserInteractionError
from dsh_user_interaction.durable import (
    AskRecord,
    AskStore,
    Outcome,
    Settlement,
    SQLiteStore,
    StoredRequest,
    encode_json,
)
from dsh_user_interaction_conformance import StoreSubject


def _escaped(text: str) -> str:
    """*text* as the SQLite store's columns keep it (JSON), for a statement of our own."""
    return encode_json(text)


class Wrapped:
    """An SQLite store that keeps any text; a subclass breaks one thing."""

    #: Seconds between the watchers' polls.
    poll: ClassVar[float] = 0.01

    def __init__(self, path: Path) -> None:
        self.path = path
        self.inner = SQLiteStore(path, poll_interval=self.poll)

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        return await self.inner.put(ask_id, request, asked_at=asked_at)

    async def get(self, ask_id: str) -> AskRecord | None:
        return await self.inner.get(ask_id)

    async def pending(self) -> list[AskRecord]:
        return await self.inner.pending()

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        return await self.inner.settle(ask_id, outcome, settled_at=settled_at)

    async def changes(self, after: int) -> list[AskRecord]:
        return await self.inner.changes(after)

    async def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        async for record in self.inner.watch(after):
            yield record

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        return await self.inner.records(settled_after=settled_after)

    async def purge(self, *, settled_before: float) -> int:
        return await self.inner.purge(settled_before=settled_before)

    async def close(self) -> None:
        await self.inner.close()

    async def execute(self, sql: str, *parameters: object) -> None:
        """Run one statement on the store's own connection, as its methods do."""
        await self.inner._run(lambda db: db.execute(sql, parameters), "run a statement")


class _Subject:
    """A fresh SQLite file in a folder of its own, opened as *kind*."""

    def __init__(self, kind: type[Wrapped]) -> None:
        self.name = kind.__name__
        self._kind = kind
        self._folder = tempfile.mkdtemp(prefix="dsh-broken-store-")
        self._path = Path(self._folder) / "asks.db"

    async def open(self) -> AskStore:
        return self._kind(self._path)

    async def cleanup(self) -> None:
        _MEMORY.pop(str(self._path), None)
        shutil.rmtree(self._folder, ignore_errors=True)


def subject_of(kind: type[Wrapped]) -> Callable[[], StoreSubject]:
    """The factory of subjects whose stores are *kind*."""

    def factory() -> StoreSubject:
        return _Subject(kind)

    factory.__qualname__ = f"subject_of({kind.__name__})"
    return factory


# ---------------------------------------------------------------------------
# The broken stores
# ---------------------------------------------------------------------------


class LastWriterWins(Wrapped):
    """Every settlement wins: a later UI's outcome replaces the first."""

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        await self.execute(
            "UPDATE dsh_asks SET state = 'pending' WHERE ask_id = ?", _escaped(ask_id)
        )
        return await super().settle(ask_id, outcome, settled_at=settled_at)


#: The answers :class:`AnswersInMemory` has not written yet, by file and ask id.
_MEMORY: dict[str, dict[str, tuple[object, str | None, str | None]]] = {}
#: How many of its stores are open on each file.
_OPEN: dict[str, int] = {}


class AnswersInMemory(Wrapped):
    """Keeps answers, principals and vias in memory, to write them later; it never does.

    Every store of the process shares that memory, so all of them show the
    answers, until the last one closes (a restart), and they are gone.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.key = str(path)
        _OPEN[self.key] = _OPEN.get(self.key, 0) + 1

    def _from_memory(self, record: AskRecord) -> AskRecord:
        kept = _MEMORY.get(self.key, {}).get(record.ask_id)
        if kept is None:
            return record
        answer, principal, via = kept
        return replace(
            record,
            answer=cast("AskUserQuestionAnswer | None", answer),
            principal=principal,
            via=via,
        )

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        won, record = await super().settle(ask_id, outcome, settled_at=settled_at)
        if won:
            _MEMORY.setdefault(self.key, {})[ask_id] = (
                outcome.answer,
                outcome.principal,
                outcome.via,
            )
            await self.execute(
                "UPDATE dsh_asks SET answer = NULL, principal = NULL, via = NULL WHERE ask_id = ?",
                _escaped(ask_id),
            )
        return Settlement(won, self._from_memory(record))

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        return self._from_memory(await super().put(ask_id, request, asked_at=asked_at))

    async def get(self, ask_id: str) -> AskRecord | None:
        record = await super().get(ask_id)
        return None if record is None else self._from_memory(record)

    async def pending(self) -> list[AskRecord]:
        return [self._from_memory(r) for r in await super().pending()]

    async def changes(self, after: int) -> list[AskRecord]:
        return [self._from_memory(r) for r in await super().changes(after)]

    async def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        async for record in super().watch(after):
            yield self._from_memory(record)

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        return [self._from_memory(r) for r in await super().records(settled_after=settled_after)]

    async def close(self) -> None:
        await super().close()
        _OPEN[self.key] -= 1
        if not _OPEN[self.key]:
            _MEMORY.pop(self.key, None)  # the process "exits"


class ClaimNotAtomic(Wrapped):
    """Reads whether the ask is pending, then writes its outcome: two UIs both win."""

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        record = await self.get(ask_id)
        if record is None:
            raise KeyError(ask_id)
        if not record.pending:
            return Settlement(False, record)
        await asyncio.sleep(0)  # another connection's settlement may land here
        await self.execute(
            "UPDATE dsh_asks SET state = 'pending' WHERE ask_id = ?", _escaped(ask_id)
        )
        return await super().settle(ask_id, outcome, settled_at=settled_at)


class SettleKeepsItsNumber(Wrapped):
    """A settlement keeps the record's change number: watchers never see it."""

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        before = await self.get(ask_id)
        won, record = await super().settle(ask_id, outcome, settled_at=settled_at)
        if won and before is not None:
            await self.execute(
                "UPDATE dsh_asks SET seq = ? WHERE ask_id = ?", before.seq, _escaped(ask_id)
            )
            record = replace(record, seq=before.seq)
        return Settlement(won, record)


class PendingListsEverything(Wrapped):
    """pending() lists every record, settled ones too (the state filter was forgotten)."""

    async def pending(self) -> list[AskRecord]:
        return await self.changes(0)


class PurgesByAskTime(Wrapped):
    """purge() goes by when the ask was asked: it deletes pending asks too."""

    async def purge(self, *, settled_before: float) -> int:
        def work(db: sqlite3.Connection) -> int:
            return db.execute("DELETE FROM dsh_asks WHERE asked_at < ?", (settled_before,)).rowcount

        return await self.inner._run(work, "purge the settled asks")


def _mangled(text: str | None) -> str | None:
    return None if text is None else text.encode("utf-8", "replace").decode("utf-8")


class ManglesText(Wrapped):
    """Writes principals and vias as UTF-8 with errors='replace': a lone surrogate is '?'."""

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        mangled = replace(outcome, principal=_mangled(outcome.principal), via=_mangled(outcome.via))
        return await super().settle(ask_id, mangled, settled_at=settled_at)


class PutReplaces(Wrapped):
    """put() of a known ask id replaces its record (INSERT OR REPLACE)."""

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        await self.execute("DELETE FROM dsh_asks WHERE ask_id = ?", _escaped(ask_id))
        return await super().put(ask_id, request, asked_at=asked_at)


class ChangesFromTheCursor(Wrapped):
    """changes(after) includes the record changed at *after* itself (>= for >)."""

    async def changes(self, after: int) -> list[AskRecord]:
        return await super().changes(after - 1)


class SettleUnknownAdds(Wrapped):
    """settle() of an unknown ask id adds it, settled, instead of raising KeyError."""

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        if await self.get(ask_id) is None:
            await self.put(ask_id, {"questions": []}, asked_at=settled_at)
        return await super().settle(ask_id, outcome, settled_at=settled_at)


class RecordsNewestFirst(Wrapped):
    """records() lists the newest settlement first."""

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        return list(reversed(await super().records(settled_after=settled_after)))


class CachesReads(Wrapped):
    """get() answers from what this store read before: other stores' settlements go unseen."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.cache: dict[str, AskRecord] = {}

    async def get(self, ask_id: str) -> AskRecord | None:
        if ask_id in self.cache:
            return self.cache[ask_id]
        record = await super().get(ask_id)
        if record is not None:
            self.cache[ask_id] = record
        return record


class PollsHourly(Wrapped):
    """Its watchers wake at their own store's changes, and poll the file only hourly."""

    poll: ClassVar[float] = 3600.0


class TimesInMilliseconds(Wrapped):
    """Keeps times to the millisecond."""

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        return await super().put(ask_id, request, asked_at=round(asked_at, 3))

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        return await super().settle(ask_id, outcome, settled_at=round(settled_at, 3))


class SwallowsLockedWrites(Wrapped):
    """Waits for no lock, and when a settlement finds the file locked, reports it won unwritten.

    It treats ``SQLITE_BUSY`` as done: a write that met another writer is
    dropped and its caller told that it was kept. Alone it keeps every rule;
    under the suite's faults (a UI answering while the agent writes, a burst
    of other writes) the agent and the UIs no longer agree with the record.
    Puts wait for the lock as they should, so that only settlements lie.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.inner = SQLiteStore(path, poll_interval=self.poll, lock_timeout=0.0)

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        while True:
            try:
                return await super().put(ask_id, request, asked_at=asked_at)
            except UserInteractionError as error:
                if error.code is not ErrorCode.STORE_FAILED:
                    raise
                await asyncio.sleep(0.001)

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        try:
            return await super().settle(ask_id, outcome, settled_at=settled_at)
        except UserInteractionError as error:
            if error.code is not ErrorCode.STORE_FAILED:
                raise
            kept = await self.get(ask_id)
            if kept is None:
                raise
            won = replace(
                kept,
                state=outcome.state,
                answer=outcome.answer,
                principal=outcome.principal,
                via=outcome.via,
                settled_at=settled_at,
            )
            return Settlement(won=True, record=won)


#: The unbroken wrapper: it passes the suite.
FAITHFUL = subject_of(Wrapped)

#: Broken stores that keep every rule alone and break ``DUR-AGREE-1`` under
#: the faults of ``durable-faults``: each entry's subject factory and the
#: requirement the suite must name.
BROKEN_UNDER_FAULTS: dict[str, tuple[Callable[[], StoreSubject], str]] = {
    "swallows-locked-writes": (subject_of(SwallowsLockedWrites), "DUR-AGREE-1"),
}

BROKEN_STORES: dict[str, tuple[Callable[[], StoreSubject], str]] = {
    "last-writer-wins": (subject_of(LastWriterWins), "DUR-ONCE-1"),
    "answers-in-memory": (subject_of(AnswersInMemory), "DUR-REOPEN-1"),
    "claim-not-atomic": (subject_of(ClaimNotAtomic), "DUR-ONCE-1"),
    "settle-keeps-its-number": (subject_of(SettleKeepsItsNumber), "DUR-STORE-4|DUR-WATCH-1"),
    "pending-lists-everything": (subject_of(PendingListsEverything), "DUR-STORE-2"),
    "purges-by-ask-time": (subject_of(PurgesByAskTime), "DUR-AUDIT-1"),
    "mangles-text": (subject_of(ManglesText), "DUR-STORE-3"),
    "put-replaces": (subject_of(PutReplaces), "DUR-STORE-1"),
    "changes-from-the-cursor": (subject_of(ChangesFromTheCursor), "DUR-STORE-4"),
    "settle-unknown-adds": (subject_of(SettleUnknownAdds), "DUR-STORE-5"),
    "records-newest-first": (subject_of(RecordsNewestFirst), "DUR-AUDIT-1"),
    "caches-reads": (subject_of(CachesReads), "DUR-STORE-2"),
    "polls-hourly": (subject_of(PollsHourly), "DUR-WATCH-1"),
    "times-in-milliseconds": (subject_of(TimesInMilliseconds), "DUR-STORE-3"),
}

#: For the command-line tests: ``--store tests.gallery.stores:PUT_REPLACES``.
PUT_REPLACES = BROKEN_STORES["put-replaces"][0]
