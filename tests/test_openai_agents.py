"""The OpenAI Agents SDK adapter: our tools as the SDK's, and its approval as the durable pause.

Every run is a real ``Runner.run`` with the SDK's own scripted model
(``agents.testing.ScriptedModel``): no network, no API key, tracing off.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, RunResult, RunState, ToolApprovalItem
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsh_user_interaction.extra.openai_agents as adapter
from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    ErrorCode,
    PendingAsk,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_custom,
    answer_of,
    answer_selected,
    answer_skipped,
)
from dsh_user_interaction.durable import DurableProvider, Outcome, SQLiteStore
from dsh_user_interaction.extra.openai_agents import (
    ApprovalQuestions,
    Decision,
    InterruptionError,
    ask_user_question_tool,
    exit_plan_mode_tool,
)
from dsh_user_interaction.plan_review import (
    EXIT_PLAN_MODE_TOOL,
    PLAN_APPROVED,
    PLAN_DISMISSED,
    PLAN_REVIEW_ID,
    exit_plan_mode,
)
from dsh_user_interaction.tool import ASK_USER_QUESTION_TOOL, ask_user_question
from tests.helpers import json_values, run

#: No trace export: the runs stay offline and quiet.
OFFLINE = RunConfig(tracing_disabled=True)

QUESTION = {"id": "q", "question": "Ship it?", "options": [{"label": "A"}, {"label": "B"}]}
ARGUMENTS = {"questions": [QUESTION]}
PLAN = {"plan": "# Release\n1. Tag\n2. Publish"}


def scripted(*calls: tuple[str, object, str]) -> ScriptedModel:
    """A model that calls the tools *calls* (name, arguments, call id) at once, then says done."""
    return ScriptedModel(
        [
            [
                function_call(name, cast("Any", arguments), call_id=call_id)
                for name, arguments, call_id in calls
            ],
            [assistant_message("done")],
        ]
    )


def tool_output(model: ScriptedModel, call_id: str) -> str:
    """The output of *call_id* in the model's last input: what the model read."""
    last = model.last_call
    assert last is not None
    items = cast("list[dict[str, Any]]", last.input)
    outputs = [
        item["output"]
        for item in items
        if item.get("type") == "function_call_output" and item.get("call_id") == call_id
    ]
    assert len(outputs) == 1, items
    return cast("str", outputs[0])


def service_of(provider: object) -> UserInteractionService:
    service = UserInteractionService()
    service.register_provider(cast("Any", provider))
    return service


def test_exports_match_all() -> None:
    """The front module exports exactly ``__all__``, each name defined."""
    public = {name for name in vars(adapter) if not name.startswith("_")}
    assert public == set(adapter.__all__)


@pytest.mark.slow
def test_the_subpackage_without_its_extra_names_the_extra() -> None:
    """Without the SDK, importing the adapter raises one ImportError naming the pip command."""
    prelude = "import sys; sys.modules['agents'] = None; "
    out = subprocess.run(
        [sys.executable, "-c", prelude + "import dsh_user_interaction.extra.openai_agents"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert (
        "ImportError: dsh_user_interaction.extra.openai_agents needs the OpenAI Agents SDK: "
        in out.stderr
    )
    assert "pip install 'dsh-user-interaction[openai_agents]'" in out.stderr


def test_the_tools_are_our_definitions_byte_for_byte() -> None:
    """The model sees our names, descriptions and schemas exactly; strict mode is off."""
    service = UserInteractionService()
    questions = ApprovalQuestions(service)
    pairs = [
        (ask_user_question_tool(service), ASK_USER_QUESTION_TOOL, False),
        (exit_plan_mode_tool(service), EXIT_PLAN_MODE_TOOL, False),
        (questions.ask_user_question, ASK_USER_QUESTION_TOOL, True),
        (questions.exit_plan_mode, EXIT_PLAN_MODE_TOOL, True),
    ]
    for tool, definition, gated in pairs:
        assert tool.name == definition["name"]
        assert tool.description == definition["description"]
        assert json.dumps(tool.params_json_schema) == json.dumps(definition["input_schema"])
        assert tool.strict_json_schema is False
        assert tool.needs_approval is gated
    # A copy: editing one tool's schema changes no other's, nor the definition.
    first = ask_user_question_tool(service)
    first.params_json_schema["required"].append("x")
    assert ask_user_question_tool(service).params_json_schema["required"] == ["questions"]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"answer_within": 0}, ValueError),
        ({"answer_within": "soon"}, TypeError),
        ({"recommended_defaults": True}, ValueError),
        ({"max_bytes": 0}, ValueError),
    ],
)
def test_bad_options_are_refused_when_the_tool_is_made(
    options: dict[str, Any], problem: type[Exception]
) -> None:
    """A bad option raises when the tool is built, not at the model's first call."""
    service = UserInteractionService()
    with pytest.raises(problem):
        ask_user_question_tool(service, **options)
    with pytest.raises(problem):
        ApprovalQuestions(service, **options)


