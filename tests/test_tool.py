"""The model-facing tool (TOOL-* in spec/tool.md)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    CallerVerdict,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction._tool import error_result
from dsh_user_interaction.tool import (
    ASK_USER_QUESTION_TOOL,
    ToolResult,
    anthropic_tool,
    ask_user_question,
    openai_tool,
)
from dsh_user_interaction_conformance._stand_ins import Ignoring, Recording
from dsh_user_interaction_conformance.strategies import actions, requests

from .helpers import json_values, run

SCHEMA = Path(__file__).parent.parent / "spec" / "schema" / "tool-input.schema.json"


def service_with(provider: Any, *, strict: bool = True) -> UserInteractionService:
    service = UserInteractionService(strict=strict)
    service.register_provider(provider)
    return service


def call(service: Any, arguments: object, **options: Any) -> ToolResult:
    return run(ask_user_question(service, arguments, **options))


def test_definition_matches_the_spec_schema_and_the_original() -> None:
    """TOOL-DEF-1: name, description and schema (the spec file holds the same schema)."""
    assert ASK_USER_QUESTION_TOOL["name"] == "ask_user_question"
    assert ASK_USER_QUESTION_TOOL["description"] == (
        "Ask the user a concise question when you need confirmation, a choice, or missing "
        "information before proceeding. Send one or more questions, each with a stable id "
        "that will be echoed in the answer."
    )
    spec = json.loads(SCHEMA.read_text(encoding="utf-8"))
    for key in ("$schema", "$id", "title", "description"):
        spec.pop(key)
    assert spec == ASK_USER_QUESTION_TOOL["input_schema"]
    questions = spec["properties"]["questions"]
    question = questions["items"]["properties"]
    option = question["options"]["items"]["properties"]
    described = {
        "questions": questions["description"],
        "id": question["id"]["description"],
        "question": question["question"]["description"],
        "header": question["header"]["description"],
        "options": question["options"]["description"],
        "label": option["label"]["description"],
        "description": option["description"]["description"],
        "multi_select": question["multi_select"]["description"],
    }
    # The original's parameter descriptions, byte for byte.
    assert described == {
        "questions": "Questions to ask the user before continuing.",
        "id": "Stable id for this question; echoed in the answer.",
        "question": "The specific question to ask the user.",
        "header": 'Optional short heading for the question, such as "Confirm" or "Choose Mode".',
        "options": 'Optional choices to show the user. If you recommend one, put it first and append "(Recommended)" to that label.',
        "label": "Short user-facing option label.",
        "description": "One sentence explaining the tradeoff or impact.",
        "multi_select": "Whether the user may select more than one option. Defaults to false.",
    }
    assert questions["items"]["required"] == ["id", "question"]
    assert option == {"label": option["label"], "description": option["description"]}
    # Extra properties are allowed everywhere, as in the original.
    assert "additionalProperties" not in json.dumps(spec)


def test_definition_bytes_are_stable_and_adapters_share_them() -> None:
    """TOOL-DEF-2: the same bytes every time, in every adapter shape."""
    first = json.dumps(ASK_USER_QUESTION_TOOL, sort_keys=False)
    for _ in range(3):
        assert json.dumps(ASK_USER_QUESTION_TOOL, sort_keys=False) == first
    schema = json.dumps(ASK_USER_QUESTION_TOOL["input_schema"])
    assert json.dumps(openai_tool()["function"]["parameters"]) == schema
    assert json.dumps(anthropic_tool()["input_schema"]) == schema
    assert openai_tool()["type"] == "function"


def test_success_is_compact_json_in_the_original_key_order() -> None:
    """TOOL-OK-1: the original's example, byte for byte."""

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {
            "answers": [
                {"selected": ["tests", "docs"], "id": "targets"},  # key order is re-projected
                {"id": "notes", "custom": "ship today", "selected": []},
            ]
        }

    arguments = {
        "questions": [
            {"id": "targets", "question": "Which?", "multi_select": True,
             "options": [{"label": "tests"}, {"label": "docs"}]},
            {"id": "notes", "question": "Notes?"},
        ]
    }  # fmt: skip
    result = call(service_with(ScriptedProvider(respond=respond)), arguments)
    assert result == ToolResult(
        '{"answers":[{"id":"targets","selected":["tests","docs"]},'
        '{"id":"notes","selected":[],"custom":"ship today"}]}'
    )


