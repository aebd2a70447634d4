"""The Claude Agent SDK adapter: every row of the outcome table, the refusals, the ids."""

from __future__ import annotations

import asyncio
import json
import types
from collections.abc import Awaitable, Callable
from typing import Any, cast

import pytest
from claude_agent_sdk import (
    CanUseTool,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    MESSAGES,
    TIMED_OUT_MESSAGE,
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    PendingAsk,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    check_request,
)
from dsh_user_interaction.extra import claude
from dsh_user_interaction.extra.claude import (
    DEFAULTED_NOTE,
    HEADER_MAX,
    JOIN,
    answer_question,
    answers_of,
    can_use_tool_for,
    deny_of,
    hook_output_of,
    request_of,
    review_exit_plan,
)
from dsh_user_interaction.plan_review import (
    PLAN_DISMISSED,
    PLAN_KEEP_PLANNING_WITH_FEEDBACK,
    PLAN_NEEDS_HEADING,
)
from tests.helpers import run

Input = dict[str, Any]

PICK: Input = {
    "questions": [
        {
            "question": "Which database?",
            "header": "Database",
            "options": [
                {"label": "Postgres (Recommended)", "description": "Shared, durable."},
                {"label": "SQLite", "description": "One file."},
            ],
            "multiSelect": False,
        },
        {
            "question": "Which extras?",
            "header": "Extras",
            "options": [{"label": "Web"}, {"label": "Terminal"}, {"label": "MCP"}],
            "multiSelect": True,
        },
    ]
}


def service_answering(
    respond: Callable[[AskUserQuestionRequest[Any]], AskUserQuestionAnswer],
) -> tuple[UserInteractionService, list[AskUserQuestionRequest[Any]]]:
    """A service whose scripted human answers with *respond*, and the requests it saw."""
    seen: list[AskUserQuestionRequest[Any]] = []

    def recording(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(request)
        return respond(request)

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=recording))
    return service, seen


async def with_pending(
    asking: Callable[[UserInteractionService], Awaitable[PermissionResult]],
    act: Callable[[PendingAsk, Any], None],
) -> PermissionResult:
    """Run *asking* against a scripted human, and *act* on its one pending ask."""
    provider = ScriptedProvider()
    service = UserInteractionService()
    registration = service.register_provider(provider)
    task = asyncio.ensure_future(asking(service))
    pending = await provider.next_ask()
    act(pending, registration)
    return await task


def allowed_answers(result: PermissionResult) -> dict[str, str]:
    """The ``answers`` of an allow result; fails the test on a denial."""
    assert isinstance(result, PermissionResultAllow), result
    assert result.updated_input is not None
    return cast("dict[str, str]", result.updated_input["answers"])


# --- The outcome table, row by row ---------------------------------------------------------


def test_answered_single_select_is_the_label() -> None:
    """An answered single-select question maps to its label, keyed by question text."""
    service, _ = service_answering(
        lambda request: {
            "answers": [{"id": "q1", "selected": ["SQLite"]}, {"id": "q2", "selected": ["Web"]}]
        }
    )
    result = run(answer_question(service, PICK))
    assert isinstance(result, PermissionResultAllow)
    assert result.updated_input == {
        **PICK,
        "answers": {"Which database?": "SQLite", "Which extras?": "Web"},
    }


def test_answered_multi_select_joins_labels_in_the_order_given() -> None:
    """A multi-select answer is its labels joined by ", ", as Claude joins them."""
    service, _ = service_answering(
        lambda request: {
            "answers": [
                {"id": "q1", "selected": ["Postgres (Recommended)"]},
                {"id": "q2", "selected": ["MCP", "Web"]},
            ]
        }
    )
    answers = allowed_answers(run(answer_question(service, PICK)))
    assert answers == {"Which database?": "Postgres (Recommended)", "Which extras?": "MCP, Web"}


