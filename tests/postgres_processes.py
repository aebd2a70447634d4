"""The processes of the multi-process test of ``tests/test_postgres.py``: agents and UIs.

``python -m tests.postgres_processes agent DSN SCHEMA NAME COUNT`` asks COUNT
questions through a :class:`~dsh_user_interaction.durable.DurableProvider` on
a :class:`PostgresStore`, asking again (with the same ``askId``) whenever the
store fails under it, and prints one JSON line an answer.

``python -m tests.postgres_processes ui DSN SCHEMA NAME`` relays the store's
asks to a :class:`ScriptedProvider` that answers at once, picking the option
named NAME, until SIGTERM; then it prints one JSON line with the ask ids whose
settlement it won. Each win is also printed as it happens (``{"won": id}``),
so a UI killed mid-run leaves its wins behind.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from typing import cast

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_of,
    answer_selected,
)
from dsh_user_interaction.durable import (
    AskRecord,
    DurableProvider,
    LostAnswer,
    Outcome,
    Settlement,
    StoredRequest,
    serve,
)
from dsh_user_interaction.extra.postgres import PostgresStore

#: The options of every question: one a UI, so that an answer says who gave it.
UI_NAMES = ("ui-0", "ui-1", "ui-2", "ui-3")


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def agent(dsn: str, schema: str, name: str, count: int) -> None:
    """Ask *count* questions, 50 at a time, each until it is answered."""
    store = await PostgresStore.connect(dsn, schema=schema, poll_interval=0.5)
    service = UserInteractionService()
    service.register_provider(DurableProvider(store, via=name))
    gate = asyncio.Semaphore(50)

    async def one(i: int) -> None:
        ask_id = f"{name}-{i}"
        request = cast(
            "AskUserQuestionRequest",
            {
                "askId": ask_id,
                "questions": [
                    {
                        "id": "q",
                        "question": f"Who answers {ask_id}?",
                        "options": [{"label": label} for label in UI_NAMES],
                    }
                ],
            },
        )
        tries = 0
        async with gate:
            while True:
                tries += 1
                try:
                    answer = await service.ask(request)
                except UserInteractionError as error:
                    if error.code is not ErrorCode.STORE_FAILED:
                        raise
                    await asyncio.sleep(0.05)  # the store failed: ask again, by the same id
                    continue
                emit({"askId": ask_id, "answer": cast("object", answer), "tries": tries})
                return

    try:
        await asyncio.gather(*(one(i) for i in range(count)))
    finally:
        await store.close()


class CountingStore:
    """A store that tells of each settlement it wins."""

    def __init__(self, inner: PostgresStore) -> None:
        self.inner = inner
        self.won: list[str] = []

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        return await self.inner.put(ask_id, request, asked_at=asked_at)

    async def get(self, ask_id: str) -> AskRecord | None:
        return await self.inner.get(ask_id)

    async def pending(self) -> list[AskRecord]:
        return await self.inner.pending()

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        settlement = await self.inner.settle(ask_id, outcome, settled_at=settled_at)
        if settlement.won:
            self.won.append(ask_id)
            emit({"won": ask_id})
        return settlement

    async def changes(self, after: int) -> list[AskRecord]:
        return await self.inner.changes(after)

    def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        return self.inner.watch(after)

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        return await self.inner.records(settled_after=settled_after)

    async def purge(self, *, settled_before: float) -> int:
        return await self.inner.purge(settled_before=settled_before)

    async def close(self) -> None:
        await self.inner.close()


async def ui(dsn: str, schema: str, name: str) -> None:
    """Relay the store's asks to a provider that answers at once, until SIGTERM."""
    store = CountingStore(await PostgresStore.connect(dsn, schema=schema, poll_interval=0.5))

    def respond(_request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return answer_of(answer_selected("q", name))

    lost = 0
    errors: list[str] = []

    def on_error(record: AskRecord, error: BaseException) -> None:
        nonlocal lost
        if isinstance(error, LostAnswer):
            lost += 1
        else:
            errors.append(f"{record.ask_id}: {type(error).__name__}: {error}")

    relay = asyncio.ensure_future(
        serve(store, ScriptedProvider(respond=respond), via=name, on_error=on_error)
    )
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, relay.cancel)
    emit({"ready": name})
    try:
        await relay
    except asyncio.CancelledError:
        pass
    finally:
        await store.close()
    emit({"ui": name, "wins": store.won, "lost": lost, "errors": errors})


def main(argv: list[str]) -> None:
    role, dsn, schema, name, *rest = argv
    if role == "agent":
        asyncio.run(agent(dsn, schema, name, int(rest[0])))
    elif role == "ui":
        asyncio.run(ui(dsn, schema, name))
    else:
        msg = f"unknown role {role!r}"
        raise SystemExit(msg)


if __name__ == "__main__":
    main(sys.argv[1:])