def test_arguments_map_multi_select_and_drop_what_a_model_may_not_send() -> None:
    """TOOL-ARGS-2 and TOOL-AGENT-1: options go on as sent; the agent is untouched.

    multi_select becomes multiSelect; detail, intent and unknown question keys stay out.
    """
    provider = Recording()
    arguments = json.dumps({
        "questions": [{
            "id": "q", "question": "?", "multi_select": True, "detail": "x",
            "intent": {"kind": "plan-review", "approve": "A"}, "priority": 1,
            "options": [{"label": "A", "description": "d", "icon": "*"}],
        }],
        "extra": True,
    })  # fmt: skip
    controller = AbortController()
    agent = object()
    call(service_with(provider), arguments, signal=controller.signal, agent=agent)
    (request,) = provider.seen
    assert dict(request) == {
        "questions": [{"id": "q", "question": "?", "multiSelect": True,
                       "options": [{"label": "A", "description": "d", "icon": "*"}]}],
        "agent": agent,
        "signal": controller.signal,
    }  # fmt: skip
    assert request.get("agent") is agent


_MALFORMED: list[tuple[object, str]] = [
        ("[1]", "Error: $: expected an object, got array"),
        ("{", "Error: $: arguments are not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ({}, "Error: $.questions: required"),
        ({"questions": {}}, "Error: $.questions: expected an array, got object"),
        ({"questions": [{"question": "?"}]}, "Error: $.questions[0].id: required"),
        ({"questions": [{"id": "a", "question": 3}]}, "Error: $.questions[0].question: expected a non-empty string, got number"),
        ({"questions": [{"id": "a", "question": "?", "options": [{"label": None}]}]}, "Error: $.questions[0].options[0].label: expected a non-empty string, got null"),
        ({"questions": [{"id": "a", "question": "?", "options": [{"label": "x"}, {"label": "x"}]}]}, 'Error: $.questions[0].options[1].label: "x" duplicates $.questions[0].options[0].label'),
        ({"questions": [{"id": "", "question": "?"}]}, "Error: $.questions[0].id: expected a non-empty string, got an empty string"),
        ({"questions": [3]}, "Error: $.questions[0]: expected an object, got number"),
        ({"questions": [{"id": "a", "question": "?", "options": {}}]}, "Error: $.questions[0].options: expected an array, got object"),
        ('{"questions": [{"id": "a", "question": "?", "x": NaN}]}', "Error: $.questions[0].x: NaN is not a JSON number"),
        ('{"questions": Infinity}', "Error: $.questions: Infinity is not a JSON number"),
        ('[-Infinity]', "Error: $[0]: -Infinity is not a JSON number"),
        ({"questions": [{"id": "a", "question": "?", "extra": float("nan")}]}, "Error: $.questions[0].extra: NaN is not a JSON number"),
        ({"questions": [], "x": float("-inf")}, "Error: $.x: -Infinity is not a JSON number"),
        ({"questions": [{"id": "a", "question": "?", "x": object()}]}, "Error: $.questions[0].x: a object is not a JSON value"),
        ({"questions": [], 1: 2}, "Error: $: object keys must be strings, got int"),
        ({"questions": [{"id": "a", "question": "?", "multi_select": "yes"}]}, "Error: $.questions[0].multi_select: expected a boolean, got string"),
        ({"questions": [{"id": "a", "question": "?"}, {"id": "a", "question": "!"}]}, 'Error: $.questions[1].id: "a" duplicates $.questions[0].id'),
        ({"questions": [{"id": "a", "question": "?", "options": [{"label": "x", "description": 1}]}]}, "Error: $.questions[0].options[0].description: expected a string, got number"),
]  # fmt: skip


@pytest.mark.parametrize(("arguments", "text"), _MALFORMED)
def test_malformed_arguments_name_the_path_and_the_problem(arguments: object, text: str) -> None:
    """TOOL-ARGS-1 and TOOL-ARGS-3: one error line with a JSON path; the provider is never asked."""
    provider = Recording()
    assert call(service_with(provider), arguments) == ToolResult(text, is_error=True)
    assert provider.seen == []


def test_size_limit_counts_json_bytes_and_is_configurable() -> None:
    """TOOL-ARGS-1: arguments over the limit are refused before parsing."""
    big = {"questions": [{"id": "a", "question": "x" * 70_000}]}
    result = call(service_with(Recording()), big)
    assert result.is_error
    assert result.text.startswith("Error: $: arguments are ")
    assert "over the 65536-byte limit" in result.text
    assert call(service_with(Recording()), json.dumps(big), max_bytes=200_000).is_error is False
    assert call(service_with(Recording()), '{"questions": []}', max_bytes=5).is_error


@pytest.mark.parametrize(
    ("arguments", "prepare", "text"),
    [
        ({"questions": []}, None, "Error: ask_user_question requires at least one question"),
        ({"questions": [{"id": "q", "question": "?"}]}, "no-provider", "Error: no user-interaction provider is registered"),
        ({"questions": [{"id": "q", "question": "?"}]}, "aborted", "Error: ask_user_question was aborted before the user answered"),
    ],
)  # fmt: skip
def test_seam_errors_become_error_lines(arguments: object, prepare: str | None, text: str) -> None:
    """TOOL-ERR-1: the seam's fixed messages, byte for byte, as one error line."""
    service = UserInteractionService() if prepare == "no-provider" else service_with(Recording())
    controller = AbortController()
    if prepare == "aborted":
        controller.abort()
    signal = controller.signal
    assert call(service, arguments, signal=signal) == ToolResult(text, is_error=True)


def test_dismissal_and_provider_errors_are_error_lines() -> None:
    """TOOL-ERR-1: ASK_CANCELLED and arbitrary provider errors become text, never raise."""
    for error, text in [
        (
            UserInteractionError.of(ErrorCode.ASK_CANCELLED),
            "Error: the user cancelled ask_user_question",
        ),
        (RuntimeError("screen\nlost"), "Error: screen lost"),
        (ValueError(), "Error: ValueError"),
    ]:

        async def fail(
            request: AskUserQuestionRequest, error: Exception = error
        ) -> AskUserQuestionAnswer:
            raise error

        service = service_with(ScriptedProvider(respond=fail))
        assert call(service, {"questions": [{"id": "q", "question": "?"}]}) == ToolResult(
            text, True
        )


def test_cancellation_propagates() -> None:
    """TOOL-SAFE-1: the one exception the tool lets through is CancelledError."""

    async def main() -> None:
        task = asyncio.ensure_future(
            ask_user_question(
                service_with(Ignoring()), {"questions": [{"id": "q", "question": "?"}]}
            )
        )
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())


