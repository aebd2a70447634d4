"""An agent or a UI in a process of its own, on a durable store: the fault tests' children.

``python -m tests.durable_child agent --store STORE ID...`` asks one question
per ask id, through the ``ask_user_question`` tool, a service and a
``DurableProvider``, all at once, and prints one JSON line per outcome:
``{"askId": ..., "text": ..., "isError": ...}``.

``python -m tests.durable_child ui --store STORE --name NAME`` relays the
store's pending asks to a UI that answers each at once with
``NAME:askId`` as custom text, until it is killed or its stdin closes.

``STORE`` is ``sqlite:PATH`` or ``postgres:SCHEMA@CONNINFO``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import cast

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionService,
    answer_custom,
    answer_of,
)
from dsh_user_interaction.durable import AskStore, DurableProvider, SQLiteStore, serve
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["agent", "ui"])
    parser.add_argument("--store", required=True)
    parser.add_argument("--name", default="ui")
    parser.add_argument("ask_ids", nargs="*")
    arguments = parser.parse_intermixed_args()
    if arguments.role == "agent":
        asyncio.run(agent(arguments.store, arguments.ask_ids))
    else:
        asyncio.run(ui(arguments.store, arguments.name))


if __name__ == "__main__":
    main()
