"""The adapter inside the Claude Agent SDK's own agent loop, offline, and durable across restarts.

Each run is the SDK's ``query`` with a ``ScriptedCli`` transport playing Claude
Code: the SDK's initialize, hooks, ``can_use_tool`` and in-process MCP bridge
run for real; only the model and the CLI process are scripted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import Any, cast

import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    DeferredToolUse,
    HookMatcher,
    Message,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
    ToolResultBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
)
from mcp import Client

from dsh_user_interaction import (
    MESSAGES,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionService,
)
from dsh_user_interaction.durable import AskRecord, DurableProvider, Outcome, SQLiteStore
from dsh_user_interaction.extra.claude import (
    answer_deferred,
    answer_hooks,
    can_use_tool_for,
    defer_hooks,
    defer_questions,
    question_server,
    question_tools,
    tool_name,
)
from dsh_user_interaction.extra.claude.testing import McpCall, PermissionCall, ScriptedCli
from dsh_user_interaction.plan_review import EXIT_PLAN_MODE_TOOL, PLAN_APPROVED
from dsh_user_interaction.tool import ASK_USER_QUESTION_TOOL, ask_user_question
from tests.helpers import run

QUESTION: dict[str, Any] = {
    "questions": [
        {
            "question": "Which extras?",
            "header": "Extras",
            "options": [{"label": "Web"}, {"label": "Terminal"}],
            "multiSelect": True,
        }
    ]
}
ANSWER: AskUserQuestionAnswer = {"answers": [{"id": "q1", "selected": ["Web", "Terminal"]}]}


async def play(cli: ScriptedCli, options: ClaudeAgentOptions) -> list[Message]:
    """Run one query of the SDK against *cli*; the messages the application reads."""
    return [message async for message in query(prompt="go", options=options, transport=cli)]


def recording_service(
    answer: AskUserQuestionAnswer,
) -> tuple[UserInteractionService, list[AskUserQuestionRequest[Any]]]:
    """A service whose scripted human answers *answer*, and the requests it was asked."""
    seen: list[AskUserQuestionRequest[Any]] = []

    def respond(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(request)
        return answer

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=respond))
    return service, seen


def tool_results(messages: list[Message]) -> list[ToolResultBlock]:
    """The tool results the model received, in order."""
    return [
        block
        for message in messages
        if isinstance(message, UserMessage) and isinstance(message.content, list)
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


def test_the_sdk_loop_answers_ask_user_question_in_claudes_shape() -> None:
    """Through the SDK's control protocol, AskUserQuestion is asked once and allowed with answers.

    The JSON the SDK sends back to Claude Code is exactly ``{behavior, updatedInput}``, the
    input with ``answers`` keyed by question text; the ask's id is the tool-use id.
    """
    service, seen = recording_service(ANSWER)
    cli = ScriptedCli([PermissionCall("AskUserQuestion", QUESTION, "toolu_01")])
    messages = run(play(cli, ClaudeAgentOptions(can_use_tool=can_use_tool_for(service))))
    assert [reply.response for reply in cli.replies] == [
        {
            "behavior": "allow",
            "updatedInput": {**QUESTION, "answers": {"Which extras?": "Web, Terminal"}},
        }
    ]
    assert [cast("dict[str, object]", request)["askId"] for request in seen] == ["toolu_01"]
    assert [block.content for block in tool_results(messages)] == [
        '{"Which extras?": "Web, Terminal"}'
    ]
    assert isinstance(messages[-1], ResultMessage)


def test_the_interactive_client_asks_through_the_seam_too() -> None:
    """ClaudeSDKClient, the SDK's conversation client, runs the same callback to the same reply."""

    async def main() -> tuple[ScriptedCli, list[Message]]:
        service, _ = recording_service(ANSWER)
        cli = ScriptedCli([PermissionCall("AskUserQuestion", QUESTION, "toolu_17")])
        options = ClaudeAgentOptions(can_use_tool=can_use_tool_for(service))
        messages: list[Message] = []
        async with ClaudeSDKClient(options, transport=cli) as client:
            await client.query("go")
            messages.extend([message async for message in client.receive_response()])
        return cli, messages

    cli, messages = run(main())
    assert [reply.response for reply in cli.replies] == [
        {
            "behavior": "allow",
            "updatedInput": {**QUESTION, "answers": {"Which extras?": "Web, Terminal"}},
        }
    ]
    assert isinstance(messages[-1], ResultMessage)


