"""The AG-UI adapter: our ask as an interrupt, the resume rules, and another agent's interrupts.

Every row of the mapping table in ``docs/ag_ui.md`` is a test here (named
``test_row_*``), in both directions.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import jsonschema
import pytest
from ag_ui.core import (
    EventType,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedInterruptOutcome,
    ToolCall,
)
from ag_ui.core.types import FunctionCall
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
    answer_violations,
)
from dsh_user_interaction._json import JsonError, read_json
from dsh_user_interaction.extra import ag_ui
from dsh_user_interaction.extra.ag_ui import (
    AgUiInterruptProvider,
    ResumeError,
    ResumeErrorCode,
    UnsupportedInterrupt,
    answer_interrupt,
    answer_interrupts,
    answer_of_payload,
    answer_schema,
    interrupt_of,
    request_of_interrupt,
    resume_entry_of,
    run_error_of,
    run_tool_call,
)
from dsh_user_interaction.plan_review import PLAN_APPROVED
from dsh_user_interaction.tool import ASK_USER_QUESTION_TOOL
from dsh_user_interaction_conformance.strategies import invalid_answers, requests, valid_answers

from .helpers import run


def _valid(schema: dict[str, Any], instance: Any) -> bool:
    """Whether *instance* validates against the JSON Schema (2020-12) *schema*."""
    try:
        jsonschema.validate(instance, schema, cls=jsonschema.Draft202012Validator)
    except jsonschema.ValidationError:
        return False
    return True


def _request(fields: dict[str, Any]) -> AskUserQuestionRequest:
    """A request with extra keys (``askId``), which its TypedDict does not name."""
    return cast("AskUserQuestionRequest", fields)


DEPLOY = _request(
    {
        "askId": "ask-1",
        "questions": [
            {
                "id": "env",
                "question": "Where to deploy?",
                "header": "Target",
                "options": [{"label": "prod"}, {"label": "staging"}],
            },
            {
                "id": "checks",
                "question": "Which checks?",
                "options": [{"label": "tests"}, {"label": "lint"}],
                "multiSelect": True,
            },
        ],
    }
)


def _entry(interrupt_id: str, payload: object = None, *, cancelled: bool = False) -> ResumeEntry:
    if cancelled:
        return ResumeEntry(interrupt_id=interrupt_id, status="cancelled")
    return ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload=payload)


async def _asking(
    provider: AgUiInterruptProvider, request: AskUserQuestionRequest, service: Any = None
) -> asyncio.Task[AskUserQuestionAnswer]:
    """Start an ask through a service of *provider*, and wait until its interrupt is open."""
    if service is None:
        service = UserInteractionService()
        service.register_provider(provider)
    task = asyncio.ensure_future(service.ask(request))
    await provider.next_interrupts()
    return cast("asyncio.Task[AskUserQuestionAnswer]", task)


def test_exports_match_all() -> None:
    """The front module re-exports exactly the names in ``__all__``, each from a private module."""
    # The public ``testing`` module is an attribute of the package once imported.
    public = {name for name in vars(ag_ui) if not name.startswith("_")} - {"testing"}
    assert public == set(ag_ui.__all__)
    for name in ag_ui.__all__:
        module = getattr(getattr(ag_ui, name), "__module__", None)
        if module is not None and module.startswith("dsh_user_interaction"):
            assert module.rsplit(".", 1)[1].startswith("_"), (name, module)
    assert ag_ui.__all__ == sorted(ag_ui.__all__, key=lambda name: (not name.isupper(), name))


# ---------------------------------------------------------------------------
# Our ask as an interrupt
# ---------------------------------------------------------------------------


def test_interrupt_carries_the_ask_id_message_schema_expiry_and_questions() -> None:
    """An interrupt's id is the askId; its schema, expiry and metadata follow the request."""
    request = cast("AskUserQuestionRequest", {**DEPLOY, "deadline": 1_800_000_000.5})
    interrupt = interrupt_of(request, tool_call_id="call-9")
    assert interrupt.id == "ask-1"
    assert interrupt.reason == "ask_user_question"
    assert interrupt.message == "Target: Where to deploy?\nWhich checks?"
    assert interrupt.tool_call_id == "call-9"
    assert interrupt.expires_at == "2027-01-15T08:00:00.500Z"
    assert interrupt.response_schema == answer_schema(request)
    assert interrupt.metadata == {ag_ui.METADATA_KEY: {"questions": DEPLOY["questions"]}}
    assert ag_ui.moment_of(interrupt.expires_at) == 1_800_000_000.5


def test_plan_review_interrupt_has_its_own_reason() -> None:
    """A question that reviews a plan makes a ``plan_review`` interrupt."""
    request = _request(
        {
            "askId": "plan-1",
            "questions": [
                {
                    "id": "plan-review",
                    "question": "Approve the plan?",
                    "detail": "# Plan\n1. Do it",
                    "options": [{"label": "Approve"}, {"label": "Keep planning"}],
                    "intent": {"kind": "plan-review", "approve": "Approve"},
                }
            ],
        }
    )
    assert interrupt_of(request).reason == "plan_review"


