"""The bridge's server side against fastmcp's client, installed from the package index.

fastmcp's client pulls in versions of pydantic and the rest that differ from
the project's, so it runs in a virtual environment of its own, made once and
kept in ``.venvs/`` (ignored by git), as a subprocess:
``tests/fastmcp_client.py`` calls ``ask_user_question`` on the project's stdio
server (``tests/mcp_stdio_server.py``), so the real fastmcp client talks to
the real server over a pipe. In CI (``CI`` set) a failed install fails the
tests; elsewhere it skips them, with the installer's output as the reason.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: The fastmcp release the tests run; its environment is kept per version.
FASTMCP = "4.1.6"

_TESTS = Path(__file__).parent
_VENV = _TESTS.parent / ".venvs" / f"fastmcp-{FASTMCP}"
#: Written last, once fastmcp is installed: an environment without it is made again.
_STAMP = _VENV / "installed"
_INSTALL_SECONDS = 600
_RUN_SECONDS = 120


def _python() -> Path:
    return _VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _install() -> str | None:
    """Make the environment and install fastmcp into it; the installer's output if it failed."""
    shutil.rmtree(_VENV, ignore_errors=True)
    spec = f"fastmcp=={FASTMCP}"
    uv = [sys.executable, "-m", "uv"]
    has_uv = subprocess.run([*uv, "--version"], capture_output=True, check=False).returncode == 0
    if has_uv:
        steps = [
            [*uv, "venv", "--quiet", "--python", sys.executable, str(_VENV)],
            [*uv, "pip", "install", "--quiet", "--python", str(_python()), spec],
        ]
    else:
        steps = [
            [sys.executable, "-m", "venv", str(_VENV)],
            [str(_python()), "-m", "pip", "install", "--quiet", spec],
        ]
    for step in steps:
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, timeout=_INSTALL_SECONDS, check=False
            )
        except subprocess.TimeoutExpired:
            return f"{' '.join(step[-3:])} took more than {_INSTALL_SECONDS} s"
        if done.returncode:
            return f"{' '.join(step[-3:])} failed:\n{done.stdout}{done.stderr}"
    _STAMP.write_text(f"{spec}\n")
    return None


def _fastmcp_python() -> Path:
    """The Python of the environment that holds fastmcp, made on first use (one test at a time)."""
    import fcntl  # the lock is POSIX's; the tests run on Linux

    _VENV.parent.mkdir(exist_ok=True)
    with (_VENV.parent / f"fastmcp-{FASTMCP}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        failure = None if _STAMP.exists() else _install()
    if failure is not None:
        reason = f"fastmcp {FASTMCP} could not be installed from the package index: {failure}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return _python()


@functools.cache
def _report() -> dict[str, Any]:
    """What fastmcp's client received, sent and got back, per scenario (run once per process)."""
    server = {
        "command": sys.executable,
        "args": [str(_TESTS / "mcp_stdio_server.py")],
        "env": {"PYTHONPATH": os.pathsep.join(sys.path)},
    }
    # -I: the client's environment sees nothing of the project's, PYTHONPATH included.
    done = subprocess.run(
        [str(_fastmcp_python()), "-I", str(_TESTS / "fastmcp_client.py"), json.dumps(server)],
        capture_output=True,
        text=True,
        timeout=_RUN_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["fastmcp"] == FASTMCP
    return report


@pytest.mark.slow
def test_fastmcp_leaves_unset_fields_null_and_the_agent_gets_the_answer() -> None:
    """The fields a fastmcp response type leaves unset go out as null: skips; the rest is exact.

    The handler sets the choice and two picks (in the client's order); fastmcp sends
    ``null`` for the two custom-text fields and the text question. The agent gets the
    choice, the picks in option order, and a skip.
    """
    unset = _report()["unset"]
    assert unset["fields"] == ["q1", "q1_other", "q2", "q2_other", "q3"]
    assert unset["sent"] == {
        "q1": "Safe", "q1_other": None, "q2": ["docs", "tests"], "q2_other": None, "q3": None,
    }  # fmt: skip
    assert unset["result"]["is_error"] is False
    [text] = unset["result"]["text"]
    assert json.loads(text) == {
        "answers": [
            {"id": "mode", "selected": ["Safe"]},
            {"id": "targets", "selected": ["tests", "docs"]},
            {"id": "branch", "selected": []},
        ]
    }


@pytest.mark.slow
def test_what_fastmcp_does_not_check_the_bridge_does() -> None:
    """A label fastmcp's response type never checked reaches the agent as BAD_ANSWER's text."""
    unchecked = _report()["unchecked"]
    assert unchecked["sent"]["q1"] == "Slow"
    assert unchecked["result"] == {
        "text": ['Error: question "mode" (field q1): "Slow" is not one of its options'],
        "is_error": True,
    }


@pytest.mark.slow
def test_a_failing_fastmcp_handler_and_a_decline_reach_the_agent_as_errors() -> None:
    """A handler that raises is a JSON-RPC error, whose text the agent gets; a decline is cancelled."""
    report = _report()
    assert report["raises"]["result"] == {
        "text": ["Error: the form could not be shown"],
        "is_error": True,
    }
    assert report["declines"]["result"] == {
        "text": ["Error: the user cancelled ask_user_question"],
        "is_error": True,
    }


@pytest.mark.slow
def test_fastmcps_default_mode_answers_through_input_required_rounds() -> None:
    """In its default mode fastmcp's client connects at 2026-07-28, and the ask still works.

    The server runs the tool's body with ``run_tool``: the call ends with an
    input request, fastmcp's handler answers it with its typed reply, and
    the retried call returns the agent's answer, the same as over a legacy
    connection.
    """
    report = _report()
    auto = report["auto"]
    assert auto["fields"] == report["unset"]["fields"]
    assert auto["sent"] == report["unset"]["sent"]
    assert auto["result"] == report["unset"]["result"]
    assert auto["result"]["is_error"] is False