def test_a_real_run_asks_and_the_model_reads_the_answer() -> None:
    """Proof: the model calls ask_user_question, a ScriptedProvider answers, the model reads it."""
    asked: list[dict[str, Any]] = []

    def respond(request: Any) -> AskUserQuestionAnswer:
        asked.append(dict(request))
        return answer_of(answer_selected("q", "B"))

    service = service_of(ScriptedProvider(respond=respond))
    model = scripted(("ask_user_question", ARGUMENTS, "call-7"))
    agent = Agent(name="planner", model=model, tools=[ask_user_question_tool(service)])
    result = run(Runner.run(agent, "go", run_config=OFFLINE))
    assert result.final_output == "done"
    assert tool_output(model, "call-7") == '{"answers":[{"id":"q","selected":["B"]}]}'
    (request,) = asked
    assert request["askId"] == "call-7"
    assert request["questions"] == [QUESTION]
    assert request["agent"] is agent


# --- The mapping table: every outcome of the seam, on both paths. ---------------------------


Act = Callable[[PendingAsk, Callable[[], None]], None]


@dataclass(frozen=True)
class Row:
    """One row of the docs' mapping table."""

    outcome: str
    tool: str
    arguments: object
    #: What the human (or the program) does with the shown ask; None: nobody is asked.
    act: Act | None
    #: What the model reads.
    text: str
    #: How the approval path decides the interruption.
    verdict: str
    answer_within: float | None = None


def _answer(answer: AskUserQuestionAnswer) -> Act:
    return lambda pending, _dispose: pending.answer(answer)


def _reject(error: BaseException) -> Act:
    return lambda pending, _dispose: pending.reject(error)


def _nothing(_pending: PendingAsk, _dispose: Callable[[], None]) -> None:
    """The human never answers: the deadline decides."""


ROWS = [
    Row(
        "answered",
        "ask_user_question",
        ARGUMENTS,
        _answer(answer_of(answer_selected("q", "A"))),
        '{"answers":[{"id":"q","selected":["A"]}]}',
        "approved",
    ),
    Row(
        "skipped",
        "ask_user_question",
        ARGUMENTS,
        _answer(answer_of(answer_skipped("q"))),
        '{"answers":[{"id":"q","selected":[]}]}',
        "approved",
    ),
    Row(
        "custom text",
        "ask_user_question",
        ARGUMENTS,
        _answer(answer_of(answer_custom("q", "after lunch"))),
        '{"answers":[{"id":"q","selected":[],"custom":"after lunch"}]}',
        "approved",
    ),
    Row(
        "dismissed",
        "ask_user_question",
        ARGUMENTS,
        lambda pending, _dispose: pending.dismiss(),
        "Error: the user cancelled ask_user_question",
        "rejected",
    ),
    Row(
        "aborted",
        "ask_user_question",
        ARGUMENTS,
        _reject(UserInteractionError.of(ErrorCode.ASK_ABORTED)),
        "Error: ask_user_question was aborted before the user answered",
        "rejected",
    ),
    Row(
        "timed out",
        "ask_user_question",
        ARGUMENTS,
        _reject(UserInteractionError.timed_out_error()),
        "Error: ask_user_question timed out before the user answered; do not assume an answer",
        "rejected",
    ),
    Row(
        "defaulted",
        "ask_user_question",
        {"questions": [{**QUESTION, "options": [{"label": "A (Recommended)"}, {"label": "B"}]}]},
        _nothing,
        '{"answers":[{"id":"q","selected":["A (Recommended)"]}],"defaulted":true,"note":'
        '"The user did not answer in time; these are the default answers the application set,'
        " not the user's choice.\"}",
        "approved",
        answer_within=0.05,
    ),
    Row(
        "provider disposed",
        "ask_user_question",
        ARGUMENTS,
        lambda _pending, dispose: dispose(),
        "Error: the user-interaction provider was disposed before the user answered",
        "undecided",
    ),
    Row(
        "refused arguments",
        "ask_user_question",
        {"questions": [{"id": "q", "question": "?"}, {"id": "q", "question": "?"}]},
        None,
        'Error: $.questions[1].id: "q" duplicates $.questions[0].id',
        "rejected",
    ),
    Row(
        "plan approved",
        "exit_plan_mode",
        PLAN,
        _answer(answer_of(answer_selected(PLAN_REVIEW_ID, "Approve"))),
        PLAN_APPROVED,
        "approved",
    ),
    Row(
        "plan kept, with feedback",
        "exit_plan_mode",
        PLAN,
        _answer(answer_of(answer_custom(PLAN_REVIEW_ID, "add a rollback"))),
        "Error: The user chose to keep planning; their feedback: add a rollback",
        "rejected",
    ),
    Row(
        "plan dismissed",
        "exit_plan_mode",
        PLAN,
        lambda pending, _dispose: pending.dismiss(),
        f"Error: {PLAN_DISMISSED}",
        "rejected",
    ),
]