def test_interrupt_refuses_a_request_without_id_or_with_a_bad_one() -> None:
    """No ask id, or a request breaking a rule, is ``BAD_REQUEST``: never an interrupt guessed."""
    request: AskUserQuestionRequest = {"questions": [{"id": "q", "question": "Go?"}]}
    with pytest.raises(UserInteractionError) as caught:
        interrupt_of(request)
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert "askId" in str(caught.value)
    duplicated = {"askId": "a", "questions": [{"id": "q", "question": "?"}] * 2}
    with pytest.raises(UserInteractionError) as caught:
        interrupt_of(cast("AskUserQuestionRequest", duplicated))
    assert caught.value.code is ErrorCode.BAD_REQUEST
    with pytest.raises(UserInteractionError, match="agUiToolCallId"):
        interrupt_of(cast("AskUserQuestionRequest", {**DEPLOY, "agUiToolCallId": 7}))


def test_run_finished_carries_every_open_interrupt() -> None:
    """``RUN_FINISHED`` has the interrupt outcome with the open interrupts, encoded as SSE."""
    from ag_ui.encoder import EventEncoder

    interrupt = interrupt_of(DEPLOY)
    event = ag_ui.run_finished_interrupt("thread", "run-1", [interrupt])
    assert isinstance(event.outcome, RunFinishedInterruptOutcome)
    assert event.outcome.interrupts == [interrupt]
    encoded = EventEncoder().encode(event)
    assert encoded.startswith('data: {"type":"RUN_FINISHED"')
    assert '"outcome":{"type":"interrupt"' in encoded
    assert '"responseSchema"' in encoded
    with pytest.raises(ValueError, match="at least one"):
        ag_ui.run_finished_interrupt("thread", "run-1", [])


@settings(max_examples=25)
@given(requests(), st.data())
def test_the_response_schema_accepts_exactly_the_answers_the_request_accepts(
    request: AskUserQuestionRequest, data: st.DataObject
) -> None:
    """For any request, an answer validates against its schema iff the payload reader takes it.

    And a payload taken is the answer itself, unchanged.
    """
    named = cast("AskUserQuestionRequest", {**request, "askId": "a"})
    interrupt = interrupt_of(named)
    assert interrupt.response_schema is not None
    schema = interrupt.response_schema
    answer: object = data.draw(
        valid_answers(request) | invalid_answers(request).map(lambda bad: bad.answer)
    )
    try:
        plain = read_json(answer)
    except JsonError:
        assume(False)
    valid = _valid(schema, plain)
    try:
        taken = answer_of_payload(request, plain)
    except ResumeError as error:
        assert error.code is ResumeErrorCode.BAD_PAYLOAD
        assert not valid, str(error)
        return
    assert valid
    assert taken == plain
    assert not [v for v in answer_violations(request, taken) if v.level == "MUST"]


def test_payload_errors_name_the_field() -> None:
    """A malformed payload raises ``BAD_PAYLOAD`` naming the field, from the resume list."""
    where = "resume[0].payload"
    cases: list[tuple[object, str]] = [
        ("text", "resume[0].payload: expected an object, got string"),
        ({}, "resume[0].payload.answers: required"),
        ({"answers": [], "defaulted": True}, "resume[0].payload.defaulted: is not a key"),
        ({"answers": {}}, "resume[0].payload.answers: expected an array, got object"),
        ({"answers": [7]}, "resume[0].payload.answers[0]: expected an object, got number"),
        ({"answers": [{"id": "env"}]}, "resume[0].payload.answers[0].selected: required"),
        (
            {"answers": [{"id": "env", "selected": [1]}]},
            "resume[0].payload.answers[0].selected[0]: expected a string, got number",
        ),
        (
            {"answers": [{"id": "env", "selected": [], "custom": None}]},
            "resume[0].payload.answers[0].custom: expected a string, got null",
        ),
        (
            {"answers": [{"id": "env", "selected": [], "x": 1}]},
            "resume[0].payload.answers[0].x: is not a key of an answer item",
        ),
        (
            {"answers": [{"id": "env", "selected": []}]},
            "resume[0].payload: ANS-COUNT-1 (MUST)",
        ),
        ({"answers": [{"id": 3, "selected": []}]}, "answers[0].id: expected a string"),
        ({"answers": [float("nan")]}, "resume[0].payload: is not JSON data"),
    ]
    for payload, expected in cases:
        with pytest.raises(ResumeError) as caught:
            answer_of_payload(DEPLOY, payload, where=where, interrupt_id="ask-1")
        assert caught.value.code is ResumeErrorCode.BAD_PAYLOAD
        assert expected in str(caught.value), (payload, str(caught.value))
        assert caught.value.interrupt_id == "ask-1"


# ---------------------------------------------------------------------------
# The mapping table, forward: the provider's outcomes
# ---------------------------------------------------------------------------


