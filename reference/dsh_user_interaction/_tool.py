"""The model-facing tool ``ask_user_question``.

Design notes:

* The tool never raises, except ``CancelledError`` (and interrupts such as
  ``KeyboardInterrupt``), which propagate. Every other outcome is a
  :class:`ToolResult`: compact JSON on success, one ``Error: <message>`` line
  on failure.
* Malformed arguments are reported with the JSON path of the problem, so the
  model can fix its call. Keys the schema does not name are allowed and
  ignored; ``detail`` and ``intent`` are never taken from a model.
* The returned text always encodes as strict UTF-8: lone surrogates are
  escaped as ``\\udXXX`` inside JSON (as ``JSON.stringify`` does) and replaced
  with U+FFFD in error text.
* The definition is built once and serialises to the same bytes on every call,
  so a prompt prefix that holds it stays cacheable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypedDict, cast

from ._abort import AbortSignal
from ._types import (
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
)

__all__ = [
    "ASK_USER_QUESTION_TOOL",
    "DEFAULT_MAX_ARGUMENT_BYTES",
    "AskingService",
    "ToolDefinition",
    "ToolResult",
    "anthropic_tool",
    "ask_user_question",
    "openai_tool",
]

#: Arguments larger than this many bytes of JSON are refused (configurable per call).
DEFAULT_MAX_ARGUMENT_BYTES: Final = 64 * 1024


class ToolDefinition(TypedDict):
    """A provider-neutral tool definition."""

    #: The tool's name, ``ask_user_question``.
    name: str
    #: What the model reads about when to use it.
    description: str
    #: JSON Schema (2020-12) of the arguments.
    input_schema: dict[str, Any]


def _string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


#: The definition the model sees. Equal to ``spec/schema/tool-input.schema.json``.
ASK_USER_QUESTION_TOOL: Final[ToolDefinition] = {
    "name": "ask_user_question",
    "description": (
        "Ask the user a concise question when you need confirmation, a choice, or missing "
        "information before proceeding. Send one or more questions, each with a stable id "
        "that will be echoed in the answer."
    ),
    "input_schema": {
        "type": "object",
        "required": ["questions"],
        "properties": {
            "questions": {
                "type": "array",
                "description": "One or more questions to ask the user.",
                "items": {
                    "type": "object",
                    "required": ["id", "question"],
                    "properties": {
                        "id": _string(
                            "Stable identifier for this question; it is echoed in the answer."
                        ),
                        "question": _string("The question to ask the user."),
                        "header": _string(
                            'Short label shown above the question, such as "Confirm" or '
                            '"Choose Mode".'
                        ),
                        "options": {
                            "type": "array",
                            "description": (
                                "Choices to offer. Put a recommended option first and append "
                                '"(Recommended)" to its label.'
                            ),
                            "items": {
                                "type": "object",
                                "required": ["label"],
                                "properties": {
                                    "label": _string(
                                        "Concise choice text shown to the user and echoed in "
                                        "the answer."
                                    ),
                                    "description": _string(
                                        "One sentence explaining the tradeoff or impact"
                                    ),
                                },
                            },
                        },
                        "multi_select": {
                            "type": "boolean",
                            "description": (
                                "Whether the user may select several options. Defaults to false."
                            ),
                        },
                    },
                },
            }
        },
    },
}


def openai_tool() -> dict[str, Any]:
    """The definition in the shape OpenAI-style chat APIs expect.

    >>> openai_tool()["function"]["name"]
    'ask_user_question'
    """
    return {
        "type": "function",
        "function": {
            "name": ASK_USER_QUESTION_TOOL["name"],
            "description": ASK_USER_QUESTION_TOOL["description"],
            "parameters": ASK_USER_QUESTION_TOOL["input_schema"],
        },
    }


def anthropic_tool() -> dict[str, Any]:
    """The definition in the shape Anthropic-style chat APIs expect.

    >>> sorted(anthropic_tool())
    ['description', 'input_schema', 'name']
    """
    return {
        "name": ASK_USER_QUESTION_TOOL["name"],
        "description": ASK_USER_QUESTION_TOOL["description"],
        "input_schema": ASK_USER_QUESTION_TOOL["input_schema"],
    }


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the tool hands back to the model."""

    #: The text the model reads; always valid UTF-8.
    text: str
    #: Whether the call failed.
    is_error: bool = False