async def _acting(provider: ScriptedProvider, row: Row, dispose: Callable[[], None]) -> int:
    """Play the human of *row* on the first ask; return how many asks were shown."""
    if row.act is None:
        return 0
    pending = await provider.next_ask()
    row.act(pending, dispose)
    return 1


async def _beside(
    work: Awaitable[Any], provider: ScriptedProvider, row: Row, dispose: Callable[[], None]
) -> tuple[Any, int]:
    """Run *work* while the human of *row* acts; the work's result and the asks shown."""
    task = asyncio.ensure_future(work)
    human = asyncio.ensure_future(_acting(provider, row, dispose))
    done, _ = await asyncio.wait({task, human}, return_when=asyncio.FIRST_COMPLETED)
    if task in done and not human.done():
        human.cancel()  # nobody was asked
        await asyncio.gather(human, return_exceptions=True)
        return await task, 0
    return await task, await human


def _row_setup(row: Row) -> tuple[ScriptedProvider, UserInteractionService, Callable[[], None]]:
    provider = ScriptedProvider()
    service = UserInteractionService()
    registration = service.register_provider(provider)
    return provider, service, registration.dispose


@pytest.mark.parametrize("row", ROWS, ids=[row.outcome for row in ROWS])
def test_mapping_row_on_the_direct_path(row: Row) -> None:
    """Each outcome reaches the model of a real run as the table's text (tool runs in the run)."""
    provider, service, dispose = _row_setup(row)
    if row.tool == "exit_plan_mode":
        tool = exit_plan_mode_tool(service, answer_within=row.answer_within)
    else:
        tool = ask_user_question_tool(
            service,
            answer_within=row.answer_within,
            recommended_defaults=row.answer_within is not None,
        )
    model = scripted((row.tool, row.arguments, "call-1"))
    agent = Agent(name="a", model=model, tools=[tool])
    result, shown = run(
        _beside(Runner.run(agent, "go", run_config=OFFLINE), provider, row, dispose)
    )
    assert cast("RunResult", result).final_output == "done"
    assert tool_output(model, "call-1") == row.text
    assert shown == (0 if row.act is None else 1)


@pytest.mark.parametrize("row", ROWS, ids=[row.outcome for row in ROWS])
def test_mapping_row_on_the_approval_path(row: Row) -> None:
    """Each outcome decides the interruption as the table says; the model reads the same text."""
    provider, service, dispose = _row_setup(row)
    questions = ApprovalQuestions(
        service,
        answer_within=row.answer_within,
        recommended_defaults=row.answer_within is not None and row.tool == "ask_user_question",
    )
    model = scripted((row.tool, row.arguments, "call-1"))
    agent = Agent(name="a", model=model, tools=questions.tools)

    async def main() -> tuple[list[Decision], RunResult, int]:
        first = await Runner.run(agent, "go", run_config=OFFLINE)
        assert [item.call_id for item in first.interruptions] == ["call-1"]
        state = first.to_state()
        decisions, shown = await _beside(questions.answer(state), provider, row, dispose)
        resumed = await Runner.run(agent, state, run_config=OFFLINE)
        return decisions, resumed, shown

    decisions, resumed, shown = run(main())
    assert decisions == [Decision("call-1", row.tool, cast("Any", row.verdict), row.text)]
    assert shown == (0 if row.act is None else 1)
    if row.verdict == "undecided":
        # Nothing decided: the run stops at the same interruption, to be answered later.
        assert [item.call_id for item in resumed.interruptions] == ["call-1"]
        assert resumed.final_output is None
    else:
        assert resumed.final_output == "done"
        assert tool_output(model, "call-1") == row.text
    # The approved body never asked again: one ask at most was ever shown.
    assert provider.pending == ()


def test_an_undecided_interruption_is_answered_later_and_loses_nothing() -> None:
    """An ask that reached no human leaves the run paused; a later answer() decides it."""
    provider = ScriptedProvider()
    service = UserInteractionService()
    registration = service.register_provider(provider)
    questions = ApprovalQuestions(service)
    model = scripted(("ask_user_question", ARGUMENTS, "call-1"))
    agent = Agent(name="a", model=model, tools=questions.tools)

    async def main() -> RunResult:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        registration.dispose()  # no provider: the ask reaches nobody
        (nobody,) = await questions.answer(state)
        assert nobody.verdict == "undecided"
        assert nobody.text == "Error: no user-interaction provider is registered"
        paused = await Runner.run(agent, state, run_config=OFFLINE)
        assert [item.call_id for item in paused.interruptions] == ["call-1"]
        state = paused.to_state()
        later = ScriptedProvider(respond=lambda request: answer_of(answer_selected("q", "A")))
        service.register_provider(later)
        (decision,) = await questions.answer(state)
        assert decision.verdict == "approved"
        return await Runner.run(agent, state, run_config=OFFLINE)

    assert run(main()).final_output == "done"
    assert provider.asked == 0
    assert tool_output(model, "call-1") == '{"answers":[{"id":"q","selected":["A"]}]}'