def test_the_sdk_loop_sends_a_dismissal_as_an_interrupting_denial() -> None:
    """A dismissal reaches Claude Code as ``{behavior: deny, message, interrupt: true}``."""

    async def main() -> ScriptedCli:
        provider = ScriptedProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        cli = ScriptedCli([PermissionCall("AskUserQuestion", QUESTION, "toolu_02")])
        running = asyncio.ensure_future(
            play(cli, ClaudeAgentOptions(can_use_tool=can_use_tool_for(service)))
        )
        (await provider.next_ask()).dismiss()
        await running
        return cli

    cli = run(main())
    assert [reply.response for reply in cli.replies] == [
        {"behavior": "deny", "message": MESSAGES[ErrorCode.ASK_CANCELLED], "interrupt": True}
    ]


def test_the_sdk_loop_reviews_exit_plan_mode_as_a_plan_review() -> None:
    """Claude's ExitPlanMode is the seam's plan review; feedback reaches Claude as a denial."""
    plan = {"plan": "# Ship\n1. Tag\n2. Publish"}
    service, seen = recording_service(
        {"answers": [{"id": "plan-review", "selected": [], "custom": "tag after tests"}]}
    )
    cli = ScriptedCli([PermissionCall("ExitPlanMode", plan, "toolu_14")])
    run(play(cli, ClaudeAgentOptions(can_use_tool=can_use_tool_for(service))))
    assert [reply.response for reply in cli.replies] == [
        {
            "behavior": "deny",
            "message": "The user chose to keep planning; their feedback: tag after tests",
        }
    ]
    assert cast("dict[str, object]", seen[0])["askId"] == "toolu_14"
    assert seen[0]["questions"][0].get("detail") == plan["plan"]


def test_an_abandoned_permission_request_withdraws_the_ask() -> None:
    """Claude Code cancelling the request cancels the ask: nothing left shown, no reply sent."""

    async def main() -> tuple[ScriptedCli, ScriptedProvider]:
        provider = ScriptedProvider()  # its human never answers
        service = UserInteractionService()
        service.register_provider(provider)
        call = PermissionCall("AskUserQuestion", QUESTION, "toolu_15", abandon=True)
        cli = ScriptedCli([call])
        await play(cli, ClaudeAgentOptions(can_use_tool=can_use_tool_for(service)))
        return cli, provider

    cli, provider = run(main())
    assert [reply.response for reply in cli.replies] == [None]
    assert provider.pending == ()
    assert not any(message.get("type") == "control_response" for message in cli.written[1:])


def test_a_control_error_of_the_sdk_ends_the_run_naming_it() -> None:
    """A permission request the SDK cannot answer (hooks, but no callback) fails the run."""
    cli = ScriptedCli([PermissionCall("Bash", {"command": "ls"}, "toolu_16")])
    with pytest.raises(RuntimeError, match="canUseTool callback is not provided"):
        run(play(cli, ClaudeAgentOptions(hooks=defer_hooks())))


def test_the_sdk_loop_lets_other_tools_through() -> None:
    """A tool that is not a question is allowed with its input unchanged."""
    service, seen = recording_service(ANSWER)
    cli = ScriptedCli([PermissionCall("Bash", {"command": "ls"}, "toolu_03")])
    run(play(cli, ClaudeAgentOptions(can_use_tool=can_use_tool_for(service))))
    assert [reply.response for reply in cli.replies] == [
        {"behavior": "allow", "updatedInput": {"command": "ls"}}
    ]
    assert seen == []


