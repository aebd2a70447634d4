"""The MCP bridge against what a new user's client and provider actually do.

Each test pins one behaviour a user ran into: ``null`` for an optional field,
the error of a client that cannot be asked, a question shown once, a
provider's bad answer declined at the client, a required field's note, and
a schema's ``default`` offered at the client (never assumed for a skip).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, cast

import mcp_types as types
from mcp.client.session import ClientRequestContext

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra.mcp import (
    DEFAULT_KEY,
    REASON_META_KEY,
    ElicitationUnsupported,
    McpElicitationProvider,
    answer_of_content,
    elicitation_callback,
    form_of,
    tool_call,
)
from dsh_user_interaction.extra.mcp.testing import Connection

LIMIT = 20.0

_BATCH: AskUserQuestionRequest = {
    "questions": [
        {
            "id": "mode",
            "question": "Which mode?",
            "header": "Choose Mode",
            "detail": "It decides the speed.",
            "options": [{"label": "Fast"}, {"label": "Safe"}],
        },
        {
            "id": "targets",
            "question": "Which targets?",
            "multiSelect": True,
            "options": [{"label": "tests"}, {"label": "docs"}],
        },
        {"id": "branch", "question": "Branch name?"},
    ]
}


def run(test: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(test(), LIMIT))


# -- 1. null for an optional field ---------------------------------------------------


def test_null_for_every_optional_field_reads_as_absent() -> None:
    """Content with null in each field, as fastmcp's client sends for unset ones, is a skip."""
    form = form_of(_BATCH)
    content = {"q1": "Safe", "q1_other": None, "q2": None, "q2_other": None, "q3": None}
    assert answer_of_content(_BATCH, form, content) == {
        "answers": [
            {"id": "mode", "selected": ["Safe"]},
            {"id": "targets", "selected": []},
            {"id": "branch", "selected": []},
        ]
    }


def test_null_for_an_unset_custom_text_field_survives_the_wire() -> None:
    """A real client answering {q1: label, q1_other: null} over JSON-RPC gives the label."""

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        content: dict[str, str | int | float | bool | list[str] | None] = {
            "q1": "Fast",
            "q1_other": None,
            "q2": ["docs"],
            "q2_other": None,
            "q3": None,
        }
        return types.ElicitResult(action="accept", content=content)

    async def main() -> AskUserQuestionAnswer:
        connection = Connection(answer)
        context = await connection.open()
        try:
            return await McpElicitationProvider(context).ask(_BATCH)
        finally:
            await connection.aclose()

    assert run(main) == {
        "answers": [
            {"id": "mode", "selected": ["Fast"]},
            {"id": "targets", "selected": ["docs"]},
            {"id": "branch", "selected": []},
        ]
    }


# -- 2. a client that cannot be asked ------------------------------------------------


def test_a_client_that_cannot_be_asked_is_a_user_interaction_error_with_no_provider() -> None:
    """An `except UserInteractionError` catches ElicitationUnsupported; its code is NO_PROVIDER."""

    async def main() -> UserInteractionError:
        connection = Connection(None)
        context = await connection.open()
        try:
            await McpElicitationProvider(context).ask(_BATCH)
        except UserInteractionError as error:
            return error
        finally:
            await connection.aclose()
        raise AssertionError("the ask did not fail")

    error = run(main)
    assert isinstance(error, ElicitationUnsupported)
    assert isinstance(error, RuntimeError)
    assert error.code is ErrorCode.NO_PROVIDER
    assert "the user cannot be asked through it" in str(error)


def test_the_tool_tells_the_model_the_user_cannot_be_asked_and_not_to_retry() -> None:
    """ask_user_question to a client without elicitation: one error line saying retrying won't help."""
    from dsh_user_interaction.tool import ask_user_question

    async def main() -> tuple[bool, str]:
        service = UserInteractionService()
        service.register_provider(McpElicitationProvider())
        connection = Connection(None)
        context = await connection.open()
        try:
            with tool_call(context):
                result = await ask_user_question(
                    service, {"questions": [{"id": "q", "question": "?"}]}
                )
        finally:
            await connection.aclose()
        return result.is_error, result.text

    is_error, text = run(main)
    assert is_error
    assert text == (
        "Error: the MCP client did not declare form elicitation in its capabilities, "
        "so the user cannot be asked through it; asking again will not help"
    )


