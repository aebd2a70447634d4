"""A SQLite store that fails says why, with a code, and loses nothing (``DUR-FAIL-1``, ``DUR-LAYOUT-1``).

Each fault is real: a corrupt file, a missing directory, a read-only mount,
a small tmpfs filled to its last block, another connection holding the
write lock, a file of a newer layout or with a renamed column. Every one
raises ``STORE_FAILED`` with the database's error kept as ``__cause__`` and
its cause in plain words, never a raw :mod:`sqlite3` error; what was
written before the fault reads back after it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest

from dsh_user_interaction import (
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.durable import (
    AskRecord,
    DurableProvider,
    Outcome,
    SQLiteStore,
    maintain,
    with_ask_id,
)

from .disks import fill, immutable, read_only, small_disk
from .helpers import BOUND, run

#: The tables of versions 0.3 and earlier of this package, which wrote no layout version.
_LAYOUT_0 = """
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


def store_failure(error: BaseException) -> UserInteractionError:
    """*error*, checked to be a STORE_FAILED whose cause is a database error."""
    assert isinstance(error, UserInteractionError), repr(error)
    assert error.code is ErrorCode.STORE_FAILED
    assert isinstance(error.__cause__, sqlite3.Error), repr(error.__cause__)
    return error


def opening_fails(path: Path) -> UserInteractionError:
    with pytest.raises(UserInteractionError) as raised:
        SQLiteStore(path)
    return store_failure(raised.value)


async def put_some(path: Path, count: int) -> None:
    async with SQLiteStore(path) as store:
        for number in range(count):
            await store.put(f"ask-{number}", {"questions": [], "n": number}, asked_at=1.0)


async def pending_ids(path: Path) -> list[str]:
    async with SQLiteStore(path) as store:
        return [record.ask_id for record in await store.pending()]


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    """DUR-FAIL-1: the directory that does not exist, not only 'unable to open database file'."""
    error = opening_fails(tmp_path / "nowhere" / "asks.db")
    assert f"the directory {str(tmp_path / 'nowhere')!r} does not exist" in str(error)


def test_a_corrupt_file_is_named_and_left_as_it_was(tmp_path: Path) -> None:
    """DUR-FAIL-1: a file that is not a database is refused at the opening, and not changed."""
    path = tmp_path / "asks.db"
    garbage = bytes(range(256)) * 64
    path.write_bytes(garbage)
    error = opening_fails(path)
    assert "not an SQLite database, or is corrupt" in str(error)
    assert path.read_bytes() == garbage


def test_a_damaged_page_is_named_as_corrupt(tmp_path: Path) -> None:
    """DUR-FAIL-1: a database whose pages were overwritten says it is corrupt."""
    path = tmp_path / "asks.db"
    run(put_some(path, 40))
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page after the first
    path.write_bytes(bytes(data))
    error = opening_fails(path)
    assert "corrupt" in str(error)


def test_a_newer_layout_is_refused_naming_both_versions(tmp_path: Path) -> None:
    """DUR-LAYOUT-1: a file of a later layout is refused at the opening, and kept as it is."""
    path = tmp_path / "asks.db"
    run(put_some(path, 1))
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA user_version = 2")
    error = opening_fails(path)
    assert "layout is version 2, newer than the version 1 this package reads" in str(error)
    with closing(sqlite3.connect(path)) as db, db:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)
        assert db.execute("SELECT count(*) FROM dsh_asks").fetchone() == (1,)


@pytest.mark.parametrize("version", [0, 1])
def test_a_tampered_layout_is_refused_at_the_opening(tmp_path: Path, version: int) -> None:
    """DUR-LAYOUT-1: a renamed column is found when the file is opened, not at the first put."""
    path = tmp_path / "asks.db"
    run(put_some(path, 1))
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("ALTER TABLE dsh_asks RENAME COLUMN via TO ui")
        db.execute(f"PRAGMA user_version = {version}")
    error = opening_fails(path)
    assert "the file's table dsh_asks has the columns" in str(error)
    assert "'ui'" in str(error)
    assert "changed by hand" in str(error)


def test_a_file_of_the_unversioned_layout_is_migrated_and_keeps_its_asks(tmp_path: Path) -> None:
    """DUR-LAYOUT-1: a 0.3 file (user_version 0) opens, is stamped version 1, and loses nothing."""
    path = tmp_path / "asks.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as db, db:
        db.executescript(_LAYOUT_0)
        db.execute(
            "INSERT INTO dsh_asks (ask_id, request, asked_at, seq, state)"
            " VALUES ('\"old\"', '{\"questions\":[]}', 1.0, 1, 'pending')"
        )
        db.execute("UPDATE dsh_meta SET value = 1 WHERE key = 'seq'")
        assert db.execute("PRAGMA user_version").fetchone() == (0,)

    async def main() -> None:
        async with SQLiteStore(path) as store:
            assert [record.ask_id for record in await store.pending()] == ["old"]
            added = await store.put("new", {"questions": []}, asked_at=2.0)
            assert added.seq == 2

    run(main())
    with closing(sqlite3.connect(path)) as db, db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)