def test_custom_text_is_claudes_other() -> None:
    """Free text is Claude's "Other": alone for a single select, after the labels for a multi."""
    service, _ = service_answering(
        lambda request: {
            "answers": [
                {"id": "q1", "selected": [], "custom": "DuckDB"},
                {"id": "q2", "selected": ["Web"], "custom": "a CLI"},
            ]
        }
    )
    answers = allowed_answers(run(answer_question(service, PICK)))
    assert answers == {"Which database?": "DuckDB", "Which extras?": "Web, a CLI"}


def test_skipped_question_is_left_out() -> None:
    """A skipped question (nothing selected, no text) has no key in Claude's answers."""
    service, _ = service_answering(
        lambda request: {
            "answers": [{"id": "q1", "selected": ["SQLite"]}, {"id": "q2", "selected": []}]
        }
    )
    assert allowed_answers(run(answer_question(service, PICK))) == {"Which database?": "SQLite"}


def test_dismissed_denies_with_the_cancel_text_and_interrupts() -> None:
    """A dismissal (ASK_CANCELLED) denies with the seam's text and interrupts the turn."""
    result = run(with_pending(lambda s: answer_question(s, PICK), lambda p, r: p.dismiss()))
    assert result == PermissionResultDeny(message=MESSAGES[ErrorCode.ASK_CANCELLED], interrupt=True)


def test_aborted_denies_with_the_abort_text_and_interrupts() -> None:
    """The application's signal aborting (ASK_ABORTED) denies with the seam's text, interrupting."""
    controller = AbortController()
    result = run(
        with_pending(
            lambda s: answer_question(s, PICK, signal=controller.signal),
            lambda p, r: controller.abort(),
        )
    )
    assert result == PermissionResultDeny(message=MESSAGES[ErrorCode.ASK_ABORTED], interrupt=True)


def test_an_abort_a_provider_reports_is_the_same_denial() -> None:
    """A provider's own ASK_ABORTED maps to the same interrupting denial."""
    result = run(
        with_pending(
            lambda s: answer_question(s, PICK),
            lambda p, r: p.reject(UserInteractionError.of(ErrorCode.ASK_ABORTED)),
        )
    )
    assert result == PermissionResultDeny(message=MESSAGES[ErrorCode.ASK_ABORTED], interrupt=True)


def test_the_callback_passes_the_applications_signal() -> None:
    """can_use_tool_for(signal=...) puts the signal on every request, so an abort ends them."""
    controller = AbortController()
    seen: list[AskUserQuestionRequest[Any]] = []

    def respond(request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        seen.append(request)
        return {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=respond))
    decide(can_use_tool_for(service, signal=controller.signal), "ExitPlanMode", PLAN, "t")
    assert seen[0].get("signal") is controller.signal


def test_timed_out_denies_with_the_timeout_text_and_goes_on() -> None:
    """A deadline that passes unanswered denies with TIMED_OUT_MESSAGE, without interrupting."""
    provider = ScriptedProvider()  # its human never answers
    service = UserInteractionService()
    service.register_provider(provider)
    result = run(answer_question(service, PICK, answer_within=0.05))
    assert result == PermissionResultDeny(message=TIMED_OUT_MESSAGE, interrupt=False)


def test_defaulted_denies_with_the_defaults_named_as_such() -> None:
    """Defaults used at the deadline are no human's answer: a denial that says so and gives them."""
    tool_input: Input = {
        "questions": [
            {
                "question": "Which database?",
                "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}],
            }
        ]
    }
    service = UserInteractionService()
    service.register_provider(ScriptedProvider())  # its human never answers
    result = run(
        answer_question(service, tool_input, answer_within=0.05, recommended_defaults=True)
    )
    assert isinstance(result, PermissionResultDeny)
    assert not result.interrupt
    assert result.message == (
        f'{DEFAULTED_NOTE} answers: {{"Which database?":"Postgres (Recommended)"}}'
    )


def test_provider_disposed_denies_with_the_disposal_text_and_goes_on() -> None:
    """A provider disposed while the ask waits denies with PROVIDER_DISPOSED's text."""
    result = run(with_pending(lambda s: answer_question(s, PICK), lambda p, r: r.dispose()))
    assert result == PermissionResultDeny(
        message=MESSAGES[ErrorCode.PROVIDER_DISPOSED], interrupt=False
    )