def test_row_answered() -> None:
    """Answered: a resolved entry's payload is the answer the ask returns, unchanged."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, DEPLOY)
        answer = {
            "answers": [
                {"id": "env", "selected": ["prod"]},
                {"id": "checks", "selected": ["tests", "lint"]},
            ]
        }
        done = provider.resume([_entry("ask-1", answer)])
        assert done == [ag_ui.Resumed("ask-1", "answered", cast("Any", answer), False)]
        assert await asking == answer
        assert provider.pending == ()

    run(main())


def test_row_skipped_and_custom_text() -> None:
    """Skipped (``selected: []``) and custom text travel in the payload as they are."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, DEPLOY)
        answer: AskUserQuestionAnswer = {
            "answers": [
                {"id": "env", "selected": [], "custom": "canary"},
                {"id": "checks", "selected": []},
            ]
        }
        provider.resume(
            RunAgentInput.model_validate(
                {
                    "threadId": "t",
                    "runId": "r2",
                    "messages": [],
                    "resume": [{"interruptId": "ask-1", "status": "resolved", "payload": answer}],
                }
            )
        )
        assert await asking == answer

    run(main())


def test_row_dismissed() -> None:
    """Dismissed: a cancelled entry makes the ask raise ``ASK_CANCELLED``."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, DEPLOY)
        done = provider.resume([_entry("ask-1", cancelled=True)])
        assert done[0].status == "cancelled"
        with pytest.raises(UserInteractionError) as caught:
            await asking
        assert caught.value.code is ErrorCode.ASK_CANCELLED

    run(main())


def test_row_aborted() -> None:
    """Aborted: the signal closes the interrupt; a later resume for it is ``INTERRUPT_ENDED``."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        controller = AbortController()
        request = cast("AskUserQuestionRequest", {**DEPLOY, "signal": controller.signal})
        asking = await _asking(provider, request)
        controller.abort()
        with pytest.raises(UserInteractionError) as caught:
            await asking
        assert caught.value.code is ErrorCode.ASK_ABORTED
        assert not caught.value.timed_out
        assert provider.pending == ()
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("ask-1", cancelled=True)])
        assert refused.value.code is ResumeErrorCode.INTERRUPT_ENDED
        assert "aborted" in str(refused.value)

    run(main())


def test_row_timed_out() -> None:
    """Timed out: the deadline ends the ask; its interrupt is expired and refuses a resume."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        request = cast("AskUserQuestionRequest", {**DEPLOY, "deadline": time.time() - 1})
        asking = await _asking(provider, request)
        assert provider.pending[0].expires_at is not None
        with pytest.raises(UserInteractionError) as caught:
            await asking
        assert caught.value.code is ErrorCode.ASK_ABORTED
        assert caught.value.timed_out
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("ask-1", cancelled=True)])
        assert refused.value.code is ResumeErrorCode.INTERRUPT_EXPIRED
        event = run_error_of(refused.value)
        assert event.type is EventType.RUN_ERROR
        assert event.code == "INTERRUPT_EXPIRED"

    run(main())


def test_row_defaulted() -> None:
    """Defaulted: the service answers with the defaults; the expired interrupt refuses a resume."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        request = _request(
            {
                "askId": "ask-d",
                "deadline": time.time() - 1,
                "questions": [
                    {
                        "id": "go",
                        "question": "Go?",
                        "options": [{"label": "Wait"}, {"label": "Go"}],
                        "default": {"selected": ["Wait"]},
                    }
                ],
            }
        )
        asking = await _asking(provider, request)
        assert await asking == {"answers": [{"id": "go", "selected": ["Wait"]}], "defaulted": True}
        payload = {"answers": [{"id": "go", "selected": ["Go"]}]}
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("ask-d", payload)])
        assert refused.value.code is ResumeErrorCode.INTERRUPT_EXPIRED

    run(main())


def test_row_provider_disposed() -> None:
    """Provider disposed: the ask raises ``PROVIDER_DISPOSED``; a resume is ``INTERRUPT_ENDED``."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, DEPLOY)
        provider.dispose()
        with pytest.raises(UserInteractionError) as caught:
            await asking
        assert caught.value.code is ErrorCode.PROVIDER_DISPOSED
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("ask-1", cancelled=True)])
        assert refused.value.code is ResumeErrorCode.INTERRUPT_ENDED
        assert "disposed" in str(refused.value)

    run(main())


# ---------------------------------------------------------------------------
# The resume rules
# ---------------------------------------------------------------------------

ONE = _request({"askId": "one", "questions": [{"id": "q", "question": "Name?"}]})
TWO = _request({"askId": "two", "questions": [{"id": "q", "question": "Why?"}]})
NAMED: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": [], "custom": "x"}]}


def test_every_open_interrupt_is_answered_at_once() -> None:
    """A resume leaving an open interrupt out is refused whole; nothing is delivered."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        first = await _asking(provider, ONE, service)
        second = asyncio.ensure_future(service.ask(TWO))
        await provider.opened(["two"])
        assert [i.id for i in provider.pending] == ["one", "two"]
        outcome = provider.run_finished("t", "r").outcome
        assert isinstance(outcome, RunFinishedInterruptOutcome)
        assert [i.id for i in outcome.interrupts] == ["one", "two"]
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("one", NAMED)])
        assert refused.value.code is ResumeErrorCode.MISSING_INTERRUPT
        assert "'two'" in str(refused.value)
        assert not first.done()
        assert [i.id for i in provider.pending] == ["one", "two"]
        provider.resume([_entry("two", cancelled=True), _entry("one", NAMED)])
        assert await first == NAMED
        with pytest.raises(UserInteractionError):
            await second

    run(main())


