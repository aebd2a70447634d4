"""The MCP elicitation bridge, end to end with the real SDK on both sides.

Every test here runs a real ``mcp`` server and client: over the SDK's
in-memory streams (JSON-RPC messages, as over any transport), or over stdio
with the server in a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer

from dsh_user_interaction import (
    MESSAGES,
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    is_blank,
)
from dsh_user_interaction.extra.mcp import (
    ASK_META_KEY,
    PROTOCOL_VERSION,
    REASON_META_KEY,
    ElicitationCancelled,
    ElicitationUnsupported,
    McpElicitationProvider,
    elicitation_callback,
    form_of,
    tool_call,
)
from dsh_user_interaction.extra.mcp.testing import (
    CAPABILITIES,
    Connection,
    Human,
    mcp_subject,
    mcp_subject_without_custom_text,
)
from dsh_user_interaction_conformance import (
    Action,
    Pick,
    Revise,
    Skip,
    TypeText,
    expected_answer,
    held_after,
    run_suite,
)
from dsh_user_interaction_conformance.strategies import (
    actions,
    custom_texts,
    hostile_text,
    requests,
)

from .gallery.mcp import BROKEN_MCP, SHOULD_MCP
from .helpers import caught_within, claimed_only, judge_provider

#: The suite's bound for the gallery runs; a hanging variant costs a few multiples of it.
BOUND = 0.5
#: Form content, as an elicitation result holds it.
Content = dict[str, str | int | float | bool | list[str] | None]
#: Every test's own wall-clock limit.
LIMIT = 20.0

_MODE: AskUserQuestionRequest = {
    "questions": [
        {
            "id": "mode",
            "question": "Which mode?",
            "header": "Choose Mode",
            "detail": "It decides the speed.",
            "options": [{"label": "Fast"}, {"label": "Safe", "description": "Slower."}],
        }
    ]
}
_BATCH: AskUserQuestionRequest = {
    "questions": [
        *_MODE["questions"],
        {
            "id": "targets",
            "question": "Which targets?",
            "multiSelect": True,
            "options": [{"label": "tests"}, {"label": "docs"}, {"label": "bench"}],
        },
        {"id": "branch", "question": "Branch name?"},
    ]
}


def run(test: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(test(), LIMIT))


@asynccontextmanager
async def connected(
    callback: Any = None,
) -> AsyncGenerator[ServerRequestContext[Any, Any]]:
    """A real server and client over in-memory streams, with a tool call open on the server."""
    connection = Connection(callback)
    context = await connection.open()
    try:
        yield context
    finally:
        await connection.aclose()


@asynccontextmanager
async def held() -> AsyncGenerator[tuple[McpElicitationProvider, Human]]:
    """A provider on a tool call whose client holds every elicitation for the test to settle."""
    human = Human()
    async with connected(human) as context:
        yield McpElicitationProvider(context), human


async def until(check: Callable[[], bool], seconds: float = 5.0) -> None:
    """Poll until *check()* holds; ``TimeoutError`` after *seconds*."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not check():
        if loop.time() > deadline:
            raise TimeoutError
        await asyncio.sleep(0.001)


async def outstanding(human: Human, count: int = 1) -> None:
    """Wait until the client holds *count* elicitation requests."""
    await until(lambda: len(human.outstanding) >= count)


# -- the form a batch becomes -------------------------------------------------------


def test_a_batch_is_one_form_with_generated_names_titled_enums_and_no_required_field() -> None:
    """Single-select is a titled enum of the labels, multi-select an array of one, text a string."""
    form = form_of(_BATCH)
    properties = form.schema["properties"]
    assert list(properties) == ["q1", "q1_other", "q2", "q2_other", "q3"]
    assert "required" not in form.schema
    assert properties["q1"]["type"] == "string"
    assert properties["q1"]["oneOf"] == [
        {"const": "Fast", "title": "Fast"},
        {"const": "Safe", "title": "Safe"},
    ]
    assert properties["q1"]["description"] == "Safe: Slower."
    assert properties["q1"]["title"] == "1. Choose Mode: Which mode?"
    assert properties["q2"] == {
        "type": "array",
        "title": "2. Which targets?",
        "items": {"anyOf": [{"const": x, "title": x} for x in ("tests", "docs", "bench")]},
        "default": [],
    }
    assert properties["q3"] == {"type": "string", "title": "3. Branch name?", "default": ""}
    # What a field left alone holds: blank text, no picks; a single-select has no default.
    assert properties["q1_other"]["default"] == ""
    assert "default" not in properties["q1"]
    assert [(f.name, f.index, f.kind) for f in form.fields] == [
        ("q1", 0, "choice"), ("q1_other", 0, "other"), ("q2", 1, "choices"),
        ("q2_other", 1, "other"), ("q3", 2, "text"),
    ]  # fmt: skip
    # The questions are in the titles only; the message leads in, with each detail.
    assert (
        form.message
        == "Please answer the 3 questions below.\n\n1. Choose Mode\nIt decides the speed."
    )
    assert "q1_other" not in form_of(_BATCH, custom_text=False).schema["properties"]