def test_a_streamed_run_pauses_and_resumes_the_same_way() -> None:
    """Runner.run_streamed: the interruption, answer(), and the resumed stream read the answer."""
    provider = ScriptedProvider(respond=lambda request: answer_of(answer_selected("q", "B")))
    questions = ApprovalQuestions(service_of(provider))
    model = scripted(("ask_user_question", ARGUMENTS, "call-1"))
    agent = Agent(name="a", model=model, tools=questions.tools)

    async def main() -> object:
        first = Runner.run_streamed(agent, "go", run_config=OFFLINE)
        async for _event in first.stream_events():
            pass
        assert [item.call_id for item in first.interruptions] == ["call-1"]
        state = first.to_state()
        (decision,) = await questions.answer(state)
        assert decision.verdict == "approved"
        resumed = Runner.run_streamed(agent, state, run_config=OFFLINE)
        async for _event in resumed.stream_events():
            pass
        return resumed.final_output

    assert run(main()) == "done"
    assert provider.asked == 1
    assert tool_output(model, "call-1") == '{"answers":[{"id":"q","selected":["B"]}]}'


def test_the_ask_is_named_by_the_call_id_on_the_approval_path() -> None:
    """answer() asks with askId = the interruption's call_id, and each call once."""
    seen: list[str] = []

    def respond(request: Any) -> AskUserQuestionAnswer:
        seen.append(request["askId"])
        return answer_of(answer_selected("q", "A"))

    questions = ApprovalQuestions(service_of(ScriptedProvider(respond=respond)))
    model = scripted(
        ("ask_user_question", ARGUMENTS, "call-a"), ("ask_user_question", ARGUMENTS, "call-b")
    )
    agent = Agent(name="a", model=model, tools=questions.tools)

    async def main() -> RunResult:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        decisions = await questions.answer(state)
        assert [d.verdict for d in decisions] == ["approved", "approved"]
        assert await questions.answer(state) == []  # decided already: nothing asked again
        return await Runner.run(agent, state, run_config=OFFLINE)

    result = run(main())
    assert result.final_output == "done"
    assert sorted(seen) == ["call-a", "call-b"]
    assert tool_output(model, "call-b") == '{"answers":[{"id":"q","selected":["A"]}]}'


def test_a_named_call_that_is_unknown_or_decided_is_refused() -> None:
    """An unknown call id, a decided one, or a string for call_ids: a clear error, nothing asked."""
    provider = ScriptedProvider(respond=lambda request: answer_of(answer_selected("q", "A")))
    questions = ApprovalQuestions(service_of(provider))
    agent = Agent(
        name="a", model=scripted(("ask_user_question", ARGUMENTS, "call-1")), tools=questions.tools
    )

    async def main() -> None:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        with pytest.raises(
            InterruptionError,
            match=r"no pending call has the call_id 'call-9' \(pending: 'call-1'\)",
        ) as caught:
            await questions.answer(state, call_ids=["call-9"])
        assert caught.value.call_id == "call-9"
        with pytest.raises(TypeError, match="call_ids must be a collection"):
            await questions.answer(state, call_ids="call-1")
        (decision,) = await questions.answer(state, call_ids=["call-1"])
        assert decision.verdict == "approved"
        with pytest.raises(InterruptionError, match="'call-1' was approved already"):
            await questions.answer(state, call_ids=["call-1"])

    run(main())


def test_a_call_being_asked_is_not_asked_again_meanwhile() -> None:
    """While answer() waits on a call, a second answer() skips it, or refuses it by name."""
    provider = ScriptedProvider()
    questions = ApprovalQuestions(service_of(provider))
    model = scripted(("ask_user_question", ARGUMENTS, "call-1"))
    agent = Agent(name="a", model=model, tools=questions.tools)

    async def main() -> list[Decision]:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        first = asyncio.ensure_future(questions.answer(state))
        shown = await provider.next_ask()
        assert await questions.answer(state) == []
        with pytest.raises(InterruptionError, match="'call-1' is being asked already"):
            await questions.answer(state, call_ids=["call-1"])
        shown.answer(answer_of(answer_selected("q", "A")))
        return await first

    (decision,) = run(main())
    assert decision.verdict == "approved"
    assert provider.asked == 1


