"""The proof: an in-process AG-UI run loop whose model asks a question and reads the answer.

The agent below speaks the protocol with its own pydantic models and event
encoder: a scripted model (no network, no keys) calls ``ask_user_question``;
run 1 ends with ``RUN_FINISHED`` and an interrupt; the client answers it
through our ``ScriptedProvider``; run 2 carries the resume and ends with the
answer as the tool's result, which the model reads. With a durable store, the
agent restarted between the runs finds the same ask, and nobody is asked twice.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import cast

import pytest
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    Event,
    EventType,
    Message,
    ResumeEntry,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core.types import FunctionCall
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

from dsh_user_interaction import (
    AskingService,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ScriptedProvider,
    UserInteractionService,
)
from dsh_user_interaction.durable import DurableProvider, SQLiteStore, serve
from dsh_user_interaction.extra.ag_ui import (
    AgUiInterruptProvider,
    ResumeError,
    ag_ui_tools,
    answer_interrupts,
    run_error_of,
    run_tool_call,
)

from .helpers import patience, run

_EVENTS: TypeAdapter[Event] = TypeAdapter(Event)

ARGUMENTS = json.dumps(
    {
        "questions": [
            {
                "id": "env",
                "question": "Where should I deploy?",
                "options": [{"label": "prod"}, {"label": "staging"}],
            }
        ]
    }
)


def scripted_model(messages: list[Message]) -> ToolCall | str:
    """The test model: ask where to deploy, then say what the tool's result told it."""
    results = [message for message in messages if isinstance(message, ToolMessage)]
    if not results:
        return ToolCall(
            id="call-1", function=FunctionCall(name="ask_user_question", arguments=ARGUMENTS)
        )
    content = results[-1].content
    assert isinstance(content, str)
    if content.startswith("Error:"):
        return f"I could not ask: {content}"
    answer = json.loads(content)
    return f"Deploying to {answer['answers'][0]['selected'][0]}."