def test_an_interrupt_no_run_has_ended_with_is_not_required() -> None:
    """An interrupt opened after the run ended is not required in that run's resume."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        first = await _asking(provider, ONE, service)
        provider.run_finished("t", "r1")
        second = asyncio.ensure_future(service.ask(TWO))
        await provider.opened(["two"])
        provider.resume([_entry("one", NAMED)])
        assert await first == NAMED
        outcome = provider.run_finished("t", "r2").outcome
        assert isinstance(outcome, RunFinishedInterruptOutcome)
        assert [i.id for i in outcome.interrupts] == ["two"]
        provider.resume([_entry("two", NAMED)])
        assert await second == NAMED

    run(main())


def test_a_refused_resume_loses_nothing_and_a_corrected_one_follows() -> None:
    """A bad payload refuses the whole resume; the asks still wait and a fixed resume answers."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        first = await _asking(provider, ONE, service)
        second = asyncio.ensure_future(service.ask(TWO))
        await provider.opened(["two"])
        bad = {"answers": [{"id": "q", "selected": ["nope"]}]}
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("one", NAMED), _entry("two", bad)])
        assert refused.value.code is ResumeErrorCode.BAD_PAYLOAD
        assert refused.value.interrupt_id == "two"
        assert str(refused.value).startswith("resume[1].payload: ANS-SEL-3")
        assert len(provider.pending) == 2
        provider.resume([_entry("one", NAMED), _entry("two", NAMED)])
        assert await first == NAMED
        assert await second == NAMED

    run(main())


def test_the_same_resume_twice_is_accepted_once() -> None:
    """The same resume again is a no-op with the same outcome; a different one is refused."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, ONE)
        resume = [_entry("one", NAMED)]
        first = provider.resume(resume)
        assert await asking == NAMED
        again = provider.resume([_entry("one", NAMED)])
        assert again == [ag_ui.Resumed("one", "answered", cast("Any", NAMED), True)]
        assert first[0].answer == again[0].answer
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("one", cancelled=True)])
        assert refused.value.code is ResumeErrorCode.INTERRUPT_ENDED
        assert "answered by an earlier resume" in str(refused.value)

    run(main())


def test_a_cancelled_resume_repeated_is_a_no_op() -> None:
    """A repeated cancelled entry is accepted again as cancelled, with no ask touched."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, ONE)
        provider.resume([_entry("one", cancelled=True)])
        with pytest.raises(UserInteractionError):
            await asking
        again = provider.resume([_entry("one", cancelled=True)])
        assert again == [ag_ui.Resumed("one", "cancelled", None, True)]

    run(main())


def test_unknown_duplicate_and_malformed_resumes_are_refused() -> None:
    """Unknown ids, an id twice and malformed entries are refused, naming the entry."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, ONE)
        cases: list[tuple[object, ResumeErrorCode, str]] = [
            ([_entry("ghost", NAMED)], ResumeErrorCode.UNKNOWN_INTERRUPT, "resume[0].interruptId"),
            (
                [_entry("one", NAMED), _entry("one", NAMED)],
                ResumeErrorCode.DUPLICATE_INTERRUPT,
                "resume[1].interruptId",
            ),
            (
                [{"interruptId": "one", "status": "done"}],
                ResumeErrorCode.MALFORMED_RESUME,
                "status",
            ),
            ([{"status": "cancelled"}], ResumeErrorCode.MALFORMED_RESUME, "resume[0].interruptId"),
            ("one", ResumeErrorCode.MALFORMED_RESUME, "resume: expected a list"),
        ]
        for resume, code, named in cases:
            with pytest.raises(ResumeError) as refused:
                provider.resume(cast("Any", resume))
            assert refused.value.code is code
            assert named in str(refused.value), str(refused.value)
        assert not asking.done()
        provider.resume([{"interruptId": "one", "status": "resolved", "payload": NAMED}])
        assert await asking == NAMED

    run(main())


def test_an_interrupt_past_its_expiry_is_refused_while_its_ask_waits() -> None:
    """By the provider's clock, a resume after ``expiresAt`` is ``INTERRUPT_EXPIRED``."""

    async def main() -> None:
        now = [1000.0]
        provider = AgUiInterruptProvider(clock=lambda: now[0])
        request = cast("AskUserQuestionRequest", {**ONE, "deadline": time.time() + 3600})
        asking = await _asking(provider, request)
        now[0] = time.time() + 7200
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("one", NAMED)])
        assert refused.value.code is ResumeErrorCode.INTERRUPT_EXPIRED
        assert not asking.done()
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking

    run(main())