def test_a_single_question_message_reads_header_question_detail() -> None:
    """One question: a lead line, then its header and detail, unnumbered; the question is the title's.

    A client that shows the message and the field's title shows the question once.
    """
    form = form_of(_MODE)
    assert form.message == "Please answer the question below.\n\nChoose Mode\nIt decides the speed."
    assert "Which mode?" not in form.message
    assert "Which mode?" in json.dumps(form.schema)


@given(ids=st.lists(hostile_text(min_size=1), min_size=1, max_size=4, unique=True))
@settings(max_examples=50, deadline=None)
def test_property_names_are_safe_whatever_the_ids_hold(ids: list[str]) -> None:
    """Ids with control characters, emoji or spaces never reach a property name."""
    request: AskUserQuestionRequest = {"questions": [{"id": i, "question": "?"} for i in ids]}
    names = list(form_of(request).schema["properties"])
    assert names == [f"q{n}" for n in range(1, len(ids) + 1)]


def test_the_pinned_sdk_speaks_the_protocol_revision_the_bridge_names() -> None:
    """2025-11-25, whose titled enums the form uses, is a revision the SDK negotiates by handshake."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    assert PROTOCOL_VERSION == "2025-11-25"
    assert PROTOCOL_VERSION in HANDSHAKE_PROTOCOL_VERSIONS

    async def main() -> str | None:
        async with connected(Human()) as context:
            return context.session.protocol_version

    assert run(main) == PROTOCOL_VERSION


# -- the server side: results mapped back ------------------------------------------


def test_an_accepted_form_gives_labels_exactly_and_skips_for_missing_fields() -> None:
    """accept: the labels as offered, custom text, and {id, selected: []} for a field left out."""

    async def main() -> object:
        async with held() as (provider, human):
            ask = asyncio.ensure_future(provider.ask(_BATCH))
            await outstanding(human)
            elicitation = human.outstanding[0]
            assert elicitation.params.meta is not None
            meta = cast("dict[str, object]", elicitation.params.meta)
            assert meta[ASK_META_KEY] == provider.number_of(_BATCH) == 1
            content: Content = {
                "q1": "Safe",
                "q2": ["bench", "tests"],
                "q2_other": "and c",
                "q3": None,
            }
            elicitation.result.set_result(types.ElicitResult(action="accept", content=content))
            return await ask

    assert run(main) == {
        "answers": [
            {"id": "mode", "selected": ["Safe"]},
            {"id": "targets", "selected": ["tests", "bench"], "custom": "and c"},
            {"id": "branch", "selected": []},
        ]
    }


def test_custom_text_on_a_single_select_overrides_the_choice_and_blank_text_is_no_answer() -> None:
    """Both fields filled on a single-select: the text wins, selected is empty; blank text skips."""

    async def main() -> list[object]:
        answers: list[object] = []
        async with held() as (provider, human):
            contents: list[Content] = [
                {"q1": "Fast", "q1_other": "neither"},
                {"q1": "Fast", "q1_other": " \u3000"},
            ]
            for content in contents:
                ask = asyncio.ensure_future(provider.ask(_MODE))
                await outstanding(human)
                human.outstanding[0].result.set_result(
                    types.ElicitResult(action="accept", content=content)
                )
                answers.append(await ask)
        return answers

    assert run(main) == [
        {"answers": [{"id": "mode", "selected": [], "custom": "neither"}]},
        {"answers": [{"id": "mode", "selected": ["Fast"]}]},
    ]


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_are_ask_cancelled_and_the_error_keeps_which(action: str) -> None:
    """Both raise ASK_CANCELLED with the spec's message; .action and the reason are kept."""

    async def main() -> ElicitationCancelled:
        async with held() as (provider, human):
            ask = asyncio.ensure_future(provider.ask(_MODE))
            await outstanding(human)
            human.outstanding[0].result.set_result(
                types.ElicitResult(action=action, _meta={REASON_META_KEY: "not now"})  # type: ignore[arg-type] # the literal is parametrised
            )
            with pytest.raises(ElicitationCancelled) as raised:
                await ask
            return raised.value

    error = run(main)
    assert error.code is ErrorCode.ASK_CANCELLED
    assert str(error) == MESSAGES[ErrorCode.ASK_CANCELLED]
    assert (error.action, error.reason) == (action, "not now")