class Agent:
    """A minimal AG-UI agent: the scripted model, our tools, and a run loop of protocol events.

    An ask in a tool call suspends its step across runs: the run ends with the
    provider's interrupts, and the step goes on when a later run's resume
    reaches the provider. A fresh agent (after a restart) that gets a resume
    runs the unanswered tool call again, under the same call id.
    """

    def __init__(self, service: AskingService, provider: AgUiInterruptProvider) -> None:
        self.service = service
        self.provider = provider
        self.step: asyncio.Task[ToolCallResultEvent] | None = None
        self.call: ToolCall | None = None

    def _start(self, call: ToolCall) -> None:
        self.call = call
        self.step = asyncio.ensure_future(
            run_tool_call(self.service, call, message_id=f"result-{call.id}")
        )

    async def run(self, run_input: RunAgentInput) -> list[str]:
        """Run once, returning the events as the encoder writes them for the wire."""
        events: list[BaseEvent] = [
            RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        ]
        messages = list(run_input.messages)
        if run_input.resume:
            if self.step is None:  # restarted: run the unanswered tool call again
                self._start(_unanswered(messages))
                await self._settled_or_interrupted()
            try:
                self.provider.resume(run_input)
            except ResumeError as error:
                events.append(run_error_of(error))
                return _encoded(events)
        else:
            reply = scripted_model(messages)
            assert isinstance(reply, ToolCall)
            events += [
                ToolCallStartEvent(tool_call_id=reply.id, tool_call_name=reply.function.name),
                ToolCallArgsEvent(tool_call_id=reply.id, delta=reply.function.arguments),
                ToolCallEndEvent(tool_call_id=reply.id),
            ]
            messages.append(AssistantMessage(id="assistant-1", tool_calls=[reply]))
            self._start(reply)
        assert self.step is not None
        await self._settled_or_interrupted()
        if not self.step.done():
            events.append(self.provider.run_finished(run_input.thread_id, run_input.run_id))
            return _encoded(events)
        result = self.step.result()
        self.step = None
        events.append(result)
        messages.append(
            ToolMessage(
                id=result.message_id, tool_call_id=result.tool_call_id, content=result.content
            )
        )
        text = scripted_model(messages)
        assert isinstance(text, str)
        events += [
            TextMessageStartEvent(message_id="assistant-2", role="assistant"),
            TextMessageContentEvent(message_id="assistant-2", delta=text),
            TextMessageEndEvent(message_id="assistant-2"),
            RunFinishedEvent(
                thread_id=run_input.thread_id,
                run_id=run_input.run_id,
                outcome=RunFinishedSuccessOutcome(),
            ),
        ]
        return _encoded(events)

    async def _settled_or_interrupted(self) -> None:
        """Wait until the step ends or one of its asks opens an interrupt."""
        assert self.step is not None
        waiting = asyncio.ensure_future(self.provider.next_interrupts())
        await asyncio.wait({self.step, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)

    async def stop(self) -> None:
        """Stop as a crash would: the step is cancelled, nothing is settled."""
        if self.step is not None:
            self.step.cancel()
            await asyncio.gather(self.step, return_exceptions=True)


def _unanswered(messages: list[Message]) -> ToolCall:
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or []:
                if call.id not in answered:
                    return call
    msg = "no unanswered tool call to resume"
    raise AssertionError(msg)


def _encoded(events: list[BaseEvent]) -> list[str]:
    encoder = EventEncoder()
    return [encoder.encode(event) for event in events]


def _decoded(stream: list[str]) -> list[Event]:
    """The events back from the wire, as the client reads them."""
    decoded: list[Event] = []
    for chunk in stream:
        assert chunk.startswith("data: ")
        assert chunk.endswith("\n\n")
        decoded.append(_EVENTS.validate_json(chunk.removeprefix("data: ")))
    return decoded


def _first_input() -> RunAgentInput:
    return RunAgentInput(
        thread_id="thread-1",
        run_id="run-1",
        messages=[UserMessage(id="user-1", content="Deploy the release.")],
        tools=ag_ui_tools(),
    )


def _resume_input(entries: list[ResumeEntry]) -> RunAgentInput:
    call = ToolCall(
        id="call-1", function=FunctionCall(name="ask_user_question", arguments=ARGUMENTS)
    )
    return RunAgentInput(
        thread_id="thread-1",
        run_id="run-2",
        messages=[
            UserMessage(id="user-1", content="Deploy the release."),
            AssistantMessage(id="assistant-1", tool_calls=[call]),
        ],
        resume=entries,
    )


def _human() -> tuple[UserInteractionService, ScriptedProvider]:
    """The client's side: any service of ours; here the scripted human picks ``prod``."""

    def pick(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        question = request["questions"][0]
        return {"answers": [{"id": question["id"], "selected": ["prod"]}]}

    provider = ScriptedProvider(respond=pick)
    service = UserInteractionService()
    service.register_provider(provider)
    return service, provider


async def _client_answers(stream: list[str], service: UserInteractionService) -> list[ResumeEntry]:
    """What a client does with run 1: read the interrupt and answer it through our service."""
    events = _decoded(stream)
    finished = events[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
    (interrupt,) = finished.outcome.interrupts
    assert interrupt.id == "call-1"
    assert interrupt.tool_call_id == "call-1"
    return await answer_interrupts(service, finished.outcome.interrupts)


def _assert_answered(stream: list[str]) -> None:
    events = _decoded(stream)
    types = [event.type for event in events]
    assert types == [
        EventType.RUN_STARTED,
        EventType.TOOL_CALL_RESULT,
        EventType.TEXT_MESSAGE_START,
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_END,
        EventType.RUN_FINISHED,
    ]
    result = cast("ToolCallResultEvent", events[1])
    assert result.tool_call_id == "call-1"
    assert result.content == '{"answers":[{"id":"env","selected":["prod"]}]}'
    assert cast("TextMessageContentEvent", events[3]).delta == "Deploying to prod."
    finished = cast("RunFinishedEvent", events[-1])
    assert isinstance(finished.outcome, RunFinishedSuccessOutcome)


def test_a_run_ends_with_the_interrupt_and_the_resume_brings_the_answer() -> None:
    """Run 1 ends with the interrupt; our provider answers; run 2 returns it as the tool result."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        agent = Agent(service, provider)
        first = await agent.run(_first_input())
        assert [event.type for event in _decoded(first)] == [
            EventType.RUN_STARTED,
            EventType.TOOL_CALL_START,
            EventType.TOOL_CALL_ARGS,
            EventType.TOOL_CALL_END,
            EventType.RUN_FINISHED,
        ]
        human_service, human = _human()
        entries = await _client_answers(first, human_service)
        assert entries == [
            ResumeEntry(
                interrupt_id="call-1",
                status="resolved",
                payload={"answers": [{"id": "env", "selected": ["prod"]}]},
            )
        ]
        second = await agent.run(_resume_input(entries))
        _assert_answered(second)
        assert human.asked == 1
        # The same resume again (a client retrying): the call is run again under its id,
        # takes the answer it had, and the replayed entry is a no-op. Nobody is asked.
        _assert_answered(await agent.run(_resume_input(entries)))
        assert (human.asked, provider.asked) == (1, 1)

    run(main())


def test_a_bad_resume_ends_the_run_with_run_error_and_loses_nothing() -> None:
    """A resume with an unknown id is a ``RUN_ERROR``; the ask still waits for a good one."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        agent = Agent(service, provider)
        await agent.run(_first_input())
        wrong = [ResumeEntry(interrupt_id="call-2", status="cancelled")]
        events = _decoded(await agent.run(_resume_input(wrong)))
        error = events[-1]
        assert error.type is EventType.RUN_ERROR
        assert getattr(error, "code", None) == "UNKNOWN_INTERRUPT"
        assert [i.id for i in provider.pending] == ["call-1"]
        payload = {"answers": [{"id": "env", "selected": ["prod"]}]}
        right = [ResumeEntry(interrupt_id="call-1", status="resolved", payload=payload)]
        _assert_answered(await agent.run(_resume_input(right)))

    run(main())


def test_a_dismissal_reaches_the_model_as_our_error_text() -> None:
    """A cancelled entry: the model reads the tool's dismissal text."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        agent = Agent(service, provider)
        await agent.run(_first_input())
        cancelled = [ResumeEntry(interrupt_id="call-1", status="cancelled")]
        events = _decoded(await agent.run(_resume_input(cancelled)))
        result = cast("ToolCallResultEvent", events[1])
        assert result.content == "Error: the user cancelled ask_user_question"
        text = cast("TextMessageContentEvent", events[3]).delta
        assert text == "I could not ask: Error: the user cancelled ask_user_question"

    run(main())


async def _agent_on(store: SQLiteStore | None) -> tuple[Agent, asyncio.Task[None] | None]:
    """An agent whose asks end runs with interrupts: kept in *store* when there is one.

    With a store, the agent's service asks a ``DurableProvider`` and the
    interrupts come from ``serve``, which shows the store's asks through the
    AG-UI provider.
    """
    provider = AgUiInterruptProvider()
    service = UserInteractionService()
    if store is None:
        service.register_provider(provider)
        return Agent(service, provider), None
    service.register_provider(DurableProvider(store))
    shown = asyncio.ensure_future(serve(store, provider, via="ag-ui"))
    return Agent(service, provider), shown


async def _stop(agent: Agent, shown: asyncio.Task[None] | None) -> None:
    await agent.stop()
    if shown is not None:
        shown.cancel()
        await asyncio.gather(shown, return_exceptions=True)


async def _records(path: Path) -> list[tuple[str, str]]:
    async with SQLiteStore(path) as store:
        return [(record.ask_id, record.state) for record in await store.records()]


@pytest.mark.parametrize("durable", [False, True], ids=["in-memory", "sqlite"])
def test_a_restarted_agent_finds_the_same_ask_and_asks_nobody_twice(
    durable: bool, tmp_path: Path
) -> None:
    """After a restart, run 2 re-runs the call under its id; the resume answers that same ask.

    With a durable store, the store holds one ask under the call id, answered once.
    """

    async def main() -> None:
        path = tmp_path / "asks.db"
        human_service, human = _human()
        store = SQLiteStore(path) if durable else None
        agent, shown = await _agent_on(store)
        first = await agent.run(_first_input())
        entries = await _client_answers(first, human_service)
        await _stop(agent, shown)  # the process goes down between the runs
        if store is not None:
            await store.close()
            store = SQLiteStore(path)
        agent, shown = await _agent_on(store)
        second = await agent.run(_resume_input(entries))
        _assert_answered(second)
        assert human.asked == 1
        await _stop(agent, shown)
        if store is not None:
            await store.close()
            assert await _records(path) == [("call-1", "answered")]

    run(main(), bound=5.0)


ROOT = Path(__file__).resolve().parents[1]
#: What a child process runs: one phase of the agent's side, on the store at a path.
_CHILD = "import sys; from tests.test_ag_ui_run import agent_process; agent_process(*sys.argv[1:])"


def agent_process(path: str, phase: str, resume: str = "[]") -> None:
    """Run the agent as a process of its own, writing its events to stdout as on the wire.

    ``first`` runs run 1 and waits to be killed; ``second`` runs the resume
    (*resume*, JSON) and exits.
    """

    async def main() -> None:
        store = SQLiteStore(path)
        agent, shown = await _agent_on(store)
        if phase == "first":
            stream = await agent.run(_first_input())
        else:
            entries = TypeAdapter(list[ResumeEntry]).validate_json(resume)
            stream = await agent.run(_resume_input(entries))
        sys.stdout.write("".join(stream))
        sys.stdout.flush()
        if phase == "first":
            await asyncio.Event().wait()  # killed here, the ask pending in the store
        await _stop(agent, shown)
        await store.close()

    asyncio.run(main())


def _chunks(text: str) -> list[str]:
    return [f"{chunk}\n\n" for chunk in text.split("\n\n") if chunk]


@pytest.mark.slow
def test_a_killed_agent_process_resumes_the_same_durable_ask(tmp_path: Path) -> None:
    """SIGKILL after run 1; a new process runs run 2 with the resume: the same ask, asked once."""
    path = str(tmp_path / "asks.db")
    first = subprocess.Popen(
        [sys.executable, "-c", _CHILD, path, "first"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    watchdog = threading.Timer(patience(10.0), first.kill)  # a hang ends as a red run
    watchdog.start()
    try:
        assert first.stdout is not None
        lines: list[str] = []
        while not any('"type":"RUN_FINISHED"' in line for line in lines):
            line = first.stdout.readline()
            assert line, "the agent process ended before run 1 finished"
            lines.append(line)
        lines.append(first.stdout.readline())  # the blank line that ends the last event
        first.send_signal(signal.SIGKILL)
        assert first.wait() == -signal.SIGKILL
    finally:
        watchdog.cancel()
        if first.poll() is None:
            first.kill()
            first.wait()
        if first.stdout is not None:
            first.stdout.close()
    human_service, human = _human()
    entries = run(_client_answers(_chunks("".join(lines)), human_service))
    resume = TypeAdapter(list[ResumeEntry]).dump_json(entries, by_alias=True).decode()
    second = subprocess.run(
        [sys.executable, "-c", _CHILD, path, "second", resume],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=patience(10.0),
        check=True,
    )
    _assert_answered(_chunks(second.stdout))
    assert human.asked == 1
    assert run(_records(tmp_path / "asks.db")) == [("call-1", "answered")]
