"""The relay keeps every outcome it collected, and tells a provider the store's verdict.

``DUR-KEEP-1``: a store error on writing an outcome is retried until the
store takes it, the ask ends elsewhere, or the relay stops (then it is logged
with its ask id). ``DUR-ACK-1``: a :class:`VerdictAware` provider learns,
for each outcome it gave, whether the store saved it. ``DUR-TELL-1``: the
provider's signal says how an ask that ended elsewhere ended. All on the
embedded SQLite store, with a wrapper that fails or holds writes on demand.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    answer_custom,
    answer_of,
)
from dsh_user_interaction.durable import (
    AskRecord,
    AskStore,
    LostAnswer,
    Outcome,
    Settlement,
    SQLiteStore,
    StoredRequest,
    UnsavedAnswer,
    Verdict,
    VerdictAware,
    Withdrawn,
    ended_how,
    serve,
    stored_request,
)

from .helpers import run

QUESTION: AskUserQuestionRequest = {"questions": [{"id": "q", "question": "Deploy?"}]}
ANSWER = answer_of(answer_custom("q", "yes"))


class Flaky:
    """An :class:`AskStore` on a SQLite store whose writes fail, or wait, when told to.

    *failures* settlements raise before the next one goes through; while
    *gate* is clear, a settlement waits for it (after counting itself in
    *attempts*). Its watch fails once when *watch_failures* says so.
    """

    def __init__(self, inner: SQLiteStore) -> None:
        self.inner = inner
        self.failures = 0
        self.attempts = 0
        self.watch_failures = 0
        #: While set, the watch passes on no settled record, as when an ask is settled
        #: and purged between two of its polls.
        self.hide_settlements = False
        self.gate = asyncio.Event()
        self.gate.set()
        self.attempted = asyncio.Event()

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        return await self.inner.put(ask_id, request, asked_at=asked_at)

    async def get(self, ask_id: str) -> AskRecord | None:
        return await self.inner.get(ask_id)

    async def pending(self) -> list[AskRecord]:
        return await self.inner.pending()

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        self.attempts += 1
        self.attempted.set()
        await self.gate.wait()
        if self.failures:
            self.failures -= 1
            msg = "database or disk is full"
            raise sqlite3.OperationalError(msg)
        return await self.inner.settle(ask_id, outcome, settled_at=settled_at)

    async def changes(self, after: int) -> list[AskRecord]:
        return await self.inner.changes(after)

    async def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        if self.watch_failures:
            self.watch_failures -= 1
            msg = "the watch lost its connection"
            raise ConnectionError(msg)
        async for record in self.inner.watch(after):
            if record.pending or not self.hide_settlements:
                yield record

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        return await self.inner.records(settled_after=settled_after)

    async def purge(self, *, settled_before: float) -> int:
        return await self.inner.purge(settled_before=settled_before)

    async def close(self) -> None:
        await self.inner.close()


class Hearing:
    """A provider that answers when told, and hears the store's verdicts (``VerdictAware``)."""

    def __init__(self) -> None:
        self.scripted = ScriptedProvider()
        self.verdicts: dict[str, asyncio.Future[Verdict]] = {}

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        ask_id = dict(request).get("askId")
        assert isinstance(ask_id, str)
        self.verdicts[ask_id] = verdict

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.scripted.ask(request)


@asynccontextmanager
async def flaky(folder: Path) -> AsyncGenerator[Flaky]:
    store = Flaky(SQLiteStore(folder / "asks.db", poll_interval=0.005))
    try:
        yield store
    finally:
        await store.close()


async def until(predicate: Callable[[], Coroutine[Any, Any, bool]]) -> None:
    while not await predicate():  # noqa: ASYNC110 - the store has no event to wait on
        await asyncio.sleep(0.005)


async def state_of(store: AskStore, ask_id: str) -> str | None:
    record = await store.get(ask_id)
    return None if record is None else record.state


async def stopped(relay: asyncio.Task[None]) -> None:
    relay.cancel()
    await asyncio.gather(relay, return_exceptions=True)


def test_the_web_provider_and_the_test_provider_are_verdict_aware() -> None:
    """DUR-ACK-1: the protocol is runtime-checkable; a plain provider is not verdict-aware."""
    from dsh_user_interaction.extra.web import WebProvider

    assert isinstance(Hearing(), VerdictAware)
    assert isinstance(WebProvider(), VerdictAware)
    assert not isinstance(ScriptedProvider(), VerdictAware)