# -- 3. each question shown once -----------------------------------------------------


def test_each_question_is_in_its_field_title_only_not_in_the_message() -> None:
    """The message is a lead line and the details under their headers; the questions are titles."""
    form = form_of(_BATCH)
    titles = [prop["title"] for prop in form.schema["properties"].values()]
    assert titles[0] == "1. Choose Mode: Which mode?"
    assert form.message == (
        "Please answer the 3 questions below.\n\n1. Choose Mode\nIt decides the speed."
    )
    for question in _BATCH["questions"]:
        assert question["question"] not in form.message
    single: AskUserQuestionRequest = {"questions": [_BATCH["questions"][0]]}
    assert form_of(single).message == (
        "Please answer the question below.\n\nChoose Mode\nIt decides the speed."
    )
    assert form_of(single).schema["properties"]["q1"]["title"] == "Choose Mode: Which mode?"


def test_the_sent_request_carries_the_question_once() -> None:
    """Over a real connection, the elicitation's message does not repeat the field's title."""
    sent: list[types.ElicitRequestParams] = []

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        sent.append(params)
        return types.ElicitResult(action="accept", content={})

    async def main() -> None:
        connection = Connection(answer)
        context = await connection.open()
        try:
            await McpElicitationProvider(context).ask(
                {"questions": [{"id": "b", "question": "Branch?"}]}
            )
        finally:
            await connection.aclose()

    run(main)
    [params] = sent
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.message == "Please answer the question below."
    assert params.requested_schema["properties"]["q1"]["title"] == "Branch?"


# -- 4. and 5. the client side ------------------------------------------------------


async def _elicit(provider: ScriptedProvider, schema: dict[str, Any]) -> types.ElicitResult:
    """Send one form from the server to a client answering through *provider*."""
    connection = Connection(elicitation_callback(provider))
    context = await connection.open()
    try:
        return await context.session.elicit_form("Set it up.", schema, context.request_id)
    finally:
        await connection.aclose()


_COLOUR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}]},
    },
    "required": ["color"],
}


def test_a_provider_answer_that_breaks_the_answer_rules_is_declined_with_the_reason() -> None:
    """A label that is no option is BAD_ANSWER at the client: decline, the reason in _meta."""

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {"answers": [{"id": "color", "selected": ["Purple"]}]}

    provider = ScriptedProvider(respond=respond)
    result = run(lambda: _elicit(provider, _COLOUR))
    assert result.action == "decline"
    assert result.content is None
    assert result.meta is not None
    reason = result.meta[REASON_META_KEY]
    assert reason.startswith("the provider failed to answer (BAD_ANSWER): ")
    assert "Purple" in reason


def test_a_required_fields_note_says_what_the_offered_skip_does() -> None:
    """Every UI offers a skip, so a required field's detail says a skip is asked again."""
    asked: list[AskUserQuestionRequest] = []

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        asked.append(request)
        return {"answers": [{"id": "color", "selected": ["Red"]}]}

    result = run(lambda: _elicit(ScriptedProvider(respond=respond), _COLOUR))
    assert (result.action, result.content) == ("accept", {"color": "r"})
    detail = asked[0]["questions"][0].get("detail", "")
    assert detail.endswith("Required. A skip does not answer it: the question is asked again.")


