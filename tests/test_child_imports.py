"""The harness child serves a subject without the suite's test and validation libraries.

The suite starts a child per harness run (and the project's tests start
hundreds), so ``python -m dsh_user_interaction_conformance.child`` imports
only what serving needs: the front module loads its names on first use, and
the child's own modules import neither Hypothesis, pytest nor jsonschema.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from typing import Any

import pytest

#: What serving a subject never needs.
HEAVY = (
    "hypothesis",
    "pytest",
    "_pytest",
    "jsonschema",
    "dsh_user_interaction_conformance._engine",
    "dsh_user_interaction_conformance._runner",
    "dsh_user_interaction_conformance._harness",
    "dsh_user_interaction_conformance._provider._checks",
    "dsh_user_interaction_conformance._service._checks",
    "dsh_user_interaction_conformance._service._binding",
    "dsh_user_interaction_conformance.strategies",
)
_PRINT_HEAVY = f"print(sorted(set({HEAVY!r}) & set(sys.modules)), file=sys.stderr)"


def _loaded(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; {code}; {_PRINT_HEAVY}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return _listed(out.stderr)


def _listed(stderr: str) -> list[str]:
    """The heavy modules a process printed last on its standard error."""
    loaded: list[str] = ast.literal_eval(stderr.strip().splitlines()[-1])
    return loaded


def test_importing_the_child_loads_no_test_or_validation_library() -> None:
    """Importing the child leaves Hypothesis, pytest, jsonschema and the checks unimported."""
    assert _loaded("import dsh_user_interaction_conformance.child") == []


@pytest.mark.slow
def test_the_front_module_loads_a_name_on_first_use() -> None:
    """Importing the package loads nothing heavy; asking for a check-side name loads it."""
    assert _loaded("import dsh_user_interaction_conformance") == []
    assert _loaded("from dsh_user_interaction_conformance import Subject, reference_subject") == []
    assert "hypothesis" in _loaded("from dsh_user_interaction_conformance import run_suite")


def test_a_child_serves_a_subject_end_to_end_without_them() -> None:
    """A child serves a handshake, an ask and a close, and has imported none of them at exit."""
    code = (
        "import atexit, sys;"
        f"atexit.register(lambda: {_PRINT_HEAVY});"
        "from dsh_user_interaction_conformance.child import main;"
        "main()"
    )
    command = [
        sys.executable,
        "-c",
        code,
        "--provider",
        "dsh_user_interaction_conformance:reference_subject",
    ]
    request = {"questions": [{"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}]}]}
    behaviour = {"kind": "actions", "actions": [{"do": "pick", "labels": ["Yes"]}]}
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None

        def call(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
            assert child.stdin is not None
            assert child.stdout is not None
            for call_id, method, params in calls:
                message = {"type": "call", "id": call_id, "method": method, "params": params}
                child.stdin.write((json.dumps(message) + "\n").encode())
            child.stdin.flush()
            replies: dict[str, Any] = {}
            while len(replies) < len(calls):
                reply = json.loads(child.stdout.readline())
                if reply["type"] != "notify":
                    assert reply["type"] == "return", reply
                    replies[reply["id"]] = reply["value"]
            return replies

        hello = {"protocol": "1.0", "suite": "tests", "spec": "tests", "bound": 1}
        assert call(("s1", "hello", hello))["s1"]["role"] == "provider"
        subject = call(("s2", "new", {}))["s2"]["subject"]
        asked = {"subject": subject, "request": request, "handle": "s9"}
        performed = {
            "subject": subject,
            "request": {"$": "ref", "handle": "s9"},
            "behaviour": behaviour,
        }
        replies = call(("s3", "ask", asked), ("s4", "perform", performed))
        assert replies["s3"] == {"answers": [{"id": "go", "selected": ["Yes"]}]}
        assert call(("s5", "close", {"subject": subject}))["s5"] == {"leftovers": []}
        child.stdin.close()
        assert child.wait(timeout=30) == 0
        assert child.stderr is not None
        assert _listed(child.stderr.read().decode()) == []


@pytest.mark.slow
def test_the_command_line_and_the_plugin_still_load_the_checks() -> None:
    """The suite's command line and its pytest plugin import the checks they run."""
    loaded = _loaded("import dsh_user_interaction_conformance.__main__")
    assert {"hypothesis", "dsh_user_interaction_conformance._engine"} <= set(loaded)
    loaded = _loaded(
        "import dsh_user_interaction_conformance.plugin as plugin;"
        "assert callable(plugin.pytest_addoption) and callable(plugin.pytest_generate_tests)"
    )
    assert {"pytest", "dsh_user_interaction_conformance._runner"} <= set(loaded)
    listing = subprocess.run(
        [sys.executable, "-m", "dsh_user_interaction_conformance", "--list"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert listing.stdout.split()[0].startswith("binding-")
