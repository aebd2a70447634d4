"""The OpenAI Agents SDK's pause across a SIGKILL: the run's JSON and the ask store carry it.

The child processes are this module run as ``python -m tests.test_openai_agents_crash``:
``first`` runs until the interruption, saves ``RunState.to_json()`` and waits on the ask in
the store (where it is killed); ``second`` loads the state, answers, resumes and prints what
the model read.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from agents import Agent, RunConfig, Runner, RunState
from agents.testing import ScriptedModel, assistant_message, function_call

from dsh_user_interaction import (
    ScriptedProvider,
    UserInteractionService,
    answer_of,
    answer_selected,
)
from dsh_user_interaction.durable import DurableProvider, SQLiteStore, serve
from dsh_user_interaction.extra.openai_agents import ApprovalQuestions
from tests.helpers import run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = RunConfig(tracing_disabled=True)
ARGUMENTS = {
    "questions": [{"id": "q", "question": "Ship it?", "options": [{"label": "A"}, {"label": "B"}]}]
}


def _questions(store: SQLiteStore) -> ApprovalQuestions:
    service = UserInteractionService()
    service.register_provider(DurableProvider(store))
    return ApprovalQuestions(service)


async def _first(folder: Path) -> None:
    """Run until the interruption, save the state, and wait on the ask until killed."""
    model = ScriptedModel([[function_call("ask_user_question", ARGUMENTS, call_id="call-1")]])
    async with SQLiteStore(folder / "asks.db", poll_interval=0.01) as store:
        questions = _questions(store)
        agent = Agent(name="release", model=model, tools=questions.tools)
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        saving = folder / "state.json.part"
        saving.write_text(json.dumps(state.to_json()))
        saving.replace(folder / "state.json")
        print("saved", flush=True)
        await questions.answer(state)  # waits for the human: this process is killed here


async def _second(folder: Path) -> None:
    """Load the state, answer from the store, resume; print the decisions and what the model read."""
    model = ScriptedModel([[assistant_message("done")]])
    async with SQLiteStore(folder / "asks.db", poll_interval=0.01) as store:
        questions = _questions(store)
        agent = Agent(name="release", model=model, tools=questions.tools)
        saved = json.loads((folder / "state.json").read_text())
        state = await RunState.from_json(agent, saved)
        decisions = await questions.answer(state)
        result = await Runner.run(agent, state, run_config=OFFLINE)
    last = model.last_call
    assert last is not None
    outputs = [
        item["output"]
        for item in cast("list[dict[str, Any]]", last.input)
        if item.get("type") == "function_call_output"
    ]
    report = {
        "verdicts": [decision.verdict for decision in decisions],
        "outputs": outputs,
        "final": result.final_output,
    }
    print(json.dumps(report), flush=True)


def _child(phase: str, folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.test_openai_agents_crash", phase, str(folder)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
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
    """SIGKILL at the ask; a UI answers through serve; a new process resumes; asked once."""
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
    assert line == {
        "verdicts": ["approved"],
        "outputs": ['{"answers":[{"id":"q","selected":["B"]}]}'],
        "final": "done",
    }
    assert ui.asked == 1

    async def kept() -> list[tuple[str, str, str | None]]:
        async with SQLiteStore(tmp_path / "asks.db") as store:
            return [(r.ask_id, r.state, r.principal) for r in await store.records()]

    assert run(kept()) == [("call-1", "answered", "ana")]


if __name__ == "__main__":
    _phase, _folder = sys.argv[1], Path(sys.argv[2])
    asyncio.run(_first(_folder) if _phase == "first" else _second(_folder))