def test_a_store_error_on_writing_an_answer_is_retried_until_written(tmp_path: Path) -> None:
    """DUR-KEEP-1: three failed writes, each reported; the fourth writes the answer."""

    async def main() -> None:
        async with flaky(tmp_path) as store:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            store.failures = 3
            errors: list[BaseException] = []
            ui = ScriptedProvider(respond=lambda _request: ANSWER)
            relay = asyncio.ensure_future(
                serve(
                    store, ui, via="desk", principal="ana", on_error=lambda _r, e: errors.append(e)
                )
            )
            await until(lambda: _is(state_of(store, "call-1"), "answered"))
            await stopped(relay)
            assert store.attempts == 4
            assert [type(error) for error in errors] == [sqlite3.OperationalError] * 3
            record = await store.get("call-1")
            assert record is not None
            assert (record.answer, record.principal, record.via) == (ANSWER, "ana", "desk")
            assert ui.asked == 1  # shown once, written after its errors

    run(main(), bound=60)


async def _is(state: Coroutine[Any, Any, str | None], wanted: str) -> bool:
    return await state == wanted


def test_a_dismissal_is_retried_too(tmp_path: Path) -> None:
    """DUR-KEEP-1: a dismissal (``cancelled``) survives a store error as an answer does."""

    async def main() -> None:
        async with flaky(tmp_path) as store:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            store.failures = 2
            ui = ScriptedProvider()
            relay = asyncio.ensure_future(
                serve(store, ui, via="desk", on_error=lambda _r, _e: None)
            )
            (await ui.next_ask()).dismiss()
            await until(lambda: _is(state_of(store, "call-1"), "cancelled"))
            await stopped(relay)
            assert store.attempts == 3

    run(main(), bound=60)