def test_lone_surrogates_never_break_utf8() -> None:
    """TOOL-SAFE-1: surrogates are escaped in JSON and replaced in error text."""
    weird = "a\ud800b"

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {"answers": [{"id": weird, "selected": [], "custom": weird}]}

    service = service_with(ScriptedProvider(respond=respond), strict=False)
    result = call(service, {"questions": [{"id": weird, "question": "?"}]})
    result.text.encode("utf-8")
    assert json.loads(result.text) == {"answers": [{"id": weird, "selected": [], "custom": weird}]}
    error = call(service, {"questions": [{"id": 1, weird: 2}], weird: weird})
    error.text.encode("utf-8")
    bad = call(service_with(Recording()), '{"questions": [{"id": "\ud800", "question": 5}]}')
    assert bad.text.encode("utf-8")


def test_a_lenient_service_with_a_malformed_answer_gives_an_error_line() -> None:
    """TOOL-SAFE-1: even an answer that is not an answer does not crash the tool."""
    for junk in [
        None,
        {"answers": 3},
        {"answers": [7]},
        {"answers": [{"id": "q", "selected": [object()]}]},
    ]:
        service = service_with(Recording(junk), strict=False)
        result = call(service, {"questions": [{"id": "q", "question": "?"}]})
        assert result.is_error, junk


ONE = {"questions": [{"id": "q", "question": "?", "options": [{"label": "A"}]}]}
INVALID = 'Error: tool "ask_user_question" returned invalid output: '