@pytest.mark.parametrize(
    ("content", "field", "problem"),
    [
        ({"q1": "Slow"}, "q1", '"Slow" is not one of its options'),
        ({"q1": ["Fast"]}, "q1", "expected one label, got list"),
        ({"q2": "tests"}, "q2", 'expected a list of labels, got "tests"'),
        ({"q2": ["docs", "docs"]}, "q2", '"docs" is picked twice'),
        ({"q3": 7}, "q3", "expected text, got int"),
        ({"q1_other": True}, "q1_other", "expected text, got bool"),
        ({"mode": "Fast"}, None, 'the content has a field the form never offered: "mode"'),
        (None, None, "an accepted form must have content, an object of fields; got NoneType"),
    ],
)
def test_malformed_content_is_bad_answer_naming_the_field_and_keeping_the_content(
    content: dict[str, Any] | None, field: str | None, problem: str
) -> None:
    """Content the form never offered is BAD_ANSWER, never a wrong answer; the raw content stays."""

    async def main() -> UserInteractionError:
        async with held() as (provider, human):
            ask = asyncio.ensure_future(provider.ask(_BATCH))
            await outstanding(human)
            human.outstanding[0].result.set_result(
                types.ElicitResult(action="accept", content=content)
            )
            with pytest.raises(UserInteractionError) as raised:
                await ask
            return raised.value

    error = run(main)
    assert error.code is ErrorCode.BAD_ANSWER
    assert problem in str(error)
    if field is not None:
        question = _BATCH["questions"][int(field[1]) - 1]["id"]
        assert str(error).startswith(f'question "{question}" (field {field}): ')
    assert error.answer == content


def test_a_result_that_is_no_elicitation_result_is_bad_answer_naming_where() -> None:
    """A peer (not the SDK's client, which checks its own) sending a bad action gets BAD_ANSWER."""
    from pydantic import ValidationError

    async def main() -> UserInteractionError:
        future: asyncio.Future[types.ElicitResult] = asyncio.get_running_loop().create_future()
        try:
            types.ElicitResult.model_validate({"action": "maybe"})
        except ValidationError as error:
            future.set_exception(error)
        with pytest.raises(UserInteractionError) as raised:
            McpElicitationProvider._result(future)
        return raised.value

    error = run(main)
    assert error.code is ErrorCode.BAD_ANSWER
    assert str(error).startswith("the client's elicitation result is malformed at action: ")
    assert error.answer == "maybe"


def test_an_abort_cancels_the_outstanding_request_on_the_client() -> None:
    """ASK_ABORTED, and the client's callback is cancelled by notifications/cancelled."""

    async def main() -> None:
        async with held() as (provider, human):
            controller = AbortController()
            ask = asyncio.ensure_future(provider.ask({**_MODE, "signal": controller.signal}))
            await outstanding(human)
            controller.abort()
            with pytest.raises(UserInteractionError) as raised:
                await ask
            assert raised.value.code is ErrorCode.ASK_ABORTED
            await until(lambda: not human.outstanding, 1)
            assert human.withdrawn == 1
            assert provider.pending == 0

    run(main)


def test_a_cancelled_ask_cancels_the_request_and_cancellation_propagates() -> None:
    """Task cancellation sends MCP's cancellation too, and CancelledError comes out unchanged."""

    async def main() -> None:
        async with held() as (provider, human):
            ask = asyncio.ensure_future(provider.ask(_MODE))
            await outstanding(human)
            ask.cancel()
            with pytest.raises(asyncio.CancelledError):
                await ask
            await until(lambda: not human.outstanding, 1)
            assert human.withdrawn == 1

    run(main)


def test_an_abort_through_the_service_is_ask_aborted_and_withdraws_the_request() -> None:
    """Through a service, the signal's abort raises ASK_ABORTED and the client's request ends."""

    async def main() -> None:
        async with held() as (provider, human):
            service = UserInteractionService()
            service.register_provider(provider)
            controller = AbortController()
            ask = asyncio.ensure_future(service.ask({**_MODE, "signal": controller.signal}))
            await outstanding(human)
            controller.abort()
            with pytest.raises(UserInteractionError) as raised:
                await ask
            assert raised.value.code is ErrorCode.ASK_ABORTED
            await until(lambda: not human.outstanding, 1)
            assert human.withdrawn == 1

    run(main)