def test_no_provider_denies_naming_it() -> None:
    """With no provider registered, the denial says so; nothing raises."""
    result = run(answer_question(UserInteractionService(), PICK))
    assert result == PermissionResultDeny(message=MESSAGES[ErrorCode.NO_PROVIDER])


def test_a_timeout_error_of_any_provider_does_not_interrupt() -> None:
    """deny_of reads ``timed_out``: a timed-out abort lets the model go on."""
    assert deny_of(UserInteractionError.timed_out_error()) == PermissionResultDeny(
        message=TIMED_OUT_MESSAGE, interrupt=False
    )


def test_cancellation_passes_through() -> None:
    """Cancelling the callback's task cancels the ask; it never becomes a denial."""

    async def main() -> bool:
        provider = ScriptedProvider()
        service = UserInteractionService()
        service.register_provider(provider)
        task = asyncio.ensure_future(answer_question(service, PICK))
        await provider.next_ask()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return not provider.pending
        return False

    assert run(main())


# --- Refusals: inputs the seam cannot represent ----------------------------------------------


def _options(count: int) -> list[Input]:
    return [{"label": f"Option {number}"} for number in range(count)]


def _question(text: str = "Go?", **fields: object) -> Input:
    return {"question": text, "header": "Go", "options": _options(2), **fields}


REFUSED: list[tuple[str, object, str]] = [
    ("not an object", [], "$: expected an object, got array"),
    ("no questions key", {}, "$.questions: expected an array, got null"),
    ("no questions", {"questions": []}, "$.questions: expected 1 to 4 questions, got 0"),
    (
        "five questions",
        {"questions": [_question(f"Q{n}?") for n in range(5)]},
        "$.questions: expected 1 to 4 questions, got 5",
    ),
    (
        "duplicate question texts",
        {"questions": [_question(), _question()]},
        "$.questions[1].question: repeats an earlier question's text;"
        " Claude keys answers by question text",
    ),
    (
        "one option",
        {"questions": [_question(options=_options(1))]},
        "$.questions[0].options: expected 2 to 4 options, got 1",
    ),
    (
        "five options",
        {"questions": [_question(options=_options(5))]},
        "$.questions[0].options: expected 2 to 4 options, got 5",
    ),
    (
        "duplicate labels",
        {"questions": [_question(options=[{"label": "A"}, {"label": "A"}])]},
        "$.questions[0].options[1].label: repeats an earlier label",
    ),
    (
        "a multi-select label with the join",
        {
            "questions": [
                _question(multiSelect=True, options=[{"label": "Red, green"}, {"label": "Blue"}])
            ]
        },
        "$.questions[0].options[0].label: contains ', ', which would make a multi-select"
        " answer ambiguous",
    ),
    (
        "a header too long",
        {"questions": [_question(header="Thirteen char")]},
        "$.questions[0].header: has 13 characters, at most 12 allowed",
    ),
    (
        "a header too long as Claude counts it",
        {"questions": [_question(header="\U0001f680" * 7)]},
        "$.questions[0].header: has 14 characters, at most 12 allowed",
    ),
    (
        "an unknown question key",
        {"questions": [_question(kind="text")]},
        "$.questions[0].kind: is not a key of an AskUserQuestion question",
    ),
    (
        "an unknown option key",
        {"questions": [_question(options=[{"label": "A", "value": 1}, {"label": "B"}])]},
        "$.questions[0].options[0].value: is not a key of an AskUserQuestion option",
    ),
    (
        "a blank question",
        {"questions": [_question(" ")]},
        "$.questions[0].question: must not be blank",
    ),
    (
        "a label that is no string",
        {"questions": [_question(options=[{"label": 1}, {"label": "B"}])]},
        "$.questions[0].options[0].label: expected a string, got number",
    ),
    (
        "multiSelect that is no boolean",
        {"questions": [_question(multiSelect="yes")]},
        "$.questions[0].multiSelect: expected a boolean, got string",
    ),
]