_BROKEN_OUTPUTS: list[tuple[object, str]] = [
        (None, "$: expected an object, got null"),
        ({}, "$.answers: required"),
        ({"answers": 3}, "$.answers: expected an array, got number"),
        ({"answers": [7]}, "$.answers[0]: expected an object, got number"),
        ({"answers": [{"id": "q"}]}, "$.answers[0].selected: required"),
        ({"answers": [{"selected": []}]}, "$.answers[0].id: required"),
        ({"answers": [{"id": 1, "selected": []}]}, "$.answers[0].id: expected a string, got number"),
        ({"answers": [{"id": "q", "selected": "A"}]}, "$.answers[0].selected: expected an array, got string"),
        ({"answers": [{"id": "q", "selected": ["A", 2, None]}]}, "$.answers[0].selected[1]: expected a string, got number; $.answers[0].selected[2]: expected a string, got null"),
        ({"answers": [{"id": "q", "selected": [], "custom": 5}]}, "$.answers[0].custom: expected a string, got number"),
        ({"answers": [{"id": "q", "selected": [], "custom": float("nan")}]}, "$.answers[0].custom: NaN is not a JSON number"),
        ({"answers": [{"id": "q", "selected": [float("inf")]}]}, "$.answers[0].selected[0]: Infinity is not a JSON number"),
        ({"answers": [{"id": "q", "selected": [object()]}]}, "$.answers[0].selected[0]: a object is not a JSON value"),
        ({"answers": [{"id": "q", "selected": [1, 2, 3, 4, 5, 6, 7]}]}, "; ".join(f"$.answers[0].selected[{i}]: expected a string, got number" for i in range(5)) + "; and 2 more"),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "problems"), _BROKEN_OUTPUTS)
def test_the_output_is_checked_even_with_a_lenient_service(answer: object, problems: str) -> None:
    """TOOL-OUT-1: an answer that breaks the output shape is an error line naming each problem."""
    result = call(service_with(Recording(answer), strict=False), ONE)
    assert result == ToolResult(INVALID + problems, is_error=True)
    assert "NaN" not in result.text.replace("NaN is not", "")
    assert "Infinity" not in result.text.replace("Infinity is not", "")


def test_the_output_keeps_only_the_answer_shape() -> None:
    """TOOL-OUT-1 and TOOL-OK-1: extra keys are dropped, tuples are JSON arrays, order is fixed."""
    answer = {
        "answers": ({"custom": "x", "extra": float("nan"), "selected": ("A",), "id": "q"},),
        "more": 1,
    }
    result = call(service_with(Recording(answer), strict=False), ONE)
    assert result == ToolResult('{"answers":[{"id":"q","selected":["A"],"custom":"x"}]}')


def test_a_deeply_nested_answer_is_an_error_line() -> None:
    """TOOL-SAFE-1 and TOOL-OUT-1: an answer nested 100,000 levels deep never raises."""
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    answer = {"answers": [{"id": "q", "selected": deep}]}
    result = call(service_with(Recording(answer), strict=False), ONE)
    assert result.is_error
    assert result.text.startswith(INVALID + "$.answers[0].selected")
    assert "nested more than 64 levels deep" in result.text