def test_a_client_whose_callback_fails_gives_the_sdks_error_unchanged() -> None:
    """A JSON-RPC error from the client (its UI broke) propagates as the SDK's MCPError."""
    from mcp.shared.exceptions import MCPError

    def broken(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise RuntimeError("the window could not open")

    async def main() -> None:
        async with connected(elicitation_callback(ScriptedProvider(respond=broken))) as context:
            with pytest.raises(MCPError):
                await asyncio.wait_for(McpElicitationProvider(context).ask(_MODE), 5)

    run(main)


def test_a_client_without_elicitation_fails_fast_before_anything_is_sent() -> None:
    """No elicitation capability: ElicitationUnsupported at once, and no request goes out."""

    async def main() -> None:
        async with connected(None) as context:
            provider = McpElicitationProvider(context)
            with pytest.raises(ElicitationUnsupported, match="did not declare form elicitation"):
                await asyncio.wait_for(provider.ask(_MODE), 1)
            assert provider.pending == 0

    run(main)


def test_the_model_facing_tool_reports_a_client_without_elicitation_as_one_error_line() -> None:
    """ask_user_question through the bridge, to a client that cannot be asked: Error: <why>."""
    from dsh_user_interaction.tool import ask_user_question

    async def main() -> tuple[bool, str]:
        service = UserInteractionService()
        service.register_provider(McpElicitationProvider())
        async with connected(None) as context:
            with tool_call(context):
                result = await ask_user_question(
                    service, {"questions": [{"id": "q", "question": "?"}]}
                )
        return result.is_error, result.text

    is_error, text = run(main)
    assert is_error
    assert text.startswith("Error: the MCP client did not declare form elicitation")


def test_a_stateless_2026_connection_without_a_back_channel_fails_fast() -> None:
    """On the SDK's 2026-07-28 in-process path, asking fails at once, naming the revision."""
    from dsh_user_interaction.tool import ask_user_question

    server = MCPServer("stateless")
    service = UserInteractionService()
    service.register_provider(McpElicitationProvider())

    @server.tool()
    async def ask(ctx: Context) -> str:
        with tool_call(ctx):
            result = await ask_user_question(service, {"questions": [{"id": "q", "question": "?"}]})
        return result.text

    async def main() -> str:
        callback = elicitation_callback(ScriptedProvider())
        async with Client(server, elicitation_callback=callback) as client:
            result = await client.call_tool("ask", {})
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            return block.text

    assert run(main).startswith(
        "Error: this MCP connection (protocol revision 2026-07-28) has no back-channel"
    )


def test_outside_a_tool_call_the_provider_says_how_to_bind_one() -> None:
    """A provider with no context, asked outside tool_call(), fails fast and names the fix."""
    with pytest.raises(ElicitationUnsupported, match=r"tool_call\(ctx\)"):
        asyncio.run(McpElicitationProvider().ask(_MODE))


def test_tool_call_binds_the_context_for_a_long_lived_provider() -> None:
    """One provider registered once asks the client of whichever tool call binds it."""

    async def main() -> object:
        human = Human()
        service = UserInteractionService()
        service.register_provider(McpElicitationProvider())
        async with connected(human) as context:
            with tool_call(context):
                ask = asyncio.ensure_future(service.ask(_MODE))
            await outstanding(human)
            human.outstanding[0].result.set_result(
                types.ElicitResult(action="accept", content={"q1": "Fast"})
            )
            return await ask

    assert run(main) == {"answers": [{"id": "mode", "selected": ["Fast"]}]}


def test_the_context_must_be_a_tool_calls() -> None:
    """Anything but a request context or an MCPServer Context is a TypeError naming its type."""
    with pytest.raises(TypeError, match="not str"):
        McpElicitationProvider("ctx")  # type: ignore[arg-type] # the wrong type on purpose


# -- the conformance suite, and the variants it catches ---------------------------


@pytest.mark.slow
def test_the_provider_passes_the_whole_suite_through_a_real_client() -> None:
    """Every provider requirement passes at the default profile, with every capability declared."""
    assert mcp_subject.capabilities == CAPABILITIES  # type: ignore[attr-defined] # set by with_capabilities
    report = run_suite(subject_factory=mcp_subject, kinds=["provider"], profile="default", seed=1)
    assert report.ok, [
        (r.requirement.id, r.message) for r in report.results if r.status != "passed"
    ]
    judged = [r for r in report.results if not claimed_only(r.requirement.id)]
    assert {r.status for r in judged} == {"passed"}
    assert all(r.examples > 0 for r in judged)


def test_without_custom_text_the_suite_passes_with_the_capabilities_that_says() -> None:
    """custom_text=False declares no custom text on questions with options, and passes."""
    caps = mcp_subject_without_custom_text.capabilities  # type: ignore[attr-defined] # set by with_capabilities
    assert not caps.custom_on_single
    assert not caps.custom_on_multi
    report = run_suite(
        subject_factory=mcp_subject_without_custom_text, kinds=["provider"], profile="quick", seed=2
    )
    assert report.ok, [
        (r.requirement.id, r.message) for r in report.results if r.status != "passed"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BROKEN_MCP))