@pytest.mark.parametrize(
    ("tool_input", "problem"),
    [(tool_input, problem) for _, tool_input, problem in REFUSED],
    ids=[name for name, _, _ in REFUSED],
)
def test_unrepresentable_input_is_refused_naming_the_field(
    tool_input: object, problem: str
) -> None:
    """request_of raises BAD_REQUEST naming the JSON path; the callback denies and asks nobody."""
    with pytest.raises(UserInteractionError) as raised:
        request_of(cast("Input", tool_input))
    assert raised.value.code is ErrorCode.BAD_REQUEST
    assert str(raised.value) == f"AskUserQuestion input {problem}"
    service, seen = service_answering(lambda request: {"answers": []})
    result = run(answer_question(service, cast("Input", tool_input)))
    assert result == PermissionResultDeny(message=f"AskUserQuestion input {problem}")
    assert seen == []


def test_a_blank_header_is_no_header() -> None:
    """A blank header (a chip that shows nothing) is left out; the question is asked as sent."""
    request = request_of({"questions": [_question(header=" ")]})
    assert "header" not in request["questions"][0]
    assert request["questions"][0]["question"] == "Go?"


def test_a_preview_is_dropped_and_nothing_else() -> None:
    """An option's preview cannot be shown: it is left out; label and description stay."""
    tool_input: Input = {
        "questions": [
            {
                "question": "Layout?",
                "options": [
                    {"label": "Grid", "description": "Rows and columns.", "preview": "# grid"},
                    {"label": "List"},
                ],
            }
        ]
    }
    request = request_of(tool_input, ask_id="toolu_9")
    assert cast("dict[str, object]", request) == {
        "questions": [
            {
                "id": "q1",
                "question": "Layout?",
                "options": [
                    {"label": "Grid", "description": "Rows and columns."},
                    {"label": "List"},
                ],
            }
        ],
        "askId": "toolu_9",
    }


BROKEN_ANSWERS: list[tuple[str, object, str]] = [
    ("not an object", [], "$.answers: expected an array, got null"),
    ("an unknown id", {"answers": [{"id": "q9", "selected": []}]}, "$.answers[0].id: unknown id"),
    (
        "a missing item",
        {"answers": [{"id": "q1", "selected": ["SQLite"]}]},
        "$.answers: no item for question 'q2'",
    ),
    (
        "a repeated id",
        {"answers": [{"id": "q1", "selected": []}, {"id": "q1", "selected": []}]},
        "$.answers[1].id: unknown or repeated id 'q1'",
    ),
    (
        "a label not offered",
        {"answers": [{"id": "q1", "selected": ["Oracle"]}, {"id": "q2", "selected": []}]},
        "$.answers[0].selected[0]: 'Oracle' is not an offered label",
    ),
    (
        "two answers to a single select",
        {
            "answers": [
                {"id": "q1", "selected": ["SQLite"], "custom": "and more"},
                {"id": "q2", "selected": []},
            ]
        },
        "$.answers[0].selected: a single-select question takes one label or text",
    ),
    (
        "blank text",
        {"answers": [{"id": "q1", "selected": [], "custom": " "}, {"id": "q2", "selected": []}]},
        "$.answers[0].custom: expected non-blank text",
    ),
]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [(answer, problem) for _, answer, problem in BROKEN_ANSWERS],
    ids=[name for name, _, _ in BROKEN_ANSWERS],
)
def test_a_broken_answer_is_refused_and_kept(answer: object, problem: str) -> None:
    """answers_of raises BAD_ANSWER naming the field, and keeps the answer on the error."""
    with pytest.raises(UserInteractionError) as raised:
        answers_of(PICK, cast("AskUserQuestionAnswer", answer))
    assert raised.value.code is ErrorCode.BAD_ANSWER
    assert str(raised.value).startswith(f"the answer to AskUserQuestion {problem}")
    assert raised.value.answer is answer


