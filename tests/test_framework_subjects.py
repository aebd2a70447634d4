"""The AG-UI and LangGraph paths as conformance-suite subjects, and broken variants caught.

Each subject passes the suite's provider checks (quick profile): seed 1 in
the fast tier, seeds 2 and 3 in the slow one. A provider path broken on
purpose (an answer read wrongly, a dismissal or an abort ignored) fails the
run, named by the requirement it breaks.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

import pytest
from ag_ui.core import Interrupt, ResumeEntry, RunAgentInput
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra.ag_ui import AgUiInterruptProvider, Resumed
from dsh_user_interaction.extra.ag_ui.testing import (
    AgUiClient,
    ToolCallAsks,
    ag_ui_subject,
    make_ag_ui_subject,
)
from dsh_user_interaction.extra.langgraph import (
    INTERRUPT_KIND,
    InterruptProvider,
    answer_of_resume,
    resume_command,
    resume_value,
)
from dsh_user_interaction.extra.langgraph.testing import (
    GraphAsks,
    GraphHuman,
    langgraph_subject,
    make_langgraph_subject,
)
from dsh_user_interaction_conformance import (
    Dismiss,
    Nothing,
    Pick,
    Report,
    Subject,
    expected_answer,
    run_suite,
)
from dsh_user_interaction_conformance.strategies import actions, requests

from .helpers import caught_within, claimed_only, run

#: The suite's bound for the broken variants' runs.
BOUND = 0.5
#: Every test's own wall-clock limit.
LIMIT = 60.0

Factory = Callable[[], Awaitable[Subject]]


def _failures(report: Report) -> list[tuple[str, str]]:
    return [(r.requirement.id, r.message) for r in report.results if r.status != "passed"]


def _passes(factory: Factory, seed: int) -> None:
    report = run_suite(subject_factory=factory, kinds=["provider"], profile="quick", seed=seed)
    assert report.ok, _failures(report)
    judged = [r for r in report.results if not claimed_only(r.requirement.id)]
    assert {r.status for r in judged} == {"passed"}, _failures(report)
    assert all(r.examples > 0 for r in judged)


# ---------------------------------------------------------------------------
# The subjects pass.


def test_the_ag_ui_subject_passes_the_provider_checks() -> None:
    """The AG-UI interrupt provider, its client the driver, passes every provider requirement."""
    _passes(ag_ui_subject, 1)


def test_the_langgraph_subject_passes_the_provider_checks() -> None:
    """Each ask a real paused graph run, resumed by the driver: every provider requirement passes."""
    _passes(langgraph_subject, 1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("factory", [ag_ui_subject, langgraph_subject], ids=["ag_ui", "langgraph"])
def test_the_subjects_pass_on_more_seeds(factory: Factory, seed: int) -> None:
    """Seeds 2 and 3 pass too, for both subjects."""
    _passes(factory, seed)


@pytest.mark.slow
@pytest.mark.parametrize(
    "target",
    [
        "dsh_user_interaction.extra.ag_ui.testing:ag_ui_subject",
        "dsh_user_interaction.extra.langgraph.testing:langgraph_subject",
    ],
)
def test_the_command_line_passes_each_subject(target: str) -> None:
    """The command line the docs give runs the suite on each subject, and it passes."""
    command = [sys.executable, "-m", "dsh_user_interaction_conformance", "--provider", target]
    done = subprocess.run(
        [*command, "--profile", "quick", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASSED" in done.stdout


# ---------------------------------------------------------------------------
# The drivers speak the framework's own language.

_GO: AskUserQuestionRequest[Any] = {
    "questions": [{"id": "go", "question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}]
}


def test_the_ag_ui_client_resumes_the_tool_calls_interrupt_with_our_answer() -> None:
    """An ask is the tool call ``call-1``; the client resumes that interrupt; the request is kept."""
    inner = AgUiInterruptProvider()
    asks = ToolCallAsks(inner)
    client = AgUiClient(asks)

    async def main() -> tuple[AskUserQuestionAnswer, Interrupt, bool, bool]:
        task = asyncio.ensure_future(asks.ask(_GO))
        interrupt = (await inner.next_interrupts())[0]
        shown = await client.is_shown(_GO)
        await client.perform(_GO, (Pick(("Yes",)),))
        return await task, interrupt, shown, await client.is_shown(_GO)

    answer, interrupt, shown, after = run(main(), bound=LIMIT)
    assert (interrupt.id, interrupt.tool_call_id) == ("call-1", "call-1")
    assert answer == {"answers": [{"id": "go", "selected": ["Yes"]}]}
    assert (shown, after) == (True, False)
    assert "askId" not in _GO
    assert inner.pending == ()


def test_the_ag_ui_client_dismisses_with_a_cancelled_entry() -> None:
    """A dismissal is a ``cancelled`` resume entry: the ask raises ``ASK_CANCELLED``."""
    asks = ToolCallAsks()
    client = AgUiClient(asks)

    async def main() -> BaseException | None:
        task = asyncio.ensure_future(asks.ask(_GO))
        await client.perform(_GO, Dismiss())
        await asyncio.wait({task})
        return task.exception()

    error = run(main(), bound=LIMIT)
    assert isinstance(error, UserInteractionError)
    assert error.code is ErrorCode.ASK_CANCELLED


def test_the_langgraph_human_resumes_the_paused_run_and_its_thread_is_deleted() -> None:
    """The run pauses on its interrupt; resumed, its final state's answer is returned; nothing kept."""
    asks = GraphAsks()
    human = GraphHuman(asks)

    async def main() -> tuple[AskUserQuestionAnswer, str, bool]:
        task = asyncio.ensure_future(asks.ask(_GO))
        await human.perform(_GO, Nothing())
        paused = asks.paused_of(_GO)
        assert paused is not None
        state = await asks.graph.aget_state(paused.config)
        kind = cast("Mapping[str, object]", state.interrupts[0].value)["kind"]
        await human.perform(_GO, (Pick(("No",)),))
        return await task, cast("str", kind), await human.is_shown(_GO)

    answer, kind, shown = run(main(), bound=LIMIT)
    assert answer == {"answers": [{"id": "go", "selected": ["No"]}]}
    assert kind == INTERRUPT_KIND
    assert not shown
    assert list(asks.saver.list(None)) == []


