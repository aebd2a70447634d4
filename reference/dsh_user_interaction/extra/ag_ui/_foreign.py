"""The other direction: another agent's AG-UI interrupt, asked through any service of ours.

The mapping of a ``responseSchema`` that is a flat object (as an MCP
elicitation form is):

* each property is one question, in the schema's order; its id is the
  property name, its text the property's ``title`` (or its name), its
  ``detail`` its ``description``; the interrupt's ``message`` is the ``detail``
  of the first question, above its own;
* a string ``enum`` (with ``enumNames`` as labels, when given), or a ``oneOf``
  / ``anyOf`` of ``{const, title}``, is a single-select question whose labels
  are the titles (the values when there are no titles); an ``array`` whose
  ``items`` is such an enum is a multi-select question; a ``boolean`` is a
  single-select ``Yes`` / ``No``; a plain ``string`` is a question without
  options, answered with text;
* the interrupt's ``expiresAt`` is the request's ``deadline``;
* its id is the request's ``askId`` (``<threadId>/<id>`` when a thread id is
  given), so a durable provider asked again for it finds the same ask.

An interrupt one of our providers raised (its questions in its ``metadata``,
its ``responseSchema`` their answer schema) is asked with those very
questions, and its payload is the answer itself: nothing is lost either way.

An answer goes back as a ``resolved`` entry whose payload has one key per
answered property (a skipped question leaves its property out); a dismissal
goes back as a ``cancelled`` entry. Refused, never guessed:

* a schema this mapping cannot show (no schema, not a flat object, a number,
  a nested object, a keyword it does not enforce such as ``pattern``, options
  that cannot be told apart): :class:`UnsupportedInterrupt`, naming the field,
  before anything is asked;
* an answer the schema does not take (custom text on a choice, a required
  property skipped, text out of its length bounds, too few or too many
  choices): ``BAD_ANSWER``, with the answer kept on the error, and no entry.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from ag_ui.core import Interrupt, ResumeEntry

from dsh_user_interaction import (
    AbortSignal,
    AskingService,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    request_violations,
)
from dsh_user_interaction.durable import ASK_ID_KEY

from ._answer import answer_schema
from ._interrupt import METADATA_KEY, moment_of

__all__ = [
    "UnsupportedInterrupt",
    "answer_interrupt",
    "answer_interrupts",
    "request_of_interrupt",
    "resume_entry_of",
]

_Kind = Literal["choice", "choices", "boolean", "text"]

#: The labels a boolean property is asked with, and the values they send.
_BOOLEAN: Final[dict[str, object]] = {"Yes": True, "No": False}

#: Keywords that only describe; any other keyword must be one a kind enforces.
_DESCRIBING: Final = frozenset({"title", "description", "default", "examples", "$comment"})
_KIND_KEYWORDS: Final[dict[str, frozenset[str]]] = {
    "text": frozenset({"type", "minLength", "maxLength"}),
    "choice": frozenset({"type", "enum", "enumNames", "oneOf", "anyOf"}),
    "choices": frozenset({"type", "items", "minItems", "maxItems", "uniqueItems"}),
    "boolean": frozenset({"type"}),
}
_TOP_KEYWORDS: Final = frozenset(
    {"$schema", "$id", "type", "properties", "required", "additionalProperties", *_DESCRIBING}
)


class UnsupportedInterrupt(ValueError):
    """An interrupt whose ``responseSchema`` this mapping cannot show; nothing was asked.

    ``str(error)`` names the field (``responseSchema.properties.size.type``,
    say) and the problem; :attr:`field` is that path.
    """

    #: The path of the field at fault, from the interrupt.
    field: str

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


@dataclass(frozen=True, slots=True)
class _Property:
    name: str
    kind: _Kind
    required: bool
    #: label -> value sent back, for the choices and the boolean.
    values: dict[str, object]
    schema: Mapping[str, Any]


def _int_bound(schema: Mapping[str, Any], key: str, where: str) -> int | None:
    value: object = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnsupportedInterrupt(f"{where}.{key}", "expected a non-negative integer")
    return value


def _choices(schema: Mapping[str, Any], where: str) -> dict[str, object]:
    values: list[object]
    titles: list[object]
    if "oneOf" in schema or "anyOf" in schema:
        key = "oneOf" if "oneOf" in schema else "anyOf"
        listed: object = schema[key]
        if not isinstance(listed, list):
            raise UnsupportedInterrupt(f"{where}.{key}", "expected a list of options")
        values, titles = [], []
        for number, raw in enumerate(cast("list[object]", listed)):
            option = cast("dict[str, object]", raw) if isinstance(raw, dict) else {}
            if not isinstance(option.get("const"), str):
                raise UnsupportedInterrupt(f"{where}.{key}[{number}]", "expected a string const")
            values.append(option["const"])
            titles.append(option.get("title", option["const"]))
    elif "enum" in schema:
        listed = schema["enum"]
        if not isinstance(listed, list):
            raise UnsupportedInterrupt(f"{where}.enum", "expected a list of strings")
        values = cast("list[object]", listed)
        names: object = schema.get("enumNames", values)
        if not isinstance(names, list) or len(cast("list[object]", names)) != len(values):
            raise UnsupportedInterrupt(f"{where}.enumNames", "expected one name for each value")
        titles = cast("list[object]", names)
    else:
        raise UnsupportedInterrupt(where, "a choice needs enum, oneOf or anyOf")
    if not values:
        raise UnsupportedInterrupt(where, "offers no options")
    for number, (value, title) in enumerate(zip(values, titles, strict=True)):
        if not isinstance(value, str):
            raise UnsupportedInterrupt(f"{where}.enum[{number}]", "expected a string")
        if not isinstance(title, str) or not title:
            raise UnsupportedInterrupt(f"{where}[{number}]", "expected a non-empty title")
    labels = cast("list[str]", titles)
    if len(set(labels)) != len(labels):
        raise UnsupportedInterrupt(where, "two options have the same title")
    return dict(zip(labels, values, strict=True))


def _property(name: str, raw: object, required: bool, where: str) -> _Property:
    if not isinstance(raw, dict):
        raise UnsupportedInterrupt(where, "expected a schema object")
    schema = cast("dict[str, Any]", raw)
    kind_of: object = schema.get("type")
    values: dict[str, object] = {}
    kind: _Kind
    if kind_of == "boolean":
        kind, values = "boolean", dict(_BOOLEAN)
    elif kind_of == "array":
        kind = "choices"
        items: object = schema.get("items")
        if not isinstance(items, dict):
            raise UnsupportedInterrupt(f"{where}.items", "expected an enum schema")
        item_schema = cast("dict[str, Any]", items)
        extra = sorted(set(item_schema) - _KIND_KEYWORDS["choice"] - _DESCRIBING)
        if extra or item_schema.get("type", "string") != "string":
            raise UnsupportedInterrupt(f"{where}.items", "expected an enum of strings")
        values = _choices(item_schema, f"{where}.items")
        _int_bound(schema, "minItems", where)
        _int_bound(schema, "maxItems", where)
    elif kind_of == "string" or (
        kind_of is None and any(key in schema for key in ("enum", "oneOf", "anyOf"))
    ):
        if any(key in schema for key in ("enum", "oneOf", "anyOf")):
            kind, values = "choice", _choices(schema, where)
        else:
            kind = "text"
            _int_bound(schema, "minLength", where)
            _int_bound(schema, "maxLength", where)
    else:
        shown = "no type" if kind_of is None else f"type {kind_of!r}"
        raise UnsupportedInterrupt(
            f"{where}.type", f"{shown} cannot be asked (only string, enum, array of enum, boolean)"
        )
    extra = sorted(set(schema) - _KIND_KEYWORDS[kind] - _DESCRIBING)
    if extra:
        raise UnsupportedInterrupt(
            f"{where}.{extra[0]}", "is a keyword this mapping cannot enforce"
        )
    return _Property(name, kind, required, values, schema)


def _properties(interrupt: Interrupt) -> list[_Property]:
    schema = interrupt.response_schema
    if schema is None:
        raise UnsupportedInterrupt(
            "responseSchema", "absent: without it, what answer the interrupt takes is unknown"
        )
    extra = sorted(set(schema) - _TOP_KEYWORDS)
    if extra:
        raise UnsupportedInterrupt(
            f"responseSchema.{extra[0]}", "is a keyword this mapping cannot enforce"
        )
    if schema.get("type") != "object":
        raise UnsupportedInterrupt("responseSchema.type", "expected 'object'")
    raw: object = schema.get("properties")
    if not isinstance(raw, dict) or not raw:
        raise UnsupportedInterrupt("responseSchema.properties", "expected at least one property")
    listed: object = schema.get("required", [])
    if not isinstance(listed, list) or not all(
        isinstance(n, str) for n in cast("list[object]", listed)
    ):
        raise UnsupportedInterrupt("responseSchema.required", "expected a list of property names")
    required = set(cast("list[str]", listed))
    properties = cast("dict[str, object]", raw)
    unknown = sorted(required - set(properties))
    if unknown:
        raise UnsupportedInterrupt("responseSchema.required", f"names no property {unknown[0]!r}")
    return [
        _property(name, value, name in required, f"responseSchema.properties.{name}")
        for name, value in properties.items()
    ]


def _question(prop: _Property, lead: str | None) -> AskUserQuestionItem:
    title: object = prop.schema.get("title")
    question: dict[str, object] = {
        "id": prop.name,
        "question": title if isinstance(title, str) and title.strip() else prop.name,
    }
    notes: list[str] = []
    if lead:
        notes.append(lead)
    description: object = prop.schema.get("description")
    if isinstance(description, str) and description.strip():
        notes.append(description)
    notes.append("Required." if prop.required else "Optional: you may skip it.")
    question["detail"] = "\n\n".join(notes)
    if prop.values:
        question["options"] = [{"label": label} for label in prop.values]
    if prop.kind == "choices":
        question["multiSelect"] = True
    return cast("AskUserQuestionItem", question)


def _own_questions(interrupt: Interrupt) -> list[AskUserQuestionItem] | None:
    """The questions of an interrupt one of our providers raised, or ``None`` for another's.

    Ours carries its questions in its metadata, and its ``responseSchema`` is
    exactly the answer schema of those questions.
    """
    mine: object = (interrupt.metadata or {}).get(METADATA_KEY)
    if not isinstance(mine, dict):
        return None
    questions: object = cast("dict[str, object]", mine).get("questions")
    request: dict[str, object] = {"questions": questions}
    if interrupt.expires_at is not None:
        # A question's default needs the deadline (REQ-DEFAULT-1).
        try:
            request["deadline"] = moment_of(interrupt.expires_at)
        except ValueError:
            return None
    if request_violations(request):
        return None
    own = cast("AskUserQuestionRequest", request)
    if interrupt.response_schema != answer_schema(own):
        return None
    return cast("list[AskUserQuestionItem]", questions)


def request_of_interrupt(
    interrupt: Interrupt, *, thread_id: str | None = None, signal: AbortSignal | None = None
) -> AskUserQuestionRequest:
    """The request that asks a human *interrupt*'s questions, through any service of ours.

    Its ``askId`` is the interrupt's id (``<thread_id>/<id>`` with
    *thread_id*); its ``deadline`` is the interrupt's ``expiresAt``. Raises
    :class:`UnsupportedInterrupt` naming the field the mapping cannot show.

    >>> interrupt = Interrupt(id="int-1", reason="input_required", message="Pick a size.",
    ...     response_schema={"type": "object", "properties": {
    ...         "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]}}})
    >>> request = request_of_interrupt(interrupt)
    >>> request["askId"], [o["label"] for o in request["questions"][0]["options"]]
    ('int-1', ['Small', 'Medium'])
    """
    own = _own_questions(interrupt)
    if own is not None:
        questions: list[AskUserQuestionItem] = copy.deepcopy(own)
    else:
        message = interrupt.message
        properties = _properties(interrupt)
        questions = [
            _question(prop, message if number == 0 else None)
            for number, prop in enumerate(properties)
        ]
    request: dict[str, object] = {
        "questions": questions,
        ASK_ID_KEY: interrupt.id if thread_id is None else f"{thread_id}/{interrupt.id}",
    }
    if interrupt.expires_at is not None:
        try:
            request["deadline"] = moment_of(interrupt.expires_at)
        except ValueError as error:
            raise UnsupportedInterrupt("expiresAt", str(error)) from None
    problems = request_violations(request)
    if problems:
        # A property name our questions cannot take as an id (an empty one, say).
        raise UnsupportedInterrupt("responseSchema.properties", problems[0].describe())
    if signal is not None:
        request["signal"] = signal
    return cast("AskUserQuestionRequest", request)


def _refuse(answer: AskUserQuestionAnswer, name: str, problem: str) -> UserInteractionError:
    msg = f"the answer cannot go back to the interrupt: property {name!r}: {problem}"
    return UserInteractionError(msg, ErrorCode.BAD_ANSWER, answer=answer)


def _value(prop: _Property, item: Mapping[str, Any], answer: AskUserQuestionAnswer) -> object:
    """The payload value of one answered property, or ``_SKIPPED``."""
    selected = cast("list[str]", item.get("selected", []))
    custom = cast("str | None", item.get("custom"))
    if prop.kind == "text":
        text = custom if custom is not None else None
        if text is None:
            return _SKIPPED
        low = _int_bound(prop.schema, "minLength", prop.name)
        high = _int_bound(prop.schema, "maxLength", prop.name)
        if low is not None and len(text) < low:
            raise _refuse(answer, prop.name, f"text shorter than {low} characters")
        if high is not None and len(text) > high:
            raise _refuse(answer, prop.name, f"text longer than {high} characters")
        return text
    if custom is not None:
        raise _refuse(answer, prop.name, "custom text, where only the offered options are taken")
    for label in selected:
        if label not in prop.values:
            raise _refuse(answer, prop.name, f"{label!r} is not one of its options")
    if prop.kind == "choices":
        low = _int_bound(prop.schema, "minItems", prop.name)
        high = _int_bound(prop.schema, "maxItems", prop.name)
        if not selected and low is None:
            return _SKIPPED
        if low is not None and len(selected) < low:
            raise _refuse(answer, prop.name, f"fewer than {low} options chosen")
        if high is not None and len(selected) > high:
            raise _refuse(answer, prop.name, f"more than {high} options chosen")
        return [prop.values[label] for label in selected]
    if not selected:
        return _SKIPPED
    if len(selected) > 1:
        raise _refuse(answer, prop.name, "more than one option, where one is taken")
    return prop.values[selected[0]]


_SKIPPED: Final = object()


def resume_entry_of(interrupt: Interrupt, answer: AskUserQuestionAnswer) -> ResumeEntry:
    """The ``resolved`` resume entry whose payload gives *answer* to *interrupt*'s schema.

    Raises :class:`UnsupportedInterrupt` for a schema the mapping cannot
    show, and ``BAD_ANSWER`` (the answer kept on the error) for an answer
    the schema does not take. For an interrupt one of our providers raised,
    the payload is the answer itself, ``{"answers": [...]}``.
    """
    if _own_questions(interrupt) is not None:
        items: list[dict[str, object]] = []
        for given in answer["answers"]:
            plain: dict[str, object] = {"id": given["id"], "selected": list(given["selected"])}
            if "custom" in given:
                plain["custom"] = given["custom"]
            items.append(plain)
        return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"answers": items})
    properties = _properties(interrupt)
    by_id = {item["id"]: item for item in answer["answers"]}
    payload: dict[str, object] = {}
    for prop in properties:
        item = by_id.get(prop.name)
        value = _SKIPPED if item is None else _value(prop, item, answer)
        if value is _SKIPPED:
            if prop.required:
                raise _refuse(answer, prop.name, "required, and skipped")
            continue
        payload[prop.name] = value
    return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)


async def answer_interrupt(
    service: AskingService,
    interrupt: Interrupt,
    *,
    thread_id: str | None = None,
    signal: AbortSignal | None = None,
) -> ResumeEntry:
    """Ask *interrupt* through *service*; return the resume entry of the human's answer.

    A dismissal (``ASK_CANCELLED``) gives a ``cancelled`` entry. Every other
    outcome raises as the service raised it (an abort or a timeout:
    ``ASK_ABORTED``; a disposal: ``PROVIDER_DISPOSED``), since a resume
    cannot say it; so does an answer of defaults, as a timeout (the answer
    kept on the error): defaults answer once ``expiresAt`` has passed, and an
    expired interrupt takes no resume. Raises
    :class:`UnsupportedInterrupt` before asking, for a schema the mapping
    cannot show, and ``BAD_ANSWER`` for an answer the schema does not take.
    """
    request = request_of_interrupt(interrupt, thread_id=thread_id, signal=signal)
    try:
        answer = await service.ask(request)
    except UserInteractionError as error:
        if error.code is ErrorCode.ASK_CANCELLED:
            return ResumeEntry(interrupt_id=interrupt.id, status="cancelled")
        raise
    if answer.get("defaulted") is True:
        # The defaults answer only once expiresAt has passed: no resume can reach it now.
        raise UserInteractionError.timed_out_error(answer=answer)
    return resume_entry_of(interrupt, answer)


async def answer_interrupts(
    service: AskingService,
    interrupts: Sequence[Interrupt],
    *,
    thread_id: str | None = None,
    signal: AbortSignal | None = None,
) -> list[ResumeEntry]:
    """Ask every interrupt of a run in turn; return the whole ``resume`` list, one entry each.

    Every schema is checked before the first is asked
    (:class:`UnsupportedInterrupt`), so nothing is asked in vain. An ask that
    raises (see :func:`answer_interrupt`) stops the rest: a resume answers
    every interrupt at once or not at all.
    """
    for interrupt in interrupts:
        if _own_questions(interrupt) is None:
            _properties(interrupt)
    return [
        await answer_interrupt(service, interrupt, thread_id=thread_id, signal=signal)
        for interrupt in interrupts
    ]