def test_a_retry_asks_only_the_fields_that_did_not_validate() -> None:
    """After an answer the form refuses, only the refused field is asked again.

    The field answered well keeps its first answer, and the content comes in
    the schema's order.
    """
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "n": {"type": "integer", "maximum": 3, "title": "N"},
            "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}]},
        },
    }
    asked: list[AskUserQuestionRequest] = []
    answers: list[AskUserQuestionAnswer] = [
        {
            "answers": [
                {"id": "name", "selected": [], "custom": "Ada"},
                {"id": "n", "selected": [], "custom": "12"},
                {"id": "color", "selected": ["Red"]},
            ]
        },
        {"answers": [{"id": "n", "selected": [], "custom": "2"}]},
    ]

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        asked.append(request)
        return answers[len(asked) - 1]

    result = run(lambda: _elicit(ScriptedProvider(respond=respond), schema))
    assert (result.action, result.content) == ("accept", {"name": "Ada", "n": 2, "color": "r"})
    assert list(result.content or {}) == ["name", "n", "color"]
    assert [q["id"] for q in asked[1]["questions"]] == ["n"]
    assert asked[1]["questions"][0].get("detail", "").startswith("Please answer again: at most 3")


# -- 6. a schema's default, at the client --------------------------------------------

#: A property of every kind, each with a default the field takes; only ``n`` is required.
_DEFAULTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "size": {"type": "string", "title": "Size", "enum": ["s", "m"],
                 "enumNames": ["Small", "Medium"], "default": "m"},
        "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"},
                                              {"const": "g", "title": "Green"}], "default": "g"},
        "tags": {"type": "array", "default": ["b", "a"],
                 "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"},
                                     {"const": "c", "title": "C"}]}},
        "agree": {"type": "boolean", "default": False},
        "email": {"type": "string", "format": "email", "default": "ada@example.org"},
        "n": {"type": "integer", "minimum": 1, "default": 3},
        "ratio": {"type": "number", "default": 0.5},
    },
    "required": ["n"],
}  # fmt: skip


