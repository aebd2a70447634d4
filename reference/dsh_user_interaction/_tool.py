"""The model-facing tool ``ask_user_question``.

Design notes:

* The tool never raises, except ``CancelledError``, ``KeyboardInterrupt`` and
  ``SystemExit``, which propagate. Every other outcome is a
  :class:`ToolResult`: compact JSON on success, one ``Error: <message>`` line
  on failure. Note: a provider's ``GeneratorExit`` or a custom
  ``BaseException`` becomes an error line too; only the interrupts a program
  relies on to stop pass through.
* Arguments are read losslessly (:func:`~dsh_user_interaction._json.read_json`):
  JSON text or a mapping, each container read once, ``NaN`` and ``Infinity``
  refused. The request is then built from the known keys only (``options`` as
  the model sent them, extra option keys included), and checked by the same
  rules as ``ask()`` (:func:`~dsh_user_interaction.request_violations`),
  worded for a model with the JSON path of the first problem.
* The answer is re-projected to ``{id, selected, custom?}`` and checked against
  the tool's output shape even when the service is lenient; what breaks it is
  ``Error: tool "ask_user_question" returned invalid output: ...``.
* The returned text always encodes as strict UTF-8: lone surrogates are
  escaped as ``\\udXXX`` inside JSON (as ``JSON.stringify`` does) and replaced
  with U+FFFD in error text. It never holds ``NaN`` or ``Infinity``.
* The definition is built once and serialises to the same bytes on every call,
  so a prompt prefix that holds it stays cacheable.
"""

from __future__ import annotations

import asyncio
import copy
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypedDict, cast

from ._abort import AbortSignal
from ._checks import first_request_violation
from ._deadline import DEADLINE_KEY, DEFAULT_KEY
from ._durable._store import ASK_ID_KEY
from ._json import JsonError, js_stringify, json_path, read_json, replace_surrogates
from ._types import AskingService, AskUserQuestionRequest
from ._violations import json_type, type_name

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
#: Note: the original has no limit; a runaway model must not make a harness hold
#: or forward megabytes.
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


#: The definition the model sees, with the original's text byte for byte.
#: Equal to ``spec/schema/tool-input.schema.json``.
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
                "description": "Questions to ask the user before continuing.",
                "items": {
                    "type": "object",
                    "required": ["id", "question"],
                    "properties": {
                        "id": _string("Stable id for this question; echoed in the answer."),
                        "question": _string("The specific question to ask the user."),
                        "header": _string(
                            'Optional short heading for the question, such as "Confirm" or '
                            '"Choose Mode".'
                        ),
                        "options": {
                            "type": "array",
                            "description": (
                                "Optional choices to show the user. If you recommend one, put "
                                'it first and append "(Recommended)" to that label.'
                            ),
                            "items": {
                                "type": "object",
                                "required": ["label"],
                                "properties": {
                                    "label": _string("Short user-facing option label."),
                                    "description": _string(
                                        "One sentence explaining the tradeoff or impact."
                                    ),
                                },
                            },
                        },
                        "multi_select": {
                            "type": "boolean",
                            "description": (
                                "Whether the user may select more than one option. "
                                "Defaults to false."
                            ),
                        },
                    },
                },
            }
        },
    },
}


def openai_tool(definition: ToolDefinition = ASK_USER_QUESTION_TOOL) -> dict[str, Any]:
    """*definition* in the shape OpenAI-style chat APIs expect.

    >>> openai_tool()["function"]["name"]
    'ask_user_question'
    """
    # A copy each time: a harness that edits it (say, for a strict mode) must not
    # change the definition every later call serialises (TOOL-DEF-2).
    return copy.deepcopy(
        {
            "type": "function",
            "function": {
                "name": definition["name"],
                "description": definition["description"],
                "parameters": definition["input_schema"],
            },
        }
    )


