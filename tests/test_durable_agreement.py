"""The agent's outcome is the store's (``DUR-AGREE-1``), whatever holds the store up.

A deadline's defaults and an abort are offered to the store, never assumed:
the agent receives them only once the store has recorded them, and when a
UI's answer was recorded first, the agent receives that answer. Another
SQLite connection holds the write lock for longer than the provider ever
used to wait (0.2 s); events order every step, and the only waits are the
lock's own hold and bounds that catch a hang.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.durable import (
    AskRecord,
    DurableProvider,
    Outcome,
    Settlement,
    SQLiteStore,
    with_ask_id,
)

from .helpers import run

#: How long the other connection holds the lock: well past the old 0.2 s bound.
HOLD = 0.6

NO: AskUserQuestionAnswer = {"answers": [{"id": "go", "selected": ["No"]}]}


def deadline_request(
    ask_id: str, *, seconds: float, defaults: bool = True
) -> AskUserQuestionRequest:
    question: dict[str, Any] = {
        "id": "go",
        "question": "Deploy?",
        "options": [{"label": "Yes"}, {"label": "No"}],
    }
    if defaults:
        question["default"] = {"selected": ["Yes"]}
    request = {"questions": [question], "deadline": time.time() + seconds}
    return with_ask_id(cast("AskUserQuestionRequest", request), ask_id)


DEFAULTS: AskUserQuestionAnswer = {
    "answers": [{"id": "go", "selected": ["Yes"]}],
    "defaulted": True,
}


def agent_service() -> UserInteractionService:
    """An agent's service that leaves deadlines and aborts to its durable provider (POL-LEAVE-1)."""
    return UserInteractionService(enforce_deadlines=False, enforce_aborts=False)


@contextmanager
def write_lock(path: Path) -> Generator[tuple[threading.Event, threading.Event]]:
    """Another connection that takes *path*'s write lock, and holds it until told.

    Yields ``(taken, release)``: *taken* is set once the lock is held; set
    *release* to let go. The lock is let go at the end in any case.
    """
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            taken.set()
            release.wait(30)
            db.execute("COMMIT")
        finally:
            db.close()

    thread = threading.Thread(target=hold, name="other-writer")
    thread.start()
    try:
        yield taken, release
    finally:
        release.set()
        thread.join(30)


class SettleSpy:
    """A store that tells when a settlement is asked for, and may hold it until let go."""

    def __init__(self, inner: SQLiteStore) -> None:
        self.inner = inner
        self.settling = asyncio.Event()
        self.go = asyncio.Event()
        self.go.set()
        self.offered: list[Outcome] = []

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        self.offered.append(outcome)
        self.settling.set()
        await self.go.wait()
        return await self.inner.settle(ask_id, outcome, settled_at=settled_at)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@asynccontextmanager
async def opened(path: Path, **options: Any) -> AsyncGenerator[SQLiteStore]:
    store = SQLiteStore(path, poll_interval=0.005, **options)
    try:
        yield store
    finally:
        await store.close()


async def until_pending(store: SQLiteStore, ask_id: str) -> AskRecord:
    while True:
        record = await store.get(ask_id)
        if record is not None:
            return record
        await asyncio.sleep(0.005)


def test_deadline_defaults_reach_the_agent_only_once_recorded(tmp_path: Path) -> None:
    """DUR-AGREE-1: with the lock held past the old bound, the agent waits for the defaults' write.

    Before, the provider gave up writing after 0.2 s and the agent received
    ``defaulted: true`` while the store stayed pending.
    """
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path) as agent_store, opened(path) as ui_store:
            spy = SettleSpy(agent_store)
            service = agent_service()
            service.register_provider(DurableProvider(cast("Any", spy), via="agent"))
            spy.go.clear()
            asking = asyncio.ensure_future(service.ask(deadline_request("d", seconds=0.2)))
            await until_pending(ui_store, "d")
            await spy.settling.wait()  # the deadline passed; the defaults are being offered
            with write_lock(path) as (taken, release):
                await asyncio.to_thread(taken.wait, 10)
                spy.go.set()
                done, _ = await asyncio.wait({asking}, timeout=HOLD)
                assert not done, "the agent had an outcome while the store could not record one"
                record = await ui_store.get("d")
                assert record is not None
                assert record.pending
                release.set()
                answer = await asking
            assert answer == DEFAULTS
            record = await ui_store.get("d")
            assert record is not None
            assert (record.state, record.answer, record.via) == ("answered", DEFAULTS, "agent")
            late = await ui_store.settle(
                "d", Outcome.answered(NO, via="web"), settled_at=time.time()
            )
            assert not late.won  # a UI's late answer loses to the recorded defaults

    run(main(), bound=30)