def test_a_new_file_is_written_with_its_layout_version(tmp_path: Path) -> None:
    """DUR-LAYOUT-1: the version is written when the tables are created."""
    path = tmp_path / "asks.db"
    run(put_some(path, 0))
    with closing(sqlite3.connect(path)) as db, db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)


def test_a_lock_held_longer_than_the_wait_is_named(tmp_path: Path) -> None:
    """DUR-FAIL-1: another connection's lock, outlasting lock_timeout, says 'locked'."""
    path = tmp_path / "asks.db"
    run(put_some(path, 1))
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        taken.set()
        release.wait(BOUND)
        db.execute("COMMIT")
        db.close()

    async def main() -> UserInteractionError:
        async with SQLiteStore(path, lock_timeout=0.01) as store:
            holder = threading.Thread(target=hold)
            holder.start()
            try:
                assert await asyncio.to_thread(taken.wait, BOUND)
                with pytest.raises(UserInteractionError) as raised:
                    await store.settle("ask-0", Outcome.cancelled(), settled_at=2.0)
            finally:
                release.set()
                await asyncio.to_thread(holder.join, BOUND)
            return raised.value

    error = store_failure(run(main()))
    assert "locked by another connection for longer than lock_timeout (0.01 s)" in str(error)
    assert run(pending_ids(path)) == ["ask-0"]


def test_a_full_disk_is_named_and_loses_nothing(tmp_path: Path) -> None:
    """DUR-FAIL-1: a write to a full disk says so, not 'cannot rollback'; what was kept stays.

    Through a durable provider the agent's ask raises ``STORE_FAILED`` too,
    never :class:`sqlite3.OperationalError`. Once space is freed, the store
    carries on with everything written before.
    """
    with small_disk(tmp_path) as disk:
        path = disk / "asks.db"
        run(put_some(path, 3))

        async def main() -> tuple[UserInteractionError, UserInteractionError]:
            async with SQLiteStore(path) as store:
                fill(disk)
                filler = "x" * 100_000
                with pytest.raises(UserInteractionError) as put:
                    await store.put("big", {"questions": [], "pad": filler}, asked_at=2.0)
                service = UserInteractionService()
                service.register_provider(DurableProvider(store, store_patience=0.0))
                request = with_ask_id(
                    cast(
                        "AskUserQuestionRequest",
                        {"questions": [{"id": "q", "question": "Go?"}], "pad": filler},
                    ),
                    "agent",
                )
                with pytest.raises(UserInteractionError) as asked:
                    await service.ask(request)
                return put.value, asked.value

        put_error, ask_error = run(main())
        for error in (put_error, ask_error):
            store_failure(error)
            assert "the disk" in str(error)
            assert "is full" in str(error)
            assert "cannot rollback" not in str(error)
        assert "database or disk is full" in str(put_error.__cause__)
        (disk / "filler").unlink()
        assert run(pending_ids(path)) == ["ask-0", "ask-1", "ask-2"]
        with closing(sqlite3.connect(path)) as db, db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_read_only_mount_is_named_and_loses_nothing(tmp_path: Path) -> None:
    """DUR-FAIL-1: a file on a read-only file system says so, at the opening; the file is intact."""
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "asks.db"
    run(put_some(path, 2))
    with read_only(folder):
        error = opening_fails(path)
        assert "is mounted read-only" in str(error)
    assert run(pending_ids(path)) == ["ask-0", "ask-1"]


def test_a_read_only_file_is_refused_at_the_opening_and_loses_nothing(tmp_path: Path) -> None:
    """DUR-FAIL-1: a file SQLite can open only for reading is refused at once, not at the first put.

    SQLite opens a file it cannot write read-only without a word; the store
    writes nothing at the opening, so before, the first put failed instead.
    """
    path = tmp_path / "asks.db"
    run(put_some(path, 2))
    with immutable(path):
        error = opening_fails(path)
        assert f"the file {str(path)!r} is read-only" in str(error)
        line = _one_clear_line(_serve(str(path), tmp_path))
        assert "is read-only" in line
    assert run(pending_ids(path)) == ["ask-0", "ask-1"]


def _serve(store: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_user_interaction", "serve", store, "--ui", "terminal"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def _one_clear_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: the ask store could not "), lines[0]
    return lines[0]


def _newer(tmp_path: Path) -> str:
    path = tmp_path / "asks.db"
    run(put_some(path, 1))
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA user_version = 5")
    return str(path)