def anthropic_tool(definition: ToolDefinition = ASK_USER_QUESTION_TOOL) -> dict[str, Any]:
    """*definition* in the shape Anthropic-style chat APIs expect.

    >>> sorted(anthropic_tool())
    ['description', 'input_schema', 'name']
    """
    return copy.deepcopy(
        {
            "name": definition["name"],
            "description": definition["description"],
            "input_schema": definition["input_schema"],
        }
    )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the tool hands back to the model."""

    #: The text the model reads; always valid UTF-8.
    text: str
    #: Whether the call failed.
    is_error: bool = False


def error_result(message: str) -> ToolResult:
    """One ``Error: <message>`` line, flagged as an error, always valid UTF-8.

    Note: a message of several lines is joined into one with spaces (the
    original keeps the line breaks); a blank one becomes ``unknown error``.
    A line ends wherever ``str.splitlines`` ends one, a vertical tab, a form
    feed, U+001C to U+001E and U+0085 included, which JavaScript does not
    count as line breaks: one line for any reader in either language.
    Note: lone surrogates become U+FFFD, where the original writes them as they
    are, so the text always encodes as strict UTF-8.
    """
    line = " ".join(message.splitlines())
    if not line.strip():
        line = "unknown error"
    return ToolResult(replace_surrogates(f"Error: {line}"), is_error=True)


def describe_error(error: BaseException) -> str:
    """The message of *error*, or its type's name if it is blank; never raises, always a ``str``.

    Note: an error with an empty message is named by its type (``Error:
    RuntimeError``), where the original prints ``Error: `` and nothing more.
    """
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - a hostile __str__; name the type instead
        return type_name(error)
    if type(text) is not str:
        try:
            text = str.__str__(text)
        except Exception:  # noqa: BLE001 - __str__ returned a hostile str subclass
            return type_name(error)
    return text if text.strip() else type_name(error)


def _is_interrupt(error: BaseException, task: asyncio.Task[Any] | None) -> bool:
    """Whether *error* must propagate out of a tool rather than become an error line."""
    if isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
        return True
    # A GeneratorExit thrown into this coroutine by close() (it is being garbage
    # collected) must propagate; one a provider raised comes back through our task.
    return isinstance(error, GeneratorExit) and asyncio.current_task() is not task


async def ask_through(
    service: AskingService, request: AskUserQuestionRequest[Any]
) -> tuple[object, BaseException | None]:
    """Ask *service*: the answer and ``None``, or ``None`` and the error to report."""
    task = asyncio.current_task()
    try:
        return await service.ask(request), None
    except BaseException as error:
        if _is_interrupt(error, task):
            raise
        return None, error


def _build_request(
    arguments: object, signal: AbortSignal | None, agent: object, ask_id: str | None = None
) -> AskUserQuestionRequest[Any]:
    """The request for plain *arguments*: the known keys only, as the model sent them."""
    if not isinstance(arguments, dict):
        return cast("AskUserQuestionRequest[Any]", arguments)  # the checks word the problem
    fields = cast("dict[str, object]", arguments)
    request: dict[str, object] = {}
    if "questions" in fields:
        raw = fields["questions"]
        request["questions"] = (
            [_question(item) for item in cast("list[object]", raw)]
            if isinstance(raw, list)
            else raw
        )
    if agent is not None:
        request["agent"] = agent
    if signal is not None:
        request["signal"] = signal
    if ask_id is not None:
        request[ASK_ID_KEY] = ask_id
    return cast("AskUserQuestionRequest[Any]", request)


def checked_tool_ask_id(ask_id: object) -> str | None:
    """The harness's *ask_id* for a tool call, checked: ``None`` or a non-empty string."""
    if ask_id is None:
        return None
    if not isinstance(ask_id, str):
        msg = f"ask_id must be a string or None, got {ask_id!r}"
        raise TypeError(msg)
    if not ask_id:
        msg = "ask_id must not be empty"
        raise ValueError(msg)
    return ask_id


def _question(raw: object) -> object:
    if not isinstance(raw, dict):
        return raw
    source = cast("dict[str, object]", raw)
    # Note: the original forwards ``options`` as the model sent them, extra option
    # keys included; so do we. ``detail``, ``intent`` and unknown keys are dropped.
    item: dict[str, object] = {key: source[key] for key in _FORWARDED if key in source}
    if "multi_select" in source:
        item["multiSelect"] = source["multi_select"]
    return item


