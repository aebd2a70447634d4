"""A LangGraph run whose question outlives a SIGKILL: asked once, answered, finished.

``python -m tests.test_langgraph_crash pause GRAPH_DB ASK_DB`` runs an agent until
it pauses on ``ask_user_question``, then asks the question through a
``DurableProvider`` on ASK_DB and waits. ``... finish GRAPH_DB ASK_DB`` picks the
paused run up from its SQLite checkpointer, asks again (the same ask, by the tool
call's id), resumes the run with the answer and prints the tool message the model
read, as one JSON line.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from dsh_user_interaction import (
    ScriptedProvider,
    UserInteractionService,
    answer_of,
    answer_selected,
)
from dsh_user_interaction.durable import DurableProvider, SQLiteStore, serve
from dsh_user_interaction.extra.langgraph import (
    AskUserQuestionTool,
    InterruptProvider,
    resume_command,
)
from tests.helpers import patience, run
from tests.test_langgraph import QUESTION_ARGS, ScriptedChatModel, call, create_agent

ROOT = Path(__file__).resolve().parents[1]
CONFIG: RunnableConfig = {"configurable": {"thread_id": "crash-1"}}

#: LangGraph's SQLite checkpointer for asyncio (``langgraph-checkpoint-sqlite``).
AsyncSqliteSaver: Any = importlib.import_module("langgraph.checkpoint.sqlite.aio").AsyncSqliteSaver


async def child(mode: str, graph_db: str, ask_db: str) -> None:
    """The child's run: pause and wait on the durable ask, or pick the run up and finish it."""
    pausing = UserInteractionService()
    pausing.register_provider(InterruptProvider())
    responses: list[BaseMessage] = [AIMessage(content="done")]
    if mode == "pause":
        responses.insert(0, call("ask_user_question", QUESTION_ARGS))
    model = ScriptedChatModel(responses=responses)
    async with (
        AsyncSqliteSaver.from_conn_string(graph_db) as saver,
        SQLiteStore(ask_db, poll_interval=0.01) as store,
    ):
        agent = create_agent(model, [AskUserQuestionTool(service=pausing)], checkpointer=saver)
        human = UserInteractionService()
        human.register_provider(DurableProvider(store))
        if mode == "pause":
            await agent.ainvoke({"messages": [("user", "ship it")]}, CONFIG)
        command = await resume_command(agent, CONFIG, human)  # waits here until answered
        finished = await agent.ainvoke(command, CONFIG)
    (message,) = [m for m in finished["messages"] if isinstance(m, ToolMessage)]
    print(json.dumps({"content": message.content, "last": finished["messages"][-1].content}))


def spawn(*arguments: str) -> subprocess.Popen[str]:
    """This module as a child process, run with *arguments*."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.test_langgraph_crash", *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_question_pending_at_a_sigkill_is_asked_once_and_the_run_finishes(
    tmp_path: Path,
) -> None:
    """SIGKILL while the question waits; a new process resumes; one ask, one answer, the run ends."""
    graph_db, ask_db = str(tmp_path / "graph.db"), str(tmp_path / "asks.db")
    first = spawn("pause", graph_db, ask_db)
    try:

        async def pending_in_store() -> str:
            async with SQLiteStore(ask_db, poll_interval=0.01) as store:
                async with asyncio.timeout(patience(20.0)):
                    async for record in store.watch():
                        if record.pending:
                            return record.ask_id
            raise AssertionError("the store's watch ended")  # pragma: no cover - it never ends

        assert run(pending_in_store(), bound=30.0) == "call_1"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert first.stdout is not None
        first.stdout.close()
    assert first.returncode == -signal.SIGKILL

    asked: list[object] = []

    def respond(request: Any) -> Any:
        asked.append(request)
        return answer_of(answer_selected("q", "No"))

    second = spawn("finish", graph_db, ask_db)
    try:

        async def answer_and_finish() -> tuple[int, str]:
            async with SQLiteStore(ask_db, poll_interval=0.01) as store:
                relay = asyncio.ensure_future(
                    serve(store, ScriptedProvider(respond=respond), via="desk")
                )
                try:
                    loop = asyncio.get_running_loop()
                    out = await asyncio.wait_for(
                        loop.run_in_executor(None, second.communicate), patience(30.0)
                    )
                finally:
                    relay.cancel()
                    await asyncio.gather(relay, return_exceptions=True)
                records = await store.records()
                assert [(r.ask_id, r.state) for r in records] == [("call_1", "answered")]
                return second.returncode, out[0]

        code, output = run(answer_and_finish(), bound=40.0)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()
    assert code == 0
    assert json.loads(output) == {
        "content": '{"answers":[{"id":"q","selected":["No"]}]}',
        "last": "done",
    }
    assert len(asked) == 1


if __name__ == "__main__":
    asyncio.run(child(*sys.argv[1:4]))
