"""A scripted Claude Code: the CLI's side of the SDK's control protocol, played from a script.

Design notes:

* The SDK talks to Claude Code through a ``Transport``: JSON lines both ways.
  ``ScriptedCli`` is one, so ``query(prompt=..., options=...,
  transport=ScriptedCli(...))`` runs the SDK's own code (initialize, hooks,
  ``can_use_tool``, the in-process MCP bridge, message parsing) offline,
  with no model and no subprocess.
* The script is the model's turn: a list of tool calls. For each call it
  sends what Claude Code sends (a ``PreToolUse`` hook callback when the SDK
  registered one whose matcher applies, then, unless a hook decided, a
  ``can_use_tool`` request; or an ``mcp_message``
  ``tools/call`` with the tool use named in ``_meta``), waits for the SDK's
  reply, keeps it in ``ScriptedCli.replies``, and reports the tool
  result as a user message, as the CLI would. A deferral stops the run with
  the call as the result's ``deferred_tool_use``.
* Every wait is on the SDK's reply: nothing depends on timing.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from claude_agent_sdk import Transport
from typing_extensions import override

from ._server import TOOL_USE_ID_META, tool_name

__all__ = ["McpCall", "PermissionCall", "Reply", "ScriptedCli"]

_END: Final = object()
_MCP_VERSION: Final = "2025-06-18"


def _decision(hook_output: dict[str, Any] | None) -> object:
    """The ``permissionDecision`` of a ``PreToolUse`` hook's output, if it made one."""
    specific = cast("dict[str, object]", (hook_output or {}).get("hookSpecificOutput") or {})
    return specific.get("permissionDecision")


def _matches(pattern: str | None, tool: str) -> bool:
    """Whether a hook matcher applies to *tool*: none, ``""`` and ``"*"`` match every tool."""
    return pattern in (None, "", "*") or re.fullmatch(pattern, tool) is not None


@dataclass(frozen=True, slots=True)
class PermissionCall:
    """A call of a built-in tool (``AskUserQuestion``, say) that asks for permission."""

    #: The tool's name, as Claude Code names it.
    tool_name: str
    #: The input the model sent.
    input: dict[str, Any]
    #: The tool use's id.
    tool_use_id: str
    #: Whether Claude Code gives up on the request at once (``control_cancel_request``),
    #: as when the user interrupts the turn: no reply is awaited, and none is kept.
    abandon: bool = False


@dataclass(frozen=True, slots=True)
class McpCall:
    """A call of a tool of an in-process SDK MCP server."""

    #: The server's name, as in ``ClaudeAgentOptions.mcp_servers``.
    server: str
    #: The tool's name on that server.
    tool: str
    #: The arguments the model sent.
    arguments: dict[str, Any]
    #: The tool use's id, sent in ``_meta``.
    tool_use_id: str


@dataclass(frozen=True, slots=True)
class Reply:
    """What the SDK answered to one scripted call."""

    #: The call.
    call: PermissionCall | McpCall
    #: The body of the SDK's ``control_response`` (``{"behavior": ...}`` for a
    #: permission, ``{"mcp_response": ...}`` for an MCP call), or ``None`` when
    #: a hook decided the call (see ``hook_output``) or Claude Code abandoned it.
    response: dict[str, Any] | None
    #: The hook's output, when the SDK registered a ``PreToolUse`` hook.
    hook_output: dict[str, Any] | None = None


