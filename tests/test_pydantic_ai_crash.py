"""A pydantic-ai run's deferred question across a SIGKILL: the messages and the ask store carry it.

The child processes are this module run as ``python -m tests.test_pydantic_ai_crash``:
``first`` runs until the deferred call, saves the messages and the ``DeferredToolRequests``
as JSON and waits on the ask in the store (where it is killed); ``second`` loads them,
answers the deferred calls from the store, resumes the run and prints what the model read.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import TypeAdapter
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from dsh_user_interaction import (
    ScriptedProvider,
    UserInteractionService,
    answer_of,
    answer_selected,
)
from dsh_user_interaction.durable import DurableProvider, SQLiteStore, serve
from dsh_user_interaction.extra.pydantic_ai import answer_deferred, deferred_seam_toolset
from tests.helpers import run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
ARGUMENTS = {
    "questions": [{"id": "q", "question": "Ship it?", "options": [{"label": "A"}, {"label": "B"}]}]
}
REQUESTS = TypeAdapter(DeferredToolRequests)


def _model(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
    """Call ask_user_question once; then say what the tool returned."""
    last = messages[-1]
    if len(messages) == 1:
        return ModelResponse(
            parts=[ToolCallPart("ask_user_question", ARGUMENTS, tool_call_id="call-1")]
        )
    assert isinstance(last, ModelRequest)
    returned = [part.content for part in last.parts if isinstance(part, ToolReturnPart)]
    return ModelResponse(parts=[TextPart(json.dumps(returned))])


def _agent() -> Agent[None, str | DeferredToolRequests]:
    return Agent(
        FunctionModel(_model),
        toolsets=[deferred_seam_toolset()],
        output_type=[str, DeferredToolRequests],
    )


async def _first(folder: Path) -> None:
    """Run until the deferred call, save the messages and requests, and wait on the ask until killed."""
    paused = await _agent().run("go")
    assert isinstance(paused.output, DeferredToolRequests)
    saving = folder / "run.json.part"
    saving.write_text(
        json.dumps(
            {
                "messages": json.loads(ModelMessagesTypeAdapter.dump_json(paused.all_messages())),
                "requests": json.loads(REQUESTS.dump_json(paused.output)),
            }
        )
    )
    saving.replace(folder / "run.json")
    print("saved", flush=True)
    async with SQLiteStore(folder / "asks.db", poll_interval=0.01) as store:
        service = UserInteractionService()
        service.register_provider(DurableProvider(store, via="agent"))
        await answer_deferred(paused.output, service)  # waits for the human: killed here


async def _second(folder: Path) -> None:
    """Load the run, answer its deferred calls from the store, resume; print what the model read."""
    saved = json.loads((folder / "run.json").read_text())
    messages = ModelMessagesTypeAdapter.validate_python(saved["messages"])
    requests = REQUESTS.validate_python(saved["requests"])
    async with SQLiteStore(folder / "asks.db", poll_interval=0.01) as store:
        service = UserInteractionService()
        service.register_provider(DurableProvider(store, via="agent"))
        results = await answer_deferred(requests, service)
    finished = await _agent().run(message_history=messages, deferred_tool_results=results)
    print(json.dumps({"results": results.calls, "final": finished.output}), flush=True)


def _child(phase: str, folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.test_pydantic_ai_crash", phase, str(folder)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


@contextmanager
def _reaped(process: subprocess.Popen[str]) -> Generator[None]:
    try:
        yield
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def test_a_run_killed_while_asking_resumes_with_the_answer_given_meanwhile(
    tmp_path: Path,
) -> None:
    """SIGKILL at the deferred ask; a UI answers through serve; a new process resumes; asked once.

    The tool_call_id is the askId, so the second process finds the ask the
    first one kept, already answered, and shows it to nobody.
    """
    first = _child("first", tmp_path)
    with _reaped(first):
        assert first.stdout is not None
        assert first.stdout.readline() == "saved\n"

        async def answer_while_down() -> ScriptedProvider:
            async with SQLiteStore(tmp_path / "asks.db", poll_interval=0.01) as store:
                ui = ScriptedProvider()
                relay = asyncio.ensure_future(serve(store, ui, via="desk", principal="ana"))
                shown = await ui.next_ask()  # the child wrote its ask: it waits on it now
                assert shown.request.get("askId") == "call-1"
                first.send_signal(signal.SIGKILL)
                await asyncio.get_running_loop().run_in_executor(None, first.wait)
                assert first.returncode == -signal.SIGKILL
                shown.answer(answer_of(answer_selected("q", "B")))
                async for record in store.watch():
                    if record.ask_id == "call-1" and record.state == "answered":
                        break
                relay.cancel()
                await asyncio.gather(relay, return_exceptions=True)
                return ui

        ui = run(answer_while_down(), bound=60)
    second = _child("second", tmp_path)
    with _reaped(second):
        out, _ = second.communicate(timeout=120)
    assert second.returncode == 0
    (line,) = [json.loads(text) for text in out.splitlines()]
    text = '{"answers":[{"id":"q","selected":["B"]}]}'
    assert line == {"results": {"call-1": text}, "final": json.dumps([text])}
    assert ui.asked == 1

    async def kept() -> list[tuple[str, str, str | None]]:
        async with SQLiteStore(tmp_path / "asks.db") as store:
            return [(r.ask_id, r.state, r.principal) for r in await store.records()]

    assert run(kept()) == [("call-1", "answered", "ana")]


if __name__ == "__main__":
    _phase, _folder = sys.argv[1], Path(sys.argv[2])
    asyncio.run(_first(_folder) if _phase == "first" else _second(_folder))