def _corrupt(tmp_path: Path) -> str:
    (tmp_path / "asks.db").write_bytes(b"not a database " * 400)
    return str(tmp_path / "asks.db")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("corrupt", "not an SQLite database, or is corrupt"),
        ("missing directory", "does not exist"),
        ("newer layout", "layout is version 5, newer than the version 1"),
        ("unreachable server", "the database server cannot be reached"),
    ],
)
def test_serve_exits_2_with_one_line_for_a_store_it_cannot_use(
    tmp_path: Path, case: str, words: str
) -> None:
    """DUR-SERVE-1: ``serve`` names the broken store on one line and exits 2, no traceback."""
    if case == "corrupt":
        where = _corrupt(tmp_path)
    elif case == "missing directory":
        where = str(tmp_path / "gone" / "asks.db")
    elif case == "newer layout":
        where = _newer(tmp_path)
    else:
        where = "postgresql://127.0.0.1:1/asks?connect_timeout=5"  # nothing listens on port 1
    line = _one_clear_line(_serve(where, tmp_path))
    assert words in line


@pytest.mark.slow
def test_serve_exits_2_with_one_line_for_a_read_only_mount(tmp_path: Path) -> None:
    """DUR-SERVE-1: a store on a read-only file system."""
    folder = tmp_path / "data"
    folder.mkdir()
    run(put_some(folder / "asks.db", 1))
    with read_only(folder):
        line = _one_clear_line(_serve(str(folder / "asks.db"), tmp_path))
    assert "is mounted read-only" in line


@pytest.mark.slow
def test_serve_exits_2_with_one_line_for_a_full_disk(tmp_path: Path) -> None:
    """DUR-SERVE-1: a store on a full disk; the file is intact once space is freed."""
    with small_disk(tmp_path) as disk:
        run(put_some(disk / "asks.db", 2))
        filler = fill(disk)
        line = _one_clear_line(_serve(str(disk / "asks.db"), tmp_path))
        assert "is full" in line
        filler.unlink()
        assert run(pending_ids(disk / "asks.db")) == ["ask-0", "ask-1"]


def test_a_store_of_another_program_is_wrapped_by_the_provider() -> None:
    """DUR-FAIL-1: a third-party store's raw error reaches the agent as STORE_FAILED, cause kept."""

    class Broken:
        async def put(self, *args: object, **kwargs: object) -> Any:
            raise OSError(28, "No space left on device")

    async def main() -> UserInteractionError:
        service = UserInteractionService()
        service.register_provider(DurableProvider(cast("Any", Broken()), store_patience=0.0))
        with pytest.raises(UserInteractionError) as raised:
            await service.ask(with_ask_id({"questions": [{"id": "q", "question": "Go?"}]}, "x"))
        return raised.value

    error = run(main())
    assert error.code is ErrorCode.STORE_FAILED
    assert isinstance(error.__cause__, OSError)
    assert "No space left on device" in str(error)


def test_maintain_outlasts_a_store_that_fails_a_round(tmp_path: Path) -> None:
    """DUR-FAIL-1: a round the store fails is reported, and the next round expires the ask."""
    path = tmp_path / "asks.db"

    class FailsOnce:
        def __init__(self, inner: SQLiteStore) -> None:
            self.inner = inner
            self.failed = False

        async def pending(self) -> Any:
            if not self.failed:
                self.failed = True
                cause = sqlite3.OperationalError("database is locked")
                raise UserInteractionError(
                    "the ask store could not read the pending asks: locked", ErrorCode.STORE_FAILED
                ) from cause
            return await self.inner.pending()

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    async def main() -> list[dict[str, Any]]:
        told: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: told.append(context)
        )
        async with SQLiteStore(path) as store:
            await store.put("old", {"questions": []}, asked_at=1.0)
            flaky = FailsOnce(store)
            task = asyncio.ensure_future(
                maintain(cast("Any", flaky), expire_after=10, every=0.01, clock=lambda: 100.0)
            )
            while (record := await store.get("old")) is not None and record.pending:  # noqa: ASYNC110 - a store has no event to wait on
                await asyncio.sleep(0.01)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            assert record is not None
            assert record.state == "expired"
        return told

    told = run(main())
    assert len(told) == 1
    assert "maintain(): the store failed" in told[0]["message"]
    assert told[0]["exception"].code is ErrorCode.STORE_FAILED


def test_a_watch_that_fails_reaches_the_agent_as_store_failed(tmp_path: Path) -> None:
    """DUR-FAIL-1: a third-party store whose watch raises: the waiting ask raises STORE_FAILED."""

    class WatchBreaks:
        def __init__(self, inner: SQLiteStore) -> None:
            self.inner = inner

        async def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
            if after >= 0:
                raise ConnectionResetError(104, "Connection reset by peer")
            for record in await self.inner.changes(after):  # never: it fails at once
                yield record

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    async def main() -> UserInteractionError:
        async with SQLiteStore(tmp_path / "asks.db") as store:
            service = UserInteractionService()
            service.register_provider(DurableProvider(cast("Any", WatchBreaks(store))))
            with pytest.raises(UserInteractionError) as raised:
                await service.ask(with_ask_id({"questions": [{"id": "q", "question": "?"}]}, "w"))
            record = await store.get("w")
            assert record is not None
            assert record.pending
            return raised.value

    error = run(main())
    assert error.code is ErrorCode.STORE_FAILED
    assert isinstance(error.__cause__, ConnectionResetError)
    assert "Connection reset by peer" in str(error)
