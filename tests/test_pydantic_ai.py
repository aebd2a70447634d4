"""The pydantic-ai adapter: our tools as native tools, deferred calls, the harness's AskUser.

Every run here is a real ``Agent.run`` with pydantic-ai's ``FunctionModel``
(scripted tool calls, no network), answered by a ``ScriptedProvider``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import CallDeferred, ToolFailed
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDefinition
from pydantic_ai_harness import AskUser
from pydantic_ai_harness.ask_user import (
    DECLINED,
    TIMED_OUT,
    AskUserAnswer,
    AskUserRequest,
    AskUserResponse,
    Question,
    QuestionOption,
    ask_user_result,
    check_response,
)

import dsh_user_interaction.extra.pydantic_ai as adapter
from dsh_user_interaction import (
    TIMED_OUT_MESSAGE,
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    PendingAsk,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_custom,
    answer_of,
    answer_selected,
    answer_skipped,
    request_violations,
)
from dsh_user_interaction.durable import DurableProvider, SQLiteStore, serve
from dsh_user_interaction.plan_review import EXIT_PLAN_MODE_TOOL, PLAN_APPROVED
from dsh_user_interaction.tool import ASK_USER_QUESTION_TOOL
from tests.helpers import run

MODE_QUESTION: dict[str, object] = {
    "id": "mode",
    "question": "Which mode?",
    "options": [{"label": "Fast"}, {"label": "Safe"}],
}


@dataclass
class Script:
    """A scripted model: first the given tool calls, then a final text.

    It keeps what it was shown: the tool definitions and the tool returns.
    """

    calls: Sequence[ToolCallPart]
    tools: list[ToolDefinition] = field(default_factory=list[ToolDefinition])
    returns: list[ToolReturnPart] = field(default_factory=list[ToolReturnPart])

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tools = list(info.function_tools)
        last = messages[-1]
        if isinstance(last, ModelRequest):
            self.returns.extend(p for p in last.parts if isinstance(p, ToolReturnPart))
        if len(messages) == 1:
            return ModelResponse(parts=list(self.calls))
        return ModelResponse(parts=[TextPart("done")])

    def model(self) -> FunctionModel:
        return FunctionModel(self)


@dataclass
class Fixed:
    """An AskingService of our own that returns one fixed answer, recording the requests."""

    answer: object
    asked: list[AskUserQuestionRequest[Any]] = field(
        default_factory=list[AskUserQuestionRequest[Any]]
    )

    async def ask(self, request: AskUserQuestionRequest[Any], /) -> AskUserQuestionAnswer:
        self.asked.append(request)
        return cast("AskUserQuestionAnswer", self.answer)


def ask_call(call_id: str, *questions: object) -> ToolCallPart:
    return ToolCallPart(
        "ask_user_question",
        {"questions": list(questions or (MODE_QUESTION,))},
        tool_call_id=call_id,
    )


def the_return(script: Script) -> ToolReturnPart:
    assert len(script.returns) == 1, script.returns
    return script.returns[0]


def test_exports_match_all() -> None:
    """The front module exports exactly its ``__all__``, each name defined."""
    public = {name for name in vars(adapter) if not name.startswith("_")}
    assert public == set(adapter.__all__)
    assert all(getattr(adapter, name) is not None for name in adapter.__all__)


# --- our tools, as native tools ------------------------------------------------------


def test_native_tools_carry_our_exact_definitions() -> None:
    """The model sees our tools' names, descriptions and JSON Schemas, unchanged."""
    script = Script(calls=[])
    agent = Agent(script.model(), toolsets=[adapter.seam_toolset(UserInteractionService())])
    run(agent.run("hi"))
    seen = {tool.name: tool for tool in script.tools}
    for definition in (ASK_USER_QUESTION_TOOL, EXIT_PLAN_MODE_TOOL):
        tool = seen[definition["name"]]
        assert tool.description == definition["description"]
        assert tool.parameters_json_schema == definition["input_schema"]
    only = Script(calls=[])
    agent = Agent(
        only.model(),
        toolsets=[adapter.seam_toolset(UserInteractionService(), plan_review=False)],
    )
    run(agent.run("hi"))
    assert [tool.name for tool in only.tools] == ["ask_user_question"]