def test_two_asks_cannot_share_an_interrupt_id() -> None:
    """A second ask with an open ask's id is ``BAD_REQUEST``; the first keeps waiting."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        first = await _asking(provider, ONE, service)
        with pytest.raises(UserInteractionError) as caught:
            await service.ask(ONE)
        assert caught.value.code is ErrorCode.BAD_REQUEST
        assert not first.done()
        provider.resume([_entry("one", NAMED)])
        assert await first == NAMED

    run(main())


def test_a_request_without_ask_id_gets_a_fresh_interrupt_id() -> None:
    """Without ``askId`` the interrupt id comes from *new_ask_id*."""

    async def main() -> None:
        provider = AgUiInterruptProvider(new_ask_id=lambda: "fresh")
        asking = await _asking(provider, {"questions": [{"id": "q", "question": "?"}]})
        assert provider.pending[0].id == "fresh"
        provider.resume([_entry("fresh", NAMED)])
        assert await asking == NAMED
        assert provider.asked == 1
        assert "asked=1" in repr(provider)

    run(main())


def test_forgotten_interrupts_are_unknown() -> None:
    """Past *remember* ended interrupts, the oldest is forgotten: ``UNKNOWN_INTERRUPT``."""

    async def main() -> None:
        provider = AgUiInterruptProvider(remember=1)
        for request in (ONE, TWO):
            asking = await _asking(provider, request)
            provider.resume([_entry(str(request.get("askId")), NAMED)])
            await asking
        assert provider.resume([_entry("two", NAMED)])[0].repeated
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("one", NAMED)])
        assert refused.value.code is ResumeErrorCode.UNKNOWN_INTERRUPT
        with pytest.raises(ValueError, match="remember"):
            AgUiInterruptProvider(remember=-1)

    run(main())


# ---------------------------------------------------------------------------
# The tools
# ---------------------------------------------------------------------------


def test_tools_are_our_definitions() -> None:
    """The AG-UI tools carry our definitions' names, descriptions and schemas exactly."""
    tools = ag_ui.ag_ui_tools()
    assert [tool.name for tool in tools] == ["ask_user_question", "exit_plan_mode"]
    assert tools[0].parameters == ASK_USER_QUESTION_TOOL["input_schema"]
    assert tools[0].description == ASK_USER_QUESTION_TOOL["description"]
    cast("dict[str, list[str]]", tools[0].parameters)["required"].append("more")
    assert ASK_USER_QUESTION_TOOL["input_schema"]["required"] == ["questions"]