class AskingService(Protocol):
    """The part of a service the tool needs: an async ``ask``.

    :class:`~dsh_user_interaction.UserInteractionService` is one; so is any
    object with a compatible ``ask`` coroutine method. Its answer is checked
    again here, so a lenient service cannot make the tool crash.
    """

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask; see :meth:`~dsh_user_interaction.UserInteractionService.ask`."""
        ...


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _escape_surrogates(text: str) -> str:
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def error_result(message: str) -> ToolResult:
    """One ``Error: <message>`` line, flagged as an error, always valid UTF-8."""
    line = " ".join(message.splitlines()) or "unknown error"
    return ToolResult(_SURROGATE.sub("\ufffd", f"Error: {line}"), is_error=True)


class _BadArguments(Exception):
    pass


def _type_of(value: object) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "boolean"
        case int() | float():
            return "number"
        case str():
            return "string"
        case Mapping():
            return "object"
        case list() | tuple():
            return "array"
        case _:
            return type(value).__name__


def _expect(value: object, kind: str, path: str) -> None:
    if _type_of(value) != kind:
        raise _BadArguments(
            f"{path}: expected {'an' if kind[0] in 'ao' else 'a'} {kind}, got {_type_of(value)}"
        )


def _parse(arguments: object, max_bytes: int) -> Mapping[str, Any]:
    if isinstance(arguments, str | bytes):
        raw = (
            arguments.encode("utf-8", "surrogatepass") if isinstance(arguments, str) else arguments
        )
        if len(raw) > max_bytes:
            raise _BadArguments(
                f"$: arguments are {len(raw)} bytes, over the {max_bytes}-byte limit"
            )
        try:
            parsed: object = json.loads(raw)
        except (ValueError, RecursionError) as error:
            raise _BadArguments(f"$: arguments are not valid JSON: {error}") from None
    else:
        try:
            size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        except (TypeError, ValueError, RecursionError) as error:
            raise _BadArguments(f"$: arguments must be JSON values: {error}") from None
        if size > max_bytes:
            raise _BadArguments(f"$: arguments are {size} bytes, over the {max_bytes}-byte limit")
        parsed = arguments
    _expect(parsed, "object", "$")
    result: Mapping[str, Any] = parsed  # type: ignore[assignment] # checked just above
    return result


def _question(value: object, path: str) -> AskUserQuestionItem:
    _expect(value, "object", path)
    source: Mapping[str, Any] = value  # type: ignore[assignment] # checked just above
    for key in ("id", "question"):
        if key not in source:
            raise _BadArguments(f"{path}.{key}: required")
        _expect(source[key], "string", f"{path}.{key}")
    item: AskUserQuestionItem = {"id": source["id"], "question": source["question"]}
    if "header" in source:
        _expect(source["header"], "string", f"{path}.header")
        item["header"] = source["header"]
    if "options" in source:
        _expect(source["options"], "array", f"{path}.options")
        options: list[AskUserQuestionOption] = []
        for number, raw in enumerate(source["options"]):
            where = f"{path}.options[{number}]"
            _expect(raw, "object", where)
            if "label" not in raw:
                raise _BadArguments(f"{where}.label: required")
            _expect(raw["label"], "string", f"{where}.label")
            option: AskUserQuestionOption = {"label": raw["label"]}
            if "description" in raw:
                _expect(raw["description"], "string", f"{where}.description")
                option["description"] = raw["description"]
            options.append(option)
        item["options"] = options
    if "multi_select" in source:
        _expect(source["multi_select"], "boolean", f"{path}.multi_select")
        item["multiSelect"] = source["multi_select"]
    return item


def _request(
    arguments: Mapping[str, Any], signal: AbortSignal | None, agent: str | None
) -> AskUserQuestionRequest:
    if "questions" not in arguments:
        raise _BadArguments("$.questions: required")
    raw = arguments["questions"]
    _expect(raw, "array", "$.questions")
    questions: list[AskUserQuestionItem] = []
    first_seen: dict[str, int] = {}
    for index, value in enumerate(raw):
        item = _question(value, f"$.questions[{index}]")
        earlier = first_seen.setdefault(item["id"], index)
        if earlier != index:
            raise _BadArguments(
                f"$.questions[{index}].id: {json.dumps(item['id'])}"
                f" duplicates $.questions[{earlier}].id"
            )
        questions.append(item)
    request: AskUserQuestionRequest = {"questions": questions}
    if agent is not None:
        request["agent"] = agent
    if signal is not None:
        request["signal"] = signal
    return request


def _answers_of(answer: object) -> object:
    """The ``answers`` value of a mapping, or ``None``."""
    if not isinstance(answer, Mapping):
        return None
    return cast("Mapping[str, object]", answer).get("answers")


def _project(answer: object) -> str:
    """The answer as compact JSON of ``{answers: [{id, selected, custom?}]}``."""
    items: list[dict[str, object]] = []
    raw_items = _answers_of(answer)
    if not isinstance(raw_items, Sequence) or isinstance(raw_items, str):
        raise _BadArguments("the provider returned an answer without an answers list")
    for raw in cast("Sequence[object]", raw_items):
        if not isinstance(raw, Mapping):
            raise _BadArguments("the provider returned a malformed answer item")
        fields = cast("Mapping[str, object]", raw)
        item: dict[str, object] = {"id": fields.get("id"), "selected": fields.get("selected")}
        if "custom" in fields:
            item["custom"] = fields["custom"]
        items.append(item)
    try:
        text = json.dumps({"answers": items}, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise _BadArguments(f"the provider returned an answer that is not JSON: {error}") from None
    return _escape_surrogates(text)


async def ask_user_question(
    service: AskingService,
    arguments: object,
    *,
    signal: AbortSignal | None = None,
    agent: str | None = None,
    max_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
) -> ToolResult:
    """Run the tool: parse what the model sent, ask through *service*, report.

    *arguments* is what the model sent: a mapping, or JSON text.

    >>> import asyncio
    >>> from dsh_user_interaction import (
    ...     ScriptedProvider, UserInteractionService, answer_of, answer_selected)
    >>> service = UserInteractionService()
    >>> _ = service.register_provider(ScriptedProvider(
    ...     respond=lambda request: answer_of(answer_selected("q", "A"))))
    >>> asyncio.run(ask_user_question(
    ...     service, '{"questions": [{"id": "q", "question": "?", "options": [{"label": "A"}]}]}'))
    ToolResult(text='{"answers":[{"id":"q","selected":["A"]}]}', is_error=False)
    >>> asyncio.run(ask_user_question(service, {"questions": [{"id": 1, "question": "?"}]}))
    ToolResult(text='Error: $.questions[0].id: expected a string, got number', is_error=True)
    """
    try:
        request = _request(_parse(arguments, max_bytes), signal, agent)
    except _BadArguments as error:
        return error_result(str(error))
    try:
        answer = await service.ask(request)
    except Exception as error:  # noqa: BLE001 - the model gets every failure as text
        return error_result(str(error) or type(error).__name__)
    try:
        return ToolResult(_project(answer))
    except _BadArguments as error:
        return error_result(str(error))