def test_an_abort_resumes_the_paused_run_with_aborted_and_raises() -> None:
    """The signal aborting while the run is paused: ``ASK_ABORTED``, the run ended, nothing kept."""
    asks = GraphAsks()
    human = GraphHuman(asks)
    controller = AbortController()

    async def main() -> BaseException | None:
        request: AskUserQuestionRequest[Any] = {**_GO, "signal": controller.signal}
        task = asyncio.ensure_future(asks.ask(request))
        await human.perform(request, Nothing())
        controller.abort()
        await asyncio.wait({task})
        return task.exception()

    error = run(main(), bound=LIMIT)
    assert isinstance(error, UserInteractionError)
    assert error.code is ErrorCode.ASK_ABORTED
    assert list(asks.saver.list(None)) == []


def test_lone_surrogates_survive_the_checkpointer_written_as_escapes() -> None:
    """A checkpointer saves a lone surrogate as ``?``: the interrupt shows it escaped instead.

    The answering side reads the paused run's state (``resume_command``), so
    it sees ``\\udXXX`` text, and its answer in that text is read back as
    the request's own id and label.
    """
    asks = GraphAsks()
    request: AskUserQuestionRequest[Any] = {
        "questions": [
            {
                "id": "q\ud83d",
                "question": "Which \udc00?",
                "options": [{"label": "a\udfff"}, {"label": "b"}],
            }
        ]
    }
    seen: list[AskUserQuestionRequest[Any]] = []

    def respond(shown: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(shown)
        question = shown["questions"][0]
        first = question.get("options", [])[0]["label"]
        return {"answers": [{"id": question["id"], "selected": [first]}]}

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=respond))

    async def main() -> AskUserQuestionAnswer:
        task = asyncio.ensure_future(asks.ask(request))
        await GraphHuman(asks).perform(request, Nothing())
        paused = asks.paused_of(request)
        assert paused is not None
        command = await resume_command(asks.graph, paused.config, service)
        assert command is not None
        assert asks.go_on(paused, command)
        return await task

    answer = run(main(), bound=LIMIT)
    assert answer == {"answers": [{"id": "q\ud83d", "selected": ["a\udfff"]}]}
    question = seen[0]["questions"][0]
    assert (question["id"], question["question"]) == ("q\\ud83d", "Which \\udc00?")
    assert question.get("options", [])[0]["label"] == "a\\udfff"


def test_ids_that_collide_once_escaped_are_refused() -> None:
    """Two labels that read the same once a lone surrogate is escaped: ``BAD_REQUEST``."""
    asks = GraphAsks()
    request: AskUserQuestionRequest[Any] = {
        "questions": [
            {
                "id": "q",
                "question": "Which?",
                "options": [{"label": "\ud83d"}, {"label": "\\ud83d"}],
            }
        ]
    }
    with pytest.raises(UserInteractionError) as caught:
        run(asks.ask(request), bound=LIMIT)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert "lone surrogates written" in str(caught.value)
    assert list(asks.saver.list(None)) == []


_LONE = re.compile("[\ud800-\udfff]")