def test_our_tool_is_native_to_claude_through_the_sdk_mcp_bridge() -> None:
    """ask_user_question, served in-process, gives the model our tool's exact text.

    The tool-use id Claude Code sends in ``_meta`` is the ask's id.
    """
    arguments = {
        "questions": [
            {"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
        ]
    }
    service, seen = recording_service({"answers": [{"id": "go", "selected": ["Yes"]}]})
    cli = ScriptedCli([McpCall("user", "ask_user_question", arguments, "toolu_04")])
    options = ClaudeAgentOptions(mcp_servers={"user": question_server(service)})
    messages = run(play(cli, options))
    expected = run(ask_user_question(service, arguments))
    results = tool_results(messages)
    assert [(block.content, block.is_error) for block in results] == [(expected.text, False)]
    assert cast("dict[str, object]", seen[0])["askId"] == "toolu_04"


def test_the_server_lists_our_definitions_exactly() -> None:
    """question_server lists our two tools with our names, descriptions and schemas, unchanged."""

    async def listed(plan_review: bool) -> list[tuple[str, str, dict[str, Any]]]:
        server = question_server(UserInteractionService(), plan_review=plan_review)["instance"]
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
        return [(t.name, t.description or "", dict(t.input_schema)) for t in tools]

    definitions = [ASK_USER_QUESTION_TOOL, EXIT_PLAN_MODE_TOOL]
    assert run(listed(plan_review=True)) == [
        (d["name"], d["description"], d["input_schema"]) for d in definitions
    ]
    assert [name for name, _, _ in run(listed(plan_review=False))] == ["ask_user_question"]
    assert tool_name("user", "exit_plan_mode") == "mcp__user__exit_plan_mode"


def test_a_bad_call_of_our_tool_is_an_error_result_with_our_words() -> None:
    """Malformed arguments reach the model as our tool's error line, flagged as an error."""
    arguments = {"questions": [{"id": "a", "question": "?"}, {"id": "a", "question": "?"}]}
    service, seen = recording_service(ANSWER)
    cli = ScriptedCli([McpCall("user", "ask_user_question", arguments, "toolu_05")])
    messages = run(play(cli, ClaudeAgentOptions(mcp_servers={"user": question_server(service)})))
    expected = run(ask_user_question(service, arguments))
    assert expected.is_error
    assert [(b.content, b.is_error) for b in tool_results(messages)] == [(expected.text, True)]
    assert seen == []


def test_an_unknown_tool_of_our_server_is_an_error_result() -> None:
    """A call of a tool the server does not have is an error result naming it; nobody is asked."""
    service, seen = recording_service(ANSWER)
    cli = ScriptedCli([McpCall("user", "ask_human", {}, "toolu_13")])
    messages = run(play(cli, ClaudeAgentOptions(mcp_servers={"user": question_server(service)})))
    assert [(b.content, b.is_error) for b in tool_results(messages)] == [
        ("Error: unknown tool 'ask_human'", True)
    ]
    assert seen == []


def test_exit_plan_mode_is_native_too() -> None:
    """exit_plan_mode through the bridge: an approval is PLAN_APPROVED, named by tool-use id."""
    service, seen = recording_service({"answers": [{"id": "plan-review", "selected": ["Approve"]}]})
    cli = ScriptedCli([McpCall("user", "exit_plan_mode", {"plan": "# Ship\n1. Tag"}, "toolu_06")])
    messages = run(play(cli, ClaudeAgentOptions(mcp_servers={"user": question_server(service)})))
    assert [(b.content, b.is_error) for b in tool_results(messages)] == [(PLAN_APPROVED, False)]
    assert cast("dict[str, object]", seen[0])["askId"] == "toolu_06"


def test_question_tools_work_in_a_server_made_with_the_sdks_own_helper() -> None:
    """question_tools in create_sdk_mcp_server answer the model; their asks carry no askId."""
    arguments = {"questions": [{"id": "q", "question": "Go?"}]}
    service, seen = recording_service({"answers": [{"id": "q", "selected": [], "custom": "yes"}]})
    server = create_sdk_mcp_server("mine", tools=question_tools(service, plan_review=False))
    cli = ScriptedCli([McpCall("mine", "ask_user_question", arguments, "toolu_07")])
    messages = run(play(cli, ClaudeAgentOptions(mcp_servers={"mine": server})))
    assert [b.content for b in tool_results(messages)] == [
        '{"answers":[{"id":"q","selected":[],"custom":"yes"}]}'
    ]
    assert "askId" not in cast("dict[str, object]", seen[0])


def test_the_defer_hook_stops_the_run_at_the_question() -> None:
    """With defer_hooks the run ends with the call as ``deferred_tool_use``; nobody is asked."""
    service, seen = recording_service(ANSWER)
    cli = ScriptedCli([PermissionCall("AskUserQuestion", QUESTION, "toolu_08")])
    options = ClaudeAgentOptions(can_use_tool=can_use_tool_for(service), hooks=defer_hooks())
    messages = run(play(cli, options))
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.deferred_tool_use == DeferredToolUse(
        id="toolu_08", name="AskUserQuestion", input=QUESTION
    )
    assert [reply.response for reply in cli.replies] == [None]
    assert seen == []


def test_the_defer_hook_lets_other_tools_run() -> None:
    """defer_hooks match questions only, and decide nothing for other tools."""
    service, _ = recording_service(ANSWER)
    cli = ScriptedCli([PermissionCall("Read", {"file_path": "a"}, "toolu_09")])
    options = ClaudeAgentOptions(can_use_tool=can_use_tool_for(service), hooks=defer_hooks())
    run(play(cli, options))
    assert [(reply.hook_output, reply.response) for reply in cli.replies] == [
        (None, {"behavior": "allow", "updatedInput": {"file_path": "a"}})
    ]
    hook_input = cast("Any", {"hook_event_name": "PreToolUse", "tool_name": "Read"})
    assert run(defer_questions(hook_input, "toolu_09", {"signal": None})) == {}


def test_answer_deferred_refuses_another_tool() -> None:
    """answer_deferred raises ValueError naming a deferred call that is not a question."""
    deferred = DeferredToolUse(id="toolu_10", name="Bash", input={"command": "ls"})
    with pytest.raises(ValueError, match=r"'toolu_10' is a call of 'Bash'"):
        run(answer_deferred(UserInteractionService(), deferred))


async def _deferred_run(path: Path) -> DeferredToolUse:
    """First process: the run stops at the question, the ask is stored, then the process dies."""
    async with SQLiteStore(path) as store:
        service = UserInteractionService()
        service.register_provider(DurableProvider(store))
        cli = ScriptedCli([PermissionCall("AskUserQuestion", QUESTION, "toolu_11")])
        messages = await play(cli, ClaudeAgentOptions(hooks=defer_hooks()))
        deferred = cast("ResultMessage", messages[-1]).deferred_tool_use
        assert deferred is not None
        changes = cast("AsyncGenerator[AskRecord, None]", store.watch())
        asking = asyncio.ensure_future(answer_deferred(service, deferred))
        async with aclosing(changes):
            async for record in changes:  # wait for the ask to be stored
                if record.ask_id == deferred.id:
                    break
        asking.cancel()  # the process dies with the ask pending in the store
        with pytest.raises(asyncio.CancelledError):
            await asking
        return deferred


async def _resumed_run(path: Path, by_hook: bool) -> tuple[ScriptedCli, int]:
    """Second process: the resumed session settles the same tool use, by hook or permission."""
    async with SQLiteStore(path) as store:
        service = UserInteractionService()
        service.register_provider(DurableProvider(store))
        cli = ScriptedCli([PermissionCall("AskUserQuestion", QUESTION, "toolu_11")])
        options = ClaudeAgentOptions(
            can_use_tool=can_use_tool_for(service),
            hooks=answer_hooks(service) if by_hook else None,
        )
        await play(cli, options)
        return cli, len(await store.records())


def _decided(cli: ScriptedCli) -> list[dict[str, Any] | None]:
    """What settled each call: the SDK's permission reply, or else its hook's output."""
    return [reply.response or reply.hook_output for reply in cli.replies]


RESUMED_ALLOWED = {
    "permission": {
        "behavior": "allow",
        "updatedInput": {**QUESTION, "answers": {"Which extras?": "Web, Terminal"}},
    },
    "hook": {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {**QUESTION, "answers": {"Which extras?": "Web, Terminal"}},
        }
    },
}