def test_an_interruption_of_another_objects_tool_is_refused() -> None:
    """Interruptions for tools this object did not make are refused, not answered by guess."""
    theirs = ApprovalQuestions(UserInteractionService())
    mine = ApprovalQuestions(UserInteractionService())
    agent = Agent(name="a", model=scripted(("exit_plan_mode", PLAN, "call-1")), tools=theirs.tools)

    async def main() -> None:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        with pytest.raises(InterruptionError, match="did not make") as caught:
            await mine.answer(state)
        assert caught.value.call_id == "call-1"
        assert [q.call_id for q in theirs.pending(state)] == ["call-1"]

    run(main())


def test_other_tools_interruptions_are_left_alone() -> None:
    """An approval-gated tool of the application's own is not ours to answer."""

    async def deploy(_context: ToolContext[Any], _arguments: str) -> str:
        return "deployed"

    other = FunctionTool(
        name="deploy",
        description="Deploy.",
        params_json_schema={"type": "object", "properties": {}},
        on_invoke_tool=deploy,
        strict_json_schema=False,
        needs_approval=True,
    )
    questions = ApprovalQuestions(UserInteractionService())
    agent = Agent(
        name="a", model=scripted(("deploy", {}, "call-1")), tools=[*questions.tools, other]
    )

    async def main() -> None:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        assert questions.pending(state) == []
        assert await questions.answer(state) == []
        assert [item.call_id for item in state.get_interruptions()] == ["call-1"]

    run(main())


class _Interrupted:
    """A state whose interruptions are given: what the SDK never builds, but a caller might."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def get_interruptions(self) -> list[Any]:
        return self._items


def test_two_interruptions_with_one_call_id_are_refused() -> None:
    """One call id cannot name two asks: refused before anything is asked."""
    questions = ApprovalQuestions(UserInteractionService())
    model = scripted(("ask_user_question", ARGUMENTS, "call-1"))
    agent = Agent(name="a", model=model, tools=questions.tools)
    state = run(Runner.run(agent, "go", run_config=OFFLINE)).to_state()
    (item,) = state.get_interruptions()
    twice = cast("RunState[Any, Any]", _Interrupted([item, item]))
    with pytest.raises(InterruptionError, match="two interruptions have the call_id 'call-1'"):
        questions.pending(twice)
    with pytest.raises(InterruptionError, match="two interruptions"):
        run(questions.answer(twice))


def test_an_interruption_without_a_call_id_is_refused() -> None:
    """An interruption that cannot name its ask is refused, by pending() and by review()."""
    questions = ApprovalQuestions(UserInteractionService())
    agent = Agent(name="a", tools=questions.tools)
    raw = {"type": "function_call", "name": "deploy", "arguments": "{}"}
    nameless = cast(
        "RunState[Any, Any]", _Interrupted([ToolApprovalItem(agent=agent, raw_item=raw)])
    )
    with pytest.raises(InterruptionError, match="an interruption of deploy has no call_id"):
        questions.pending(nameless)
    with pytest.raises(InterruptionError, match="has no call_id"):
        run(questions.review(nameless))


def test_the_state_survives_json_and_a_durable_store_across_a_restart(tmp_path: Path) -> None:
    """In one process, a 'restart': the run's JSON and the store carry the ask; asked once."""
    database = str(tmp_path / "asks.db")
    arguments_model = scripted(("ask_user_question", ARGUMENTS, "call-1"))

    async def first_life() -> dict[str, Any]:
        async with SQLiteStore(database) as store:
            questions = ApprovalQuestions(service_of(DurableProvider(store)))
            agent = Agent(name="a", model=arguments_model, tools=questions.tools)
            state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
            saved = state.to_json()
            waiting = asyncio.ensure_future(questions.answer(state))
            async for record in store.watch():
                assert record.ask_id == "call-1"
                break  # the ask is kept: the human may answer from anywhere now
            waiting.cancel()  # the process goes away while the human thinks
            await asyncio.gather(waiting, return_exceptions=True)
            return saved

    saved = run(first_life())

    async def human() -> None:
        async with SQLiteStore(database) as store:
            (record,) = await store.pending()
            assert record.ask_id == "call-1"
            answer = answer_of(answer_custom("q", "tomorrow"))
            await store.settle("call-1", Outcome.answered(answer, via="test"), settled_at=0.0)

    run(human())
    second_model = ScriptedModel([[assistant_message("done")]])

    async def second_life() -> RunResult:
        async with SQLiteStore(database) as store:
            questions = ApprovalQuestions(service_of(DurableProvider(store)))
            agent = Agent(name="a", model=second_model, tools=questions.tools)
            state = await RunState.from_json(agent, saved)
            (decision,) = await questions.answer(state)
            assert decision.verdict == "approved"
            result = await Runner.run(agent, state, run_config=OFFLINE)
            assert len(await store.pending()) == 0
            return result

    result = run(second_life())
    assert result.final_output == "done"
    assert tool_output(second_model, "call-1") == (
        '{"answers":[{"id":"q","selected":[],"custom":"tomorrow"}]}'
    )


