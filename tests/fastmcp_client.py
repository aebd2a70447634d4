"""fastmcp's client, calling ``ask_user_question`` on the project's stdio server.

Run by ``tests/test_mcp_fastmcp.py`` with the Python of a virtual environment
that holds fastmcp and nothing of the project's: fastmcp pulls in versions of
pydantic and the rest that differ from the project's own, so it never shares
an environment with them. It imports fastmcp only when run, so collecting
this file in the project's environment needs nothing of it.

Usage: ``python -I fastmcp_client.py SERVER``, where SERVER is the JSON of
``{"command", "args", "env"}``. It calls the tool once for each scenario of
:data:`SCENARIOS` over one connection made with the initialize handshake
(``mode="legacy"``), then once for each over a connection in fastmcp's
default mode (revision 2026-07-28), and prints one JSON object: per
scenario and mode, what the elicitation handler received and sent, and the
tool's result.

``python -I fastmcp_client.py SERVER first-example`` instead calls the tool
``deploy`` of the MCP page's first example (``tests/mcp_first_example.py``)
once, in fastmcp's default mode, picking "Safe (Recommended)" with a typed
reply, and prints the negotiated revision and the tool's result.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any

#: The batch every scenario asks: a single-select, a multi-select, and a text question.
ARGUMENTS: dict[str, Any] = {
    "questions": [
        {"id": "mode", "question": "Which mode?", "header": "Mode",
         "options": [{"label": "Fast"}, {"label": "Safe"}]},
        {"id": "targets", "question": "Which targets?", "multi_select": True,
         "options": [{"label": "tests"}, {"label": "docs"}]},
        {"id": "branch", "question": "Branch name?"},
    ]
}  # fmt: skip

#: How the handler answers in each scenario: ``unset`` sets some fields of fastmcp's
#: typed reply and leaves the rest unset; ``skips-a-choice`` leaves a single-select
#: unset too; ``drops-nulls`` does the same and drops the unset fields from a plain
#: dict, the workaround for fastmcp releases that validate their own reply.
SCENARIOS = ("unset", "skips-a-choice", "drops-nulls", "unchecked", "raises", "declines")


async def first_example(server: dict[str, Any]) -> dict[str, Any]:
    """Call the first example's ``deploy`` in fastmcp's default mode; what it negotiated and got."""
    fastmcp: Any = importlib.import_module("fastmcp")
    transports: Any = importlib.import_module("fastmcp.client.transports")

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return response_type(q1="Safe (Recommended)")

    transport = transports.StdioTransport(
        command=server["command"], args=server["args"], env=server["env"]
    )
    async with fastmcp.Client(transport, elicitation_handler=handler) as client:
        result = await client.call_tool("deploy", {}, raise_on_error=False)
        version = client.session.protocol_version
    return {
        "fastmcp": fastmcp.__version__,
        "protocol_version": str(version),
        "text": [part.text for part in result.content],
        "is_error": result.is_error,
    }


async def main(server: dict[str, Any]) -> dict[str, Any]:
    """Run every scenario; return what each handler received and sent, and each tool result."""
    fastmcp: Any = importlib.import_module("fastmcp")
    transports: Any = importlib.import_module("fastmcp.client.transports")
    elicitation: Any = importlib.import_module("fastmcp.client.elicitation")
    to_jsonable: Any = importlib.import_module("pydantic_core").to_jsonable_python
    report: dict[str, Any] = {"fastmcp": fastmcp.__version__}
    mode, scenario = "", ""

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        seen = report[mode][scenario]
        seen["message"] = message
        seen["fields"] = list(params.requested_schema["properties"])
        if scenario == "unset":
            # As a user of fastmcp's response type writes it: the fields left out are unset.
            answer = response_type(q1="Safe", q2=["docs", "tests"])
        elif scenario == "skips-a-choice":
            answer = response_type(q2=["docs"])
        elif scenario == "drops-nulls":
            typed = to_jsonable(response_type(q2=["docs"]))
            answer = {name: value for name, value in typed.items() if value is not None}
        elif scenario == "unchecked":
            answer = response_type(q1="Slow")
        elif scenario == "raises":
            msg = "the form could not be shown"
            raise RuntimeError(msg)
        else:
            return elicitation.ElicitResult(action="decline")
        seen["sent"] = to_jsonable(answer)
        return answer

    async def call(client: Any) -> dict[str, Any]:
        result = await client.call_tool("ask_user_question", ARGUMENTS, raise_on_error=False)
        return {"text": [part.text for part in result.content], "is_error": result.is_error}

    def transport() -> Any:
        return transports.StdioTransport(
            command=server["command"], args=server["args"], env=server["env"]
        )

    for mode in ("legacy", "auto"):
        report[mode] = {}
        async with fastmcp.Client(transport(), elicitation_handler=handler, mode=mode) as client:
            report[mode]["protocol_version"] = str(client.session.protocol_version)
            for scenario in SCENARIOS:  # the handler reads it, and the mode
                report[mode][scenario] = {}
                try:
                    result = await call(client)
                except Exception as error:  # noqa: BLE001 - the client's own failure, reported
                    result = {"raised": f"{type(error).__name__}: {error}"}
                report[mode][scenario]["result"] = result
    return report


if __name__ == "__main__":
    target = json.loads(sys.argv[1])
    run = first_example if sys.argv[2:] == ["first-example"] else main
    print(json.dumps(asyncio.run(run(target))))
