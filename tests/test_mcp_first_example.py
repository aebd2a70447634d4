"""The MCP page's first example works with every client in its default mode (slow tier but one).

``tests/mcp_first_example.py`` holds the example's server, line for line as
the page shows it (the first test checks that), and serves it over stdio.
Each client here connects as a new user's would, in its default mode: the
Python SDK's ``Client`` and fastmcp's ``Client`` negotiate revision
2026-07-28 (input-required rounds through ``run_tool``), the TypeScript
SDK's client 2025-11-25 (one ``elicitation/create`` request). Each gets the
same text.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest, ScriptedProvider
from dsh_user_interaction.extra.mcp import elicitation_callback

from .helpers import run
from .test_mcp_fastmcp import VERSIONS, fastmcp_python
from .test_mcp_typescript import installed_sdk

ROOT = Path(__file__).resolve().parents[1]
SERVER = Path(__file__).with_name("mcp_first_example.py")
DEPLOYING = "deploying: {'id': 'mode', 'selected': ['Safe (Recommended)']}"


def _server() -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": {"PYTHONPATH": os.pathsep.join(sys.path), "PATH": os.environ.get("PATH", "")},
    }


def test_the_served_example_is_the_pages_first_example_line_for_line() -> None:
    """The server this file serves is the first example's, as the page shows it."""
    served = SERVER.read_text(encoding="utf-8")
    start = served.index("# -- the docs' first example: the server --\n")
    end = served.index("# -- end of the docs' first example's server --")
    lines = [line for line in served[start:end].splitlines()[1:] if line]
    page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    first = re.search(r"```python\n(.*?)```", page, re.S)
    assert first is not None
    shown = [line[4:] for line in first[1].splitlines() if line.startswith((">>> ", "... "))]
    shown = [line.rstrip() for line in shown]
    begin = shown.index(lines[0])
    assert shown[begin : begin + len(lines)] == lines
    assert "run_tool(ctx, body)" in "\n".join(lines)


def _safe(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    return {
        "answers": [
            {"id": "q1", "selected": ["Safe (Recommended)"]},
            {"id": "q1_other", "selected": []},
        ]
    }


@pytest.mark.slow
def test_the_python_sdk_client_in_its_default_mode() -> None:
    """The SDK's ``Client`` with no mode: 2026-07-28 and rounds; the example's text."""

    async def main() -> tuple[str | None, types.CallToolResult]:
        parameters = StdioServerParameters(**_server())
        callback = elicitation_callback(ScriptedProvider(respond=_safe))
        async with Client(parameters, elicitation_callback=callback) as client:
            return client.protocol_version, await client.call_tool("deploy", {})

    version, result = run(main(), bound=60)
    assert version == "2026-07-28"
    assert not result.is_error
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    assert content.text == DEPLOYING


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_fastmcps_client_in_its_default_mode(version: str) -> None:
    """The ``Client`` of fastmcp with no mode, its handler giving a typed reply: the same text."""
    done = subprocess.run(
        [
            str(fastmcp_python(version)),
            "-I",
            str(Path(__file__).with_name("fastmcp_client.py")),
            json.dumps(_server()),
            "first-example",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["fastmcp"] == version
    assert report["protocol_version"] == "2026-07-28"
    assert report["text"] == [DEPLOYING]
    assert report["is_error"] is False


@pytest.mark.slow
def test_the_typescript_sdk_client_in_its_default_mode() -> None:
    """The TypeScript SDK's client speaks 2025-11-25 at the newest: one request; the same text."""
    folder = installed_sdk()
    done = subprocess.run(
        ["node", str(folder / "first_example.mjs"), json.dumps(_server())],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["protocolVersion"] == "2025-11-25"
    assert report["fields"] == ["q1", "q1_other"]
    assert report["result"] == {"text": [DEPLOYING], "isError": False}