def test_a_state_saved_after_approval_resumes_elsewhere_without_asking_again(
    tmp_path: Path,
) -> None:
    """Approved, saved, resumed by a new object: the body takes the store's answer; one ask kept."""
    database = str(tmp_path / "asks.db")
    first_model = scripted(("ask_user_question", ARGUMENTS, "call-1"))

    async def first_life() -> dict[str, Any]:
        async with SQLiteStore(database) as store:
            questions = ApprovalQuestions(service_of(DurableProvider(store)))
            agent = Agent(name="a", model=first_model, tools=questions.tools)
            state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
            answering = asyncio.ensure_future(questions.answer(state))
            async for record in store.watch():
                if record.pending:
                    answer = answer_of(answer_selected("q", "B"))
                    await store.settle("call-1", Outcome.answered(answer), settled_at=0.0)
                    break
            (decision,) = await answering
            assert decision.verdict == "approved"
            return state.to_json()  # saved after the approval, before the body ran

    saved = run(first_life())
    second_model = ScriptedModel([[assistant_message("done")]])

    async def second_life() -> RunResult:
        async with SQLiteStore(database) as store:
            questions = ApprovalQuestions(service_of(DurableProvider(store)))
            agent = Agent(name="a", model=second_model, tools=questions.tools)
            state = await RunState.from_json(agent, saved)
            return await Runner.run(agent, state, run_config=OFFLINE)

    assert run(second_life()).final_output == "done"
    assert tool_output(second_model, "call-1") == '{"answers":[{"id":"q","selected":["B"]}]}'

    async def records() -> list[tuple[str, str]]:
        async with SQLiteStore(database) as store:
            return [(record.ask_id, record.state) for record in await store.records()]

    assert run(records()) == [("call-1", "answered")]


def test_a_body_approved_by_hand_asks_with_the_call_id() -> None:
    """Approved without answer() (by hand, or resumed elsewhere), the body asks, named by call id."""
    asked: list[str] = []

    def respond(request: Any) -> AskUserQuestionAnswer:
        asked.append(request["askId"])
        return answer_of(answer_selected("q", "B"))

    questions = ApprovalQuestions(service_of(ScriptedProvider(respond=respond)))
    model = scripted(("ask_user_question", ARGUMENTS, "call-3"))
    agent = Agent(name="a", model=model, tools=questions.tools)

    async def main() -> RunResult:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        (item,) = state.get_interruptions()
        state.approve(item)
        return await Runner.run(agent, state, run_config=OFFLINE)

    assert run(main()).final_output == "done"
    assert asked == ["call-3"]
    assert tool_output(model, "call-3") == '{"answers":[{"id":"q","selected":["B"]}]}'


# --- The other way: the SDK's approval of any tool, shown by our providers. ---------------


async def _deploy(_context: ToolContext[Any], arguments: str) -> str:
    return f"deployed to {json.loads(arguments)['env']}"


def _deploy_tool() -> FunctionTool:
    return FunctionTool(
        name="deploy",
        description="Deploy the app.",
        params_json_schema={"type": "object", "properties": {"env": {"type": "string"}}},
        on_invoke_tool=_deploy,
        strict_json_schema=False,
        needs_approval=True,
    )


def _approval(label: str) -> Act:
    return _answer(answer_of(answer_selected(adapter.REVIEW_ID, label)))


REVIEW_ROWS = [
    Row(
        "approved", "deploy", {"env": "prod"}, _approval("Approve"), "deployed to prod", "approved"
    ),
    Row(
        "rejected",
        "deploy",
        {"env": "prod"},
        _approval("Reject"),
        adapter.REVIEW_REJECTED,
        "rejected",
    ),
    Row(
        "custom text (a reason)",
        "deploy",
        {"env": "prod"},
        _answer(answer_of(answer_custom(adapter.REVIEW_ID, "not on Friday"))),
        "not on Friday",
        "rejected",
    ),
    Row(
        "skipped",
        "deploy",
        {"env": "prod"},
        _answer(answer_of(answer_skipped(adapter.REVIEW_ID))),
        "the review was skipped: neither approved nor rejected",
        "undecided",
    ),
    Row(
        "dismissed",
        "deploy",
        {"env": "prod"},
        lambda pending, _dispose: pending.dismiss(),
        adapter.REVIEW_DISMISSED,
        "rejected",
    ),
    Row(
        "aborted",
        "deploy",
        {"env": "prod"},
        _reject(UserInteractionError.of(ErrorCode.ASK_ABORTED)),
        adapter.REVIEW_ABORTED,
        "rejected",
    ),
    Row(
        "timed out",
        "deploy",
        {"env": "prod"},
        _reject(UserInteractionError.timed_out_error()),
        adapter.REVIEW_TIMED_OUT,
        "rejected",
    ),
    Row(
        "timed out by answer_within",
        "deploy",
        {"env": "prod"},
        _nothing,
        adapter.REVIEW_TIMED_OUT,
        "rejected",
        answer_within=0.05,
    ),
    Row(
        "provider disposed",
        "deploy",
        {"env": "prod"},
        lambda _pending, dispose: dispose(),
        "the user-interaction provider was disposed before the user answered",
        "undecided",
    ),
    Row(
        "an answer that breaks the rules",
        "deploy",
        {"env": "prod"},
        _approval("Ship"),
        "the provider's answer breaks ANS-SEL-3",
        "undecided",
    ),
]