_FORWARDED: Final = ("id", "question", "header", "options")

#: How many output problems are named; the rest are counted.
_PROBLEMS_NAMED: Final = 5


def _project(answer: object) -> str | list[str]:
    """The compact JSON of ``{answers: [{id, selected, custom?}]}``, or the problems."""
    try:
        projected = _reproject(answer)
    except Exception as error:  # noqa: BLE001 - a hostile answer is a broken answer
        return [f"$: could not be read: {type_name(error)}"]
    if isinstance(projected, list):
        return projected
    try:
        plain = read_json(projected)
    except JsonError as error:
        return [str(error)]
    problems = _shape_problems(plain)
    if problems:
        return problems
    return js_stringify(plain)


def _reproject(answer: object) -> dict[str, object] | list[str]:
    """Keep ``answers`` and each item's ``id``, ``selected`` and ``custom``, in that order."""
    if not isinstance(answer, Mapping):
        return [f"$: expected an object, got {json_type(answer)}"]
    fields = cast("Mapping[str, object]", answer)
    if "answers" not in fields:
        return ["$.answers: required"]
    raw_items = fields["answers"]
    if not isinstance(raw_items, list | tuple):
        return [f"$.answers: expected an array, got {json_type(raw_items)}"]
    items: list[object] = []
    for raw in cast("Sequence[object]", raw_items):
        if not isinstance(raw, Mapping):
            items.append(raw)  # worded by the shape check
            continue
        source = cast("Mapping[str, object]", raw)
        items.append({key: source[key] for key in ("id", "selected", "custom") if key in source})
    return {"answers": items}


def _shape_problems(plain: object) -> list[str]:
    """Where plain answer data breaks the tool's output schema, at most a few named."""
    problems: list[str] = []
    answers = cast("dict[str, list[object]]", plain)["answers"]
    for index, item in enumerate(answers):
        here = ("answers", index)
        if not isinstance(item, dict):
            problems.append(f"{json_path(here)}: expected an object, got {json_type(item)}")
            continue
        fields = cast("dict[str, object]", item)
        for key in ("id", "selected"):
            if key not in fields:
                problems.append(f"{json_path((*here, key))}: required")
        if "id" in fields and not isinstance(fields["id"], str):
            problems.append(
                f"{json_path((*here, 'id'))}: expected a string, got {json_type(fields['id'])}"
            )
        selected = fields.get("selected", [])
        if not isinstance(selected, list):
            where = json_path((*here, "selected"))
            problems.append(f"{where}: expected an array, got {json_type(selected)}")
        else:
            for number, label in enumerate(cast("list[object]", selected)):
                if not isinstance(label, str):
                    where = json_path((*here, "selected", number))
                    problems.append(f"{where}: expected a string, got {json_type(label)}")
        if "custom" in fields and not isinstance(fields["custom"], str):
            where = json_path((*here, "custom"))
            problems.append(f"{where}: expected a string, got {json_type(fields['custom'])}")
    return problems


def invalid_output(tool: str, problems: Sequence[str]) -> ToolResult:
    """The error line for an answer that breaks *tool*'s output schema."""
    named = "; ".join(problems[:_PROBLEMS_NAMED])
    more = len(problems) - _PROBLEMS_NAMED
    if more > 0:
        named += f"; and {more} more"
    return error_result(f'tool "{tool}" returned invalid output: {named}')