def test_a_tool_call_names_its_interrupt_and_gets_our_text() -> None:
    """The call id is the interrupt id and its toolCallId; the result is our tool's text."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        call = ToolCall(
            id="call-7",
            function=FunctionCall(
                name="ask_user_question",
                arguments='{"questions": [{"id": "q", "question": "Name?"}]}',
            ),
        )
        running = asyncio.ensure_future(run_tool_call(service, call, message_id="m-1"))
        (interrupt,) = await provider.next_interrupts()
        assert (interrupt.id, interrupt.tool_call_id) == ("call-7", "call-7")
        provider.resume([_entry("call-7", NAMED)])
        event = await running
        assert (event.tool_call_id, event.message_id) == ("call-7", "m-1")
        assert event.content == '{"answers":[{"id":"q","selected":[],"custom":"x"}]}'

    run(main())


def test_a_plan_review_call_and_a_bad_call() -> None:
    """``exit_plan_mode`` runs too; malformed arguments are an ``Error:`` line; no such tool raises."""

    async def main() -> None:
        provider = ScriptedProvider(
            respond=lambda request: {
                "answers": [{"id": request["questions"][0]["id"], "selected": ["Approve"]}]
            }
        )
        service = UserInteractionService()
        service.register_provider(provider)
        plan = ToolCall(
            id="c1",
            function=FunctionCall(name="exit_plan_mode", arguments='{"plan": "# Plan\\n1. Go"}'),
        )
        approved = await run_tool_call(service, plan, message_id="m")
        assert approved.content == PLAN_APPROVED
        bad = ToolCall(id="c2", function=FunctionCall(name="ask_user_question", arguments="{"))
        refused = await run_tool_call(service, bad, message_id="m")
        assert isinstance(refused.content, str)
        assert refused.content.startswith("Error: ")
        other = ToolCall(id="c3", function=FunctionCall(name="shell", arguments="{}"))
        with pytest.raises(ValueError, match="no tool 'shell'"):
            await run_tool_call(service, other, message_id="m")

    run(main())


# ---------------------------------------------------------------------------
# The other direction: another agent's interrupt
# ---------------------------------------------------------------------------

FORM = Interrupt(
    id="int-1",
    reason="input_required",
    message="The deploy needs a few answers.",
    response_schema={
        "type": "object",
        "properties": {
            "size": {
                "type": "string",
                "title": "Instance size",
                "oneOf": [{"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"}],
            },
            "regions": {"type": "array", "items": {"enum": ["eu", "us"]}, "maxItems": 2},
            "confirm": {"type": "boolean", "description": "Really?"},
            "note": {"type": "string", "maxLength": 10},
        },
        "required": ["confirm"],
    },
)


def _scripted(answer: dict[str, Any]) -> tuple[UserInteractionService, ScriptedProvider]:
    provider = ScriptedProvider(respond=lambda _request: cast("AskUserQuestionAnswer", answer))
    service = UserInteractionService()
    service.register_provider(provider)
    return service, provider


def test_a_flat_form_becomes_our_questions() -> None:
    """Each property is one question: choices, multi-select, Yes/No and text, in order."""
    request = request_of_interrupt(FORM, thread_id="th")
    assert request.get("askId") == "th/int-1"
    questions = request["questions"]
    assert [q["id"] for q in questions] == ["size", "regions", "confirm", "note"]
    assert questions[0]["question"] == "Instance size"
    assert [o["label"] for o in questions[0].get("options", ())] == ["Small", "Medium"]
    assert questions[1].get("multiSelect") is True
    assert [o["label"] for o in questions[2].get("options", ())] == ["Yes", "No"]
    assert "options" not in questions[3]
    assert questions[0].get("detail", "").startswith("The deploy needs a few answers.")
    assert "Required." in questions[2].get("detail", "")


def test_row_reverse_answered_skipped_and_custom() -> None:
    """Answered, skipped and custom text become payload values, a left-out key, and text."""

    async def main() -> None:
        service, _provider = _scripted(
            {
                "answers": [
                    {"id": "size", "selected": ["Medium"]},
                    {"id": "regions", "selected": []},
                    {"id": "confirm", "selected": ["Yes"]},
                    {"id": "note", "selected": [], "custom": "fast pls"},
                ]
            }
        )
        entry = await answer_interrupt(service, FORM)
        assert entry.status == "resolved"
        assert entry.payload == {"size": "m", "confirm": True, "note": "fast pls"}
        assert FORM.response_schema is not None
        jsonschema.validate(entry.payload, FORM.response_schema)

    run(main())


def test_row_reverse_dismissed() -> None:
    """Dismissed: a ``cancelled`` resume entry."""

    async def main() -> None:
        provider = ScriptedProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        asking = asyncio.ensure_future(answer_interrupts(service, [FORM]))
        (await provider.next_ask()).dismiss()
        assert await asking == [ResumeEntry(interrupt_id="int-1", status="cancelled")]

    run(main())


@pytest.mark.parametrize("code", [ErrorCode.ASK_ABORTED, ErrorCode.PROVIDER_DISPOSED])
def test_row_reverse_aborted_and_disposed(code: ErrorCode) -> None:
    """Aborted and provider disposed: no resume entry; the error propagates as raised."""

    async def main() -> None:
        provider = ScriptedProvider()
        service = UserInteractionService()
        registration = service.register_provider(provider)
        controller = AbortController()
        asking = asyncio.ensure_future(answer_interrupt(service, FORM, signal=controller.signal))
        await provider.next_ask()
        if code is ErrorCode.ASK_ABORTED:
            controller.abort()
        else:
            registration.dispose()
        with pytest.raises(UserInteractionError) as caught:
            await asking
        assert caught.value.code is code

    run(main())


def test_row_reverse_timed_out() -> None:
    """Timed out: ``expiresAt`` is the deadline; when it passes the ask times out, no entry."""

    async def main() -> None:
        provider = ScriptedProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        past = FORM.model_copy(update={"expires_at": ag_ui.expires_at_of(time.time() - 1)})
        with pytest.raises(UserInteractionError) as caught:
            await answer_interrupt(service, past)
        assert caught.value.code is ErrorCode.ASK_ABORTED
        assert caught.value.timed_out

    run(main())


def test_row_reverse_defaulted() -> None:
    """Defaulted: an answer of defaults is a timeout, its answer kept; no resume can reach it."""

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(ScriptedProvider())
        request = _request(
            {
                "askId": "ours",
                "deadline": time.time() - 1,
                "questions": [
                    {
                        "id": "go",
                        "question": "Go?",
                        "options": [{"label": "Wait"}],
                        "default": {"selected": ["Wait"]},
                    }
                ],
            }
        )
        interrupt = interrupt_of(request)
        with pytest.raises(UserInteractionError) as caught:
            await answer_interrupt(service, interrupt)
        assert caught.value.timed_out
        assert caught.value.answer == {
            "answers": [{"id": "go", "selected": ["Wait"]}],
            "defaulted": True,
        }

    run(main())


def test_answers_the_schema_does_not_take_are_refused() -> None:
    """Custom text on a choice, a required skip, text too long: ``BAD_ANSWER``, answer kept."""
    cases: list[tuple[list[dict[str, Any]], str]] = [
        ([{"id": "size", "selected": [], "custom": "XL"}], "'size': custom text"),
        ([{"id": "confirm", "selected": []}], "'confirm': required, and skipped"),
        (
            [
                {"id": "confirm", "selected": ["Yes"]},
                {"id": "note", "selected": [], "custom": "x" * 11},
            ],
            "'note': text longer than 10",
        ),
        (
            [{"id": "confirm", "selected": ["Yes"]}, {"id": "regions", "selected": ["Mars"]}],
            "'regions': 'Mars' is not one of its options",
        ),
    ]
    for items, expected in cases:
        answer = cast("AskUserQuestionAnswer", {"answers": items})
        with pytest.raises(UserInteractionError) as caught:
            resume_entry_of(FORM, answer)
        assert caught.value.code is ErrorCode.BAD_ANSWER
        assert expected in str(caught.value)
        assert caught.value.answer is answer


def _schema(properties: dict[str, Any], **top: Any) -> Interrupt:
    return Interrupt(
        id="x",
        reason="input_required",
        response_schema={"type": "object", "properties": properties, **top},
    )


def test_schemas_it_cannot_show_are_refused_naming_the_field() -> None:
    """A schema the mapping cannot show is refused before anything is asked, naming the field."""
    cases: list[tuple[Interrupt, str]] = [
        (Interrupt(id="x", reason="r"), "responseSchema: absent"),
        (_schema({"n": {"type": "number"}}), "responseSchema.properties.n.type"),
        (_schema({"o": {"type": "object", "properties": {}}}), "responseSchema.properties.o.type"),
        (
            _schema({"s": {"type": "string", "pattern": "^a"}}),
            "responseSchema.properties.s.pattern",
        ),
        (_schema({"e": {"enum": ["a", "a"]}}), "responseSchema.properties.e: two options"),
        (_schema({"e": {"enum": []}}), "responseSchema.properties.e: offers no options"),
        (_schema({"e": {"enum": [1]}}), "responseSchema.properties.e.enum[0]"),
        (_schema({"a": {"type": "array", "items": {"type": "integer"}}}), "properties.a.items"),
        (_schema({}), "responseSchema.properties: expected at least one property"),
        (_schema({"s": {"type": "string"}}, required=["t"]), "responseSchema.required"),
        (_schema({"s": {"type": "string"}}, oneOf=[]), "responseSchema.oneOf"),
        (_schema({"s": {"type": "string", "minLength": -1}}), "properties.s.minLength"),
        (_schema({"": {"type": "string"}}), "responseSchema.properties: question"),
        (
            Interrupt(id="x", reason="r", response_schema={"type": "array"}),
            "responseSchema.type",
        ),
    ]
    for interrupt, expected in cases:
        with pytest.raises(UnsupportedInterrupt) as caught:
            request_of_interrupt(interrupt)
        assert expected in str(caught.value), str(caught.value)

    async def main() -> None:
        service, provider = _scripted({"answers": []})
        with pytest.raises(UnsupportedInterrupt):
            await answer_interrupts(service, [FORM, cases[1][0]])
        assert provider.asked == 0

    run(main())
    bad_expiry = FORM.model_copy(update={"expires_at": "tomorrow"})
    with pytest.raises(UnsupportedInterrupt, match="expiresAt"):
        request_of_interrupt(bad_expiry)


_PROPERTY_SCHEMAS = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "string", "maxLength": 3}),
    st.just({"type": "boolean"}),
    st.just({"type": "string", "enum": ["a", "b", "c"]}),
    st.just({"type": "string", "oneOf": [{"const": "1", "title": "One"}, {"const": "2"}]}),
    st.just({"type": "array", "items": {"enum": ["x", "y"]}, "minItems": 1}),
    st.just({"type": "array", "items": {"enum": ["x", "y"]}}),
)


@settings(max_examples=25)
@given(
    st.dictionaries(st.sampled_from("pqrst"), _PROPERTY_SCHEMAS, min_size=1),
    st.sets(st.sampled_from("pqrst")),
    st.data(),
)
def test_any_answer_to_a_flat_form_validates_or_is_refused(
    properties: dict[str, Any], required: set[str], data: st.DataObject
) -> None:
    """For any flat form and any valid answer of ours: a payload valid by the schema, or refused."""
    interrupt = _schema(properties, required=sorted(required & set(properties)))
    request = request_of_interrupt(interrupt)
    answer = data.draw(valid_answers(request))
    try:
        entry = resume_entry_of(interrupt, answer)
    except UserInteractionError as error:
        assert error.code is ErrorCode.BAD_ANSWER
        assert error.answer is answer
        return
    assert interrupt.response_schema is not None
    jsonschema.validate(entry.payload, interrupt.response_schema)


@settings(max_examples=25)
@given(requests())
def test_our_own_interrupts_round_trip_through_any_service(request: AskUserQuestionRequest) -> None:
    """Our interrupt, asked on the client side, shows our very questions; the payload is the answer."""
    interrupt = interrupt_of(cast("AskUserQuestionRequest", {**request, "askId": "a"}))
    mirrored = request_of_interrupt(interrupt)
    carried = cast("dict[str, Any]", (interrupt.metadata or {})[ag_ui.METADATA_KEY])
    assert list(mirrored["questions"]) == carried["questions"]
    assert mirrored.get("askId") == "a"


def test_asked_again_under_an_ended_id_takes_its_outcome_at_once() -> None:
    """A step run again takes the resume's outcome without a second interrupt.

    Other questions under that id are ``BAD_REQUEST``; an ask that ended
    otherwise (aborted, here) opens its interrupt anew.
    """

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        asking = await _asking(provider, ONE, service)
        provider.resume([_entry("one", NAMED)])
        assert await asking == NAMED
        assert await service.ask(ONE) == NAMED
        assert provider.asked == 1
        other = _request({"askId": "one", "questions": [{"id": "q", "question": "Other?"}]})
        with pytest.raises(UserInteractionError) as caught:
            await service.ask(other)
        assert caught.value.code is ErrorCode.BAD_REQUEST
        dismissed = await _asking(provider, TWO, service)
        provider.resume([_entry("two", cancelled=True)])
        for again in (dismissed, asyncio.ensure_future(service.ask(TWO))):
            with pytest.raises(UserInteractionError) as caught:
                await again
            assert caught.value.code is ErrorCode.ASK_CANCELLED
        controller = AbortController()
        three = _request({"askId": "three", "questions": [{"id": "q", "question": "?"}]})
        aborted = await _asking(
            provider,
            cast("AskUserQuestionRequest", {**three, "signal": controller.signal}),
            service,
        )
        controller.abort()
        with pytest.raises(UserInteractionError):
            await aborted
        retried = await _asking(provider, three, service)
        assert [i.id for i in provider.pending] == ["three"]
        provider.resume([_entry("three", NAMED)])
        assert await retried == NAMED
        assert provider.asked == 4

    run(main())


def test_row_defaulted_through_the_tool_tells_the_model() -> None:
    """Defaulted, through the tool: the model reads the defaults flagged as not the user's."""

    async def main() -> None:
        provider = AgUiInterruptProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        arguments = (
            '{"questions": [{"id": "go", "question": "Go?",'
            ' "options": [{"label": "Wait (Recommended)"}, {"label": "Go"}]}]}'
        )
        call = ToolCall(
            id="c-d", function=FunctionCall(name="ask_user_question", arguments=arguments)
        )
        # No resume ever comes, so the deadline is what ends the ask, however soon it passes.
        event = await run_tool_call(
            service, call, message_id="m", answer_within=0.001, recommended_defaults=True
        )
        assert isinstance(event.content, str)
        assert event.content.startswith(
            '{"answers":[{"id":"go","selected":["Wait (Recommended)"]}],"defaulted":true,'
        )
        with pytest.raises(ResumeError) as refused:
            provider.resume([_entry("c-d", cancelled=True)])
        assert refused.value.code is ResumeErrorCode.INTERRUPT_EXPIRED

    run(main())


