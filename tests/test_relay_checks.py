"""The store suite's ``durable-verdicts`` scenario catches relays broken for what it judges.

It judges ``DUR-KEEP-1``, ``DUR-ACK-1`` and ``DUR-TELL-1`` on the store under
test; here the store is sound (SQLite) and the relay is broken one way at a
time: it drops an answer on a store error (as the relay did before it kept
them), it never tells its UI a verdict, or it withdraws its UI without
saying how the ask ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    UserInteractionProvider,
    UserInteractionService,
)
from dsh_user_interaction.durable import AskRecord, AskStore, Outcome, SQLiteStore, serve
from dsh_user_interaction_conformance._store import _durable
from dsh_user_interaction_conformance._store._durable import DURABLE_CHECKS

from .helpers import run

REQUEST: AskUserQuestionRequest = {"questions": [{"id": "q", "question": "Go?"}]}
ANSWER: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": [], "custom": "go"}]}
CHECK = next(c for c in DURABLE_CHECKS if c.name == "durable-verdicts")


def findings(folder: Path) -> list[str]:
    async def opener() -> AskStore:
        return SQLiteStore(folder / "asks.db", poll_interval=0.005)

    return [rid for rid, _ in run(CHECK.findings(opener, REQUEST, ANSWER), bound=60)]


async def dropping_relay(
    store: AskStore, provider: UserInteractionProvider, *, via: str, **options: Any
) -> None:
    """The relay as it was: an answer whose write failed was reported and dropped."""
    on_error = cast("Callable[[AskRecord, BaseException], object]", options["on_error"])
    principal = cast("str | None", options.get("principal"))
    service = UserInteractionService(enforce_deadlines=False)
    finished: set[str] = set()

    async def show(record: AskRecord) -> None:
        request = cast(
            "AskUserQuestionRequest", {**record.request, "signal": AbortController().signal}
        )
        try:
            answer = await service.ask(request)
            outcome = Outcome.answered(answer, principal=principal, via=via)
            await store.settle(record.ask_id, outcome, settled_at=1.0)
        except Exception as error:  # noqa: BLE001 - the bug: reported, then forgotten
            finished.add(record.ask_id)
            on_error(record, error)

    with service.register_provider(provider):
        async with asyncio.TaskGroup() as group:
            async for record in store.watch(0):
                if record.pending and record.ask_id not in finished:
                    finished.add(record.ask_id)
                    group.create_task(show(record))


class _Deaf:
    """The UI behind a relay, its ``expect_verdict`` hidden: the relay tells it nothing."""

    def __init__(self, ui: UserInteractionProvider) -> None:
        self._ui = ui

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self._ui.ask(request)


async def silent_relay(
    store: AskStore, provider: UserInteractionProvider, *, via: str, **options: Any
) -> None:
    """A relay that never tells its UI the store's verdict."""
    await serve(store, _Deaf(provider), via=via, **options)


class _Mute:
    """The UI behind a relay, withdrawn with a bare reason: how the ask ended is lost."""

    def __init__(self, ui: Any) -> None:
        self._ui = ui

    def expect_verdict(self, request: AskUserQuestionRequest, verdict: Any) -> None:
        self._ui.expect_verdict(request, verdict)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        controller = AbortController()
        signal = request.get("signal")
        if signal is not None:
            signal.add_listener(lambda _signal: controller.abort(RuntimeError("aborted")))
        answer: AskUserQuestionAnswer = await self._ui.ask({**request, "signal": controller.signal})
        return answer


async def mute_relay(
    store: AskStore, provider: UserInteractionProvider, *, via: str, **options: Any
) -> None:
    """A relay whose UI is withdrawn without being told how or where the ask ended."""
    await serve(store, cast("UserInteractionProvider", _Mute(provider)), via=via, **options)


def test_the_scenario_passes_on_the_sqlite_store(tmp_path: Path) -> None:
    """The reference's relay keeps, tells and words, on a sound store."""
    assert findings(tmp_path) == []


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("relay", "requirement"),
    [
        (dropping_relay, "DUR-KEEP-1"),
        (silent_relay, "DUR-ACK-1"),
        (mute_relay, "DUR-TELL-1"),
    ],
    ids=["drops-on-store-error", "tells-no-verdict", "withdraws-without-words"],
)
def test_the_scenario_catches_a_broken_relay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relay: Any, requirement: str
) -> None:
    """Each broken relay fails exactly the requirement it breaks."""
    monkeypatch.setattr(_durable, "PATIENCE", 2.0)
    monkeypatch.setattr(_durable, "serve", relay)
    assert findings(tmp_path) == [requirement]