def test_a_broken_bridge_is_caught(name: str) -> None:
    """Each broken variant fails the run, named by the requirement it breaks."""
    factory, requirement, check = BROKEN_MCP[name]
    report, failed = caught_within(factory, requirement, check, bound=BOUND)
    assert not report.ok
    assert requirement in failed, failed


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHOULD_MCP))
def test_a_should_only_bridge_variant_warns(name: str) -> None:
    """Labels in the client's order break a SHOULD: a warning with its example; the run passes."""
    factory, requirement, check = SHOULD_MCP[name]
    report = judge_provider(factory, check, seed=1, bound=BOUND)
    warned = {r.requirement.id: r for r in report.results if r.status == "warning"}
    assert report.ok
    assert requirement in warned
    assert warned[requirement].example


# -- the client side: elicitation requests answered by a provider -------------------


def _scripted(
    *answers: AskUserQuestionAnswer,
) -> tuple[ScriptedProvider, list[dict[str, Any]]]:
    """A scripted human giving *answers* in turn, and the requests it was asked (as plain data)."""
    asked: list[dict[str, Any]] = []
    queue = list(answers)

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        asked.append(cast("dict[str, Any]", request))
        return queue.pop(0)

    return ScriptedProvider(respond=respond), asked


async def _elicit(
    provider: ScriptedProvider, message: str, schema: dict[str, Any], **kwargs: Any
) -> types.ElicitResult:
    """Send one raw elicitation request from the server to a client answering through *provider*."""
    async with connected(elicitation_callback(provider, **kwargs)) as context:
        return await context.session.elicit_form(message, schema, context.request_id)


_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "color": {
            "type": "string",
            "title": "Colour",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "ok": {"type": "boolean", "title": "Agree?"},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
        "email": {"type": "string", "format": "email", "description": "Where to write."},
    },
    "required": ["color", "count"],
}


def test_schema_properties_become_questions_and_the_answer_validates() -> None:
    """Enums, legacy enumNames, arrays, booleans, numbers and strings; accept with valid content."""
    provider, asked = _scripted(
        {
            "answers": [
                {"id": "color", "selected": ["Green"]},
                {"id": "size", "selected": ["Medium"]},
                {"id": "tags", "selected": ["c", "a"]},
                {"id": "ok", "selected": ["Yes"]},
                {"id": "count", "selected": [], "custom": " 7 "},
                {"id": "email", "selected": []},
            ]
        }
    )
    result = run(lambda: _elicit(provider, "Set it up.", _SCHEMA))
    assert result.action == "accept"
    assert result.content == {"color": "g", "size": "m", "tags": ["c", "a"], "ok": True, "count": 7}
    [request] = asked
    questions = request["questions"]
    assert [q["id"] for q in questions] == list(_SCHEMA["properties"])
    assert questions[0]["question"] == "Colour"
    assert [o["label"] for o in questions[0]["options"]] == ["Red", "Green"]
    assert questions[0]["detail"].startswith("Set it up.\n\n")
    assert "Required." in questions[0]["detail"]
    assert questions[2]["multiSelect"] is True
    assert [o["label"] for o in questions[3]["options"]] == ["Yes", "No"]
    assert "options" not in questions[4]
    assert "At least 1." in questions[4]["detail"]
    assert "Where to write." in questions[5]["detail"]
    assert "Optional: you may skip it." in questions[5]["detail"]