@pytest.mark.parametrize("row", REVIEW_ROWS, ids=[row.outcome for row in REVIEW_ROWS])
def test_review_row(row: Row) -> None:
    """Each outcome of a review decides the app's own tool call as the table says."""
    provider, service, dispose = _row_setup(row)
    questions = ApprovalQuestions(service, answer_within=row.answer_within)
    model = scripted((row.tool, row.arguments, "call-1"))
    agent = Agent(name="a", model=model, tools=[*questions.tools, _deploy_tool()])

    async def main() -> tuple[list[Decision], RunResult, int]:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        assert questions.pending(state) == []
        assert [q.call_id for q in questions.approvals(state)] == ["call-1"]
        decisions, shown = await _beside(questions.review(state), provider, row, dispose)
        return decisions, await Runner.run(agent, state, run_config=OFFLINE), shown

    decisions, resumed, shown = run(main())
    assert shown == 1
    (decision,) = decisions
    assert (decision.call_id, decision.tool_name, decision.verdict) == (
        "call-1",
        "deploy",
        row.verdict,
    )
    if row.verdict == "undecided":
        assert row.text in decision.text
        assert [item.call_id for item in resumed.interruptions] == ["call-1"]
    else:
        assert decision.text == ("" if row.verdict == "approved" else row.text)
        assert resumed.final_output == "done"
        assert tool_output(model, "call-1") == row.text


def test_a_review_shows_the_call_and_names_the_ask_by_call_id() -> None:
    """The reviewed call's name and arguments reach the provider, asked by its call id, once."""
    seen: list[dict[str, Any]] = []

    def respond(request: Any) -> AskUserQuestionAnswer:
        seen.append(dict(request))
        return answer_of(answer_selected(adapter.REVIEW_ID, "Approve"))

    questions = ApprovalQuestions(service_of(ScriptedProvider(respond=respond)))
    model = scripted(("deploy", {"env": "prod"}, "call-4"))
    agent = Agent(name="deployer", model=model, tools=[_deploy_tool()])

    async def main() -> None:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        await questions.review(state)
        assert await questions.review(state) == []  # decided: not shown again
        with pytest.raises(InterruptionError, match="'call-4' was approved already"):
            await questions.review(state, call_ids=["call-4"])

    run(main())
    (request,) = seen
    assert request["askId"] == "call-4"
    assert request["agent"] is agent
    assert request["questions"] == [
        adapter.review_question("deploy", '{"env":"prod"}'),
    ]
    assert request["questions"][0]["detail"] == '```json\n{\n  "env": "prod"\n}\n```'


def test_a_call_too_large_to_show_is_left_undecided() -> None:
    """Arguments beyond max_bytes are never shown cut short: the review decides nothing."""
    provider = ScriptedProvider()
    questions = ApprovalQuestions(service_of(provider), max_bytes=64)
    model = scripted(("deploy", {"env": "x" * 80}, "call-1"))
    agent = Agent(name="a", model=model, tools=[_deploy_tool()])

    async def main() -> list[Decision]:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        return await questions.review(state)

    (decision,) = run(main())
    assert decision.verdict == "undecided"
    assert decision.text == (
        "the call's arguments are 90 bytes, more than max_bytes (64): too large to show for review"
    )
    assert provider.asked == 0


@pytest.mark.parametrize(
    ("arguments", "detail"),
    [("", None), ("not json", "```json\nnot json\n```"), ('"\u00e9"', '```json\n"\u00e9"\n```')],
)
def test_the_review_question_shows_the_arguments_as_they_are(
    arguments: str, detail: str | None
) -> None:
    """No arguments, no detail; text that is not JSON is shown as it came."""
    question = adapter.review_question("deploy", arguments)
    assert question.get("detail") == detail


# --- Properties: the SDK tool says exactly what our tool function says. --------------------

_labels = st.text(min_size=0, max_size=6)
_questions = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", ""]), "question": _labels},
    optional={
        "header": _labels,
        "options": st.lists(st.fixed_dictionaries({"label": _labels}), max_size=3),
        "multi_select": st.booleans(),
    },
)
_arguments = st.one_of(
    st.fixed_dictionaries({"questions": st.lists(_questions, max_size=3)}),
    json_values,
)