def test_a_hostile_answer_mapping_is_an_error_line() -> None:
    """TOOL-SAFE-1: an answer whose .get or __getitem__ raises gives an error line, strict or not."""

    class Hostile(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise RuntimeError("get")

        def __getitem__(self, key: str) -> object:
            raise RuntimeError("getitem")

    for strict in (True, False):
        item: dict[str, object] = {"id": "q", "selected": []}
        answer = Hostile(answers=[item])
        result = call(service_with(Recording(answer), strict=strict), ONE)
        assert result.is_error, strict
        assert "\n" not in result.text


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


class _NotAString(Exception):
    def __str__(self) -> Any:
        return 42  # noqa: PLE0307 - deliberately not a str


class _Custom(BaseException):
    pass


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (_Unprintable(), "Error: _Unprintable"),
        (_NotAString(), "Error: _NotAString"),
        (_Custom("stop"), "Error: stop"),
        (GeneratorExit(), "Error: GeneratorExit"),
        (RecursionError("deep"), "Error: deep"),
    ],
)
def test_any_provider_error_becomes_an_error_line(error: BaseException, text: str) -> None:
    """TOOL-SAFE-1: hostile messages and non-interrupt BaseExceptions are error lines."""

    async def fail(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise error

    result = call(service_with(ScriptedProvider(respond=fail)), ONE)
    assert result == ToolResult(text, is_error=True)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupts_propagate(interrupt: type[BaseException]) -> None:
    """TOOL-SAFE-1: KeyboardInterrupt and SystemExit pass through the tool."""

    async def fail(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise interrupt

    async def main() -> ToolResult:
        return await ask_user_question(service_with(ScriptedProvider(respond=fail)), ONE)

    with pytest.raises(interrupt):
        asyncio.run(main())


class _RaisingItems(dict[str, object]):
    def items(self) -> Any:
        raise RuntimeError("items")


class _RaisingGetItem(dict[str, object]):
    def __getitem__(self, key: str) -> object:
        raise RuntimeError("getitem")


class _RaisingList(list[object]):
    def __iter__(self) -> Any:
        raise RuntimeError("iter")


class _HidingItems(dict[str, object]):
    """Shows a small mapping to len() and a huge one to items()."""

    def items(self) -> Any:
        return {"questions": [{"id": "q", "question": "x" * 100_000}]}.items()


class _RaisingStr(str):
    __slots__ = ()

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("encode")

    def __str__(self) -> str:
        raise RuntimeError("str")


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        (_RaisingItems(questions=[]), "Error: $: could not be read: RuntimeError"),
        (_RaisingGetItem(questions=[]), "Error: ask_user_question requires at least one question"),
        ({"questions": _RaisingList([1])}, "Error: $.questions: could not be read: RuntimeError"),
        (_HidingItems(), "Error: $: arguments are over the 65536-byte limit"),
        (_RaisingStr('{"questions": []}'), "Error: ask_user_question requires at least one question"),
        ({"questions": [{"id": _RaisingStr("q"), "question": "?"}]}, None),
    ],
    ids=["items", "getitem", "iter", "hiding-items", "str-text", "str-id"],
)  # fmt: skip
def test_hostile_argument_containers_never_raise(arguments: object, text: str | None) -> None:
    """TOOL-SAFE-1 and TOOL-ARGS-1: containers are read once, as plain data, and sized as read."""
    provider = Recording()
    result = call(service_with(provider), arguments)
    if text is None:
        assert result == ToolResult('{"answers":[{"id":"q","selected":[]}]}')
        (request,) = provider.seen
        assert type(request["questions"][0]["id"]) is str
    else:
        assert result == ToolResult(text, is_error=True)


@given(st.data())
def test_the_answer_is_the_whole_result(data: st.DataObject) -> None:
    """TOOL-WAIT-1 and TOOL-OK-1: the text is exactly the compact answer, whatever was asked."""
    from dsh_user_interaction_conformance import expected_answer

    request = data.draw(requests())
    answer = expected_answer(request, data.draw(actions(request)))
    arguments = {"questions": [
        {"id": q["id"], "question": q["question"],
         **({"options": list(q["options"])} if "options" in q else {}),
         **({"multi_select": q["multiSelect"]} if "multiSelect" in q else {})}
        for q in request["questions"]
    ]}  # fmt: skip
    result = call(service_with(Recording(answer)), arguments)
    compact = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
    # JSON.stringify's text, but with the three line breaks JSON leaves raw escaped, and
    # lone surrogates escaped as JSON.stringify escapes them (the text is strict UTF-8).
    one_line = re.sub(
        "[\x85\u2028\u2029\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", compact
    )
    assert result == ToolResult(one_line)
    assert len(result.text.splitlines()) == 1


@given(json_values)
def test_fuzz_arbitrary_json_values(arguments: object) -> None:
    """TOOL-SAFE-1: any JSON value gives a ToolResult with UTF-8 text."""
    result = call(service_with(Recording()), arguments)
    assert isinstance(result, ToolResult)
    result.text.encode("utf-8")


@given(st.text())
def test_fuzz_arbitrary_text(arguments: str) -> None:
    """TOOL-SAFE-1: any text (surrogates included) gives a ToolResult with UTF-8 text."""
    result = call(service_with(Recording()), arguments)
    assert isinstance(result, ToolResult)
    result.text.encode("utf-8")