def test_native_tool_real_loop_answers_with_the_call_id_as_ask_id() -> None:
    """A model's call is asked with its tool_call_id as askId; it reads our exact JSON back."""
    seen: list[AskUserQuestionRequest[Any]] = []

    def respond(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(request)
        return answer_of(answer_selected("mode", "Safe"))

    service = UserInteractionService()
    script = Script(calls=[ask_call("call-7")])
    with service.register_provider(ScriptedProvider(respond=respond)):
        result = run(Agent(script.model(), toolsets=[adapter.seam_toolset(service)]).run("go"))
    assert result.output == "done"
    part = the_return(script)
    assert (part.tool_call_id, part.outcome) == ("call-7", "success")
    assert part.content == '{"answers":[{"id":"mode","selected":["Safe"]}]}'
    assert [request.get("askId") for request in seen] == ["call-7"]


Act = Callable[[PendingAsk, AbortController, Callable[[], None]], None]


def _dismiss(pending: PendingAsk, _c: AbortController, _d: Callable[[], None]) -> None:
    pending.dismiss()


def _abort(_p: PendingAsk, controller: AbortController, _d: Callable[[], None]) -> None:
    controller.abort()


def _time_out(_p: PendingAsk, controller: AbortController, _d: Callable[[], None]) -> None:
    controller.abort(TimeoutError("the application's wait ended"))


def _dispose(_p: PendingAsk, _c: AbortController, dispose: Callable[[], None]) -> None:
    dispose()


def _answering(answer: AskUserQuestionAnswer) -> Act:
    def act(pending: PendingAsk, _c: AbortController, _d: Callable[[], None]) -> None:
        pending.answer(answer)

    return act


#: Every outcome of the seam, and what the model reads in the ToolReturnPart.
NATIVE_ROWS: list[tuple[str, Act, str, str]] = [
    (
        "answered",
        _answering(answer_of(answer_selected("mode", "Safe"))),
        "success",
        '{"answers":[{"id":"mode","selected":["Safe"]}]}',
    ),
    (
        "skipped",
        _answering(answer_of(answer_skipped("mode"))),
        "success",
        '{"answers":[{"id":"mode","selected":[]}]}',
    ),
    (
        "custom text",
        _answering(answer_of(answer_custom("mode", "Both, in turn"))),
        "success",
        '{"answers":[{"id":"mode","selected":[],"custom":"Both, in turn"}]}',
    ),
    ("dismissed", _dismiss, "failed", "Error: the user cancelled ask_user_question"),
    (
        "aborted",
        _abort,
        "failed",
        "Error: ask_user_question was aborted before the user answered",
    ),
    ("timed out", _time_out, "failed", f"Error: {TIMED_OUT_MESSAGE}"),
    (
        "provider disposed",
        _dispose,
        "failed",
        "Error: the user-interaction provider was disposed before the user answered",
    ),
]


async def _run_native(act: Act) -> Script:
    service = UserInteractionService()
    provider = ScriptedProvider()
    controller = AbortController()
    registration = service.register_provider(provider)
    script = Script(calls=[ask_call("call-1")])
    agent = Agent(
        script.model(), toolsets=[adapter.seam_toolset(service, signal=controller.signal)]
    )
    running = asyncio.ensure_future(agent.run("go"))
    pending = await provider.next_ask()
    act(pending, controller, registration.dispose)
    await running
    registration.dispose()
    return script


@pytest.mark.parametrize(
    ("act", "outcome", "content"),
    [row[1:] for row in NATIVE_ROWS],
    ids=[row[0] for row in NATIVE_ROWS],
)
def test_native_tool_mapping_row(act: Act, outcome: str, content: str) -> None:
    """Each outcome of the seam reaches the model as our tool's exact text, failed for errors."""
    part = the_return(run(_run_native(act)))
    assert (part.outcome, part.content) == (outcome, content)


CHECKS_QUESTION: dict[str, object] = {
    "id": "checks",
    "question": "Which checks?",
    "options": [{"label": "tests"}, {"label": "lint"}],
    "multi_select": True,
}


@pytest.mark.parametrize(
    ("item", "content"),
    [
        (
            {"id": "checks", "selected": ["lint"], "custom": "mypy too"},
            '{"answers":[{"id":"checks","selected":["lint"],"custom":"mypy too"}]}',
        ),
        (
            {"id": "checks", "selected": [], "custom": "\x1b[31mred"},
            '{"answers":[{"id":"checks","selected":[],"custom":"\\u001b[31mred"}]}',
        ),
    ],
    ids=["custom text beside labels", "custom text with control characters"],
)
def test_native_tool_carries_what_the_harness_cannot(item: object, content: str) -> None:
    """Our tools carry custom text beside labels, and any custom text, unchanged."""
    service = UserInteractionService()
    answer = cast("AskUserQuestionAnswer", {"answers": [item]})
    script = Script(calls=[ask_call("call-1", CHECKS_QUESTION)])
    with service.register_provider(ScriptedProvider(respond=lambda _r: answer)):
        run(Agent(script.model(), toolsets=[adapter.seam_toolset(service)]).run("go"))
    part = the_return(script)
    assert (part.outcome, part.content) == ("success", content)


def test_native_tool_malformed_answer_from_a_lenient_service() -> None:
    """A malformed answer from a lenient service is a failed return naming the problem."""
    script = Script(calls=[ask_call("call-1")])
    toolset = adapter.seam_toolset(Fixed("not an answer"))
    run(Agent(script.model(), toolsets=[toolset]).run("go"))
    part = the_return(script)
    assert (part.outcome, part.content) == (
        "failed",
        'Error: tool "ask_user_question" returned invalid output: $: expected an object, got string',
    )


def test_native_tool_defaulted_row() -> None:
    """Defaults the application set reach the model as the answer marked defaulted, with a note."""
    service = UserInteractionService()
    provider = ScriptedProvider()
    question = {**MODE_QUESTION, "options": [{"label": "Safe (Recommended)"}, {"label": "Fast"}]}
    script = Script(calls=[ask_call("call-1", question)])
    toolset = adapter.seam_toolset(service, answer_within=0.05, recommended_defaults=True)
    with service.register_provider(provider):
        run(Agent(script.model(), toolsets=[toolset]).run("go"))
    part = the_return(script)
    assert part.outcome == "success"
    content = json.loads(cast("str", part.content))
    assert content["answers"] == [{"id": "mode", "selected": ["Safe (Recommended)"]}]
    assert content["defaulted"] is True
    assert provider.asked == 1


def test_deferred_defaulted_row() -> None:
    """A deferred ask left unanswered past answer_within resumes with the defaults, marked."""
    question = {**MODE_QUESTION, "options": [{"label": "Safe (Recommended)"}, {"label": "Fast"}]}
    script = Script(calls=[ask_call("call-1", question)])
    agent = deferred_agent(script)
    first = run(agent.run("go"))
    requests = cast("DeferredToolRequests", first.output)
    service = UserInteractionService()
    with service.register_provider(ScriptedProvider()):
        results = run(
            adapter.answer_deferred(
                requests, service, answer_within=0.05, recommended_defaults=True
            )
        )
    run(agent.run(message_history=first.all_messages(), deferred_tool_results=results))
    content = json.loads(cast("str", the_return(script).content))
    assert content["answers"] == [{"id": "mode", "selected": ["Safe (Recommended)"]}]
    assert content["defaulted"] is True


def test_native_tool_malformed_arguments_fail_without_asking() -> None:
    """Arguments our tool refuses are a failed return naming the JSON path; nobody is asked."""
    service = UserInteractionService()
    provider = ScriptedProvider()
    call = ToolCallPart(
        "ask_user_question", {"questions": [{"id": 1, "question": "?"}]}, tool_call_id="c"
    )
    script = Script(calls=[call])
    with service.register_provider(provider):
        run(Agent(script.model(), toolsets=[adapter.seam_toolset(service)]).run("go"))
    part = the_return(script)
    assert part.outcome == "failed"
    assert part.content == "Error: $.questions[0].id: expected a non-empty string, got number"
    assert provider.asked == 0


@pytest.mark.parametrize(
    ("chosen", "outcome", "content"),
    [
        ("Approve", "success", PLAN_APPROVED),
        (
            "Keep planning",
            "failed",
            "Error: The user chose to keep planning; revise the plan and present it again.",
        ),
    ],
    ids=["approved", "keep planning"],
)
def test_native_exit_plan_mode(chosen: str, outcome: str, content: str) -> None:
    """exit_plan_mode asks with the call id; an approval is our exact text, the rest a failed return."""
    service = UserInteractionService()
    asked: list[object] = []

    def respond(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        asked.append(request.get("askId"))
        return answer_of(answer_selected("plan-review", chosen))

    call = ToolCallPart("exit_plan_mode", {"plan": "# Release\n1. Tag"}, tool_call_id="plan-1")
    script = Script(calls=[call])
    with service.register_provider(ScriptedProvider(respond=respond)):
        run(Agent(script.model(), toolsets=[adapter.seam_toolset(service)]).run("go"))
    part = the_return(script)
    assert (part.outcome, part.content) == (outcome, content)
    assert asked == ["plan-1"]


def test_seam_toolset_refuses_bad_options() -> None:
    """A bad answer_within, or defaults without it, is refused when the toolset is built."""
    service = UserInteractionService()
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="answer_within must be a positive"):
            adapter.seam_toolset(service, answer_within=bad)
    with pytest.raises(ValueError, match="recommended_defaults needs answer_within"):
        adapter.seam_toolset(service, recommended_defaults=True)


def test_run_seam_tool_refuses_other_names() -> None:
    """run_seam_tool names the tools it knows when asked to run another."""
    with pytest.raises(ValueError, match="'search' is not one of ours"):
        run(adapter.run_seam_tool("search", UserInteractionService(), {}, ask_id=None))


# --- the durable pause: deferred calls -------------------------------------------------


def deferred_agent(script: Script) -> Agent[None, str | DeferredToolRequests]:
    return Agent(
        script.model(),
        toolsets=[adapter.deferred_seam_toolset()],
        output_type=[str, DeferredToolRequests],
    )


def test_deferred_run_pauses_and_resumes_with_our_answer() -> None:
    """A deferred call ends the run unasked; answer_deferred asks it; the resumed run reads it."""
    script = Script(calls=[ask_call("call-1")])
    agent = deferred_agent(script)
    first = run(agent.run("go"))
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert [call.tool_call_id for call in requests.calls] == ["call-1"]
    assert requests.metadata == {"call-1": {"askId": "call-1"}}
    assert script.returns == []

    seen: list[object] = []

    def respond(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(request.get("askId"))
        return answer_of(answer_selected("mode", "Fast"))

    service = UserInteractionService()
    with service.register_provider(ScriptedProvider(respond=respond)):
        results = run(adapter.answer_deferred(requests, service))
    assert seen == ["call-1"]
    assert results.calls == {"call-1": '{"answers":[{"id":"mode","selected":["Fast"]}]}'}
    second = run(agent.run(message_history=first.all_messages(), deferred_tool_results=results))
    assert second.output == "done"
    part = the_return(script)
    assert (part.tool_call_id, part.outcome) == ("call-1", "success")
    assert part.content == '{"answers":[{"id":"mode","selected":["Fast"]}]}'


async def _run_deferred(act: Act) -> Script:
    """Pause a run on a deferred call, answer it through the seam with *act*, resume it."""
    script = Script(calls=[ask_call("call-1")])
    agent = deferred_agent(script)
    first = await agent.run("go")
    requests = cast("DeferredToolRequests", first.output)
    service = UserInteractionService()
    provider = ScriptedProvider()
    controller = AbortController()
    registration = service.register_provider(provider)
    try:
        asking = asyncio.ensure_future(
            adapter.answer_deferred(requests, service, signal=controller.signal)
        )
        act(await provider.next_ask(), controller, registration.dispose)
        results = await asking
    finally:
        registration.dispose()
    await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    return script


@pytest.mark.parametrize(
    ("act", "outcome", "content"),
    [row[1:] for row in NATIVE_ROWS],
    ids=[row[0] for row in NATIVE_ROWS],
)
def test_deferred_mapping_row(act: Act, outcome: str, content: str) -> None:
    """Each outcome of a deferred ask reaches the resumed model as on the waiting path."""
    part = the_return(run(_run_deferred(act)))
    assert (part.tool_call_id, part.outcome, part.content) == ("call-1", outcome, content)


def test_deferred_malformed_arguments_fail_at_once() -> None:
    """A deferred tool refuses malformed arguments at once; only well-formed calls are deferred."""
    bad = ToolCallPart("ask_user_question", {"questions": []}, tool_call_id="bad")
    no_heading = ToolCallPart("exit_plan_mode", {"plan": "1. Tag"}, tool_call_id="plan")
    script = Script(calls=[bad, no_heading, ask_call("good")])
    result = run(deferred_agent(script).run("go"))
    requests = cast("DeferredToolRequests", result.output)
    assert [call.tool_call_id for call in requests.calls] == ["good"]
    failed = {
        part.tool_call_id: part
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    assert failed.keys() == {"bad", "plan"}
    assert failed["bad"].outcome == "failed"
    assert failed["bad"].content == "Error: ask_user_question requires at least one question"
    assert failed["plan"].content == (
        "Error: exit_plan_mode requires a non-empty markdown plan starting with a # heading"
    )


def _requests() -> DeferredToolRequests:
    return DeferredToolRequests(
        calls=[
            ask_call("ours"),
            ToolCallPart("exit_plan_mode", {"plan": "# P\n1. Go"}, tool_call_id="plan"),
            ToolCallPart("search", {"q": "x"}, tool_call_id="theirs"),
        ],
        approvals=[ToolCallPart("delete", {}, tool_call_id="approval")],
    )


@pytest.mark.parametrize(
    ("ids", "error", "message"),
    [
        (["nope"], ValueError, "'nope' is not among the deferred calls"),
        (["approval"], ValueError, "'approval' is an approval"),
        (["theirs"], ValueError, "'theirs' is a call of 'search'"),
        ("ours", TypeError, "not the string 'ours'"),
    ],
    ids=["unknown", "approval", "other tool", "string"],
)
def test_answer_deferred_refuses_ids_it_cannot_answer(
    ids: Sequence[str], error: type[Exception], message: str
) -> None:
    """An id that is not a deferred call of our tools is refused, naming it, before any ask."""
    provider = ScriptedProvider(respond=lambda _r: answer_of(answer_selected("mode", "Fast")))
    service = UserInteractionService()
    with service.register_provider(provider), pytest.raises(error, match=message):
        run(adapter.answer_deferred(_requests(), service, ids=ids))
    assert provider.asked == 0


def test_answer_deferred_answers_only_ours_and_only_the_named() -> None:
    """Calls of other tools are left for the application; ids narrow to the named calls."""

    def respond(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        question = request["questions"][0]["id"]
        label = "Approve" if question == "plan-review" else "Fast"
        return answer_of(answer_selected(question, label))

    requests = _requests()
    service = UserInteractionService()
    with service.register_provider(ScriptedProvider(respond=respond)):
        every = run(adapter.answer_deferred(requests, service))
        named = run(adapter.answer_deferred(requests, service, ids=["plan"]))
    assert sorted(every.calls) == ["ours", "plan"]
    assert every.calls["plan"] == PLAN_APPROVED
    assert list(named.calls) == ["plan"]
    remaining = requests.remaining(every)
    assert remaining is not None
    assert [call.tool_call_id for call in remaining.calls] == ["theirs"]


def test_answer_deferred_reads_arguments_sent_as_json_text() -> None:
    """Arguments a model sent as JSON text are read as our tool reads them; none at all is named."""
    text_args = ToolCallPart("ask_user_question", json.dumps({"questions": [MODE_QUESTION]}), "t")
    no_args = ToolCallPart("ask_user_question", None, tool_call_id="n")
    requests = DeferredToolRequests(calls=[text_args, no_args])
    service = Fixed(answer_of(answer_selected("mode", "Safe")))
    results = run(adapter.answer_deferred(requests, service))
    assert results.calls["t"] == '{"answers":[{"id":"mode","selected":["Safe"]}]}'
    failed = results.calls["n"]
    assert isinstance(failed, ToolFailed)
    assert failed.message == "Error: $.questions: required"
    assert [request.get("askId") for request in service.asked] == ["t"]


def test_answer_deferred_refuses_bad_timing_options() -> None:
    """A bad answer_within, or defaults without it, is refused before anyone is asked."""
    service = UserInteractionService()
    with pytest.raises(ValueError, match="answer_within must be a positive"):
        run(adapter.answer_deferred(_requests(), service, answer_within=-1))
    with pytest.raises(ValueError, match="recommended_defaults needs answer_within"):
        run(adapter.answer_deferred(_requests(), service, recommended_defaults=True))


def test_seam_deferred_handler_answers_inside_the_run() -> None:
    """With HandleDeferredToolCalls, our deferred calls are asked in the run; others bubble up."""
    search = Tool(_search_deferred, name="search")
    script = Script(calls=[ask_call("call-1"), ToolCallPart("search", {}, tool_call_id="s")])
    service = UserInteractionService()
    agent = Agent(
        script.model(),
        tools=[search],
        toolsets=[adapter.deferred_seam_toolset()],
        capabilities=[HandleDeferredToolCalls(handler=adapter.seam_deferred_handler(service))],
        output_type=[str, DeferredToolRequests],
    )
    respond = ScriptedProvider(respond=lambda _r: answer_of(answer_selected("mode", "Safe")))
    with service.register_provider(respond):
        result = run(agent.run("go"))
    left = result.output
    assert isinstance(left, DeferredToolRequests)
    assert [call.tool_call_id for call in left.calls] == ["s"]
    assert respond.asked == 1
    run(
        agent.run(
            message_history=result.all_messages(),
            deferred_tool_results=DeferredToolResults(calls={"s": "found"}),
        )
    )
    returned = {part.tool_call_id: part.content for part in script.returns}
    assert returned == {
        "call-1": '{"answers":[{"id":"mode","selected":["Safe"]}]}',
        "s": "found",
    }


async def _search_deferred() -> str:
    raise CallDeferred


def test_ask_user_deferred_handler_answers_inside_the_run() -> None:
    """With HandleDeferredToolCalls, AskUser(answerer=None) is answered in the run by call id."""
    service = Fixed(answer_of(answer_selected("Mode", "Fast"), answer_selected("Checks", "lint")))
    script = Script(calls=[harness_call("call-4")])
    agent = Agent(
        script.model(),
        capabilities=[
            AskUser(answerer=None),
            HandleDeferredToolCalls(handler=adapter.ask_user_deferred_handler(service)),
        ],
    )
    assert run(agent.run("go")).output == "done"
    assert the_return(script).content == {"Mode": ["Fast"], "Checks": ["lint"]}
    assert [request.get("askId") for request in service.asked] == ["call-4"]


def test_deferred_handlers_leave_other_calls_and_refuse_bad_options() -> None:
    """A handler with none of its calls returns None; bad options are refused when it is made."""
    others = DeferredToolRequests(calls=[ToolCallPart("search", {}, tool_call_id="s")])
    service = UserInteractionService()
    ctx = cast("RunContext[Any]", None)
    assert run(adapter.seam_deferred_handler(service)(ctx, others)) is None
    assert run(adapter.ask_user_deferred_handler(service)(ctx, others)) is None
    with pytest.raises(ValueError, match="answer_within"):
        adapter.seam_deferred_handler(service, answer_within=0)
    with pytest.raises(ValueError, match="recommended_defaults needs answer_within"):
        adapter.seam_deferred_handler(service, recommended_defaults=True)
    with pytest.raises(ValueError, match="answer_within"):
        adapter.ask_user_deferred_handler(service, answer_within=-2)


async def _durable_attempt(
    path: Path, requests: DeferredToolRequests, ui: ScriptedProvider, *, settle: bool
) -> DeferredToolResults | None:
    """One process's life: a store, a UI served on it, and answer_deferred through it.

    With *settle*, the UI answers the ask it is shown; without, the process
    ends (its tasks cancelled) once the UI shows the ask.
    """
    async with SQLiteStore(path) as store:
        service = UserInteractionService()
        relay = asyncio.ensure_future(serve(store, ui, via="ui"))
        try:
            with service.register_provider(DurableProvider(store, via="agent")):
                asking = asyncio.ensure_future(adapter.answer_deferred(requests, service))
                if settle:
                    waiting = asyncio.ensure_future(ui.next_ask())
                    done, _ = await asyncio.wait(
                        {asking, waiting}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if waiting in done:
                        waiting.result().answer(answer_of(answer_selected("mode", "Safe")))
                    else:
                        waiting.cancel()
                    return await asking
                await ui.next_ask()
                asking.cancel()
                await asyncio.gather(asking, return_exceptions=True)
                return None
        finally:
            relay.cancel()
            await asyncio.gather(relay, return_exceptions=True)


def test_deferred_ask_survives_restarts_and_is_never_shown_twice(tmp_path: Path) -> None:
    """The tool_call_id is the durable askId: a re-run finds the same ask, and an ended one is not re-shown.

    Process one shows the ask and dies; process two finds it pending, the human
    answers; process three gets the stored answer without showing anything;
    the resumed run reads it.
    """
    path = tmp_path / "asks.db"
    script = Script(calls=[ask_call("call-9")])
    agent = deferred_agent(script)
    first = run(agent.run("go"))
    requests = cast("DeferredToolRequests", first.output)
    first_ui, second_ui, third_ui = ScriptedProvider(), ScriptedProvider(), ScriptedProvider()
    assert run(_durable_attempt(path, requests, first_ui, settle=False)) is None
    second = run(_durable_attempt(path, requests, second_ui, settle=True))
    third = run(_durable_attempt(path, requests, third_ui, settle=True))
    text = '{"answers":[{"id":"mode","selected":["Safe"]}]}'
    assert second is not None
    assert third is not None
    assert second.calls == third.calls == {"call-9": text}
    assert (first_ui.asked, second_ui.asked, third_ui.asked) == (1, 1, 0)
    run(agent.run(message_history=first.all_messages(), deferred_tool_results=third))
    assert the_return(script).content == text


# --- the harness's AskUser, answered through the seam -----------------------------------


HARNESS_MODE = {
    "header": "Mode",
    "question": "Which mode?",
    "options": [{"label": "Fast", "description": "Quick"}, {"label": "Safe"}],
}
HARNESS_CHECKS = {
    "header": "Checks",
    "question": "Which checks?",
    "options": [{"label": "tests"}, {"label": "lint"}, {"label": "docs"}],
    "multi_select": True,
}


def harness_call(call_id: str, *questions: object) -> ToolCallPart:
    return ToolCallPart(
        "ask_user_question",
        {"questions": list(questions or (HARNESS_MODE, HARNESS_CHECKS))},
        tool_call_id=call_id,
    )


def harness_request() -> AskUserRequest:
    return AskUserRequest(
        id="r-1",
        questions=(
            Question(
                header="Mode",
                question="Which mode?",
                options=(
                    QuestionOption(label="Fast", description="Quick"),
                    QuestionOption(label="Safe"),
                ),
            ),
            Question(
                header="Checks",
                question="Which checks?",
                options=(
                    QuestionOption(label="tests"),
                    QuestionOption(label="lint"),
                    QuestionOption(label="docs"),
                ),
                multi_select=True,
            ),
        ),
    )


def test_harness_questions_become_ours() -> None:
    """Each harness question is one of ours: id and header the harness header, same text and options."""
    request: object = adapter.seam_request(harness_request(), ask_id="r-1")
    assert request == {
        "questions": [
            {
                "id": "Mode",
                "question": "Which mode?",
                "header": "Mode",
                "options": [{"label": "Fast", "description": "Quick"}, {"label": "Safe"}],
            },
            {
                "id": "Checks",
                "question": "Which checks?",
                "header": "Checks",
                "options": [{"label": "tests"}, {"label": "lint"}, {"label": "docs"}],
                "multiSelect": True,
            },
        ],
        "askId": "r-1",
    }


def test_harness_answerer_real_loop() -> None:
    """AskUser(answerer=SeamAnswerer(service)): the model's questions are asked, it reads the labels."""
    seen: list[AskUserQuestionRequest[Any]] = []

    def respond(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(request)
        return answer_of(
            answer_selected("Mode", "Safe"),
            {"id": "Checks", "selected": ["tests", "docs"]},
        )

    service = UserInteractionService()
    script = Script(calls=[harness_call("call-3")])
    agent = Agent(script.model(), capabilities=[AskUser(answerer=adapter.SeamAnswerer(service))])
    with service.register_provider(ScriptedProvider(respond=respond)):
        result = run(agent.run("go"))
    assert result.output == "done"
    part = the_return(script)
    assert (part.tool_call_id, part.outcome) == ("call-3", "success")
    assert part.content == {"Mode": ["Safe"], "Checks": ["tests", "docs"]}
    assert [q["id"] for q in seen[0]["questions"]] == ["Mode", "Checks"]
    assert isinstance(seen[0].get("askId"), str)


async def _run_harness(act: Act, *, answer_within: float | None = None) -> Script:
    service = UserInteractionService()
    provider = ScriptedProvider()
    controller = AbortController()
    registration = service.register_provider(provider)
    script = Script(calls=[harness_call("call-1")])
    answerer = adapter.SeamAnswerer(service, signal=controller.signal, answer_within=answer_within)
    agent = Agent(script.model(), capabilities=[AskUser(answerer=answerer)])
    running = asyncio.ensure_future(agent.run("go"))
    try:
        act(await provider.next_ask(), controller, registration.dispose)
        await running
    finally:
        registration.dispose()
    return script


#: Every outcome of the seam that reaches the model through AskUser, and what it reads.
HARNESS_ROWS: list[tuple[str, Act, object]] = [
    (
        "answered",
        _answering(answer_of(answer_selected("Mode", "Fast"), answer_selected("Checks", "lint"))),
        {"Mode": ["Fast"], "Checks": ["lint"]},
    ),
    (
        "custom text",
        _answering(
            answer_of(answer_custom("Mode", "Both, in turn"), answer_selected("Checks", "docs"))
        ),
        {"Mode": ["Both, in turn"], "Checks": ["docs"]},
    ),
    ("dismissed", _dismiss, DECLINED),
    ("timed out", _time_out, DECLINED),
]


@pytest.mark.parametrize(
    ("act", "content"), [row[1:] for row in HARNESS_ROWS], ids=[row[0] for row in HARNESS_ROWS]
)
def test_harness_mapping_row(act: Act, content: object) -> None:
    """Each outcome the harness can carry reaches the model as the harness's own tool result."""
    part = the_return(run(_run_harness(act)))
    assert (part.outcome, part.content) == ("success", content)


def test_harness_deadline_row_is_declined() -> None:
    """An answer_within that passes unanswered is the harness's declined result, never a guess."""
    part = the_return(run(_run_harness(lambda _p, _c, _d: None, answer_within=0.05)))
    assert part.content == DECLINED


#: Outcomes the harness cannot carry: the run fails with our error, the answer kept.
HARNESS_REFUSED: list[tuple[str, Act, ErrorCode, str]] = [
    (
        "skipped",
        _answering(answer_of(answer_skipped("Mode"), answer_selected("Checks", "lint"))),
        ErrorCode.BAD_ANSWER,
        'question "Mode" was skipped, and it has no skip',
    ),
    (
        "custom text beside labels",
        _answering(
            answer_of(
                answer_selected("Mode", "Fast"),
                {"id": "Checks", "selected": ["lint"], "custom": "mypy too"},
            )
        ),
        ErrorCode.BAD_ANSWER,
        'question "Checks" has custom text beside picked labels',
    ),
    (
        "custom text the harness refuses",
        _answering(
            answer_of(answer_custom("Mode", "\x1b[31mred"), answer_selected("Checks", "lint"))
        ),
        ErrorCode.BAD_ANSWER,
        "must not contain control characters",
    ),
    ("aborted", _abort, ErrorCode.ASK_ABORTED, "aborted before the user answered"),
    ("provider disposed", _dispose, ErrorCode.PROVIDER_DISPOSED, "disposed before the user"),
]


@pytest.mark.parametrize(
    ("act", "code", "message"),
    [row[1:] for row in HARNESS_REFUSED],
    ids=[row[0] for row in HARNESS_REFUSED],
)
def test_harness_refused_row(act: Act, code: ErrorCode, message: str) -> None:
    """What the harness cannot say fails the run with our error, naming it; an answer is kept."""
    with pytest.raises(UserInteractionError, match=message) as caught:
        run(_run_harness(act))
    assert caught.value.code is code
    if code is ErrorCode.BAD_ANSWER:
        assert isinstance(caught.value.answer, dict)


def test_harness_timeout_cancels_the_ask_and_reads_timed_out() -> None:
    """The harness's own timeout cancels our ask (nothing left pending); the model reads TIMED_OUT."""
    service = UserInteractionService()
    provider = ScriptedProvider()
    script = Script(calls=[harness_call("call-1")])
    agent = Agent(
        script.model(),
        capabilities=[AskUser(answerer=adapter.SeamAnswerer(service), timeout=0.05)],
    )
    with service.register_provider(provider):
        run(agent.run("go"))
    assert the_return(script).content == TIMED_OUT
    assert provider.asked == 1
    assert provider.pending == ()


def test_harness_refuses_its_own_bad_arguments_before_asking() -> None:
    """Arguments the harness refuses (one option) are its retry prompt; our service is not asked."""
    service = Fixed(answer_of(answer_selected("H", "a")))
    one_option = {"header": "H", "question": "?", "options": [{"label": "a"}]}
    script = Script(calls=[harness_call("call-1", one_option)])
    agent = Agent(script.model(), capabilities=[AskUser(answerer=adapter.SeamAnswerer(service))])
    run(agent.run("go"))
    assert the_return(script).outcome == "retried"
    assert service.asked == []


def test_seam_request_refuses_what_our_rules_refuse() -> None:
    """A hand-built harness request that breaks our rules (a repeated header) is BAD_REQUEST."""
    question = harness_request().questions[0]
    with pytest.raises(UserInteractionError, match="duplicates") as caught:
        adapter.seam_request(AskUserRequest(id="r", questions=(question, question)))
    assert caught.value.code is ErrorCode.BAD_REQUEST


def test_harness_defaulted_answer_is_declined() -> None:
    """An answer made of defaults is not the human's: the harness is told the user declined."""
    service = Fixed(
        {
            "answers": [
                {"id": "Mode", "selected": ["Safe"]},
                {"id": "Checks", "selected": ["tests"]},
            ],
            "defaulted": True,
        }
    )
    response = run(adapter.SeamAnswerer(service)(harness_request()))
    assert response == AskUserResponse(cancelled=True)
    assert service.asked[0].get("askId") == "r-1"


#: Answers a lenient service might return that break our answer rules.
MALFORMED_ANSWERS: list[object] = [
    "not an answer",
    {"answers": [{"id": "Mode", "selected": ["Nope"]}, {"id": "Checks", "selected": ["lint"]}]},
    {"answers": [{"id": "Checks", "selected": ["tests"]}, {"id": "Mode", "selected": ["Fast"]}]},
    {"answers": [{"id": "Mode", "selected": ["Fast", "Safe"]}, {"id": "Checks", "selected": []}]},
]


@pytest.mark.parametrize(
    "answer",
    MALFORMED_ANSWERS,
    ids=["not a mapping", "unknown label", "wrong order", "two on single-select"],
)
def test_harness_malformed_answer_is_refused_and_kept(answer: object) -> None:
    """A malformed answer from a service is BAD_ANSWER naming the rule, with the answer kept."""
    with pytest.raises(
        UserInteractionError, match="the answer breaks the answer rules: ANS-"
    ) as caught:
        run(adapter.SeamAnswerer(Fixed(answer))(harness_request()))
    assert caught.value.code is ErrorCode.BAD_ANSWER
    assert caught.value.answer == answer
    assert caught.value.violations


def test_harness_answers_map_to_harness_values() -> None:
    """Labels stay labels and custom text alone is custom_answer, by header, in order."""
    response = adapter.harness_response(
        harness_request(),
        answer_of(answer_custom("Mode", "both"), {"id": "Checks", "selected": ["lint", "docs"]}),
    )
    assert response == AskUserResponse(
        answers=(
            AskUserAnswer(header="Mode", custom_answer="both"),
            AskUserAnswer(header="Checks", selected=("lint", "docs")),
        )
    )


def test_seam_answerer_refuses_a_bad_answer_within() -> None:
    """SeamAnswerer refuses an answer_within that is not a positive, finite number."""
    with pytest.raises(ValueError, match="answer_within"):
        adapter.SeamAnswerer(UserInteractionService(), answer_within=0)


# --- the harness's deferred AskUser -------------------------------------------------------


def test_harness_deferred_run_pauses_and_resumes() -> None:
    """AskUser(answerer=None) pauses; answer_deferred_ask_user asks with the call id; the run resumes."""
    script = Script(calls=[harness_call("call-5")])
    agent = Agent(
        script.model(),
        capabilities=[AskUser(answerer=None)],
        output_type=[str, DeferredToolRequests],
    )
    first = run(agent.run("go"))
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    service = Fixed(answer_of(answer_selected("Mode", "Safe"), answer_selected("Checks", "docs")))
    results = run(adapter.answer_deferred_ask_user(requests, service))
    assert [request.get("askId") for request in service.asked] == ["call-5"]
    assert results.calls == {"call-5": {"Mode": ["Safe"], "Checks": ["docs"]}}
    run(agent.run(message_history=first.all_messages(), deferred_tool_results=results))
    part = the_return(script)
    assert (part.tool_call_id, part.content) == ("call-5", {"Mode": ["Safe"], "Checks": ["docs"]})


def test_harness_deferred_refuses_malformed_calls_and_unknown_ids() -> None:
    """A call the harness would refuse, or an id it did not defer, is a ValueError naming it."""
    malformed = ToolCallPart(
        "ask_user_question", {"questions": [{"header": "H", "question": "?"}]}, tool_call_id="m"
    )
    requests = DeferredToolRequests(calls=[malformed, harness_call("ok")])
    service = Fixed(answer_of(answer_selected("Mode", "Safe"), answer_selected("Checks", "docs")))
    with pytest.raises(
        ValueError, match=r"deferred call 'm' has malformed arguments: questions\.0\.options"
    ):
        run(adapter.answer_deferred_ask_user(requests, service))
    with pytest.raises(ValueError, match="'other' is not among the deferred calls"):
        run(adapter.answer_deferred_ask_user(requests, service, ids=["other"]))
    assert service.asked == []


# --- properties: any harness request, any answer of ours ----------------------------------

#: Printable text as the harness accepts it: no edge spaces, no control characters.
#: Sampled from a pool (drawing text is what costs here), with the awkward kinds.
_WORDS = st.sampled_from(
    [
        "Fast",
        "Safe (Recommended)",
        "x",
        "d\u00e9j\u00e0 vu",
        "\u4e2d\u6587",
        "\U0001f600 emoji",
        "a:b/c-d_e.f",
        "\u05e2\u05d1\u05e8\u05d9\u05ea",
        "W" * 40,
        "two  inner  spaces",
    ]
)


@st.composite
def harness_requests(draw: st.DrawFn) -> AskUserRequest:
    """Any request the harness's own validation accepts: 1-4 questions, 2-6 options each.

    Numbered headers and labels keep them unique however the harness folds
    them, so no example is discarded.
    """
    questions: list[Question] = []
    for index in range(draw(st.integers(min_value=1, max_value=4))):
        words = draw(st.lists(_WORDS.map(lambda w: w[:40]), min_size=2, max_size=6))
        questions.append(
            Question(
                header=f"{draw(_WORDS)[:20]} {index}",
                question=draw(_WORDS),
                options=tuple(
                    QuestionOption(label=f"{word} {number}") for number, word in enumerate(words)
                ),
                multi_select=draw(st.booleans()),
            )
        )
    return AskUserRequest(questions=tuple(questions), id=draw(st.sampled_from(["c-1", "toolu_01"])))


@st.composite
def seam_answers(draw: st.DrawFn, request: AskUserRequest) -> AskUserQuestionAnswer:
    """Any answer our answer rules accept for the request: labels, skips, custom text, both."""
    items: list[dict[str, object]] = []
    for question in request.questions:
        labels = [option.label for option in question.options]
        most = len(labels) if question.multi_select else 1
        selected = draw(st.lists(st.sampled_from(labels), max_size=most, unique=True))
        item: dict[str, object] = {"id": question.header, "selected": selected}
        if (question.multi_select or not selected) and draw(st.booleans()):
            item["custom"] = draw(st.sampled_from(["later", "  both  ", "\x07bell", "a\nb"]))
        items.append(item)
    return cast("AskUserQuestionAnswer", {"answers": items})


@given(harness_requests())
def test_property_any_harness_request_is_a_valid_request_of_ours(request: AskUserRequest) -> None:
    """Every request the harness accepts is one of ours, id = header, with its labels and modes."""
    ours = adapter.seam_request(request, ask_id=request.id)
    assert request_violations(ours) == []
    assert ours.get("askId") == request.id
    for question, item in zip(request.questions, ours["questions"], strict=True):
        assert item["id"] == item.get("header") == question.header
        assert [o["label"] for o in item.get("options", ())] == [o.label for o in question.options]
        assert item.get("multiSelect", False) is question.multi_select


@given(st.data())
def test_property_any_answer_of_ours_round_trips_or_is_refused(data: st.DataObject) -> None:
    """Any rule-keeping answer maps to the harness's response with the same values, or is refused.

    Refused, with the answer kept, exactly when it holds a skip, custom text
    beside labels, or custom text the harness's own check refuses.
    """
    request = data.draw(harness_requests())
    answer = data.draw(seam_answers(request))
    items = answer["answers"]
    unsayable = any(
        (not item["selected"] and "custom" not in item)
        or (item["selected"] and "custom" in item)
        or any(not (c.isprintable() or c == "\n") for c in item.get("custom", ""))
        for item in items
    )
    try:
        response = adapter.harness_response(request, answer)
    except UserInteractionError as error:
        assert unsayable, error
        assert error.code is ErrorCode.BAD_ANSWER
        assert error.answer is answer
        return
    assert not unsayable
    check_response(request, response)
    result = ask_user_result(request, response)
    assert result == {
        item["id"]: [item["custom"]] if "custom" in item else item["selected"] for item in items
    }


# --- without the framework -----------------------------------------------------------------

_HIDDEN = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == sys.argv[1]:
            raise ImportError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
try:
    import dsh_user_interaction.extra.pydantic_ai
except ImportError as error:
    print(error.name, "|", error)
"""


@pytest.mark.slow
@pytest.mark.parametrize("hidden", ["pydantic_ai", "pydantic_ai_harness"])
def test_import_without_the_framework_names_the_install_command(hidden: str) -> None:
    """Without pydantic-ai or its harness, importing the extra raises one ImportError naming pip."""
    done = subprocess.run(
        [sys.executable, "-c", _HIDDEN, hidden],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    assert done.stdout.strip() == (
        f"{hidden} | dsh_user_interaction.extra.pydantic_ai needs pydantic-ai and its harness:"
        " pip install 'dsh-user-interaction[pydantic_ai]'"
    )