def test_a_broken_answer_through_a_lenient_service_is_denied() -> None:
    """A lenient service passes a broken answer on; the callback denies with BAD_ANSWER's text."""
    service = UserInteractionService(strict=False)
    service.register_provider(
        ScriptedProvider(respond=lambda request: {"answers": [{"id": "q1", "selected": ["Nope"]}]})
    )
    result = run(answer_question(service, PICK))
    assert result == PermissionResultDeny(
        message="the answer to AskUserQuestion $.answers[0].selected[0]: 'Nope' is not an"
        " offered label"
    )


# --- Both ways, for any input ----------------------------------------------------------------

labels = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=8).filter(
    lambda text: bool(text.strip())
)


@st.composite
def claude_inputs(draw: st.DrawFn) -> Input:
    """Any ``AskUserQuestion`` input in Claude's shape, representable or not."""
    count = draw(st.integers(1, 4))
    texts = draw(st.lists(labels, min_size=count, max_size=count))
    questions: list[Input] = []
    for text in texts:
        options = draw(st.lists(labels, min_size=2, max_size=4))
        questions.append(
            {
                "question": text,
                "header": draw(st.text(max_size=12)),
                "options": [{"label": label} for label in options],
                "multiSelect": draw(st.booleans()),
            }
        )
    return {"questions": questions}


@given(tool_input=claude_inputs(), data=st.data())
def test_any_input_round_trips_or_is_refused(tool_input: Input, data: st.DataObject) -> None:
    """Any input is refused with BAD_REQUEST, or asks its questions and reads any answer back.

    Back in Claude's shape a multi-select answer of labels only splits on ", " into the very
    labels picked, and a single select is the one label: nothing is guessed.
    """
    try:
        request = request_of(tool_input)
    except UserInteractionError as error:
        assert error.code is ErrorCode.BAD_REQUEST
        texts = [question["question"] for question in tool_input["questions"]]
        assert len(set(texts)) < len(texts) or any(
            len(question["header"].encode("utf-16-le", "surrogatepass")) > 2 * HEADER_MAX
            or len({o["label"] for o in question["options"]}) < len(question["options"])
            or (question["multiSelect"] and any(JOIN in o["label"] for o in question["options"]))
            for question in tool_input["questions"]
        )
        return
    check_request(request)  # what ask() accepts, stage by stage
    items: list[AskUserQuestionAnswerItem] = []
    picked: dict[str, list[str]] = {}
    for item, question in zip(request["questions"], tool_input["questions"], strict=True):
        assert item["question"] == question["question"]
        offered = [option["label"] for option in item.get("options", ())]
        assert offered == [option["label"] for option in question["options"]]
        if item.get("multiSelect", False):
            chosen = data.draw(st.lists(st.sampled_from(offered), unique=True))
        else:
            chosen = data.draw(st.lists(st.sampled_from(offered), max_size=1))
        picked[question["question"]] = chosen
        items.append({"id": item["id"], "selected": chosen})
    answers = answers_of(tool_input, {"answers": items})
    assert answers == {text: JOIN.join(chosen) for text, chosen in picked.items() if chosen}
    for text, value in answers.items():
        assert value.split(JOIN) == picked[text]


# --- ExitPlanMode ----------------------------------------------------------------------------

PLAN: Input = {"plan": "# Release\n1. Tag\n2. Publish"}


def test_plan_approved_allows_the_call_unchanged() -> None:
    """An approved plan allows ExitPlanMode with Claude's input as it was."""
    service, seen = service_answering(
        lambda request: {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}
    )
    result = run(review_exit_plan(service, PLAN, tool_use_id="toolu_p"))
    assert result == PermissionResultAllow(updated_input=PLAN)
    assert cast("dict[str, object]", seen[0])["askId"] == "toolu_p"


def test_plan_kept_denies_with_the_feedback() -> None:
    """Keeping planning denies with the human's feedback, without interrupting."""
    service, _ = service_answering(
        lambda request: {"answers": [{"id": "plan-review", "selected": [], "custom": "add tests"}]}
    )
    result = run(review_exit_plan(service, PLAN))
    assert result == PermissionResultDeny(
        message=PLAN_KEEP_PLANNING_WITH_FEEDBACK.format(feedback="add tests")
    )