def _asked(
    schema: dict[str, Any], respond: Callable[[AskUserQuestionRequest], AskUserQuestionAnswer]
) -> tuple[types.ElicitResult, list[AskUserQuestionRequest]]:
    """The result of sending *schema* to a client whose provider answers with *respond*, and what it asked."""
    asked: list[AskUserQuestionRequest] = []

    def record(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        asked.append(request)
        return respond(request)

    result = run(lambda: _elicit(ScriptedProvider(respond=record), schema))
    return result, asked


def _skip_all(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}


def test_a_default_is_shown_in_the_detail_and_carried_for_a_provider_to_preselect() -> None:
    """Each property's default is in its question: a detail line, and the answer item that gives it."""

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        # Answer n, the required one, so the first request is the only one.
        return {"answers": [
            {"id": q["id"], "selected": [], "custom": "2"} if q["id"] == "n"
            else {"id": q["id"], "selected": []}
            for q in request["questions"]
        ]}  # fmt: skip

    _, asked = _asked(_DEFAULTS, respond)
    [request] = asked
    offered = {q["id"]: dict(q).get(DEFAULT_KEY) for q in request["questions"]}
    assert offered == {
        "size": {"selected": ["Medium"]},
        "color": {"selected": ["Green"]},
        "tags": {"selected": ["A", "B"]},
        "agree": {"selected": ["No"]},
        "email": {"selected": [], "custom": "ada@example.org"},
        "n": {"selected": [], "custom": "3"},
        "ratio": {"selected": [], "custom": "0.5"},
    }
    details = {q["id"]: q.get("detail", "").split("\n\n") for q in request["questions"]}
    skip = "; a skip sends no answer"
    assert f'Default: "Medium" (choose it to answer with it{skip}).' in details["size"]
    assert f'Default: "A", "B" (choose them to answer with them{skip}).' in details["tags"]
    assert f'Default: "No" (choose it to answer with it{skip}).' in details["agree"]
    assert f'Default: "ada@example.org" (type it to answer with it{skip}).' in details["email"]
    assert f"Default: 0.5 (type it to answer with it{skip})." in details["ratio"]
    # A required field's skip is asked again, so its line says nothing of a skip.
    assert "Default: 3 (type it to answer with it)." in details["n"]


def test_a_provider_that_accepts_each_preselection_sends_the_defaults() -> None:
    """Answering each question with the item under DEFAULT_KEY gives the schema's defaults back."""

    def accept_defaults(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        items: list[AskUserQuestionAnswerItem] = []
        for question in request["questions"]:
            offer = cast("dict[str, Any]", dict(question)[DEFAULT_KEY])
            items.append(cast("AskUserQuestionAnswerItem", {"id": question["id"], **offer}))
        return {"answers": items}

    result, asked = _asked(_DEFAULTS, accept_defaults)
    assert len(asked) == 1
    assert result.action == "accept"
    assert result.content == {
        "size": "m", "color": "g", "tags": ["a", "b"], "agree": False,
        "email": "ada@example.org", "n": 3, "ratio": 0.5,
    }  # fmt: skip


def test_a_skip_of_a_field_with_a_default_sends_no_answer_never_the_default() -> None:
    """Skipped fields with defaults are left out; a required one is asked again, its default shown."""
    asked_count = 0

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        nonlocal asked_count
        asked_count += 1
        if asked_count == 1:
            return _skip_all(request)
        return {"answers": [{"id": "n", "selected": [], "custom": "7"}]}

    result, asked = _asked(_DEFAULTS, respond)
    assert (result.action, result.content) == ("accept", {"n": 7})
    [again] = asked[1]["questions"]
    assert again["id"] == "n"
    assert dict(again)[DEFAULT_KEY] == {"selected": [], "custom": "3"}
    assert again.get("detail", "").startswith("Please answer again: this field is required")
    assert "Default: 3 (type it to answer with it)." in again.get("detail", "")
    first = asked[0]["questions"]
    assert all("a skip sends no answer" in q.get("detail", "") for q in first if q["id"] != "n")


def test_a_default_the_field_does_not_take_is_not_offered_and_the_detail_says_why() -> None:
    """A default of the wrong type, not an option, or outside a constraint is not offered: a note.

    The form is still asked, and answered as usual; a null default offers nothing, and says nothing.
    """
    refused: dict[str, tuple[dict[str, Any], str]] = {
        "unknown": ({"type": "string", "enum": ["s"], "default": "x"},
                    "it is not one of the options"),
        "typed": ({"type": "boolean", "default": "true"}, "it is not true or false"),
        "long": ({"type": "string", "maxLength": 2, "default": "abc"},
                 "at most 2 characters, not 3"),
        "fraction": ({"type": "integer", "default": 2.5}, "it is not a whole number"),
        "flag": ({"type": "integer", "default": True}, "it is not a whole number"),
        "high": ({"type": "number", "maximum": 1, "default": 2}, "at most 1"),
        "email": ({"type": "string", "format": "email", "default": "nobody"},
                  "this is not a valid email"),
        "twice": ({"type": "array", "items": {"enum": ["a", "b"]}, "default": ["a", "a"]},
                  "it holds an option twice"),
        "stray": ({"type": "array", "items": {"enum": ["a", "b"]}, "default": ["a", "z"]},
                  "it is not one of the options"),
        "few": ({"type": "array", "minItems": 2, "items": {"enum": ["a", "b"]}, "default": ["a"]},
                "choose at least 2"),
        "bare": ({"type": "array", "items": {"enum": ["a", "b"]}, "default": "a"},
                 "it is not a list"),
    }  # fmt: skip
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            **{name: prop for name, (prop, _) in refused.items()},
            "none": {"type": "string", "default": None},
        },
    }
    result, asked = _asked(schema, _skip_all)
    assert (result.action, result.content) == ("accept", {})
    [request] = asked
    for question in request["questions"]:
        assert DEFAULT_KEY not in question
        lines = question.get("detail", "").split("\n\n")
        if question["id"] == "none":
            assert not [line for line in lines if "default" in line.lower()]
            continue
        problem = refused[question["id"]][1]
        assert (
            f"The form's default does not fit this field ({problem}); it is not offered." in lines
        )
