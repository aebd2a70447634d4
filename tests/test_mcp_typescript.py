"""The MCP bridge against the official TypeScript SDK, both ways, over stdio (slow tier).

``tests/typescript_mcp/`` holds the SDK, pinned in its ``package.json`` and
lock file and installed there with ``npm ci`` on first use (``.ci/run``
has Node.js 20). Its client (``client.mjs``) calls ``ask_user_question`` on
the project's stdio server, answering each form as a scenario says: a
choice, two picks, text of its own, a decline, a cancel. Its server
(``server.mjs``) elicits a form with a titled single-select, a titled
multi-select and a text field, which this package's client answers through
a provider. SDK 1.32.2 speaks revision 2025-11-25 at the newest, with no
2026-07-28, so both ways run on 2025-11-25. In CI (``CI`` set) a failed
install fails the tests; elsewhere it skips them, with npm's output.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
)
from dsh_user_interaction.extra.mcp import ElicitationCancelled, elicitation_callback

from .helpers import run

pytestmark = pytest.mark.slow

_HERE = Path(__file__).parent / "typescript_mcp"
_SDK = "1.32.2"
#: Seconds npm may take to install the SDK.
_INSTALL_SECONDS = 300


@functools.cache
def installed_sdk() -> Path:
    """The SDK's folder, installed from its lock file once; skips, or fails in CI, without it.

    One test process at a time: two ``npm ci`` in one folder remove each
    other's files (the workers of ``-n 4`` did, on the first run of a clone).
    """
    import fcntl  # the lock is POSIX's; the tests run on Linux

    node, npm = shutil.which("node"), shutil.which("npm")
    marker = _HERE / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if node is None or npm is None:
        _unavailable("Node.js and npm are needed for the TypeScript SDK's tests")
    with (_HERE / ".npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            done = None
        else:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=_HERE,
                capture_output=True,
                text=True,
                timeout=_INSTALL_SECONDS,
                check=False,
            )
    if done is not None and done.returncode != 0:
        _unavailable(f"npm ci failed:\n{done.stdout}\n{done.stderr}")
    assert json.loads(marker.read_text(encoding="utf-8"))["version"] == _SDK
    return _HERE


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@functools.cache
def _client_report() -> dict[str, Any]:
    """What the TypeScript client received, sent and got back, per scenario."""
    folder = installed_sdk()
    server = {
        "command": sys.executable,
        "args": [str(Path(__file__).with_name("mcp_stdio_server.py"))],
        "env": {"PYTHONPATH": os.pathsep.join(sys.path), "PATH": os.environ.get("PATH", "")},
    }
    done = subprocess.run(
        ["node", str(folder / "client.mjs"), json.dumps(server)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _answers(scenario: str) -> object:
    result = _client_report()[scenario]["result"]
    assert result["isError"] is False, result
    [text] = result["text"]
    return json.loads(text)["answers"]


def test_the_typescript_client_answers_a_choice_picks_and_text_of_its_own() -> None:
    """Its form has our fields; the choice, the picks (in option order) and the text come back."""
    report = _client_report()
    assert report["protocolVersion"] == "2025-11-25"
    assert report["single"]["fields"] == ["q1", "q1_other", "q2", "q2_other", "q3"]
    assert _answers("single") == [
        {"id": "mode", "selected": ["Safe"]},
        {"id": "targets", "selected": []},
        {"id": "branch", "selected": []},
    ]
    assert _answers("multi") == [
        {"id": "mode", "selected": []},
        {"id": "targets", "selected": ["tests", "docs"]},
        {"id": "branch", "selected": []},
    ]
    assert _answers("custom") == [
        {"id": "mode", "selected": [], "custom": "neither"},
        {"id": "targets", "selected": []},
        {"id": "branch", "selected": [], "custom": "main"},
    ]


def test_the_typescript_clients_decline_and_cancel_reach_the_agent_as_a_dismissal() -> None:
    """Both end the ask with ASK_CANCELLED, which the model-facing tool words as the original."""
    report = _client_report()
    for scenario in ("decline", "cancel"):
        assert report[scenario]["result"] == {
            "text": ["Error: the user cancelled ask_user_question"],
            "isError": True,
        }


async def _ask_the_typescript_server(
    respond: Any,
) -> tuple[str, list[AskUserQuestionRequest]]:
    folder = installed_sdk()
    asked: list[AskUserQuestionRequest] = []

    def human(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        asked.append(request)
        answer: AskUserQuestionAnswer = respond(request)
        return answer

    callback = elicitation_callback(ScriptedProvider(respond=human))
    server = StdioServerParameters(command="node", args=[str(folder / "server.mjs")])
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write, elicitation_callback=callback) as session,
    ):
        await session.initialize()
        result = await session.call_tool("deploy", {})
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text, asked


def test_our_client_answers_the_typescript_servers_form_through_a_provider() -> None:
    """The form becomes questions (titles as labels); the answer goes back as the schema's values."""

    def picks(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {
            "answers": [
                {"id": "mode", "selected": ["Safe"]},
                {"id": "targets", "selected": ["Docs", "Tests"]},
                {"id": "note", "selected": [], "custom": "after lunch"},
            ]
        }

    text, asked = run(_ask_the_typescript_server(picks), bound=60)
    assert json.loads(text) == {
        "action": "accept",
        "content": {"mode": "safe", "targets": ["docs", "tests"], "note": "after lunch"},
    }
    (request,) = asked
    questions = request["questions"]
    assert [q["id"] for q in questions] == ["mode", "targets", "note"]
    assert [o["label"] for o in questions[0].get("options", ())] == ["Fast", "Safe"]
    assert questions[1].get("multiSelect") is True
    assert "options" not in questions[2]


@pytest.mark.parametrize(
    ("ending", "action"),
    [
        (UserInteractionError.of(ErrorCode.ASK_CANCELLED), "cancel"),
        (ElicitationCancelled.of_action("decline"), "decline"),
    ],
)
def test_our_clients_dismissal_and_refusal_reach_the_typescript_server(
    ending: UserInteractionError, action: str
) -> None:
    """A dismissal is a cancel, a refusal a decline, as the TypeScript server reads them."""

    def ends(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise ending

    text, _ = run(_ask_the_typescript_server(ends), bound=60)
    assert json.loads(text) == {"action": action}