def test_a_relay_stopped_before_the_store_took_an_answer_logs_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """DUR-KEEP-1: stopped mid-retry, the answer is logged with its ask id; the ask stays pending."""

    async def main() -> None:
        async with flaky(tmp_path) as store:
            await store.put("call-9", stored_request(QUESTION), asked_at=1.0)
            store.failures = 10**6
            errors: list[BaseException] = []
            ui = Hearing()
            relay = asyncio.ensure_future(
                serve(store, ui, via="desk", on_error=lambda _r, e: errors.append(e))
            )
            (await ui.scripted.next_ask()).answer(answer_of(answer_custom("q", "keep me")))
            while store.attempts < 2:  # noqa: ASYNC110 - counted by the wrapper
                await asyncio.sleep(0.005)
            verdict = ui.verdicts["call-9"]
            assert not verdict.done()  # DUR-ACK-1: no verdict while the store has not taken it
            await stopped(relay)
            assert verdict.result() == Verdict(
                "call-9", "unsaved", reason="the relay stopped before the store took it"
            )
            assert await state_of(store, "call-9") == "pending"
            (unsaved,) = [e for e in errors if isinstance(e, UnsavedAnswer)]
            assert unsaved.ask_id == "call-9"
            assert unsaved.outcome.answer == answer_of(answer_custom("q", "keep me"))
            assert isinstance(unsaved.cause, sqlite3.OperationalError)

    with caplog.at_level(logging.ERROR, logger="dsh_user_interaction.durable"):
        run(main(), bound=60)
    (logged,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "'call-9'" in logged.getMessage()
    assert "NOT SAVED" in logged.getMessage()
    assert '"custom":"keep me"' in logged.getMessage()


def test_a_held_sqlite_lock_delays_the_answer_and_loses_nothing(tmp_path: Path) -> None:
    """DUR-KEEP-1 on a real lock: held past lock_timeout, the write is retried and lands.

    Another connection holds SQLite's write lock; each write of the relay's
    fails, and the answer is written once the lock is let go.
    """

    async def main() -> None:
        path = tmp_path / "asks.db"
        async with SQLiteStore(path, poll_interval=0.005, lock_timeout=0.05) as store:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            holder = sqlite3.connect(path, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # the write lock, held by someone else
            errors: list[BaseException] = []
            ui = ScriptedProvider()
            relay = asyncio.ensure_future(
                serve(store, ui, via="desk", on_error=lambda _r, e: errors.append(e))
            )
            (await ui.next_ask()).answer(ANSWER)
            while len(errors) < 2:  # noqa: ASYNC110 - two failed writes, at least
                await asyncio.sleep(0.005)
            assert await state_of(store, "call-1") == "pending"
            holder.execute("COMMIT")
            holder.close()
            await until(lambda: _is(state_of(store, "call-1"), "answered"))
            await stopped(relay)
            record = await store.get("call-1")
            assert record is not None
            assert record.answer == ANSWER
            assert all("lock" in str(error) for error in errors), errors

    run(main(), bound=60)


def test_a_provider_hears_saved_only_once_the_store_has_the_answer(tmp_path: Path) -> None:
    """DUR-ACK-1: the verdict waits for the write; it is ``saved``, with the outcome written."""

    async def main() -> None:
        async with flaky(tmp_path) as store:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            ui = Hearing()
            relay = asyncio.ensure_future(serve(store, ui, via="desk", principal="ana"))
            shown = await ui.scripted.next_ask()
            store.gate.clear()  # the next write waits
            store.attempted.clear()
            shown.answer(ANSWER)
            await store.attempted.wait()
            verdict = ui.verdicts["call-1"]
            await asyncio.sleep(0.05)
            assert not verdict.done()
            store.gate.set()
            told = await verdict
            assert told.saved
            assert told.outcome == Outcome.answered(ANSWER, principal="ana", via="desk")
            assert told.how == "answered"
            assert await state_of(store, "call-1") == "answered"
            await stopped(relay)

    run(main(), bound=60)


def test_a_provider_that_lost_the_race_hears_lost_with_the_winner(tmp_path: Path) -> None:
    """DUR-ACK-1: another UI's outcome came first: ``lost``, with the winner's principal and via.

    The losing answer is reported too (DUR-LOST-1).
    """

    async def main() -> None:
        async with flaky(tmp_path) as store:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            errors: list[BaseException] = []
            ui = Hearing()
            relay = asyncio.ensure_future(
                serve(store, ui, via="desk", on_error=lambda _r, e: errors.append(e))
            )
            shown = await ui.scripted.next_ask()
            store.gate.clear()
            store.attempted.clear()
            shown.answer(ANSWER)
            await store.attempted.wait()
            phone = Outcome.answered(
                answer_of(answer_custom("q", "no")), principal="bo", via="phone"
            )
            await store.inner.settle("call-1", phone, settled_at=2.0)
            store.gate.set()
            told = await ui.verdicts["call-1"]
            assert (told.state, told.outcome, told.how) == ("lost", phone, "answered")
            (lost,) = [e for e in errors if isinstance(e, LostAnswer)]
            assert lost.answer == ANSWER
            await stopped(relay)

    run(main(), bound=60)


def test_an_outcome_whose_write_went_through_before_its_error_is_saved(tmp_path: Path) -> None:
    """DUR-ACK-1: a write that committed but raised (a dropped connection) is ``saved``.

    The retry finds the relay's own outcome in the store.
    """

    class CommitsThenFails(Flaky):
        async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
            settlement = await self.inner.settle(ask_id, outcome, settled_at=settled_at)
            self.attempts += 1
            if self.attempts == 1:
                msg = "server closed the connection unexpectedly"
                raise ConnectionError(msg)
            return settlement

    async def main() -> None:
        store = CommitsThenFails(SQLiteStore(tmp_path / "asks.db", poll_interval=0.005))
        try:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            ui = Hearing()
            relay = asyncio.ensure_future(
                serve(store, ui, via="desk", principal="ana", on_error=lambda _r, _e: None)
            )
            (await ui.scripted.next_ask()).answer(ANSWER)
            told = await ui.verdicts["call-1"]
            assert told.saved
            assert store.attempts == 2
            await stopped(relay)
        finally:
            await store.close()

    run(main(), bound=60)


@pytest.mark.parametrize(
    ("outcome", "deadline", "how"),
    [
        (Outcome.answered(ANSWER, principal="bo", via="phone"), None, "answered"),
        (Outcome.answered({**ANSWER, "defaulted": True}, via="agent"), 5.0, "defaulted"),
        (Outcome.cancelled(principal="bo", via="phone"), None, "dismissed"),
        (Outcome.aborted(via="agent"), None, "withdrawn"),
        (Outcome.expired(via="agent"), 5.0, "timed_out"),
        (Outcome.expired(via="upkeep"), None, "expired"),
    ],
)
def test_a_provider_is_told_how_an_ask_ended_elsewhere(
    tmp_path: Path, outcome: Outcome, deadline: float | None, how: str
) -> None:
    """DUR-TELL-1: the Withdrawn reason words each ending, a deadline's expiry as timed out."""

    async def main() -> None:
        async with flaky(tmp_path) as store:
            request: dict[str, object] = {**QUESTION}
            if deadline is not None:
                request["deadline"] = deadline
            await store.put("call-1", stored_request(cast("Any", request)), asked_at=1.0)
            ui = Hearing()
            relay = asyncio.ensure_future(serve(store, ui, via="desk"))
            shown = await ui.scripted.next_ask()
            await store.inner.settle("call-1", outcome, settled_at=2.0)
            await until(lambda: _aborted(shown.request))
            signal = shown.request.get("signal")
            assert signal is not None
            reason = signal.reason
            assert isinstance(reason, Withdrawn)
            assert (reason.how, reason.outcome) == (how, outcome)
            assert ended_how(outcome, timed_out=deadline is not None) == how
            told = await ui.verdicts["call-1"]
            assert (told.state, told.how) == ("lost", how)
            await stopped(relay)

    run(main(), bound=60)


async def _aborted(request: AskUserQuestionRequest) -> bool:
    signal = request.get("signal")
    return signal is not None and signal.aborted


def test_a_failing_watch_is_watched_again(tmp_path: Path) -> None:
    """DUR-KEEP-1: a watch that fails does not stop the relay; asks still show and are written."""

    async def main() -> None:
        async with flaky(tmp_path) as store:
            store.watch_failures = 2
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            ui = ScriptedProvider(respond=lambda _request: ANSWER)
            relay = asyncio.ensure_future(serve(store, ui, via="desk"))
            await until(lambda: _is(state_of(store, "call-1"), "answered"))
            assert not relay.done()
            await stopped(relay)

    run(main(), bound=60)


def test_an_ask_whose_provider_failed_is_forgotten_once_it_settles(tmp_path: Path) -> None:
    """DUR-RELAY-1, bounded: a failed ask is not shown again while pending, but is once settled.

    A new ask with the same id after a purge is shown: the relay keeps no id
    of a settled ask.
    """

    async def main() -> None:
        async with flaky(tmp_path) as store:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            calls = 0

            def respond(_request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
                nonlocal calls
                calls += 1
                if calls == 1:
                    msg = "the UI crashed"
                    raise RuntimeError(msg)
                return ANSWER

            ui = ScriptedProvider(respond=respond)
            relay = asyncio.ensure_future(
                serve(store, ui, via="desk", on_error=lambda _r, _e: None)
            )
            await until(lambda: _calls_at_least(lambda: calls, 1))
            await store.inner.settle("call-1", Outcome.expired(), settled_at=2.0)
            await store.inner.purge(settled_before=3.0)
            await store.put("call-1", stored_request(QUESTION), asked_at=4.0)
            await until(lambda: _is(state_of(store, "call-1"), "answered"))
            await stopped(relay)
            assert calls == 2

    run(main())


def test_an_ask_put_again_after_a_purge_the_relay_never_saw_is_shown(tmp_path: Path) -> None:
    """DUR-RELAY-1: a failed ask is kept out by its record, not its id.

    The watch never sees the settlement (settled and purged between two
    polls); the ask put again with the same id is a new record, and is shown.
    Before, the relay kept the id and never showed the new ask.
    """

    async def main() -> None:
        async with flaky(tmp_path) as store:
            store.hide_settlements = True
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            calls = 0

            def respond(_request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
                nonlocal calls
                calls += 1
                if calls == 1:
                    msg = "the UI crashed"
                    raise RuntimeError(msg)
                return ANSWER

            errors: list[BaseException] = []
            relay = asyncio.ensure_future(
                serve(
                    store,
                    ScriptedProvider(respond=respond),
                    via="desk",
                    on_error=lambda _r, e: errors.append(e),
                )
            )
            await until(lambda: _calls_at_least(lambda: len(errors), 1))
            await store.inner.settle("call-1", Outcome.expired(), settled_at=2.0)
            await store.inner.purge(settled_before=3.0)
            await store.put("call-1", stored_request(QUESTION), asked_at=4.0)
            await until(lambda: _is(state_of(store, "call-1"), "answered"))
            await stopped(relay)
            assert calls == 2
            assert [str(e) for e in errors] == ["the UI crashed"]

    run(main())


async def _calls_at_least(count: Callable[[], int], wanted: int) -> bool:
    return count() >= wanted


def test_fan_out_behind_a_relay_passes_the_verdict_to_the_ui_that_answered(
    tmp_path: Path,
) -> None:
    """DUR-ACK-1 through fan-out: the answering UI hears saved; the other gave none."""
    from dsh_user_interaction.durable import FanOutProvider

    async def main() -> None:
        async with flaky(tmp_path) as store:
            await store.put("call-1", stored_request(QUESTION), asked_at=1.0)
            desk, phone = Hearing(), Hearing()
            both = FanOutProvider({"desk": desk, "phone": phone})
            assert isinstance(both, VerdictAware)
            relay = asyncio.ensure_future(serve(store, both, via="fan", principal="ana"))
            await desk.scripted.next_ask()
            shown = await phone.scripted.next_ask()
            store.gate.clear()
            shown.answer(ANSWER)
            await store.attempted.wait()
            assert not phone.verdicts["call-1"].done()
            store.gate.set()
            told = await phone.verdicts["call-1"]
            assert (told.state, told.outcome) == (
                "saved",
                Outcome.answered(ANSWER, principal="ana", via="fan"),
            )
            assert desk.verdicts["call-1"].cancelled()
            await stopped(relay)

    run(main(), bound=60)