def test_a_ui_answer_recorded_first_is_the_agents_answer(tmp_path: Path) -> None:
    """DUR-AGREE-1: the deadline fires, but a UI's answer reaches the store first: the agent gets it."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path) as agent_store, opened(path) as ui_store:
            spy = SettleSpy(agent_store)
            spy.go.clear()
            service = agent_service()
            service.register_provider(DurableProvider(cast("Any", spy), via="agent"))
            asking = asyncio.ensure_future(service.ask(deadline_request("w", seconds=0.2)))
            await until_pending(ui_store, "w")
            await spy.settling.wait()
            won = await ui_store.settle(
                "w", Outcome.answered(NO, via="web"), settled_at=time.time()
            )
            assert won.won
            spy.go.set()
            assert await asking == NO
            record = await ui_store.get("w")
            assert record is not None
            assert record.answer == NO

    run(main(), bound=30)


@pytest.mark.parametrize("ending", ["deadline", "abort"])
def test_a_default_service_waits_for_the_store_past_its_longest_grace(
    tmp_path: Path, ending: str
) -> None:
    """DUR-AGREE-2 by default: a service with no switches set leaves time to the durable provider.

    The deadline passes (or the signal aborts) while the provider's write
    is held, a UI's answer is recorded meanwhile, and the write is let go
    only after the longest grace a service may give (1 s): the agent
    receives the UI's answer, the store's outcome. Before, the default
    service answered alone after its grace (the defaults, or
    ``ASK_ABORTED``) while the store recorded the answer.
    """
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path) as agent_store, opened(path) as ui_store:
            spy = SettleSpy(agent_store)
            spy.go.clear()
            service = UserInteractionService(cancel_grace=1.0)
            provider = DurableProvider(cast("Any", spy), via="agent")
            assert provider.keeps_own_time
            service.register_provider(provider)
            controller = AbortController()
            request: Any = deadline_request("w", seconds=0.2 if ending == "deadline" else 600)
            timed = cast("AskUserQuestionRequest", {**request, "signal": controller.signal})
            asking = asyncio.ensure_future(service.ask(timed))
            await until_pending(ui_store, "w")
            if ending == "abort":
                controller.abort()
            await spy.settling.wait()
            won = await ui_store.settle(
                "w", Outcome.answered(NO, via="web"), settled_at=time.time()
            )
            assert won.won
            await asyncio.sleep(1.5)  # past the longest grace: the service must not answer alone
            spy.go.set()
            assert await asking == NO
            record = await ui_store.get("w")
            assert record is not None
            assert record.answer == NO

    run(main(), bound=30)


def test_an_expired_ask_ends_as_the_store_records_it(tmp_path: Path) -> None:
    """DUR-DEADLINE-2: without defaults the deadline records ``expired``, then the agent times out."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path) as store:
            service = agent_service()
            service.register_provider(DurableProvider(store, via="agent"))
            with pytest.raises(UserInteractionError) as raised:
                await service.ask(deadline_request("e", seconds=0.05, defaults=False))
            assert raised.value.timed_out
            record = await store.get("e")
            assert record is not None
            assert record.state == "expired"

    run(main(), bound=30)


def test_an_abort_reaches_the_agent_only_once_recorded(tmp_path: Path) -> None:
    """DUR-AGREE-1: an abort while the lock is held waits for the write, then raises ASK_ABORTED."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path) as agent_store, opened(path) as ui_store:
            spy = SettleSpy(agent_store)
            service = agent_service()
            service.register_provider(DurableProvider(cast("Any", spy), via="agent"))
            controller = AbortController()
            request = with_ask_id(
                {"questions": [{"id": "q", "question": "Go?"}], "signal": controller.signal}, "a"
            )
            asking = asyncio.ensure_future(service.ask(request))
            await until_pending(ui_store, "a")
            with write_lock(path) as (taken, release):
                await asyncio.to_thread(taken.wait, 10)
                controller.abort()
                await spy.settling.wait()
                done, _ = await asyncio.wait({asking}, timeout=HOLD)
                assert not done, "the agent was told 'aborted' while the store could not record it"
                release.set()
                with pytest.raises(UserInteractionError) as raised:
                    await asking
            assert raised.value.code is ErrorCode.ASK_ABORTED
            record = await ui_store.get("a")
            assert record is not None
            assert record.state == "aborted"

    run(main(), bound=30)


def test_an_abort_after_a_ui_answer_was_recorded_returns_that_answer(tmp_path: Path) -> None:
    """DUR-AGREE-1: the answer a UI recorded before the abort's write is the agent's outcome."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path) as agent_store, opened(path) as ui_store:
            spy = SettleSpy(agent_store)
            spy.go.clear()
            service = agent_service()
            service.register_provider(DurableProvider(cast("Any", spy), via="agent"))
            controller = AbortController()
            request = with_ask_id(
                {"questions": [{"id": "q", "question": "Go?"}], "signal": controller.signal}, "b"
            )
            asking = asyncio.ensure_future(service.ask(request))
            await until_pending(ui_store, "b")
            controller.abort()
            await spy.settling.wait()
            answer: AskUserQuestionAnswer = {
                "answers": [{"id": "q", "selected": [], "custom": "ok"}]
            }
            assert (await ui_store.settle("b", Outcome.answered(answer), settled_at=1.0)).won
            spy.go.set()
            assert await asking == answer

    run(main(), bound=30)


