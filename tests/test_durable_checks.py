"""The store suite's durable-path scenarios pass on SQLite, and catch a broken path.

Each scenario runs the reference's provider, relay and expiry on the store
under test; here the store is sound and the parts built on it are broken
one way at a time, so each scenario is shown to fail for what it judges.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import pytest

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest
from dsh_user_interaction.durable import (
    AskRecord,
    AskStore,
    DurableProvider,
    Outcome,
    Settlement,
    SQLiteStore,
    ask_id_of,
)
from dsh_user_interaction_conformance._store import _durable
from dsh_user_interaction_conformance._store._durable import DURABLE_CHECKS, DurableCheck

from .helpers import run

REQUEST: AskUserQuestionRequest = {
    "questions": [{"id": "q\x00\ud800", "question": "Go?", "options": [{"label": "A"}]}]
}
ANSWER: AskUserQuestionAnswer = {"answers": [{"id": "q\x00\ud800", "selected": ["A"]}]}


def findings(check: DurableCheck, folder: Path) -> list[tuple[str, str]]:
    async def opener() -> AskStore:
        return SQLiteStore(folder / "asks.db", poll_interval=0.005)

    return run(check.findings(opener, REQUEST, ANSWER), bound=60)


@pytest.mark.parametrize("check", DURABLE_CHECKS, ids=[c.name for c in DURABLE_CHECKS])
def test_each_scenario_passes_on_the_sqlite_store(check: DurableCheck, tmp_path: Path) -> None:
    assert findings(check, tmp_path) == []


class _Wrapped:
    """A DurableProvider made wrong in one way, built as the scenarios build one."""

    def __init__(self, store: AskStore, **options: Any) -> None:
        self.store = store
        self.inner = DurableProvider(self._store(store), **options)

    def _store(self, store: AskStore) -> AskStore:
        return store

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.inner.ask(request)


class ForgetsIds(_Wrapped):
    """Asks under a fresh id every time: a re-ask asks again."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.inner.ask({"questions": request["questions"]})


class _NoAborts:
    """A store that drops the settlements that say 'aborted'."""

    def __init__(self, store: AskStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        record = await self._store.get(ask_id)
        assert record is not None
        if outcome.state == "aborted":
            return Settlement(won=True, record=record)
        return await self._store.settle(ask_id, outcome, settled_at=settled_at)


class AbortsQuietly(_Wrapped):
    """Never writes an abort: the UIs keep showing an ask nobody wants."""

    def _store(self, store: AskStore) -> AskStore:
        return cast("AskStore", _NoAborts(store))


class SettlesOnCancel(_Wrapped):
    """Writes 'aborted' when its call is cancelled, so a restart loses the ask."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            return await self.inner.ask(request)
        except asyncio.CancelledError:
            await self.store.settle(str(ask_id_of(request)), Outcome.aborted(), settled_at=0.0)
            raise


class AcceptsConflicts(_Wrapped):
    """Takes a known ask id with other questions as the kept ask."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        kept = await self.store.get(str(ask_id_of(request)))
        if kept is not None:
            request = {**request, "questions": kept.request["questions"]}
        return await self.inner.ask(request)


BROKEN: list[tuple[str, Callable[..., Any], str]] = [
    ("durable-reask", ForgetsIds, "DUR-ID-1"),
    ("durable-reask", SettlesOnCancel, "DUR-ABORT-2"),
    ("durable-reask-conflict", AcceptsConflicts, "DUR-REASK-2"),
    ("durable-abort-expiry", AbortsQuietly, "DUR-ABORT-1"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "broken", "requirement"), BROKEN)
def test_a_broken_provider_fails_the_scenario_that_judges_it(
    name: str,
    broken: Callable[..., Any],
    requirement: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_durable, "DurableProvider", broken)
    monkeypatch.setattr(_durable, "PATIENCE", 3.0)  # it fails: no need to wait long
    (check,) = [c for c in DURABLE_CHECKS if c.name == name]
    found = findings(check, tmp_path)
    assert [rid for rid, _ in found] == [requirement], found


@pytest.mark.slow
def test_a_relay_that_writes_nothing_fails_the_relay_scenarios(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relay that shows asks but never writes an outcome: the ask hangs, within the bound."""

    async def mute(store: AskStore, provider: object, **_: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(_durable, "serve", mute)
    monkeypatch.setattr(_durable, "PATIENCE", 3.0)
    (check,) = [c for c in DURABLE_CHECKS if c.name == "durable-relays"]
    assert [rid for rid, _ in findings(check, tmp_path)] == ["DUR-RELAY-1"]


def test_every_requirement_of_the_durable_path_is_judged() -> None:
    judged = {rid for check in DURABLE_CHECKS for rid in check.requirements}
    assert judged == {
        "DUR-ID-1",
        "DUR-REASK-1",
        "DUR-REASK-2",
        "DUR-RESTART-1",
        "DUR-ABORT-1",
        "DUR-ABORT-2",
        "DUR-EXPIRE-1",
        "DUR-RELAY-1",
        "DUR-FAN-1",
        "DUR-LOST-1",
        "DUR-DEADLINE-1",
        "DUR-AGREE-1",
        "DUR-DEADLINE-2",
        "DUR-FAIL-2",
        "DUR-KEEP-1",
        "DUR-ACK-1",
        "DUR-TELL-1",
    }


class _SlowToSee:
    """A store whose new asks reach its watcher *delay* seconds late: a relay on a busy machine."""

    def __init__(self, store: AskStore, delay: float) -> None:
        self._store = store
        self.delay = delay

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        async for record in self._store.watch(after):
            if record.pending:
                await asyncio.sleep(self.delay)
            yield record


def _deadline_findings(folder: Path, delay: float) -> list[tuple[str, str]]:
    """The deadline scenario, the agent on a plain store and the relay on one *delay* s late."""
    opened: list[AskStore] = []

    async def opener() -> AskStore:
        path = folder / "asks.db"
        store = SQLiteStore(path, poll_interval=0.005)
        opened.append(cast("AskStore", _SlowToSee(store, delay)) if opened else store)
        return opened[-1]

    check = next(c for c in DURABLE_CHECKS if c.name == "durable-deadline")
    return run(check.findings(opener, REQUEST, ANSWER), bound=60)


def test_a_deadline_that_passes_before_the_relay_shows_the_ask_is_tried_farther_off(
    tmp_path: Path,
) -> None:
    """The relay sees a change 0.1 s late: the 50 ms deadline ends the ask unseen, and passes.

    Nothing is judged of the withdrawal there; the next attempt, its deadline
    0.2 s off, is shown, withdrawn and judged. Both attempts are in the store.
    """
    assert _deadline_findings(tmp_path, 0.1) == []

    async def states() -> list[str | None]:
        store = SQLiteStore(tmp_path / "asks.db")
        try:
            records = [await store.get(ask_id) for ask_id in ("late-0", "late-1")]
            return [None if record is None else record.state for record in records]
        finally:
            await store.close()

    assert run(states()) == ["expired", "expired"]


def test_a_relay_that_shows_no_ask_before_its_deadline_fails_the_deadline_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the relay has shown none of the attempts in time, DUR-DEADLINE-1 says so."""
    monkeypatch.setattr(_durable, "DEADLINES", (0.05, 0.2))
    assert _deadline_findings(tmp_path, 1.0) == [
        ("DUR-DEADLINE-1", "the relay never showed an ask 0.2 s before its deadline")
    ]
