"""An agent or a UI in a process of its own, on a durable store: the fault tests' children.

``python -m tests.durable_child agent --store STORE ID...`` asks one question
per ask id, through the ``ask_user_question`` tool, a service and a
``DurableProvider``, all at once, and prints one JSON line per outcome:
``{"askId": ..., "text": ..., "isError": ...}``.

``python -m tests.durable_child ui --store STORE --name NAME`` relays the
store's pending asks to a UI that answers each at once with
``NAME:askId`` as custom text, until it is killed or its stdin closes.

``python -m tests.durable_child web --store STORE --stop-at STEP`` relays the
store's pending asks to a web page, as ``python -m dsh_user_interaction
serve STORE --ui web`` does, printing ``url ADDRESS`` once it serves; at
STEP of an answer it prints ``at STEP`` and freezes (its loop blocked) until
it is killed: ``before-write`` (the relay is about to write the answer),
``after-write`` (the store has it; the relay has not yet heard),
``before-response`` (the relay has the store's verdict; the page's POST has
no reply yet), or ``never``.

``STORE`` is ``sqlite:PATH`` or ``postgres:SCHEMA@CONNINFO``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, NoReturn, cast

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionService,
    answer_custom,
    answer_of,
)
from dsh_user_interaction.durable import (
    AskStore,
    DurableProvider,
    Outcome,
    Settlement,
    SQLiteStore,
    Verdict,
    serve,
)
from dsh_user_interaction.tool import ask_user_question

#: What each agent asks; the UI answers its only question with custom text.
QUESTION = {"questions": [{"id": "q", "question": "Deploy now?"}]}


async def open_store(spec: str) -> AskStore:
    kind, _, rest = spec.partition(":")
    if kind == "sqlite":
        return SQLiteStore(rest, poll_interval=0.01)
    if kind == "postgres":
        from dsh_user_interaction.extra.postgres import PostgresStore

        schema, _, conninfo = rest.partition("@")
        return await PostgresStore.connect(conninfo, schema=schema)
    msg = f"unknown store {spec!r}"
    raise SystemExit(msg)


async def agent(store_spec: str, ask_ids: list[str]) -> None:
    store = await open_store(store_spec)
    service = UserInteractionService()
    service.register_provider(DurableProvider(store, via="agent"))

    async def one(ask_id: str) -> None:
        result = await ask_user_question(service, QUESTION, ask_id=ask_id)
        line = {"askId": ask_id, "text": result.text, "isError": result.is_error}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()

    try:
        await asyncio.gather(*(one(ask_id) for ask_id in ask_ids))
    finally:
        await store.close()


async def ui(store_spec: str, name: str) -> None:
    store = await open_store(store_spec)

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        ask_id = cast("dict[str, object]", request).get("askId")
        return answer_of(answer_custom("q", f"{name}:{ask_id}"))

    relay = asyncio.ensure_future(
        serve(store, ScriptedProvider(respond=respond), via=name, principal=name)
    )
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    # Runs until stdin closes (the test ends it) or the process is killed.
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    relay.cancel()
    await asyncio.gather(relay, return_exceptions=True)
    await store.close()


def halt(step: str) -> NoReturn:
    """Say that *step* is reached, and freeze the whole process until it is killed."""
    sys.stdout.write(f"at {step}\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)  # the loop is blocked: nothing more happens here


class Stopping:
    """A store that freezes the process just before, or just after, a settlement."""

    def __init__(self, inner: AskStore, step: str) -> None:
        self._inner = inner
        self._step = step

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        if self._step == "before-write":
            halt(self._step)
        settlement = await self._inner.settle(ask_id, outcome, settled_at=settled_at)
        if self._step == "after-write":
            halt(self._step)
        return settlement


async def web(store_spec: str, step: str) -> None:
    from dsh_user_interaction.extra.web import WebProvider

    class Halting(WebProvider):
        """Freezes once the relay has the store's verdict, before the page hears it."""

        def expect_verdict(
            self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
        ) -> None:
            if step == "before-response":
                verdict.add_done_callback(lambda _done: halt(step))
            super().expect_verdict(request, verdict)

    store = await open_store(store_spec)
    async with Halting() as page:
        relay = asyncio.ensure_future(
            serve(cast("AskStore", Stopping(store, step)), page, via="web", principal="ana")
        )
        sys.stdout.write(f"url {page.url}\n")
        sys.stdout.flush()
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        relay.cancel()
        await asyncio.gather(relay, return_exceptions=True)
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["agent", "ui", "web"])
    parser.add_argument("--store", required=True)
    parser.add_argument("--name", default="ui")
    parser.add_argument("--stop-at", default="never")
    parser.add_argument("ask_ids", nargs="*")
    arguments = parser.parse_intermixed_args()
    if arguments.role == "agent":
        asyncio.run(agent(arguments.store, arguments.ask_ids))
    elif arguments.role == "web":
        asyncio.run(web(arguments.store, arguments.stop_at))
    else:
        asyncio.run(ui(arguments.store, arguments.name))


if __name__ == "__main__":
    main()