@pytest.mark.parametrize("way", ["permission", "hook"])
def test_a_deferred_question_survives_a_restart_asked_once_answered_once(
    tmp_path: Path, way: str
) -> None:
    """The ask id is the tool-use id: the resumed session finds the ask a UI answered meanwhile.

    One record in the store, settled once by the UI; the resumed call is allowed with that
    answer at once, whether its permission request or its PreToolUse hook settles it.
    """
    path = tmp_path / "asks.db"
    deferred = run(_deferred_run(path))

    async def ui_answers() -> None:
        async with SQLiteStore(path) as store:
            (record,) = await store.pending()
            assert record.ask_id == deferred.id
            await store.settle(record.ask_id, Outcome.answered(ANSWER, via="ui"), settled_at=1.0)

    run(ui_answers())
    cli, records = run(_resumed_run(path, by_hook=way == "hook"))
    assert records == 1
    assert _decided(cli) == [RESUMED_ALLOWED[way]]


RESUMED_DISMISSED = {
    "permission": {
        "behavior": "deny",
        "message": MESSAGES[ErrorCode.ASK_CANCELLED],
        "interrupt": True,
    },
    "hook": {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": MESSAGES[ErrorCode.ASK_CANCELLED],
        },
        "continue": False,
        "stopReason": MESSAGES[ErrorCode.ASK_CANCELLED],
    },
}