class ScriptedCli(Transport):
    """A ``Transport`` that plays Claude Code: one turn of scripted tool calls.

    Hand it to ``claude_agent_sdk.query(..., transport=...)``. After the run,
    ``replies`` holds what the SDK answered to each call, and
    ``written`` every JSON message the SDK wrote. A control error from
    the SDK raises ``RuntimeError`` in the run, naming the request.
    """

    def __init__(
        self, calls: Sequence[PermissionCall | McpCall], *, session_id: str = "session-1"
    ) -> None:
        #: The tool calls of the model's turn, in order.
        self.calls = tuple(calls)
        #: The session's id.
        self.session_id = session_id
        #: What the SDK answered to each call, in order.
        self.replies: list[Reply] = []
        #: Every message the SDK wrote, parsed.
        self.written: list[dict[str, Any]] = []
        self._inbox: asyncio.Queue[object] = asyncio.Queue()
        self._hooks: dict[str, list[tuple[str | None, str]]] = {}
        self._servers: set[str] = set()
        self._counter = 0
        self._ready = False

    @override
    async def connect(self) -> None:
        """Be ready; there is nothing to start."""
        self._ready = True

    @override
    async def write(self, data: str) -> None:
        """Take the SDK's JSON lines."""
        for line in data.splitlines():
            if line.strip():
                message = cast("dict[str, Any]", json.loads(line))
                self.written.append(message)
                self._inbox.put_nowait(message)

    @override
    async def end_input(self) -> None:
        """The SDK closed its side: the run is over."""
        self._inbox.put_nowait(_END)

    @override
    async def close(self) -> None:
        """Stop."""
        self._ready = False
        self._inbox.put_nowait(_END)

    @override
    def is_ready(self) -> bool:
        """Whether ``connect`` ran and ``close`` did not."""
        return self._ready

    @override
    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        """Claude Code's side of the run, as the SDK reads it."""
        return self._play()

    async def _next(self, wanted: str, request_id: str | None = None) -> dict[str, Any] | None:
        """The next message of type *wanted* (for *request_id*); ``None`` once input ended."""
        while True:
            message = await self._inbox.get()
            if message is _END:
                return None
            fields = cast("dict[str, Any]", message)
            if fields.get("type") != wanted:
                continue
            if request_id is None:
                return fields
            body = cast("dict[str, Any]", fields.get("response") or {})
            if body.get("request_id") == request_id:
                if body.get("subtype") == "error":
                    msg = f"the SDK answered {request_id} with an error: {body.get('error')}"
                    raise RuntimeError(msg)
                return cast("dict[str, Any]", body.get("response") or {})

    def _callbacks(self, event: str, tool: str) -> list[str]:
        """The ids of the SDK's hook callbacks for *event* whose matcher applies to *tool*."""
        return [each for pattern, each in self._hooks.get(event, []) if _matches(pattern, tool)]

    def _decided(self, call: PermissionCall, hook_output: dict[str, Any]) -> dict[str, Any]:
        """The tool result of a call a hook allowed or denied."""
        specific = cast("dict[str, Any]", hook_output["hookSpecificOutput"])
        if specific["permissionDecision"] == "allow":
            updated = cast("dict[str, Any]", specific.get("updatedInput") or call.input)
            text = json.dumps(updated.get("answers", {}))
            return self._tool_result(call.tool_use_id, text, is_error=False)
        reason = str(specific.get("permissionDecisionReason", ""))
        return self._tool_result(call.tool_use_id, reason, is_error=True)

    def _request(self, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._counter += 1
        request_id = f"cli_{self._counter}"
        return request_id, {"type": "control_request", "request_id": request_id, "request": request}

    async def _play(self) -> AsyncIterator[dict[str, Any]]:
        initialize = await self._next("control_request")
        if initialize is None:
            return
        hooks = cast("dict[str, list[dict[str, Any]]]", initialize["request"].get("hooks") or {})
        for event, matchers in hooks.items():
            for matcher in matchers:
                ids = cast("list[str]", matcher["hookCallbackIds"])
                pattern = cast("str | None", matcher.get("matcher"))
                self._hooks.setdefault(event, []).extend((pattern, each) for each in ids)
        yield {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": initialize["request_id"],
                "response": {"commands": []},
            },
        }
        if await self._next("user") is None:
            return
        deferred: PermissionCall | None = None
        for call in self.calls:
            name = (
                call.tool_name
                if isinstance(call, PermissionCall)
                else tool_name(call.server, call.tool)
            )
            arguments = call.input if isinstance(call, PermissionCall) else call.arguments
            yield self._assistant(call.tool_use_id, name, arguments)
            if isinstance(call, McpCall):
                async for message in self._call_mcp(call):
                    yield message
                continue
            hook_output: dict[str, Any] | None = None
            for callback_id in self._callbacks("PreToolUse", call.tool_name):
                request_id, message = self._request(
                    {
                        "subtype": "hook_callback",
                        "callback_id": callback_id,
                        "tool_use_id": call.tool_use_id,
                        "input": {
                            "hook_event_name": "PreToolUse",
                            "session_id": self.session_id,
                            "transcript_path": "",
                            "cwd": "",
                            "tool_name": call.tool_name,
                            "tool_input": call.input,
                            "tool_use_id": call.tool_use_id,
                        },
                    }
                )
                yield message
                hook_output = await self._next("control_response", request_id)
                if _decision(hook_output) is not None:
                    break
            decision = _decision(hook_output)
            if decision == "defer":
                self.replies.append(Reply(call, None, hook_output))
                deferred = call
                break
            if decision in ("allow", "deny"):
                # A hook's decision settles the call: no permission request follows.
                self.replies.append(Reply(call, None, hook_output))
                yield self._decided(call, cast("dict[str, Any]", hook_output))
                continue
            request_id, message = self._request(
                {
                    "subtype": "can_use_tool",
                    "tool_name": call.tool_name,
                    "input": call.input,
                    "tool_use_id": call.tool_use_id,
                    "permission_suggestions": [],
                }
            )
            yield message
            if call.abandon:
                yield {"type": "control_cancel_request", "request_id": request_id}
                self.replies.append(Reply(call, None, hook_output))
                yield self._tool_result(call.tool_use_id, "interrupted", is_error=True)
                continue
            response = await self._next("control_response", request_id)
            if response is None:
                return
            self.replies.append(Reply(call, response, hook_output))
            if response.get("behavior") == "allow":
                text = json.dumps(response.get("updatedInput", {}).get("answers", {}))
                yield self._tool_result(call.tool_use_id, text, is_error=False)
            else:
                yield self._tool_result(
                    call.tool_use_id, str(response.get("message", "")), is_error=True
                )
        yield self._result(deferred)
        await self._next("never")

    async def _call_mcp(self, call: McpCall) -> AsyncIterator[dict[str, Any]]:
        if call.server not in self._servers:
            request_id, message = self._mcp(
                call.server,
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": _MCP_VERSION,
                        "capabilities": {},
                        "clientInfo": {"name": "scripted-cli", "version": "1"},
                    },
                },
            )
            yield message
            await self._next("control_response", request_id)
            request_id, message = self._mcp(
                call.server, {"jsonrpc": "2.0", "method": "notifications/initialized"}
            )
            yield message
            await self._next("control_response", request_id)
            self._servers.add(call.server)
        request_id, message = self._mcp(
            call.server,
            {
                "jsonrpc": "2.0",
                "id": self._counter + 1,
                "method": "tools/call",
                "params": {
                    "name": call.tool,
                    "arguments": call.arguments,
                    "_meta": {TOOL_USE_ID_META: call.tool_use_id},
                },
            },
        )
        yield message
        response = await self._next("control_response", request_id)
        self.replies.append(Reply(call, response))
        result = cast("dict[str, Any]", (response or {}).get("mcp_response", {}).get("result", {}))
        texts = [block.get("text", "") for block in result.get("content", [])]
        yield self._tool_result(
            call.tool_use_id, "\n".join(texts), is_error=bool(result.get("isError"))
        )

    def _mcp(self, server: str, message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return self._request({"subtype": "mcp_message", "server_name": server, "message": message})

    def _assistant(self, tool_use_id: str, name: str, arguments: object) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "model": "scripted",
                "content": [
                    {"type": "tool_use", "id": tool_use_id, "name": name, "input": arguments}
                ],
            },
            "parent_tool_use_id": None,
            "session_id": self.session_id,
        }

    def _tool_result(self, tool_use_id: str, text: str, *, is_error: bool) -> dict[str, Any]:
        return {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": text,
                        "is_error": is_error,
                    }
                ],
            },
            "parent_tool_use_id": None,
            "session_id": self.session_id,
        }

    def _result(self, deferred: PermissionCall | None) -> dict[str, Any]:
        result: dict[str, Any] = {
            "type": "result",
            "subtype": "success",
            "duration_ms": 0,
            "duration_api_ms": 0,
            "is_error": False,
            "num_turns": 1,
            "session_id": self.session_id,
            "result": "deferred" if deferred is not None else "done",
        }
        if deferred is not None:
            result["deferred_tool_use"] = {
                "id": deferred.tool_use_id,
                "name": deferred.tool_name,
                "input": deferred.input,
            }
        return result