def test_plan_dismissed_denies_and_interrupts() -> None:
    """A dismissed review denies with PLAN_DISMISSED and interrupts the turn."""
    result = run(with_pending(lambda s: review_exit_plan(s, PLAN), lambda p, r: p.dismiss()))
    assert result == PermissionResultDeny(message=PLAN_DISMISSED, interrupt=True)


def test_plan_without_heading_asks_nobody() -> None:
    """A plan without a # heading is denied with PLAN_NEEDS_HEADING and nobody is asked."""
    service, seen = service_answering(lambda request: {"answers": []})
    result = run(review_exit_plan(service, {"plan": "1. Tag"}))
    assert result == PermissionResultDeny(message=PLAN_NEEDS_HEADING)
    assert seen == []


# --- The callback: routing and ids -----------------------------------------------------------


def decide(
    callback: CanUseTool, name: str, tool_input: Input, tool_use_id: str | None
) -> PermissionResult:
    """Run *callback* as the SDK does for a call of *name* with *tool_use_id*."""

    async def call() -> PermissionResult:
        return await callback(name, tool_input, ToolPermissionContext(tool_use_id=tool_use_id))

    return run(call())


def test_callback_makes_the_tool_use_id_the_ask_id() -> None:
    """can_use_tool_for asks AskUserQuestion with Claude's tool-use id as the askId."""
    service, seen = service_answering(
        lambda request: {"answers": [{"id": "q1", "selected": []}, {"id": "q2", "selected": []}]}
    )
    callback = can_use_tool_for(service)
    decide(callback, "AskUserQuestion", PICK, "toolu_01A")
    decide(callback, "AskUserQuestion", PICK, None)
    assert [cast("dict[str, object]", request).get("askId") for request in seen] == [
        "toolu_01A",
        None,
    ]


def test_callback_lets_other_tools_through_or_to_otherwise() -> None:
    """Other tools are allowed unchanged, or go to the callback given as otherwise."""
    service, seen = service_answering(lambda request: {"answers": []})
    assert decide(can_use_tool_for(service), "Bash", {"command": "ls"}, "t") == (
        PermissionResultAllow()
    )
    calls: list[str] = []

    async def otherwise(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        calls.append(name)
        return PermissionResultDeny(message="no")

    callback = can_use_tool_for(service, otherwise=otherwise, plan_review=False)
    assert decide(callback, "ExitPlanMode", PLAN, "t") == PermissionResultDeny(message="no")
    assert calls == ["ExitPlanMode"]
    assert seen == []


def test_callback_checks_its_settings_at_once() -> None:
    """A bad answer_within, or defaults without one, raise when the callback is made."""
    with pytest.raises(ValueError, match="answer_within must be a positive"):
        can_use_tool_for(UserInteractionService(), answer_within=-1)
    with pytest.raises(ValueError, match="recommended_defaults needs answer_within"):
        can_use_tool_for(UserInteractionService(), recommended_defaults=True)


def test_deny_message_is_what_the_cli_receives() -> None:
    """A denial's message, serialised as the SDK does, keeps the seam's exact text."""
    denial = deny_of(UserInteractionError.of(ErrorCode.ASK_CANCELLED))
    wire = json.loads(json.dumps({"behavior": "deny", "message": denial.message}))
    assert wire["message"] == "the user cancelled ask_user_question"


def test_a_denial_as_a_hook_output_stops_the_turn_only_when_it_interrupts() -> None:
    """hook_output_of: a denial is a deny decision; only an interrupting one stops the turn."""
    assert hook_output_of(PermissionResultDeny(message="later")) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "later",
        }
    }
    assert hook_output_of(PermissionResultAllow()) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}
    }


def test_exports_match_all() -> None:
    """The front module exports exactly its __all__ (its submodules aside), each once."""
    public = {
        name
        for name, value in vars(claude).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(claude.__all__)
    assert len(claude.__all__) == len(set(claude.__all__))