def test_an_answer_that_breaks_the_schema_is_asked_again_with_the_problem_then_declined() -> None:
    """A required field skipped and a number out of range are asked again; at the limit, declined."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 3}},
        "required": ["n"],
    }
    skipped: AskUserQuestionAnswer = {"answers": [{"id": "n", "selected": []}]}
    big: AskUserQuestionAnswer = {"answers": [{"id": "n", "selected": [], "custom": "12"}]}
    fine: AskUserQuestionAnswer = {"answers": [{"id": "n", "selected": [], "custom": "2"}]}
    provider, asked = _scripted(skipped, big, fine)
    result = run(lambda: _elicit(provider, "", schema))
    assert (result.action, result.content) == ("accept", {"n": 2})
    assert asked[1]["questions"][0]["detail"].startswith(
        "Please answer again: this field is required"
    )
    assert asked[2]["questions"][0]["detail"].startswith("Please answer again: at most 3")
    provider, asked = _scripted(skipped, skipped)
    result = run(lambda: _elicit(provider, "", schema, attempts=2))
    assert result.action == "decline"
    assert result.meta is not None
    assert "after 2 attempts (n: this field is required)" in result.meta[REASON_META_KEY]


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "object", "properties": {"x": {"type": "object"}}}, "unsupported type 'object'"),
        (
            {
                "type": "object",
                "properties": {
                    "x": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "A"]}
                },
            },
            None,
        ),
        (
            {
                "type": "object",
                "properties": {"x": {"type": "string", "oneOf": [{"const": "", "title": ""}]}},
            },
            "cannot be told apart",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "string", "format": "ipv4"}}},
            "unknown format",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "string"}}}},
            "neither",
        ),
    ],
)
def test_an_unsupported_schema_is_declined_with_a_reason(
    schema: dict[str, Any], reason: str | None
) -> None:
    """What the seam cannot ask is declined at once, the reason in _meta; duplicate titles use values."""
    provider, asked = _scripted({"answers": [{"id": "x", "selected": ["b"]}]})
    result = run(lambda: _elicit(provider, "?", schema))
    if reason is None:
        # Titles that repeat fall back to the values, which are distinct.
        assert (result.action, result.content) == ("accept", {"x": "b"})
        return
    assert result.action == "decline"
    assert not asked
    assert result.meta is not None
    assert reason in result.meta[REASON_META_KEY]


def test_a_url_mode_request_is_declined_with_a_reason() -> None:
    """The seam answers forms only: URL mode is declined, saying so."""
    provider, asked = _scripted()

    async def main() -> types.ElicitResult:
        async with connected(elicitation_callback(provider)) as context:
            return await context.session.elicit_url(
                "Sign in", "https://example.invalid/", "e1", context.request_id
            )

    result = run(main)
    assert result.action == "decline"
    assert result.meta is not None
    assert "URL-mode" in result.meta[REASON_META_KEY]
    assert not asked


def test_a_dismissal_is_cancel_and_a_refusal_is_decline() -> None:
    """ASK_CANCELLED gives cancel; ElicitationCancelled with action decline gives decline."""

    def dismiss(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)

    def refuse(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise ElicitationCancelled.of_action("decline", reason="no")

    dismissed = run(lambda: _elicit(ScriptedProvider(respond=dismiss), "?", _SCHEMA))
    refused = run(lambda: _elicit(ScriptedProvider(respond=refuse), "?", _SCHEMA))
    assert dismissed.action == "cancel"
    assert refused.action == "decline"
    assert refused.meta == {REASON_META_KEY: "no"}


def test_a_form_without_fields_is_a_confirmation() -> None:
    """An empty schema asks one question with one option; choosing it accepts with no content."""
    provider, asked = _scripted({"answers": [{"id": "confirm", "selected": ["Continue"]}]})
    result = run(lambda: _elicit(provider, "Go on?", {"type": "object", "properties": {}}))
    assert (result.action, result.content) == ("accept", {})
    assert asked[0]["questions"][0]["question"] == "Go on?"


def test_attempts_must_be_positive() -> None:
    """elicitation_callback refuses attempts below 1 at once."""
    with pytest.raises(ValueError, match="attempts must be at least 1"):
        elicitation_callback(ScriptedProvider(), attempts=0)


def test_a_terminal_at_the_client_answers_the_servers_form_through_its_keys() -> None:
    """elicitation_callback(TerminalProvider): the server's batch is drawn and answered by keys."""
    from dsh_user_interaction.extra.terminal import TerminalProvider
    from dsh_user_interaction.extra.terminal.testing import TerminalDriver
    from dsh_user_interaction.extra.terminal.testing import make_subject as terminal

    async def main() -> object:
        screen = terminal()
        ui, driver = screen.provider, screen.driver
        assert isinstance(ui, TerminalProvider)
        assert isinstance(driver, TerminalDriver)
        try:
            async with connected(elicitation_callback(ui)) as context:
                ask = asyncio.ensure_future(McpElicitationProvider(context).ask(_BATCH))
                await until(lambda: ui.pending == 1)
                shown = ui._queue[0].request  # what the client's terminal shows
                assert [q["id"] for q in shown["questions"]] == [
                    "q1", "q1_other", "q2", "q2_other", "q3",
                ]  # fmt: skip
                behaviour = (
                    Pick(("Safe",)),
                    Skip(),
                    Pick(("docs", "tests")),
                    Skip(),
                    TypeText("main"),
                )
                await asyncio.wait_for(driver.perform(shown, behaviour), 10)
                return await asyncio.wait_for(ask, 5)
        finally:
            assert screen.aclose is not None
            await screen.aclose()

    assert run(main) == {
        "answers": [
            {"id": "mode", "selected": ["Safe"]},
            {"id": "targets", "selected": ["tests", "docs"]},
            {"id": "branch", "selected": [], "custom": "main"},
        ]
    }