def test_an_error_is_one_line_for_a_reader_in_either_language() -> None:
    """Every break ``str.splitlines`` knows joins the line, not only JavaScript's (TOOL-ERR-1).

    The original keeps a vertical tab, U+001C and U+0085 as they are; here
    they join, so a Python reader splitting the text still sees one line.
    """
    result = error_result("a\x0bb\x1cc\x85d\ne\u2028f")
    assert result.text == "Error: a b c d e f"
    assert len(result.text.splitlines()) == 1


_DEPLOY = {
    "questions": [
        {
            "id": "deploy",
            "question": "Deploy now?",
            "options": [{"label": "Wait (Recommended)"}, {"label": "Deploy"}],
        }
    ]
}


def test_a_timeout_reads_as_a_timeout_and_every_outcome_has_its_words() -> None:
    """TOOL-TIMEOUT-1: time running out, an abort, a dismissal and a refusal each read apart."""
    service = service_with(Ignoring())
    timed_out = call(service, _DEPLOY, answer_within=0.01)
    assert timed_out == ToolResult(
        "Error: ask_user_question timed out before the user answered; do not assume an answer",
        True,
    )

    async def with_timeout_signal() -> ToolResult:
        return await ask_user_question(service, _DEPLOY, signal=AbortSignal.timeout(0.01))

    assert run(with_timeout_signal()) == timed_out
    controller = AbortController()
    controller.abort()
    assert call(service, _DEPLOY, signal=controller.signal) == ToolResult(
        "Error: ask_user_question was aborted before the user answered", True
    )
    refused = UserInteractionService(gate=_Refusing())
    refused.register_provider(Recording())
    assert call(refused, _DEPLOY, agent="a child") == ToolResult(
        "Error: human interaction is unavailable while the calling agent is owned by another"
        " live agent; include the unresolved question or decision in the child agent's final"
        " result",
        True,
    )


class _Refusing:
    def judge(self, agent: object) -> CallerVerdict:
        return ErrorCode.DELEGATED_CALLER


def test_recommended_defaults_answer_when_time_runs_out_and_say_so() -> None:
    """TOOL-DEFAULT-1: the recommended option answers, marked, only when the application asks."""
    provider = Ignoring()
    service = service_with(provider)
    result = call(service, _DEPLOY, answer_within=0.01, recommended_defaults=True)
    assert result == ToolResult(
        '{"answers":[{"id":"deploy","selected":["Wait (Recommended)"]}],"defaulted":true,'
        '"note":"The user did not answer in time; these are the default answers the'
        " application set, not the user's choice.\"}",
        False,
    )
    assert json.loads(result.text)["defaulted"] is True
    # Without a recommended first option on every question, no defaults: a timeout.
    mixed = {"questions": [*_DEPLOY["questions"], {"id": "why", "question": "Why?"}]}
    assert call(service, mixed, answer_within=0.01, recommended_defaults=True).is_error
    # The model cannot set a default or a deadline itself: only known keys are kept.
    seen = Recording()
    forged = {
        "deadline": 0,
        "questions": [{**_DEPLOY["questions"][0], "default": {"selected": ["Deploy"]}}],
    }
    assert not call(service_with(seen), forged).is_error
    assert "deadline" not in seen.seen[0]
    assert "default" not in seen.seen[0]["questions"][0]


def test_the_application_s_time_limit_is_checked() -> None:
    """TOOL-DEFAULT-1: answer_within is a positive number of seconds; defaults need it."""
    service = service_with(Recording())
    with pytest.raises(ValueError, match="recommended_defaults needs answer_within"):
        call(service, _DEPLOY, recommended_defaults=True)
    for bad, error in [(0, ValueError), (float("inf"), ValueError), ("5", TypeError)]:
        with pytest.raises(error, match="answer_within"):
            call(service, _DEPLOY, answer_within=bad)
    # Given time, the request carries a deadline that far ahead, which UIs count down.
    seen = Recording()
    before = time.time()
    call(service_with(seen), _DEPLOY, answer_within=30)
    assert before + 30 <= seen.seen[0].get("deadline", 0) <= time.time() + 30