def _written(text: str) -> str:
    """*text* as a checkpointed interrupt shows it: each lone surrogate as ``\\udXXX``."""
    return _LONE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_answer_given_as_the_interrupt_shows_it_is_read_as_the_requests_own(
    data: st.DataObject,
) -> None:
    """Any request and answer: ids and labels written as the interrupt shows them read back exact.

    The request's text is drawn with lone surrogates as a model writes them;
    an answer given with every id and label written ``\\udXXX`` is read as
    the very answer in the request's own text, as one given in that text is.
    """
    request = data.draw(requests(max_questions=3), "request")
    answer = expected_answer(request, data.draw(actions(request), "actions"))
    shown: AskUserQuestionAnswer = {
        "answers": [
            {
                **item,
                "id": _written(item["id"]),
                "selected": [_written(x) for x in item["selected"]],
            }
            for item in answer["answers"]
        ]
    }
    labels = [[_written(o["label"]) for o in q.get("options", [])] for q in request["questions"]]
    ids = [_written(q["id"]) for q in request["questions"]]
    assume(len(set(ids)) == len(ids) and all(len(set(ls)) == len(ls) for ls in labels))
    assert answer_of_resume(resume_value(shown), request) == answer
    assert answer_of_resume(resume_value(answer), request) == answer


# ---------------------------------------------------------------------------
# Broken provider paths are caught.


class _FirstAnswerForAll:
    """An AG-UI provider that gives every question the payload's first answer."""

    def __init__(self) -> None:
        self.real = AgUiInterruptProvider()

    @property
    def pending(self) -> tuple[Interrupt, ...]:
        return self.real.pending

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        answer = await self.real.ask(request)
        first = answer["answers"][0]
        return {"answers": [{**first, "id": item["id"]} for item in answer["answers"]]}

    def resume(
        self, resume: RunAgentInput | Sequence[ResumeEntry | Mapping[str, Any]]
    ) -> list[Resumed]:
        return self.real.resume(resume)


class _IgnoresCancelled(_FirstAnswerForAll):
    """An AG-UI provider that drops a run's ``cancelled`` entries: a dismissal never lands."""

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        return await self.real.ask(request)

    def resume(
        self, resume: RunAgentInput | Sequence[ResumeEntry | Mapping[str, Any]]
    ) -> list[Resumed]:
        entries = (resume.resume or []) if isinstance(resume, RunAgentInput) else resume
        kept = [e for e in entries if not (isinstance(e, ResumeEntry) and e.status == "cancelled")]
        return self.real.resume(kept) if kept else []


class _ReadsAsSkips(InterruptProvider):
    """A LangGraph provider that reads one way an ask ends as an answer skipping every question."""

    __slots__ = ()

    #: The error code it misreads.
    misread: ErrorCode = ErrorCode.ASK_CANCELLED

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        try:
            return await super().ask(request)
        except UserInteractionError as error:
            if error.code is not self.misread:
                raise
            return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}


class _AbortAsSkips(_ReadsAsSkips):
    """The same, for an ``aborted`` resume value: a late answer after an abort."""

    __slots__ = ()

    misread: ErrorCode = ErrorCode.ASK_ABORTED


#: Each broken path: its subject factory, the requirement it breaks, and the check that sees it.
BROKEN: Mapping[str, tuple[Factory, str, str]] = {
    "ag_ui-first-answer-for-all": (
        lambda: make_ag_ui_subject(_FirstAnswerForAll(), name="first-answer-for-all"),
        "PRV-ANSWER-1",
        "provider-answers",
    ),
    "ag_ui-ignores-cancelled": (
        lambda: make_ag_ui_subject(_IgnoresCancelled(), name="ignores-cancelled"),
        "PRV-DISMISS-1",
        "provider-lifecycle",
    ),
    "langgraph-dismissal-as-skips": (
        lambda: make_langgraph_subject(_ReadsAsSkips(), name="dismissal-as-skips"),
        "PRV-DISMISS-1",
        "provider-lifecycle",
    ),
    "langgraph-abort-as-skips": (
        lambda: make_langgraph_subject(_AbortAsSkips(), name="abort-as-skips"),
        "PRV-ABORT-2",
        "provider-lifecycle",
    ),
}


#: One broken path of each framework in the fast tier; the others wait out the suite's bound.
FAST_BROKEN = frozenset({"ag_ui-first-answer-for-all", "langgraph-dismissal-as-skips"})


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if name in FAST_BROKEN else pytest.mark.slow)
        for name in sorted(BROKEN)
    ],
)
def test_a_broken_provider_path_is_caught(name: str) -> None:
    """Each broken path fails the suite's run, named by the requirement it breaks."""
    factory, requirement, check = BROKEN[name]
    report, failed = caught_within(factory, requirement, check, bound=BOUND)
    assert not report.ok
    assert requirement in failed, failed