# -- both directions together ----------------------------------------------------


def _client_answer(
    asked: AskUserQuestionRequest, request: AskUserQuestionRequest, behaviour: Sequence[Action]
) -> AskUserQuestionAnswer:
    """What the human at the client answers for the form of *request*: *behaviour*, field by field."""
    by_id: dict[str, AskUserQuestionAnswerItem] = {}
    for number, (question, action) in enumerate(
        zip(request["questions"], behaviour, strict=True), 1
    ):
        name = f"q{number}"
        if isinstance(action, Skip):
            continue
        if isinstance(action, Revise):
            # The form as the human leaves it: the picks left, and the last text typed.
            picked, text = held_after(action.steps, multi=question.get("multiSelect") is True)
            if not picked and not text:
                continue  # left skipped: the form's field left empty
        else:
            picked = list(action.labels)
            text = action.text if isinstance(action, TypeText) else ""
        if not question.get("options"):
            by_id[name] = {"id": name, "selected": [], "custom": text}
            continue
        if picked:
            by_id[name] = {"id": name, "selected": picked}
        if text:
            by_id[f"{name}_other"] = {"id": f"{name}_other", "selected": [], "custom": text}
    items: list[AskUserQuestionAnswerItem] = [
        by_id.get(q["id"], {"id": q["id"], "selected": []}) for q in asked["questions"]
    ]
    return {"answers": items}


async def _both_ways(request: AskUserQuestionRequest, behaviour: Sequence[Action]) -> object:
    """Server-side provider, a real client, elicitation_callback over a scripted human."""
    human = ScriptedProvider(respond=lambda asked: _client_answer(asked, request, behaviour))
    async with connected(elicitation_callback(human)) as context:
        return await asyncio.wait_for(McpElicitationProvider(context).ask(request), 5)


@given(data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_an_answer_comes_back_unchanged_across_both_hops(data: st.DataObject) -> None:
    """For any request and any behaviour, the answer after two hops is the one the spec requires."""
    request = data.draw(requests(), "request")
    behaviour = data.draw(actions(request, CAPABILITIES), "behaviour")
    answer = asyncio.run(_both_ways(request, behaviour))
    assert answer == expected_answer(request, behaviour)


@st.composite
def _hostile_requests(draw: st.DrawFn) -> tuple[AskUserQuestionRequest, tuple[Action, ...]]:
    ids = draw(st.lists(hostile_text(min_size=1), min_size=2, max_size=2, unique=True))
    labels = draw(st.lists(hostile_text(min_size=1), min_size=2, max_size=3, unique=True))
    text = draw(custom_texts() | hostile_text(min_size=1).filter(lambda t: not is_blank(t)))
    request: AskUserQuestionRequest = {
        "questions": [
            {"id": ids[0], "question": draw(hostile_text(min_size=1)), "multiSelect": True,
             "options": [{"label": label} for label in labels]},
            {"id": ids[1], "question": draw(hostile_text(min_size=1)),
             "detail": draw(hostile_text())},
        ]
    }  # fmt: skip
    return request, (TypeText(text, (labels[-1], labels[0])), TypeText(text))


@given(case=_hostile_requests())
@settings(max_examples=40, deadline=None)
def test_hostile_ids_labels_and_text_survive_both_hops(
    case: tuple[AskUserQuestionRequest, tuple[Action, ...]],
) -> None:
    """Control characters, ANSI escapes, bidi overrides and emoji come back byte for byte."""
    request, behaviour = case
    answer = asyncio.run(_both_ways(request, behaviour))
    assert answer == expected_answer(request, behaviour)


# -- over stdio, with the server in a subprocess ------------------------------------


async def _over_stdio(
    calls: Sequence[dict[str, Any]],
    respond: Callable[[AskUserQuestionRequest], AskUserQuestionAnswer],
) -> list[types.CallToolResult]:
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(Path(__file__).with_name("mcp_stdio_server.py"))],
        env={"PYTHONPATH": ":".join(sys.path)},
    )
    callback = elicitation_callback(ScriptedProvider(respond=respond))
    results: list[types.CallToolResult] = []
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write, elicitation_callback=callback) as session,
    ):
        await session.initialize()
        for arguments in calls:
            results.append(await session.call_tool("ask_user_question", arguments))
    return results


