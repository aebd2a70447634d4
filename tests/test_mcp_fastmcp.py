"""The bridge's server side against fastmcp's client, installed from the package index.

Two releases: the pinned one, and the newest (which validates its own
replies against the form's schema before sending them). fastmcp's client
pulls in versions of pydantic and the rest that differ from the project's,
so each runs in a virtual environment of its own, made once per release and
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

#: The fastmcp release the tests pin, and the newest one they also run.
FASTMCP = "4.1.6"
NEWEST_FASTMCP = "4.2.3"
VERSIONS = (FASTMCP, NEWEST_FASTMCP)

_TESTS = Path(__file__).parent
_INSTALL_SECONDS = 600
_RUN_SECONDS = 120


def _venv(version: str) -> Path:
    return _TESTS.parent / ".venvs" / f"fastmcp-{version}"


def _python(version: str) -> Path:
    return _venv(version) / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _install(version: str) -> str | None:
    """Make the environment and install fastmcp into it; the installer's output if it failed."""
    venv = _venv(version)
    shutil.rmtree(venv, ignore_errors=True)
    spec = f"fastmcp=={version}"
    uv = [sys.executable, "-m", "uv"]
    has_uv = subprocess.run([*uv, "--version"], capture_output=True, check=False).returncode == 0
    if has_uv:
        steps = [
            [*uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
            [*uv, "pip", "install", "--quiet", "--python", str(_python(version)), spec],
        ]
    else:
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(_python(version)), "-m", "pip", "install", "--quiet", spec],
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
    # Written last, once fastmcp is installed: an environment without it is made again.
    (venv / "installed").write_text(f"{spec}\n")
    return None


def fastmcp_python(version: str = FASTMCP) -> Path:
    """The Python of the environment that holds fastmcp *version*, made on first use.

    One test at a time makes it; skips, or fails in CI, when it cannot be installed.
    """
    import fcntl  # the lock is POSIX's; the tests run on Linux

    venv = _venv(version)
    venv.parent.mkdir(exist_ok=True)
    with (venv.parent / f"fastmcp-{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        failure = None if (venv / "installed").exists() else _install(version)
    if failure is not None:
        reason = f"fastmcp {version} could not be installed from the package index: {failure}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return _python(version)


@functools.cache
def _report(version: str) -> dict[str, Any]:
    """What fastmcp's client received, sent and got back, per mode and scenario (once a version)."""
    server = {
        "command": sys.executable,
        "args": [str(_TESTS / "mcp_stdio_server.py")],
        "env": {"PYTHONPATH": os.pathsep.join(sys.path)},
    }
    # -I: the client's environment sees nothing of the project's, PYTHONPATH included.
    done = subprocess.run(
        [str(fastmcp_python(version)), "-I", str(_TESTS / "fastmcp_client.py"), json.dumps(server)],
        capture_output=True,
        text=True,
        timeout=_RUN_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["fastmcp"] == version
    assert report["legacy"]["protocol_version"] == "2025-11-25"
    assert report["auto"]["protocol_version"] == "2026-07-28"
    return report


def _answers(result: dict[str, Any]) -> object:
    assert result.get("is_error") is False, result
    [text] = result["text"]
    return json.loads(text)["answers"]


MODES = ("legacy", "auto")


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_typed_reply_with_fields_left_unset_gets_the_answer(version: str, mode: str) -> None:
    """The handler sets the choice and two picks of fastmcp's typed reply, and leaves the rest.

    The form gives each text field the default ``""`` and each multi-select
    ``[]``, so fastmcp fills the fields left unset with those, not with the
    ``null`` that the newest fastmcp's own validation refuses. The agent
    gets the choice, the picks in option order, and a skip for the text
    question, on both revisions and with both releases.
    """
    unset = _report(version)[mode]["unset"]
    assert unset["fields"] == ["q1", "q1_other", "q2", "q2_other", "q3"]
    assert unset["sent"] == {
        "q1": "Safe", "q1_other": "", "q2": ["docs", "tests"], "q2_other": "", "q3": "",
    }  # fmt: skip
    assert _answers(unset["result"]) == [
        {"id": "mode", "selected": ["Safe"]},
        {"id": "targets", "selected": ["tests", "docs"]},
        {"id": "branch", "selected": []},
    ]


SKIPPED_CHOICE: list[dict[str, Any]] = [
    {"id": "mode", "selected": []},
    {"id": "targets", "selected": ["docs"]},
    {"id": "branch", "selected": []},
]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_single_select_left_unset_needs_the_null_dropped_on_the_newest(
    version: str, mode: str
) -> None:
    """A typed reply that leaves a single-select unset sends ``null`` for it.

    The pinned release sends it, and the bridge reads it as a skip. The
    newest refuses its own reply (``None is not of type 'string'``) before
    sending it: a single-select can have no default (any would preselect an
    option), so the server cannot help. Dropping the unset fields from a
    plain dict, the workaround on the MCP page, works with both.
    """
    report = _report(version)[mode]
    skipped = report["skips-a-choice"]
    assert skipped["sent"]["q1"] is None
    if version == FASTMCP:
        assert _answers(skipped["result"]) == SKIPPED_CHOICE
    else:
        refusal = skipped["result"].get("raised") or skipped["result"]["text"][0]
        assert "None is not of type 'string'" in refusal
    dropped = report["drops-nulls"]
    assert "q1" not in dropped["sent"]
    assert _answers(dropped["result"]) == SKIPPED_CHOICE


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_a_label_that_is_no_option_is_refused_by_the_bridge_or_by_fastmcp(version: str) -> None:
    """The pinned release sends any label; the bridge refuses it as BAD_ANSWER's text.

    The newest validates its reply itself and refuses to send it: the
    elicitation fails with its own message, which the agent gets over a
    legacy connection, and which fails the client's call on 2026-07-28.
    """
    report = _report(version)
    for mode in MODES:
        unchecked = report[mode]["unchecked"]
        assert unchecked["sent"]["q1"] == "Slow"
        if version == FASTMCP:
            assert unchecked["result"] == {
                "text": ['Error: question "mode" (field q1): "Slow" is not one of its options'],
                "is_error": True,
            }
        elif mode == "legacy":
            assert unchecked["result"]["is_error"] is True
            assert (
                "'Slow' is not valid under any of the given schemas"
                in (unchecked["result"]["text"][0])
            )
        else:
            assert (
                "'Slow' is not valid under any of the given schemas"
                in (unchecked["result"]["raised"])
            )


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_a_failing_fastmcp_handler_and_a_decline_reach_the_agent_as_errors(version: str) -> None:
    """A handler that raises is a JSON-RPC error, whose text the agent gets; a decline is cancelled.

    On 2026-07-28 the handler's error ends the client's own call instead:
    there is no request to answer with an error, only a retry not sent.
    """
    report = _report(version)
    assert report["legacy"]["raises"]["result"] == {
        "text": ["Error: the form could not be shown"],
        "is_error": True,
    }
    assert report["auto"]["raises"]["result"] == {"raised": "MCPError: the form could not be shown"}
    for mode in MODES:
        assert report[mode]["declines"]["result"] == {
            "text": ["Error: the user cancelled ask_user_question"],
            "is_error": True,
        }