@pytest.mark.parametrize("way", ["permission", "hook"])
def test_a_resume_for_an_ask_that_ended_gets_its_outcome(tmp_path: Path, way: str) -> None:
    """A resume whose ask was dismissed meanwhile is denied as dismissed, never asked again.

    Through a hook, the dismissal stops the turn (``continue: false``), as the permission
    reply's ``interrupt`` does.
    """
    path = tmp_path / "asks.db"
    deferred = run(_deferred_run(path))

    async def ui_dismisses() -> None:
        async with SQLiteStore(path) as store:
            await store.settle(deferred.id, Outcome.cancelled(via="ui"), settled_at=1.0)

    run(ui_dismisses())
    cli, records = run(_resumed_run(path, by_hook=way == "hook"))
    assert records == 1
    assert _decided(cli) == [RESUMED_DISMISSED[way]]


def test_answer_hooks_leave_other_tools_alone_and_check_settings() -> None:
    """answer_hooks decide nothing for other tools, and refuse a bad answer_within at once."""
    service, seen = recording_service(ANSWER)
    (matcher,) = answer_hooks(service, timeout=3600)["PreToolUse"]
    assert matcher.timeout == 3600
    hook_input = cast("Any", {"hook_event_name": "PreToolUse", "tool_name": "Bash"})
    assert run(_call_hook(matcher, hook_input)) == {}
    assert seen == []
    with pytest.raises(ValueError, match="answer_within must be a positive"):
        answer_hooks(service, answer_within=0)


async def _call_hook(matcher: HookMatcher, hook_input: Any) -> object:
    (hook,) = matcher.hooks
    return await hook(hook_input, None, {"signal": None})


def test_a_resume_with_other_questions_under_the_same_id_is_refused(tmp_path: Path) -> None:
    """The same tool-use id with other questions is denied with BAD_REQUEST's text; kept as is."""

    async def main() -> tuple[object, int]:
        async with SQLiteStore(tmp_path / "asks.db") as store:
            service = UserInteractionService()
            service.register_provider(DurableProvider(store))
            await store.put(
                "toolu_12",
                cast("Any", {"questions": [{"id": "q1", "question": "Other?"}]}),
                asked_at=0.0,
            )
            callback = can_use_tool_for(service)
            result = await callback(
                "AskUserQuestion", QUESTION, ToolPermissionContext(tool_use_id="toolu_12")
            )
            return result, len(await store.pending())

    result, pending = run(main())
    assert result == PermissionResultDeny(
        message="the askId 'toolu_12' names an ask already kept with other questions;"
        " a new question needs a new ask id"
    )
    assert pending == 1
