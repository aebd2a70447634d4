"""A child that breaks the protocol in one way: it runs a real child and rewrites its lines.

``python -m tests.harness_mitm MODE -- CMD ...`` starts ``CMD`` and passes
every line through, except what *MODE* changes. The harness tests use it to
prove that each kind of broken child is reported, and that none hangs the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

MODES = (
    "unhashable-id",
    "deep",
    "drop-ping",
    "drop-close",
    "request-as-ref",
    "params-list",
    "cancelled-as-throw",
    "speaks-1.1",
)


def _from_child(mode: str, message: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """What reaches the suite for one line of the child."""
    if mode == "unhashable-id" and message.get("type") == "return" and state.get("asked"):
        return [json.dumps({**message, "id": [1]})]
    if mode == "deep" and message.get("type") == "return" and state.get("asked"):
        deep = "[" * 100_000 + "]" * 100_000
        return [json.dumps(message)[:-1] + ',"value2":' + deep + "}"]
    if mode == "request-as-ref" and message.get("type") == "return" and "request" in message:
        handle = state.get("handle", "s1")
        return [json.dumps({**message, "request": {"$": "ref", "handle": handle}})]
    if mode == "params-list" and message.get("type") == "return" and state.get("asked"):
        notify = {"type": "notify", "method": "listeners", "params": [1, 2]}
        return [json.dumps(notify), json.dumps(message)]
    if mode == "cancelled-as-throw" and message.get("type") == "cancelled":
        # What it decodes to is right (a cancellation); the reply's type is not.
        error = {
            "is_seam_error": False,
            "code": None,
            "message": "",
            "name": "CancelledError",
            "cancellation": True,
        }
        return [json.dumps({"type": "throw", "id": message["id"], "error": error})]
    if mode == "speaks-1.1" and type(message.get("value")) is dict and "role" in message["value"]:
        return [json.dumps({**message, "value": {**message["value"], "protocol": "1.1"}})]
    return [json.dumps(message)]


def main() -> None:
    mode = sys.argv[1]
    command = sys.argv[sys.argv.index("--") + 1 :]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None
    assert child.stdout is not None
    state: dict[str, Any] = {}
    pending: set[str] = set()

    def forward_out() -> None:
        assert child.stdout is not None
        for raw in child.stdout:
            message = json.loads(raw)
            if mode in {"drop-ping", "drop-close"} and message.get("id") in pending:
                continue
            for line in _from_child(mode, message, state):
                sys.stdout.write(line + "\n")
            sys.stdout.flush()

    threading.Thread(target=forward_out, daemon=True).start()
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method = message.get("method")
        if method == "ask":
            state["asked"] = True
            state["handle"] = message["params"].get("handle", "s1")
        if (mode, method) in {("drop-ping", "ping"), ("drop-close", "close")}:
            pending.add(message["id"])
        if (mode, method) == ("speaks-1.1", "release"):
            # A 1.1 child knows no such method: it is a protocol error.
            sys.stdout.write("release sent to a child that speaks 1.1\n")
            sys.stdout.flush()
        child.stdin.write(raw)
        child.stdin.flush()
    child.stdin.close()
    child.wait()


if __name__ == "__main__":
    main()