def test_a_store_out_of_reach_raises_store_failed_and_leaves_the_ask(tmp_path: Path) -> None:
    """DUR-FAIL-2: the lock outlasts the provider's patience: STORE_FAILED, and the ask stays pending.

    Whoever reaches the store later can answer it, and the agent asking
    again with its ask id gets that answer.
    """
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path, lock_timeout=0.02) as agent_store, opened(path) as ui_store:
            spy = SettleSpy(agent_store)
            service = agent_service()
            service.register_provider(DurableProvider(cast("Any", spy), store_patience=0.2))
            request = deadline_request("f", seconds=0.1)
            spy.go.clear()
            asking = asyncio.ensure_future(service.ask(request))
            await until_pending(ui_store, "f")
            await spy.settling.wait()
            with write_lock(path) as (taken, release):
                await asyncio.to_thread(taken.wait, 10)
                spy.go.set()
                with pytest.raises(UserInteractionError) as raised:
                    await asking
                release.set()
            error = raised.value
            assert error.code is ErrorCode.STORE_FAILED
            assert "locked" in str(error)
            assert isinstance(error.__cause__, sqlite3.OperationalError)
            record = await ui_store.get("f")
            assert record is not None
            assert record.pending
            assert (await ui_store.settle("f", Outcome.answered(NO), settled_at=1.0)).won
            assert await service.ask(request) == NO

    run(main(), bound=30)


class Patient:
    """A provider that answers once its request's signal has aborted, and says if it was cancelled."""

    def __init__(self) -> None:
        self.cancelled = False
        self.waiting = asyncio.Event()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        signal = request.get("signal")
        assert signal is not None
        aborted = asyncio.Event()
        signal.add_listener(lambda _signal: aborted.set())
        self.waiting.set()
        try:
            await aborted.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return {"answers": [{"id": "q", "selected": [], "custom": "kept"}]}


def test_a_service_that_leaves_aborts_to_its_provider_does_not_interrupt_it() -> None:
    """DUR-AGREE-2: with ``enforce_aborts=False`` an abort reaches the provider through its signal only.

    The provider's outcome is the ask's; a signal aborted before ``ask()``
    still raises ``ASK_ABORTED`` at stage 1, and the default service still
    interrupts.
    """

    async def main() -> None:
        leaving = UserInteractionService(enforce_aborts=False)
        provider = Patient()
        leaving.register_provider(provider)
        controller = AbortController()
        request: AskUserQuestionRequest = {
            "questions": [{"id": "q", "question": "Go?"}],
            "signal": controller.signal,
        }
        asking = asyncio.ensure_future(leaving.ask(request))
        await provider.waiting.wait()
        controller.abort()
        assert await asking == {"answers": [{"id": "q", "selected": [], "custom": "kept"}]}
        assert not provider.cancelled
        with pytest.raises(UserInteractionError) as early:
            await leaving.ask(request)
        assert early.value.code is ErrorCode.ASK_ABORTED

        enforcing = UserInteractionService()
        interrupted = Patient()
        enforcing.register_provider(interrupted)
        other = AbortController()
        asking = asyncio.ensure_future(enforcing.ask({**request, "signal": other.signal}))
        await interrupted.waiting.wait()
        other.abort()
        with pytest.raises(UserInteractionError) as late:
            await asking
        assert late.value.code is ErrorCode.ASK_ABORTED

    run(main())


def test_a_strict_service_leaving_deadlines_accepts_the_recorded_defaults(tmp_path: Path) -> None:
    """POL-DEFAULT-3 with ``enforce_deadlines=False``: a store's record of the defaults is accepted.

    Asked again after its deadline, the ask returns the defaults the store
    recorded, marked ``defaulted``, instead of ``BAD_ANSWER``.
    """
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with opened(path) as store:
            service = agent_service()
            service.register_provider(DurableProvider(store, via="agent"))
            request = deadline_request("r", seconds=0.05)
            assert await service.ask(request) == DEFAULTS
            assert await service.ask(request) == DEFAULTS

    run(main(), bound=30)
