"""The LangGraph and LangChain adapter: pauses, resumes, tools, reviews, and every mapping row."""

from __future__ import annotations

import asyncio
import importlib
import json
import pkgutil
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import END, START
from langgraph.types import Command, StateSnapshot, interrupt
from pydantic import Field
from typing_extensions import TypedDict, override

import dsh_user_interaction.extra.langgraph as adapter
from dsh_user_interaction import (
    MESSAGES,
    TIMED_OUT_MESSAGE,
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    DefaultAnswer,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_custom,
    answer_of,
    answer_selected,
    answer_skipped,
    check_request,
)
from dsh_user_interaction._tool import DEFAULTED_NOTE
from dsh_user_interaction.extra.langgraph import (
    INTERRUPT_KIND,
    AskUserQuestionTool,
    ExitPlanModeTool,
    InterruptNotPending,
    InterruptProvider,
    answer_hitl,
    answer_interrupts,
    answer_of_resume,
    ask_id_for,
    checked_resume,
    hitl_decisions,
    hitl_questions,
    resume_command,
    resume_value,
)
from dsh_user_interaction.plan_review import PLAN_APPROVED, PLAN_REVIEW_ID
from dsh_user_interaction.tool import openai_tool
from tests.helpers import json_values, run

# ---------------------------------------------------------------------------
# The framework's own test model, and a graph that pauses through our provider.


class Graph(Protocol):
    """What the tests use of a compiled graph or agent."""

    async def ainvoke(self, input: object, config: RunnableConfig, /) -> dict[str, Any]:
        """Run, or resume, until the end or the next pause."""
        ...

    def invoke(self, input: object, config: RunnableConfig, /) -> dict[str, Any]:
        """Run synchronously."""
        ...

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The run's current state."""
        ...

    def aget_state_history(self, config: RunnableConfig) -> AsyncIterator[StateSnapshot]:
        """The run's past states."""
        ...


#: LangChain's ``create_agent``, typed by what the tests use of its result (its own signature
#: holds LangGraph's checkpointer type, generic without a default: partly unknown to pyright).
create_agent = cast(
    "Callable[..., Graph]", importlib.import_module("langchain.agents").create_agent
)
#: LangGraph's graph builder, used through its documented methods only; pyright finds no
#: types for ``langgraph.graph``.
StateGraph: Callable[[type[Any]], Any] = importlib.import_module("langgraph.graph").StateGraph


def compiled(state: type[Any], nodes: dict[str, Callable[..., Any]]) -> Graph:
    """A graph of *nodes* run in a row on *state*, with an in-memory checkpointer."""
    builder: Any = StateGraph(state)
    previous = START
    for name, node in nodes.items():
        builder.add_node(name, node)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return cast("Graph", builder.compile(checkpointer=InMemorySaver()))


class ScriptedChatModel(FakeMessagesListChatModel):
    """LangChain's list-of-messages test model, which binds tools and records its inputs."""

    #: Every list of messages the model was called with, in order.
    seen: list[list[BaseMessage]] = Field(default_factory=list[list[BaseMessage]])

    @override
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return cast("Runnable[LanguageModelInput, AIMessage]", self)

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    @override
    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> AIMessage:
    """A model turn that calls one tool."""
    return AIMessage(content="", tool_calls=[ToolCall(name=name, args=args, id=call_id)])


QUESTION_ARGS: dict[str, Any] = {
    "questions": [
        {
            "id": "q",
            "question": "Deploy now?",
            "options": [{"label": "Yes (Recommended)"}, {"label": "No"}],
        }
    ]
}
#: The request our tool builds from QUESTION_ARGS, as LangGraph's interrupt carries it.
ASKED_QUESTIONS: list[AskUserQuestionItem] = [
    {
        "id": "q",
        "question": "Deploy now?",
        "options": [{"label": "Yes (Recommended)"}, {"label": "No"}],
    }
]


def pausing_service() -> UserInteractionService:
    """A service whose asks pause the graph they run in."""
    service = UserInteractionService()
    service.register_provider(InterruptProvider())
    return service


def config(thread: str = "thread-1") -> RunnableConfig:
    """A run's config on *thread*."""
    return {"configurable": {"thread_id": thread}}


class Human:
    """An answering service that ends every ask with one fixed outcome and records the asks."""

    def __init__(self, outcome: AskUserQuestionAnswer | UserInteractionError) -> None:
        self.outcome = outcome
        self.requests: list[AskUserQuestionRequest[Any]] = []

    async def ask(self, request: AskUserQuestionRequest[Any], /) -> AskUserQuestionAnswer:
        """Record *request*; return or raise the outcome."""
        self.requests.append(request)
        if isinstance(self.outcome, UserInteractionError):
            raise self.outcome
        return self.outcome


def scripted(
    respond: Callable[[AskUserQuestionRequest[Any]], AskUserQuestionAnswer],
) -> tuple[UserInteractionService, list[AskUserQuestionRequest[Any]]]:
    """A service with a ``ScriptedProvider`` answering by *respond*, and the requests it saw."""
    seen: list[AskUserQuestionRequest[Any]] = []

    def answer(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(request)
        return respond(request)

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=answer))
    return service, seen


def question_agent(model: ScriptedChatModel, **tool_options: Any) -> Graph:
    """A ``create_agent`` agent with our ``ask_user_question`` tool, pausing through LangGraph."""
    return create_agent(
        model,
        [AskUserQuestionTool(service=pausing_service(), **tool_options)],
        checkpointer=InMemorySaver(),
    )