@pytest.mark.slow
def test_over_stdio_the_model_facing_tool_asks_the_clients_user() -> None:
    """A subprocess server runs ask_user_question; its asks reach this client and come back exact."""
    label = "\x1b[31mYes\u202e \U0001f44d"
    text = "one\r\ntwo\t\u200b"

    def respond(asked: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        if asked["questions"][0]["question"].startswith("Drop"):
            raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)
        return {
            "answers": [
                {"id": "q1", "selected": [label]},
                {"id": "q1_other", "selected": []},
                {"id": "q2", "selected": [], "custom": text},
            ]
        }

    calls: list[dict[str, Any]] = [
        {"questions": [
            {"id": "go", "question": "Deploy?", "options": [{"label": label}, {"label": "No"}]},
            {"id": "\u202ename\U0001f600", "question": "Name?"},
        ]},
        {"questions": [{"id": "drop", "question": "Drop the table?"}]},
    ]  # fmt: skip
    first, second = run(lambda: _over_stdio(calls, respond))
    assert not first.is_error
    assert isinstance(first.content[0], types.TextContent)
    assert json.loads(first.content[0].text) == {
        "answers": [
            {"id": "go", "selected": [label]},
            {"id": "\u202ename\U0001f600", "selected": [], "custom": text},
        ]
    }
    assert second.is_error
    assert isinstance(second.content[0], types.TextContent)
    assert second.content[0].text == "Error: the user cancelled ask_user_question"


@pytest.mark.slow
def test_over_stdio_cancelling_the_tool_call_withdraws_the_elicitation_on_both_hops() -> None:
    """The client cancels its tool call; the server's ask is cancelled and withdraws its request."""

    async def main() -> None:
        human = ScriptedProvider()
        server = StdioServerParameters(
            command=sys.executable,
            args=[str(Path(__file__).with_name("mcp_stdio_server.py"))],
            env={"PYTHONPATH": ":".join(sys.path)},
        )
        arguments = {"questions": [{"id": "q", "question": "Wait?"}]}
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write, elicitation_callback=elicitation_callback(human)) as session,
        ):
            await session.initialize()
            call = asyncio.ensure_future(session.call_tool("ask_user_question", arguments))
            async with asyncio.timeout(10):
                await human.next_ask()
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            await until(lambda: not human.pending, 5)

    run(main)


# -- packaging -------------------------------------------------------------------


@pytest.mark.slow
def test_the_subpackage_without_its_extra_names_the_extra() -> None:
    """Without the mcp SDK, one ImportError names the pip command; likewise the suite for testing."""
    prelude = "import sys; sys.modules['mcp'] = None; "
    out = subprocess.run(
        [sys.executable, "-c", prelude + "import dsh_user_interaction.extra.mcp"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "ImportError: dsh_user_interaction.extra.mcp needs the mcp SDK: " in out.stderr
    assert "pip install 'dsh-user-interaction[mcp]'" in out.stderr
    prelude = "import sys; sys.modules['hypothesis'] = None; "
    out = subprocess.run(
        [sys.executable, "-c", prelude + "import dsh_user_interaction.extra.mcp.testing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "pip install 'dsh-user-interaction[mcp,conformance]'" in out.stderr


def test_the_mcp_extra_is_pinned_and_in_dev() -> None:
    """The mcp extra pins a tested range, and the dev extra (what CI installs) pulls it in."""
    import tomllib

    project = tomllib.loads(Path(__file__).parents[1].joinpath("pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert extras["mcp"] == ["mcp>=2.3,<3"]
    assert any("mcp" in entry for entry in extras["dev"][0].split("[")[1].split("]")[0].split(","))