async def ask_user_question(
    service: AskingService,
    arguments: object,
    *,
    signal: AbortSignal | None = None,
    agent: object = None,
    max_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
    ask_id: str | None = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> ToolResult:
    """Run the tool: parse what the model sent, ask through *service*, report.

    *arguments* is what the model sent: a mapping, or JSON text. *agent* is
    the calling agent, any object, passed through untouched (``None`` means
    none). *ask_id*, when the harness has one (the model's tool-call id,
    say), goes into the request's ``askId`` key, so that a durable provider
    asked again for the same call after a restart finds the same ask; the
    model cannot set it, since only the known keys of its arguments are kept.

    *answer_within*, in seconds, gives the human that long: the request gets a
    ``deadline``, UIs show the time left, and when it passes the model reads
    that the user did not answer in time (``POL-TIMEOUT-1``). With
    *recommended_defaults* as well, and only when every question's first
    option is labelled "(Recommended)" (the schema's own convention), that
    option becomes each question's default: the model proposes, the
    application decides (``POL-DEFAULT-1``), and the result says it was a
    default (``TOOL-DEFAULT-1``).

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
    ToolResult(text='Error: $.questions[0].id: expected a non-empty string, got number', \
is_error=True)
    """
    try:
        plain = read_json(arguments, max_bytes=max_bytes)
    except JsonError as error:
        return error_result(str(error))
    request = _build_request(plain, signal, agent, checked_tool_ask_id(ask_id))
    if answer_within is not None or recommended_defaults:
        _add_deadline(request, checked_answer_within(answer_within))
        if recommended_defaults:
            _add_recommended_defaults(request)
    # Note: the original lists every schema problem; the first one, with its
    # JSON path, is one precise line the model can act on.
    violation = first_request_violation(request)
    if violation is not None:
        return error_result(violation.describe_for_model())
    answer, failure = await ask_through(service, request)
    if failure is not None:
        return error_result(describe_error(failure))
    text = _project(answer)
    if isinstance(text, list):
        return invalid_output(ASK_USER_QUESTION_TOOL["name"], text)
    # The service's own answer of defaults is a plain dict; no other is read again.
    if type(answer) is dict and cast("dict[str, object]", answer).get("defaulted") is True:
        # TOOL-DEFAULT-1: the model must not mistake the defaults for the user's choice.
        return ToolResult(f'{text[:-1]},"defaulted":true,"note":{js_stringify(DEFAULTED_NOTE)}}}')
    return ToolResult(text)


#: What a model reads beside an answer made of the defaults (``TOOL-DEFAULT-1``).
DEFAULTED_NOTE: Final = (
    "The user did not answer in time; these are the default answers the application set,"
    " not the user's choice."
)

#: The label suffix the schema asks a model to put on its recommended option.
_RECOMMENDED: Final = "(Recommended)"


def checked_answer_within(seconds: object) -> float:
    """The tool's *answer_within*, checked: a positive, finite number of seconds.

    ``None`` is refused too: only ``recommended_defaults`` without it gets here.
    """
    if seconds is None:
        msg = "recommended_defaults needs answer_within: defaults answer only when time runs out"
        raise ValueError(msg)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        msg = f"answer_within must be a number of seconds, got {seconds!r}"
        raise TypeError(msg)
    if not (math.isfinite(seconds) and seconds > 0):
        msg = f"answer_within must be a positive, finite number of seconds, got {seconds!r}"
        raise ValueError(msg)
    return float(seconds)


def _add_deadline(request: object, seconds: float) -> None:
    if isinstance(request, dict):
        cast("dict[str, object]", request)[DEADLINE_KEY] = time.time() + seconds


def _add_recommended_defaults(request: object) -> None:
    """Default each question to its recommended first option, if every question has one."""
    fields = cast("dict[str, object]", request) if isinstance(request, dict) else {}
    questions = fields.get("questions")
    if not isinstance(questions, list):
        return
    chosen: list[tuple[dict[str, object], str]] = []
    for question in cast("list[object]", questions):
        if not isinstance(question, dict):
            return
        options = cast("dict[str, object]", question).get("options")
        if not isinstance(options, list) or not options:
            return
        first = cast("list[object]", options)[0]
        label = cast("dict[str, object]", first).get("label") if isinstance(first, dict) else None
        if not isinstance(label, str) or not label.endswith(_RECOMMENDED):
            return
        chosen.append((cast("dict[str, object]", question), label))
    for question, label in chosen:
        question[DEFAULT_KEY] = {"selected": [label]}