def tool_messages(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """The tool messages among *messages*."""
    return [m for m in messages if isinstance(m, ToolMessage)]


# ---------------------------------------------------------------------------
# The package's front.


def test_exports_match_all() -> None:
    """The front module exports exactly its ``__all__``, all from private modules of its own."""
    # The public ``testing`` module is an attribute of the package once imported.
    public = {name for name in vars(adapter) if not name.startswith("_")} - {"testing"}
    assert public == set(adapter.__all__)
    for name in adapter.__all__:
        module = getattr(getattr(adapter, name), "__module__", None)
        if module is not None and module.startswith("dsh_user_interaction"):
            assert module.startswith("dsh_user_interaction.extra.langgraph._"), (name, module)
    submodules = {info.name for info in pkgutil.iter_modules(adapter.__path__)}
    assert {name for name in submodules if not name.startswith("_")} == {"testing"}


@pytest.mark.parametrize("hidden", ["langgraph.types", "langchain.agents"])
def test_without_the_frameworks_the_import_names_the_extra(
    hidden: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing the adapter without LangGraph or LangChain raises one ImportError naming the pip extra."""
    monkeypatch.setitem(sys.modules, hidden, cast("Any", None))
    monkeypatch.delitem(sys.modules, "dsh_user_interaction.extra.langgraph")
    with pytest.raises(ImportError, match=r"pip install 'dsh-user-interaction\[langgraph\]'"):
        importlib.import_module("dsh_user_interaction.extra.langgraph")


def test_tools_show_the_package_schemas_byte_for_byte() -> None:
    """Both tools reach a model with the package's own definitions, unchanged."""
    service = pausing_service()
    question = convert_to_openai_tool(AskUserQuestionTool(service=service))
    assert question == openai_tool()
    from dsh_user_interaction.plan_review import EXIT_PLAN_MODE_TOOL

    plan = convert_to_openai_tool(ExitPlanModeTool(service=service))
    assert plan == openai_tool(EXIT_PLAN_MODE_TOOL)


# ---------------------------------------------------------------------------
# The proof: a real agent loop, paused by our tool, answered by a ScriptedProvider.


def test_agent_pauses_on_the_question_and_the_model_reads_the_answer() -> None:
    """``create_agent`` pauses on ``ask_user_question``; the answer reaches the model as a ToolMessage."""
    model = ScriptedChatModel(
        responses=[call("ask_user_question", QUESTION_ARGS), AIMessage(content="deploying")]
    )
    agent = question_agent(model)
    human, seen = scripted(lambda request: answer_of(answer_selected("q", "No")))

    async def main() -> dict[str, Any]:
        paused = await agent.ainvoke({"messages": [("user", "ship it")]}, config())
        (pending,) = paused["__interrupt__"]
        assert pending.value == {
            "kind": INTERRUPT_KIND,
            "request": {"questions": ASKED_QUESTIONS, "askId": "call_1"},
        }
        command = await resume_command(agent, config(), human)
        assert command is not None
        assert await resume_command(agent, config(), human) is not None  # still paused
        return await agent.ainvoke(command, config())

    finished = run(main())
    assert finished["messages"][-1].content == "deploying"
    # The model's second call got the answer, in LangChain's shape, for its own call.
    (answer,) = tool_messages(model.seen[1])
    assert answer.tool_call_id == "call_1"
    assert answer.status == "success"
    assert answer.content == '{"answers":[{"id":"q","selected":["No"]}]}'
    # The human was asked the model's question, under the tool call's id, twice (two
    # resume_command calls) and never with another id.
    assert [request["questions"] for request in seen] == [ASKED_QUESTIONS, ASKED_QUESTIONS]
    assert {cast("dict[str, Any]", request)["askId"] for request in seen} == {"call_1"}
    assert run(resume_command(agent, config(), human)) is None  # nothing pending any more


# ---------------------------------------------------------------------------
# Every row of the mapping table, through the agent loop.

DEFAULTED: AskUserQuestionAnswer = {
    "answers": [{"id": "q", "selected": ["Yes (Recommended)"]}],
    "defaulted": True,
}

#: (row, the answering service's outcome, the resume value, the model's text, the status)
ROWS: list[tuple[str, AskUserQuestionAnswer | UserInteractionError, object, str, str]] = [
    (
        "answered",
        answer_of(answer_selected("q", "No")),
        {"outcome": "answered", "answer": {"answers": [{"id": "q", "selected": ["No"]}]}},
        '{"answers":[{"id":"q","selected":["No"]}]}',
        "success",
    ),
    (
        "skipped",
        answer_of(answer_skipped("q")),
        {"outcome": "answered", "answer": {"answers": [{"id": "q", "selected": []}]}},
        '{"answers":[{"id":"q","selected":[]}]}',
        "success",
    ),
    (
        "custom text",
        answer_of(answer_custom("q", "after lunch")),
        {
            "outcome": "answered",
            "answer": {"answers": [{"id": "q", "selected": [], "custom": "after lunch"}]},
        },
        '{"answers":[{"id":"q","selected":[],"custom":"after lunch"}]}',
        "success",
    ),
    (
        "defaulted",
        DEFAULTED,
        {"outcome": "answered", "answer": DEFAULTED},
        '{"answers":[{"id":"q","selected":["Yes (Recommended)"]}],"defaulted":true,'
        f'"note":{json.dumps(DEFAULTED_NOTE)}}}',
        "success",
    ),
    (
        "dismissed",
        UserInteractionError.of(ErrorCode.ASK_CANCELLED),
        {"outcome": "dismissed"},
        f"Error: {MESSAGES[ErrorCode.ASK_CANCELLED]}",
        "error",
    ),
    (
        "aborted",
        UserInteractionError.of(ErrorCode.ASK_ABORTED),
        {"outcome": "aborted"},
        f"Error: {MESSAGES[ErrorCode.ASK_ABORTED]}",
        "error",
    ),
    (
        "timed out",
        UserInteractionError.timed_out_error(),
        {"outcome": "timed_out"},
        f"Error: {TIMED_OUT_MESSAGE}",
        "error",
    ),
    (
        "provider disposed",
        UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED),
        {"outcome": "provider_disposed"},
        f"Error: {MESSAGES[ErrorCode.PROVIDER_DISPOSED]}",
        "error",
    ),
]


@pytest.mark.parametrize(
    ("row", "outcome", "resume", "text", "status"), ROWS, ids=[r[0] for r in ROWS]
)
def test_each_outcome_maps_to_its_resume_value_and_tool_message(
    row: str,
    outcome: AskUserQuestionAnswer | UserInteractionError,
    resume: object,
    text: str,
    status: str,
) -> None:
    """Each outcome of the seam resumes the run with its value; the model reads the tool's text."""
    model = ScriptedChatModel(
        responses=[call("ask_user_question", QUESTION_ARGS), AIMessage(content="ok")]
    )
    agent = question_agent(model, answer_within=3600.0, recommended_defaults=True)
    human = Human(outcome)

    async def main() -> None:
        await agent.ainvoke({"messages": [("user", "go")]}, config())
        command = await resume_command(agent, config(), human)
        assert command is not None
        assert list(cast("dict[str, object]", command.resume).values()) == [resume], row
        await agent.ainvoke(command, config())

    run(main())
    (message,) = tool_messages(model.seen[1])
    assert (message.content, message.status) == (text, status)
    # The default is the application's: the resumed request carries it, from its deadline.
    (request,) = human.requests
    recommended: DefaultAnswer = {"selected": ["Yes (Recommended)"]}
    assert request["questions"][0].get("default") == recommended


@pytest.mark.parametrize(
    ("row", "outcome", "resume", "text", "status"), ROWS, ids=[r[0] for r in ROWS]
)
def test_each_resume_value_reads_back_as_its_outcome(
    row: str,
    outcome: AskUserQuestionAnswer | UserInteractionError,
    resume: object,
    text: str,
    status: str,
) -> None:
    """``resume_value`` and ``answer_of_resume`` are inverse for every row (defaults: see below)."""
    assert resume_value(outcome) == resume
    request: AskUserQuestionRequest[Any] = {"questions": ASKED_QUESTIONS}
    if isinstance(outcome, UserInteractionError):
        with pytest.raises(UserInteractionError) as raised:
            answer_of_resume(resume, request)
        assert (raised.value.code, raised.value.timed_out) == (outcome.code, outcome.timed_out)
    elif outcome.get("defaulted"):
        # The defaults are the service's to give: the provider says the deadline passed.
        with pytest.raises(UserInteractionError) as raised:
            answer_of_resume(resume, request)
        assert raised.value.timed_out
        assert raised.value.deadline_passed
    else:
        assert answer_of_resume(resume, request) == outcome


def test_an_error_that_ends_no_ask_propagates_and_the_run_stays_paused() -> None:
    """A store failure on the answering side builds no resume: the run stays paused, nothing lost."""
    model = ScriptedChatModel(responses=[call("ask_user_question", QUESTION_ARGS)])
    agent = question_agent(model)
    failing = Human(UserInteractionError("disk full", ErrorCode.STORE_FAILED))

    async def main() -> None:
        await agent.ainvoke({"messages": [("user", "go")]}, config())
        with pytest.raises(UserInteractionError) as raised:
            await resume_command(agent, config(), failing)
        assert raised.value.code is ErrorCode.STORE_FAILED
        assert len((await agent.aget_state(config())).interrupts) == 1

    run(main())
    with pytest.raises(ValueError, match="no ask"):
        resume_value(UserInteractionError("disk full", ErrorCode.STORE_FAILED))


def test_the_tool_asks_any_provider_in_process_without_pausing() -> None:
    """With an ordinary provider behind it, the tool asks at once, named by the tool call's id."""
    human, seen = scripted(lambda request: answer_of(answer_custom("q", "at five")))
    model = ScriptedChatModel(
        responses=[call("ask_user_question", QUESTION_ARGS, "call_9"), AIMessage(content="ok")]
    )
    agent = create_agent(model, [AskUserQuestionTool(service=human)], checkpointer=InMemorySaver())
    finished = run(agent.ainvoke({"messages": [("user", "go")]}, config()))
    assert "__interrupt__" not in finished
    (message,) = tool_messages(model.seen[1])
    assert message.content == '{"answers":[{"id":"q","selected":[],"custom":"at five"}]}'
    (request,) = seen
    assert cast("dict[str, Any]", request)["askId"] == "call_9"


def test_a_scripted_dismissal_resumes_as_dismissed() -> None:
    """A human who closes the dialog (``ScriptedProvider`` dismiss) resumes the run as dismissed."""
    model = ScriptedChatModel(
        responses=[call("ask_user_question", QUESTION_ARGS), AIMessage(content="ok")]
    )
    agent = question_agent(model)
    provider = ScriptedProvider()
    human = UserInteractionService()
    human.register_provider(provider)

    async def main() -> None:
        await agent.ainvoke({"messages": [("user", "go")]}, config())
        answering = asyncio.ensure_future(resume_command(agent, config(), human))
        (await provider.next_ask()).dismiss()
        command = await answering
        assert command is not None
        await agent.ainvoke(command, config())

    run(main())
    (message,) = tool_messages(model.seen[1])
    assert message.content == f"Error: {MESSAGES[ErrorCode.ASK_CANCELLED]}"


# ---------------------------------------------------------------------------
# The durable ids, and asks made straight from a node.


class Picks(TypedDict):
    """A graph state that keeps what each ask returned."""

    picks: list[str]


def two_asks_graph(service: UserInteractionService) -> Graph:
    """A one-node graph whose node asks two questions in turn through *service*."""

    async def node(state: Picks) -> Picks:
        picks: list[str] = []
        for name in ("first", "second"):
            answer = await service.ask({"questions": [{"id": name, "question": f"{name}?"}]})
            picks.append(answer["answers"][0].get("custom", ""))
        return {"picks": picks}

    return compiled(Picks, {"asker": node})


def test_asks_in_a_node_are_named_by_thread_and_interrupt_and_keep_their_names() -> None:
    """A node's asks get ``<thread>:<interrupt id>``; the node run again asks the same ask."""
    graph = two_asks_graph(pausing_service())
    human = Human(answer_of(answer_custom("first", "one")))

    async def main() -> None:
        first = (await graph.ainvoke({"picks": []}, config()))["__interrupt__"][0]
        assert first.value["request"]["askId"] == ask_id_for("thread-1", first.id)
        # Run again without an answer (a restart, say): the same interrupt, the same ask.
        again = (await graph.ainvoke(None, config()))["__interrupt__"][0]
        assert (again.id, again.value) == (first.id, first.value)
        await graph.ainvoke(await resume_command(graph, config(), human), config())
        second = (await graph.aget_state(config())).interrupts[0]
        assert second.id != first.id
        assert second.value["request"]["askId"] == ask_id_for("thread-1", second.id)
        human.outcome = answer_of(answer_custom("second", "two"))
        done = await graph.ainvoke(await resume_command(graph, config(), human), config())
        assert done["picks"] == ["one", "two"]

    run(main())
    assert [cast("dict[str, Any]", r)["askId"] for r in human.requests] == [
        ask_id_for("thread-1", i) for i in _ids(human.requests)
    ]


def _ids(requests: Sequence[AskUserQuestionRequest[Any]]) -> list[str]:
    return [cast("dict[str, str]", r)["askId"].split(":", 1)[1] for r in requests]


def test_parallel_tool_calls_pause_together_and_resume_at_once() -> None:
    """Two questions in one model turn: two interrupts, each named by its call, one resume."""
    turn = AIMessage(
        content="",
        tool_calls=[
            ToolCall(name="ask_user_question", args=two_questions("a"), id="call_a"),
            ToolCall(name="ask_user_question", args=two_questions("b"), id="call_b"),
        ],
    )
    model = ScriptedChatModel(responses=[turn, AIMessage(content="ok")])
    agent = question_agent(model)
    human, seen = scripted(
        lambda request: answer_of(answer_custom(request["questions"][0]["id"], "yes"))
    )

    async def main() -> None:
        paused = await agent.ainvoke({"messages": [("user", "go")]}, config())
        names = sorted(pending.value["request"]["askId"] for pending in paused["__interrupt__"])
        assert names == ["call_a", "call_b"]
        finished = await agent.ainvoke(await resume_command(agent, config(), human), config())
        assert "__interrupt__" not in finished

    run(main())
    answers = {m.tool_call_id: m.content for m in tool_messages(model.seen[1])}
    assert answers == {
        "call_a": '{"answers":[{"id":"a","selected":[],"custom":"yes"}]}',
        "call_b": '{"answers":[{"id":"b","selected":[],"custom":"yes"}]}',
    }
    assert len(seen) == 2


def two_questions(question_id: str) -> dict[str, Any]:
    """Tool arguments asking one free-text question *question_id*."""
    return {"questions": [{"id": question_id, "question": f"{question_id}?"}]}


def test_an_ask_in_a_subgraph_pauses_the_parent_and_resumes_there() -> None:
    """A subgraph's ask surfaces in the parent's state; the parent's resume answers it."""
    service = pausing_service()

    async def node(state: Picks) -> Picks:
        answer = await service.ask({"questions": [{"id": "q", "question": "Deep?"}]})
        return {"picks": [answer["answers"][0].get("custom", "")]}

    inner: Any = StateGraph(Picks)
    inner.add_node("inner", node)
    inner.add_edge(START, "inner")
    inner.add_edge("inner", END)
    graph = compiled(Picks, {"outer": inner.compile()})
    human = Human(answer_of(answer_custom("q", "deep")))

    async def main() -> dict[str, Any]:
        pending = (await graph.ainvoke({"picks": []}, config()))["__interrupt__"][0]
        assert pending.value["request"]["askId"] == ask_id_for("thread-1", pending.id)
        return await graph.ainvoke(await resume_command(graph, config(), human), config())

    assert run(main())["picks"] == ["deep"]
    assert len(human.requests) == 1


def test_the_same_ask_in_another_thread_has_another_id() -> None:
    """Two threads pausing at the same place name their asks apart."""
    graph = two_asks_graph(pausing_service())

    async def main() -> tuple[str, str]:
        one = (await graph.ainvoke({"picks": []}, config("a")))["__interrupt__"][0]
        two = (await graph.ainvoke({"picks": []}, config("b")))["__interrupt__"][0]
        return one.value["request"]["askId"], two.value["request"]["askId"]

    one, two = run(main())
    assert one.startswith("a:")
    assert two.startswith("b:")
    assert one != two


def test_a_malformed_resume_value_fails_the_node_with_bad_answer_keeping_it() -> None:
    """A raw resume that is no ResumeValue raises ``BAD_ANSWER`` naming the field, value kept."""
    graph = two_asks_graph(pausing_service())

    async def main() -> None:
        pending = (await graph.ainvoke({"picks": []}, config()))["__interrupt__"][0]
        bad: dict[str, object] = {
            "outcome": "answered",
            "answer": {"answers": [{"id": "nope", "selected": []}]},
        }
        with pytest.raises(UserInteractionError) as raised:
            await graph.ainvoke(Command(resume={pending.id: bad}), config())
        assert raised.value.code is ErrorCode.BAD_ANSWER
        assert raised.value.answer == bad
        assert "$.answer" in str(raised.value)

    run(main())


BAD_RESUMES: list[tuple[object, str]] = [
    ("yes", "$: expected an object, got str"),
    ({"outcome": "maybe"}, "$.outcome: expected one of"),
    ({"outcome": "answered"}, '$.answer: required when outcome is "answered"'),
    ({"outcome": "dismissed", "answer": {}}, '$.answer: not allowed when outcome is "dismissed"'),
    ({"outcome": "dismissed", "why": 1}, "$: unknown keys 'why'"),
    (
        {"outcome": "answered", "answer": {"answers": [{"id": "q", "selected": ["Maybe"]}]}},
        "$.answer: ANS-",
    ),
    (
        {
            "outcome": "answered",
            "answer": {"answers": [{"id": "q", "selected": []}], "defaulted": 1},
        },
        "$.answer.defaulted: expected true, got 1",
    ),
]


@pytest.mark.parametrize(("value", "problem"), BAD_RESUMES)
def test_answer_of_resume_refuses_a_malformed_value_naming_the_field(
    value: object, problem: str
) -> None:
    """Every malformed resume value is ``BAD_ANSWER``, naming the field, with the value kept."""
    request: AskUserQuestionRequest[Any] = {"questions": ASKED_QUESTIONS}
    with pytest.raises(UserInteractionError) as raised:
        answer_of_resume(value, request)
    assert raised.value.code is ErrorCode.BAD_ANSWER
    assert problem in str(raised.value)
    assert raised.value.answer is value


def test_checked_resume_refuses_unknown_ended_and_missing_interrupts() -> None:
    """A resume gathered elsewhere is checked: unknown, ended and left-out ids are refused."""
    graph = two_asks_graph(pausing_service())

    async def main() -> None:
        first = (await graph.ainvoke({"picks": []}, config()))["__interrupt__"][0]
        with pytest.raises(InterruptNotPending) as unknown:
            await checked_resume(graph, config(), {"no-such-id": {"outcome": "dismissed"}})
        assert (unknown.value.interrupt_id, unknown.value.ended) == ("no-such-id", False)
        with pytest.raises(InterruptNotPending) as missing:
            await checked_resume(graph, config(), {})
        assert (missing.value.interrupt_id, missing.value.missing) == (first.id, True)
        with pytest.raises(UserInteractionError) as bad:
            await checked_resume(graph, config(), {first.id: {"outcome": "later"}})
        assert bad.value.code is ErrorCode.BAD_ANSWER
        assert first.id in str(bad.value)
        value = resume_value(answer_of(answer_custom("first", "one")))
        await graph.ainvoke(await checked_resume(graph, config(), {first.id: value}), config())
        # Resumed: a second resume of the first ask is late, and refused.
        with pytest.raises(InterruptNotPending) as late:
            await checked_resume(graph, config(), {first.id: value})
        assert late.value.interrupt_id == first.id
        assert "or its ask already ended" in str(late.value)

    run(main())


def test_checked_resume_says_a_late_resume_ended_when_the_history_shows_it() -> None:
    """Once the run went on past an ask, a resume for it is refused as ended."""
    model = ScriptedChatModel(
        responses=[call("ask_user_question", QUESTION_ARGS), AIMessage(content="ok")]
    )
    agent = question_agent(model)
    human, _ = scripted(lambda request: answer_of(answer_skipped("q")))

    async def main() -> None:
        pending = (await agent.ainvoke({"messages": [("user", "go")]}, config()))["__interrupt__"][
            0
        ]
        command = await resume_command(agent, config(), human)
        assert command is not None
        await agent.ainvoke(command, config())
        with pytest.raises(InterruptNotPending) as ended:
            await checked_resume(agent, config(), cast("dict[str, object]", command.resume))
        assert (ended.value.interrupt_id, ended.value.ended) == (pending.id, True)
        assert "already ended" in str(ended.value)

    run(main())


def test_an_interrupt_we_cannot_show_refuses_the_resume_before_asking() -> None:
    """A foreign interrupt value is ``BAD_REQUEST`` naming its id, and nobody is asked."""

    class State(TypedDict):
        """Nothing kept."""

        done: bool

    def node(state: State) -> State:
        interrupt("what now?")
        return {"done": True}

    graph = compiled(State, {"foreign": node})
    human = Human(answer_of())

    async def main() -> None:
        pending = (await graph.ainvoke({"done": False}, config()))["__interrupt__"][0]
        with pytest.raises(UserInteractionError) as raised:
            await resume_command(graph, config(), human)
        assert raised.value.code is ErrorCode.BAD_REQUEST
        assert pending.id in str(raised.value)

    run(main())
    assert human.requests == []


def test_resume_command_needs_a_thread() -> None:
    """A config without a thread id is refused before the graph is read."""
    graph = two_asks_graph(pausing_service())
    with pytest.raises(ValueError, match="thread_id"):
        run(resume_command(graph, {"configurable": {}}, Human(answer_of())))


def test_interrupt_provider_refuses_outside_a_run_and_when_aborted() -> None:
    """Outside a graph the provider raises ``RuntimeError``; an aborted signal is ``ASK_ABORTED``."""
    provider = InterruptProvider()
    with pytest.raises(RuntimeError, match="inside a LangGraph run"):
        run(provider.ask({"questions": [{"id": "q", "question": "?"}]}))
    controller = AbortController()
    controller.abort()
    with pytest.raises(UserInteractionError) as raised:
        run(
            provider.ask({"questions": [{"id": "q", "question": "?"}], "signal": controller.signal})
        )
    assert raised.value.code is ErrorCode.ASK_ABORTED
    assert repr(provider) == "InterruptProvider()"


def test_a_synchronous_graph_pauses_and_resumes_too() -> None:
    """``invoke`` (no event loop) runs the tool in a fresh loop; the same pause and answer."""
    model = ScriptedChatModel(
        responses=[call("ask_user_question", QUESTION_ARGS), AIMessage(content="ok")]
    )
    agent = question_agent(model)
    paused = agent.invoke({"messages": [("user", "go")]}, config())
    assert paused["__interrupt__"][0].value["request"]["askId"] == "call_1"
    human, _ = scripted(lambda request: answer_of(answer_selected("q", "No")))
    command = run(resume_command(agent, config(), human))
    agent.invoke(command, config())
    (message,) = tool_messages(model.seen[1])
    assert message.content == '{"answers":[{"id":"q","selected":["No"]}]}'


def test_the_synchronous_tool_refuses_inside_a_running_loop() -> None:
    """Called synchronously inside a running loop, the tool says to use ``ainvoke``."""
    question = AskUserQuestionTool(service=pausing_service())

    async def main() -> None:
        with pytest.raises(RuntimeError, match="ainvoke"):
            question.invoke(QUESTION_ARGS)

    run(main())


def test_a_bad_tool_call_gives_the_model_the_error_line_and_pauses_nothing() -> None:
    """Malformed arguments are an ``Error:`` ToolMessage with the JSON path; no interrupt."""
    bad = {"questions": [{"id": 1, "question": "?"}]}
    model = ScriptedChatModel(responses=[call("ask_user_question", bad), AIMessage(content="ok")])
    agent = question_agent(model)
    finished = run(agent.ainvoke({"messages": [("user", "go")]}, config()))
    assert "__interrupt__" not in finished
    (message,) = tool_messages(model.seen[1])
    assert message.status == "error"
    assert message.content == "Error: $.questions[0].id: expected a non-empty string, got number"


# ---------------------------------------------------------------------------
# exit_plan_mode as a LangChain tool.


@pytest.mark.parametrize(
    ("answer", "text", "status"),
    [
        (answer_of(answer_selected(PLAN_REVIEW_ID, "Approve")), PLAN_APPROVED, "success"),
        (
            answer_of(answer_custom(PLAN_REVIEW_ID, "add a rollback")),
            "Error: The user chose to keep planning; their feedback: add a rollback",
            "error",
        ),
    ],
)
def test_exit_plan_mode_pauses_and_the_model_reads_the_verdict(
    answer: AskUserQuestionAnswer, text: str, status: str
) -> None:
    """``exit_plan_mode`` pauses on the review; the verdict reaches the model in its words."""
    plan = {"plan": "# Release\n1. Tag\n2. Publish"}
    model = ScriptedChatModel(
        responses=[call("exit_plan_mode", plan, "plan_1"), AIMessage(content="ok")]
    )
    agent = create_agent(
        model, [ExitPlanModeTool(service=pausing_service())], checkpointer=InMemorySaver()
    )
    human = Human(answer)

    async def main() -> None:
        await agent.ainvoke({"messages": [("user", "plan it")]}, config())
        await agent.ainvoke(await resume_command(agent, config(), human), config())

    run(main())
    (message,) = tool_messages(model.seen[1])
    assert (message.content, message.status) == (text, status)
    (request,) = human.requests
    assert cast("dict[str, Any]", request)["askId"] == "plan_1"
    assert request["questions"][0].get("detail") == plan["plan"]


# ---------------------------------------------------------------------------
# HumanInTheLoopMiddleware: its review asked through our service.

DELETED: list[str] = []


@tool
def delete_file(path: str) -> str:
    """Delete the file at *path* (recorded, not done)."""
    DELETED.append(path)
    return f"deleted {path}"


def review_agent(model: ScriptedChatModel, allowed: list[str], *, per_call: bool = False) -> Graph:
    """A ``create_agent`` agent whose ``delete_file`` calls need a human's review."""
    middleware = HumanInTheLoopMiddleware(
        interrupt_on={"delete_file": {"allowed_decisions": cast("Any", allowed)}},
        interrupt_mode="per_call" if per_call else "batched",
    )
    return create_agent(model, [delete_file], middleware=[middleware], checkpointer=InMemorySaver())


ALL_DECISIONS = ["approve", "edit", "reject", "respond"]


def choose(label: str, text: str | None = None) -> AskUserQuestionAnswer:
    """The answer that picks *label* for the first action, with *text* or nothing."""
    second = answer_custom("action-0-text", text) if text else answer_skipped("action-0-text")
    return answer_of(answer_selected("action-0", label), second)


REVIEW_ROWS: list[tuple[AskUserQuestionAnswer, list[str], str, str]] = [
    (choose("Approve"), ["a.txt"], "deleted a.txt", "success"),
    (choose("Edit", '{"path": "b.txt"}'), ["b.txt"], "deleted b.txt", "success"),
    (choose("Reject"), [], "User rejected the tool call for `delete_file` with id", "error"),
    (
        choose("Reject", "keep it"),
        [],
        "User rejected the tool call for `delete_file` with reason: keep it",
        "error",
    ),
    (choose("Respond", "I deleted it myself"), [], "I deleted it myself", "success"),
]
REVIEW_IDS = ["approve", "edit", "reject", "reject with reason", "respond"]


@pytest.mark.parametrize("per_call", [False, True], ids=["batched", "per_call"])
@pytest.mark.parametrize(("answer", "ran", "content", "status"), REVIEW_ROWS, ids=REVIEW_IDS)
def test_a_review_is_answered_through_our_service(
    answer: AskUserQuestionAnswer, ran: list[str], content: str, status: str, per_call: bool
) -> None:
    """Each decision picked in our questions resumes the middleware as LangChain's decision."""
    DELETED.clear()
    model = ScriptedChatModel(
        responses=[call("delete_file", {"path": "a.txt"}), AIMessage(content="done")]
    )
    agent = review_agent(model, ALL_DECISIONS, per_call=per_call)
    human, seen = scripted(lambda request: answer)

    async def main() -> None:
        paused = await agent.ainvoke({"messages": [("user", "tidy up")]}, config())
        pending = paused["__interrupt__"][0]
        command = await resume_command(agent, config(), human)
        assert command is not None
        resumed = cast("dict[str, Any]", command.resume)[pending.id]
        # Batched: a HITLResponse; per call: the one decision itself.
        (decision,) = [resumed] if per_call else resumed["decisions"]
        assert decision["type"] == answer["answers"][0]["selected"][0].lower()
        await agent.ainvoke(command, config())
        (request,) = seen
        assert cast("dict[str, Any]", request)["askId"] == ask_id_for("thread-1", pending.id)

    run(main())
    assert ran == DELETED
    (message,) = tool_messages(model.seen[1])
    assert content in message.text
    assert message.status == status


@pytest.mark.parametrize("per_call", [False, True], ids=["batched", "per_call"])
def test_a_dismissed_review_raises_or_rejects_every_action(per_call: bool) -> None:
    """A dismissal is no decision: it raises by default, or rejects each action when asked to."""
    DELETED.clear()
    model = ScriptedChatModel(
        responses=[call("delete_file", {"path": "a.txt"}), AIMessage(content="done")]
    )
    agent = review_agent(model, ["approve", "reject"], per_call=per_call)
    human = Human(UserInteractionError.of(ErrorCode.ASK_CANCELLED))

    async def main() -> None:
        await agent.ainvoke({"messages": [("user", "tidy up")]}, config())
        with pytest.raises(UserInteractionError) as raised:
            await resume_command(agent, config(), human)
        assert raised.value.code is ErrorCode.ASK_CANCELLED
        command = await resume_command(agent, config(), human, unanswered="reject")
        assert command is not None
        await agent.ainvoke(command, config())

    run(main())
    assert DELETED == []
    (message,) = tool_messages(model.seen[1])
    assert MESSAGES[ErrorCode.ASK_CANCELLED] in message.text


REVIEW: dict[str, Any] = {
    "action_requests": [
        {"name": "delete_file", "args": {"path": "a.txt"}, "description": "Delete?"}
    ],
    "review_configs": [{"action_name": "delete_file", "allowed_decisions": ALL_DECISIONS}],
}

BAD_REVIEWS: list[tuple[object, str]] = [
    ([], "$: expected an object, got list"),
    ({"review_configs": []}, "$.action_requests: expected a non-empty array"),
    (
        {"action_requests": [], "review_configs": []},
        "$.action_requests: expected a non-empty array",
    ),
    ({**REVIEW, "review_configs": None}, "$.review_configs: expected an array"),
    (
        {**REVIEW, "review_configs": []},
        "$.review_configs: expected one per action request (1), got 0",
    ),
    (
        {**REVIEW, "action_requests": [{"name": "", "args": {}}]},
        "$.action_requests[0].name: expected a non-empty string",
    ),
    (
        {**REVIEW, "action_requests": [{"name": "delete_file", "args": [1]}]},
        "$.action_requests[0].args: expected an object, got list",
    ),
    (
        {**REVIEW, "action_requests": [{"name": "delete_file", "args": {}, "description": 3}]},
        "$.action_requests[0].description: expected a string",
    ),
    (
        {**REVIEW, "action_requests": [{"name": "delete_file", "args": {"n": float("nan")}}]},
        "$.action_requests[0].args: cannot be shown as JSON",
    ),
    (
        {**REVIEW, "review_configs": [{"action_name": "other", "allowed_decisions": ["approve"]}]},
        "$.review_configs[0].action_name: expected 'delete_file'",
    ),
    (
        {**REVIEW, "review_configs": [{"action_name": "delete_file", "allowed_decisions": []}]},
        "$.review_configs[0].allowed_decisions: expected a non-empty array",
    ),
    (
        {**REVIEW, "review_configs": [{"action_name": "delete_file", "allowed_decisions": ["ok"]}]},
        "$.review_configs[0].allowed_decisions[0]: unknown decision 'ok'",
    ),
    (
        {
            **REVIEW,
            "review_configs": [
                {"action_name": "delete_file", "allowed_decisions": ["approve", "approve"]}
            ],
        },
        "$.review_configs[0].allowed_decisions[1]: 'approve' is listed twice",
    ),
]


@pytest.mark.parametrize(("request_", "problem"), BAD_REVIEWS)
def test_a_review_we_cannot_show_is_refused_naming_the_field(
    request_: object, problem: str
) -> None:
    """A malformed ``HITLRequest`` is ``BAD_REQUEST``, naming the field and the problem."""
    with pytest.raises(UserInteractionError) as raised:
        hitl_questions(cast("dict[str, object]", request_))
    assert raised.value.code is ErrorCode.BAD_REQUEST
    assert problem in str(raised.value)


BAD_DECISIONS: list[tuple[AskUserQuestionAnswer, str]] = [
    (answer_of(), "question 'action-0' (delete_file): no answer"),
    (answer_of(answer_skipped("action-0")), "choose exactly one of Approve, Edit, Reject, Respond"),
    (answer_of(answer_custom("action-0", "later")), "choose exactly one of"),
    (choose("Maybe"), "'Maybe' is not an allowed decision"),
    (choose("Approve", "but why"), "Approve takes no text; skip this question"),
    (choose("Edit"), "Edit needs the edited arguments"),
    (choose("Respond"), "Respond needs the reply"),
    (choose("Edit", "{path: b}"), "the edited arguments are not JSON"),
    (choose("Edit", "[1, 2]"), "the edited arguments must be a JSON object, got list"),
    (
        {"answers": [{"id": "action-0", "selected": ["Approve"]}], "defaulted": True},
        "an answer made of defaults never decides an action",
    ),
]


@pytest.mark.parametrize(("answer", "problem"), BAD_DECISIONS)
def test_an_answer_that_makes_no_decision_is_refused_and_kept(
    answer: AskUserQuestionAnswer, problem: str
) -> None:
    """An answer that is not one allowed decision per action is ``BAD_ANSWER``, the answer kept."""
    with pytest.raises(UserInteractionError) as raised:
        hitl_decisions(REVIEW, answer)
    assert raised.value.code is ErrorCode.BAD_ANSWER
    assert problem in str(raised.value)
    assert raised.value.answer is answer


def test_answer_hitl_names_the_ask_and_reads_the_decisions() -> None:
    """``answer_hitl`` asks under the given id and returns the middleware's response."""
    human = Human(choose("Respond", "done by hand"))
    response = run(answer_hitl(human, REVIEW, ask_id="thread-1:abc"))
    assert response == {"decisions": [{"type": "respond", "message": "done by hand"}]}
    (request,) = human.requests
    assert cast("dict[str, Any]", request)["askId"] == "thread-1:abc"
    assert request["questions"][0].get("detail") == '{\n  "path": "a.txt"\n}'


def test_checked_resume_checks_a_review_decisions_count() -> None:
    """A review's resume must hold one decision per action."""
    model = ScriptedChatModel(responses=[call("delete_file", {"path": "a.txt"})])
    agent = review_agent(model, ["approve", "reject"])

    async def main() -> None:
        pending = (await agent.ainvoke({"messages": [("user", "go")]}, config()))["__interrupt__"][
            0
        ]
        with pytest.raises(UserInteractionError, match="expected 1 decisions"):
            await checked_resume(agent, config(), {pending.id: {"decisions": []}})
        with pytest.raises(UserInteractionError, match="expected an array of decisions"):
            await checked_resume(agent, config(), {pending.id: {}})
        ok = {pending.id: {"decisions": [{"type": "approve"}]}}
        assert (await checked_resume(agent, config(), ok)).resume == ok

    run(main())


def test_checked_resume_checks_a_per_call_decision_is_allowed() -> None:
    """A per-call approval's resume must be one decision its schema allows."""
    model = ScriptedChatModel(responses=[call("delete_file", {"path": "a.txt"})])
    agent = review_agent(model, ["approve", "reject"], per_call=True)

    async def main() -> None:
        pending = (await agent.ainvoke({"messages": [("user", "go")]}, config()))["__interrupt__"][
            0
        ]
        with pytest.raises(
            UserInteractionError, match="expected one of approve, reject, got 'edit'"
        ):
            await checked_resume(agent, config(), {pending.id: {"type": "edit"}})
        ok = {pending.id: {"type": "reject"}}
        assert (await checked_resume(agent, config(), ok)).resume == ok

    run(main())


@pytest.mark.parametrize(
    ("value", "schema", "problem"),
    [
        ({"type": "other"}, {}, "$.type: expected 'tool_approval'"),
        ({"type": "tool_approval", "name": "rm", "args": {}}, {}, "response_schema: names no"),
        (
            {"type": "tool_approval", "name": "rm", "args": {}},
            {"properties": {"type": {"const": "ok"}}},
            "unknown decision 'ok'",
        ),
        (
            {"type": "tool_approval", "name": "", "args": {}},
            {"properties": {"type": {"const": "approve"}}},
            "$.action_requests[0].name: expected a non-empty string",
        ),
    ],
)
def test_a_per_call_approval_we_cannot_read_is_refused(
    value: dict[str, object], schema: dict[str, object], problem: str
) -> None:
    """A ``ToolApprovalRequest`` or schema that names no allowed decision is ``BAD_REQUEST``."""
    with pytest.raises(UserInteractionError) as raised:
        adapter.tool_approval_review(value, schema)
    assert raised.value.code is ErrorCode.BAD_REQUEST
    assert problem in str(raised.value)


def test_answer_interrupts_refuses_two_interrupts_with_one_id() -> None:
    """Two pending interrupts sharing an id cannot be resumed apart: refused before asking."""
    from langgraph.types import Interrupt

    value = {"kind": INTERRUPT_KIND, "request": {"questions": ASKED_QUESTIONS}}
    twins = [Interrupt(value=value, id="same"), Interrupt(value=value, id="same")]
    human = Human(answer_of())
    with pytest.raises(UserInteractionError, match="share one id"):
        run(answer_interrupts(human, twins, thread_id="t"))
    assert human.requests == []


# ---------------------------------------------------------------------------
# Properties.

labels = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@st.composite
def requests_and_answers(
    draw: st.DrawFn,
) -> tuple[AskUserQuestionRequest[Any], AskUserQuestionAnswer]:
    """A valid request of ours, and a valid answer to it."""
    count = draw(st.integers(1, 4))
    ids = draw(st.lists(labels, min_size=count, max_size=count, unique=True))
    questions: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for question_id in ids:
        options = draw(st.lists(labels.filter(lambda s: s.strip() != ""), max_size=4, unique=True))
        question: dict[str, Any] = {"id": question_id, "question": draw(labels.filter(str.strip))}
        if options:
            question["options"] = [{"label": label} for label in options]
        questions.append(question)
        how = draw(st.sampled_from(["skip", "custom", "pick"] if options else ["skip", "custom"]))
        if how == "pick":
            items.append({"id": question_id, "selected": [draw(st.sampled_from(options))]})
        elif how == "custom":
            items.append(
                {"id": question_id, "selected": [], "custom": draw(labels.filter(str.strip))}
            )
        else:
            items.append({"id": question_id, "selected": []})
    request = cast("AskUserQuestionRequest[Any]", {"questions": questions})
    return request, cast("AskUserQuestionAnswer", {"answers": items})


@settings(max_examples=25, deadline=None)
@given(requests_and_answers())
def test_any_answer_round_trips_through_its_resume_value(
    case: tuple[AskUserQuestionRequest[Any], AskUserQuestionAnswer],
) -> None:
    """Any valid answer to any valid request survives the resume value, through JSON too."""
    request, answer = case
    check_request(request)
    value = json.loads(json.dumps(resume_value(answer)))
    assert answer_of_resume(value, request) == answer


decision_lists = st.lists(st.sampled_from(ALL_DECISIONS), min_size=1, max_size=4, unique=True)


@st.composite
def reviews(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A ``HITLRequest`` of one to three actions, and a decision type chosen for each."""
    count = draw(st.integers(1, 3))
    actions: list[dict[str, Any]] = []
    configs: list[dict[str, Any]] = []
    chosen: list[str] = []
    for _ in range(count):
        name = draw(labels.filter(str.strip))
        args = draw(st.dictionaries(labels, st.integers() | labels, max_size=3))
        allowed = draw(decision_lists)
        actions.append({"name": name, "args": args})
        configs.append({"action_name": name, "allowed_decisions": allowed})
        chosen.append(draw(st.sampled_from(allowed)))
    return {"action_requests": actions, "review_configs": configs}, chosen


TEXT_FOR = {"approve": None, "edit": '{"edited": true}', "reject": "no", "respond": "done"}


@settings(max_examples=25, deadline=None)
@given(reviews())
def test_any_review_becomes_valid_questions_and_any_allowed_decision_comes_back(
    case: tuple[dict[str, Any], list[str]],
) -> None:
    """Any review is asked as a valid request; picking a decision gives exactly that decision."""
    review, chosen = case
    request = hitl_questions(review)
    check_request(request)
    items: list[AskUserQuestionAnswerItem] = []
    for index, decision in enumerate(chosen):
        label = adapter.DECISION_LABELS[cast("Any", decision)]
        items.append(answer_selected(f"action-{index}", label))
        allowed = review["review_configs"][index]["allowed_decisions"]
        if allowed != ["approve"]:
            text = TEXT_FOR[decision]
            items.append(
                answer_custom(f"action-{index}-text", text)
                if text
                else answer_skipped(f"action-{index}-text")
            )
    response = hitl_decisions(review, answer_of(*items))
    assert [d["type"] for d in response["decisions"]] == chosen
    for index, made in enumerate(response["decisions"]):
        if made["type"] == "edit":
            assert made["edited_action"] == {
                "name": review["action_requests"][index]["name"],
                "args": {"edited": True},
            }


@settings(max_examples=50, deadline=None)
@given(json_values)
def test_any_json_resume_value_is_read_or_refused_with_bad_answer(value: object) -> None:
    """Whatever JSON a resume carries, it is an outcome of the ask or ``BAD_ANSWER``, kept."""
    request: AskUserQuestionRequest[Any] = {"questions": ASKED_QUESTIONS}
    try:
        answer_of_resume(value, request)
    except UserInteractionError as error:
        if error.code is ErrorCode.BAD_ANSWER:
            assert error.answer is value
        else:
            assert isinstance(value, dict)
            assert cast("dict[str, object]", value)["outcome"] != "answered"


@settings(max_examples=50, deadline=None)
@given(
    json_values
    | st.fixed_dictionaries({"action_requests": json_values, "review_configs": json_values})
)
def test_any_json_review_is_asked_validly_or_refused_with_bad_request(value: object) -> None:
    """Whatever a review interrupt holds, it becomes a valid request or a ``BAD_REQUEST``."""
    try:
        request = hitl_questions(cast("dict[str, object]", value))
    except UserInteractionError as error:
        assert error.code is ErrorCode.BAD_REQUEST
        assert str(error).startswith("review: $")
    else:
        check_request(request)