def test_importing_without_the_sdk_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without ag-ui-protocol, importing the adapter raises one ImportError naming the extra."""
    import importlib
    import sys

    for name in [n for n in sys.modules if n.startswith("dsh_user_interaction.extra.ag_ui")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ag_ui.core", None)
    with pytest.raises(ImportError, match=r"pip install 'dsh-user-interaction\[ag_ui\]'"):
        importlib.import_module("dsh_user_interaction.extra.ag_ui")


_ATTEMPTS = st.lists(
    st.sampled_from(["good", "other", "bad", "cancel", "ghost"]), min_size=1, max_size=6
)


@settings(max_examples=40)
@given(_ATTEMPTS)
def test_the_first_accepted_resume_decides_and_nothing_else_changes_it(attempts: list[str]) -> None:
    """Over any run of resumes: the first accepted one is the outcome; later ones repeat or fail.

    A refused resume leaves the ask waiting; after the outcome, the same entry is a
    no-op with that outcome, and any other entry is refused with the outcome unchanged.
    """
    payloads: dict[str, object] = {
        "good": NAMED,
        "other": {"answers": [{"id": "q", "selected": [], "custom": "y"}]},
        "bad": {"answers": [{"id": "q", "selected": ["nope"]}]},
    }

    def entry(kind: str) -> ResumeEntry:
        if kind == "cancel":
            return _entry("one", cancelled=True)
        if kind == "ghost":
            return _entry("ghost", NAMED)
        return _entry("one", payloads[kind])

    async def main() -> None:
        provider = AgUiInterruptProvider()
        asking = await _asking(provider, ONE)
        decided: str | None = None
        for kind in attempts:
            try:
                done = provider.resume([entry(kind)])
            except ResumeError as error:
                expected = {
                    "bad": ResumeErrorCode.BAD_PAYLOAD,
                    "ghost": ResumeErrorCode.UNKNOWN_INTERRUPT,
                }.get(kind, ResumeErrorCode.INTERRUPT_ENDED)
                if decided is not None and kind == "bad":
                    expected = ResumeErrorCode.INTERRUPT_ENDED
                assert error.code is expected
                assert decided is not None or kind in {"bad", "ghost"}
                assert decided is None or kind != decided
                continue
            assert done[0].repeated == (decided is not None)
            assert decided is None or kind == decided
            decided = kind
        if decided is None:
            assert not asking.done()
            asking.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asking
            return
        await asyncio.sleep(0)
        if decided == "cancel":
            with pytest.raises(UserInteractionError) as caught:
                await asking
            assert caught.value.code is ErrorCode.ASK_CANCELLED
        else:
            assert await asking == payloads[decided]

    run(main())
