"""A Claude run stopped at a question, its process SIGKILLed, resumed by another: shown once."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, query

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionService,
)
from dsh_user_interaction.durable import DurableProvider, SQLiteStore, serve
from dsh_user_interaction.extra.claude import can_use_tool_for
from dsh_user_interaction.extra.claude.testing import PermissionCall, ScriptedCli
from tests.helpers import run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

QUESTION: dict[str, Any] = {
    "questions": [
        {
            "question": "Ship it?",
            "header": "Release",
            "options": [{"label": "Ship"}, {"label": "Wait"}],
            "multiSelect": False,
        }
    ]
}

#: The first process: its run stops at the question, it stores the ask, says so, and waits.
FIRST = """
import asyncio, json, sys
from claude_agent_sdk import ClaudeAgentOptions, query
from dsh_user_interaction import UserInteractionService
from dsh_user_interaction.durable import DurableProvider, SQLiteStore
from dsh_user_interaction.extra.claude import answer_deferred, defer_hooks
from dsh_user_interaction.extra.claude.testing import PermissionCall, ScriptedCli

async def main(path, question):
    cli = ScriptedCli([PermissionCall("AskUserQuestion", question, "toolu_kill")])
    options = ClaudeAgentOptions(hooks=defer_hooks())
    messages = [m async for m in query(prompt="go", options=options, transport=cli)]
    deferred = messages[-1].deferred_tool_use
    async with SQLiteStore(path) as store:
        service = UserInteractionService()
        service.register_provider(DurableProvider(store))
        asking = asyncio.ensure_future(answer_deferred(service, deferred))
        while not await store.pending():
            await asyncio.sleep(0.01)
        print(deferred.id, flush=True)
        await asking

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""


async def killed_while_waiting(path: Path) -> str:
    """Start the first process, wait for its ask to be stored, SIGKILL it; the ask's id."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FIRST,
        str(path),
        json.dumps(QUESTION),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = await child.stdout.readline()
    finally:
        if child.returncode is None:
            child.send_signal(signal.SIGKILL)
        await child.wait()
    assert child.returncode == -signal.SIGKILL
    return line.decode().strip()


async def resumed(path: Path) -> tuple[list[dict[str, Any] | None], int, int]:
    """A UI serving the store answers; the resumed session's callback gets that answer.

    Returns the SDK's replies, how many asks the UI was shown, and how many the store holds.
    """
    shown: list[AskUserQuestionRequest[Any]] = []

    def human(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        shown.append(request)
        return {"answers": [{"id": "q1", "selected": ["Ship"]}]}

    async with SQLiteStore(path, poll_interval=0.01) as store:
        relay = asyncio.ensure_future(serve(store, ScriptedProvider(respond=human), via="desk"))
        service = UserInteractionService()
        service.register_provider(DurableProvider(store))
        cli = ScriptedCli([PermissionCall("AskUserQuestion", QUESTION, "toolu_kill")])
        options = ClaudeAgentOptions(can_use_tool=can_use_tool_for(service))
        _ = [message async for message in query(prompt="go", options=options, transport=cli)]
        relay.cancel()
        await asyncio.gather(relay, return_exceptions=True)
        return [reply.response for reply in cli.replies], len(shown), len(await store.records())


def test_a_sigkilled_run_resumes_with_the_answer_given_meanwhile(tmp_path: Path) -> None:
    """SIGKILL while the deferred ask waits; a UI answers; the resumed run is allowed with it.

    The ask is the tool-use id's: one record, shown to the UI once, never asked again.
    """
    path = tmp_path / "asks.db"
    ask_id = run(killed_while_waiting(path), bound=30)
    assert ask_id == "toolu_kill"
    replies, shown, records = run(resumed(path))
    assert replies == [
        {"behavior": "allow", "updatedInput": {**QUESTION, "answers": {"Ship it?": "Ship"}}}
    ]
    assert (shown, records) == (1, 1)


def test_the_subpackage_without_its_extra_names_the_extra() -> None:
    """Without the Claude Agent SDK, one ImportError names the pip command."""
    prelude = "import sys; sys.modules['claude_agent_sdk'] = None; "
    out = subprocess.run(
        [sys.executable, "-c", prelude + "import dsh_user_interaction.extra.claude"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert (
        "ImportError: dsh_user_interaction.extra.claude needs the Claude Agent SDK:"
        " pip install 'dsh-user-interaction[claude]'"
    ) in out.stderr