def _first_options(request: Any) -> AskUserQuestionAnswer:
    """Pick each question's first option, or skip it."""
    items: list[AskUserQuestionAnswerItem] = []
    for question in cast("list[dict[str, Any]]", request["questions"]):
        options = cast("list[dict[str, str]]", question.get("options") or [])
        if options:
            items.append(answer_selected(question["id"], options[0]["label"]))
        else:
            items.append(answer_skipped(question["id"]))
    return answer_of(*items)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=_arguments)
def test_the_sdk_tool_says_what_the_tool_function_says(arguments: object) -> None:
    """For any arguments a model sends, the SDK tool's output is our tool's text, asked by call id."""
    text = json.dumps(arguments)
    asked: list[str] = []

    def respond(request: Any) -> AskUserQuestionAnswer:
        asked.append(request["askId"])
        return _first_options(request)

    service = service_of(ScriptedProvider(respond=respond))
    tool = ask_user_question_tool(service)
    context = ToolContext(
        context=None, tool_name="ask_user_question", tool_call_id="call-5", tool_arguments=text
    )

    async def both() -> tuple[object, str]:
        through_sdk = await tool.on_invoke_tool(context, text)
        expected = await ask_user_question(service, text, ask_id="call-5")
        return through_sdk, expected.text

    through_sdk, expected = run(both())
    assert through_sdk == expected
    assert set(asked) <= {"call-5"}
    assert len(asked) in (0, 2)  # asked by each, or refused by both


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=_arguments)
def test_the_approval_path_tells_the_model_what_the_direct_path_does(arguments: object) -> None:
    """For any arguments, answer() decides by our tool's outcome and the model reads its text."""
    text = json.dumps(arguments)
    service = service_of(ScriptedProvider(respond=_first_options))
    questions = ApprovalQuestions(service)
    model = scripted(("ask_user_question", text, "call-1"))
    agent = Agent(name="a", model=model, tools=questions.tools)

    async def main() -> tuple[Decision, str]:
        state = (await Runner.run(agent, "go", run_config=OFFLINE)).to_state()
        (decision,) = await questions.answer(state)
        await Runner.run(agent, state, run_config=OFFLINE)
        expected = await ask_user_question(service, text, ask_id="call-1")
        return decision, expected.text

    decision, expected = run(main())
    assert decision.text == expected
    assert decision.verdict == ("rejected" if expected.startswith("Error: ") else "approved")
    assert tool_output(model, "call-1") == expected


_review_items = st.fixed_dictionaries(
    {
        "id": st.sampled_from([adapter.REVIEW_ID, "other"]),
        "selected": st.lists(st.sampled_from(["Approve", "Reject", "x"]), max_size=2),
    },
    optional={"custom": st.text(max_size=4)},
)
_review_answers = st.one_of(
    st.fixed_dictionaries({"answers": st.lists(_review_items, max_size=2)}), json_values
)


@given(answer=_review_answers)
def test_only_an_exact_approve_approves_a_review(answer: object) -> None:
    """For any answer, review_outcome never raises, and approves only ``[Approve]`` without text."""
    verdict, text = adapter.review_outcome(answer, None)
    items = cast("dict[str, Any]", answer).get("answers") if isinstance(answer, dict) else None
    listed = cast("list[object]", items) if isinstance(items, list) else []
    mine = [
        cast("dict[str, Any]", item)
        for item in listed
        if isinstance(item, dict) and cast("dict[str, Any]", item).get("id") == adapter.REVIEW_ID
    ]
    first = mine[0] if mine else None
    custom = first.get("custom") if first is not None else None
    has_words = isinstance(custom, str) and bool(custom.strip())
    if verdict == "approved":
        assert first is not None
        assert first["selected"] == ["Approve"]
        assert not has_words
        assert text == ""
    elif verdict == "rejected":
        assert first is not None
        assert text == (custom if has_words else adapter.REVIEW_REJECTED)
    else:
        assert first is None or (
            not has_words and first.get("selected") not in (["Approve"], ["Reject"])
        )


@settings(max_examples=40, deadline=None)
@given(plan=st.one_of(st.text(max_size=12).map(lambda text: {"plan": text}), json_values))
def test_the_sdk_plan_tool_says_what_the_tool_function_says(plan: object) -> None:
    """For any arguments, the SDK's exit_plan_mode says what our exit_plan_mode says."""
    text = json.dumps(plan)
    service = service_of(ScriptedProvider(respond=_first_options))
    tool = exit_plan_mode_tool(service)
    context = ToolContext(
        context=None, tool_name="exit_plan_mode", tool_call_id="call-5", tool_arguments=text
    )

    async def both() -> tuple[object, str]:
        through_sdk = await tool.on_invoke_tool(context, text)
        expected = await exit_plan_mode(service, text, ask_id="call-5")
        return through_sdk, expected.text

    through_sdk, expected = run(both())
    assert through_sdk == expected
