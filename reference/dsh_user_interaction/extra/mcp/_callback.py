"""The client side of the bridge: an elicitation callback that asks any provider.

:func:`elicitation_callback` turns each form-mode elicitation request the
client receives into one ``ask()`` of a
:class:`~dsh_user_interaction.UserInteractionProvider`, through a private
strict :class:`~dsh_user_interaction.UserInteractionService`:

* each property of the requested schema is one question, whose id is the
  property name: a string enum (``oneOf`` of ``{const, title}``, ``enum``, or
  the legacy ``enum`` with ``enumNames``) is a single-select question whose
  labels are the titles; an array of such an enum is a multi-select
  question; a boolean is a single-select ``Yes`` / ``No``; a string, a number
  or an integer is a question without options, answered with text;
* the message is the ``detail`` of the first question; a property's
  description, its constraints and whether it is required are the
  ``detail`` of its own;
* an answer gives ``accept`` with content that validates against the
  requested schema (a skipped question leaves its property out); an answer
  that does not (a required field skipped, text too long, a number that is
  not one) is asked again with the problem shown, at most *attempts* times,
  and then declined with the reason;
* a dismissal (``ASK_CANCELLED``) gives ``cancel``, a refusal
  (:class:`ElicitationCancelled` with ``action == "decline"``) ``decline``,
  and an abort or a disposal ``cancel``; any other
  :class:`~dsh_user_interaction.UserInteractionError` (an answer that breaks
  the seam's answer rules, ``BAD_ANSWER``, say) gives ``decline`` with its
  code and message as the reason, never a JSON-RPC error;
* a required property's ``detail`` says that a skip is asked again, since
  every UI of the seam offers a skip;
* a property's ``default`` that the field takes is offered, never assumed: its
  ``detail`` shows it, and the question carries it under :data:`DEFAULT_KEY`
  as an answer item without its id, for a provider to preselect. A skip still
  leaves the property out: only the human's answer sends the default. A
  default the field does not take (not one of the options, of the wrong
  type, outside the constraints) is not offered, and the ``detail`` says so;
  ``null``, blank text and an empty list offer nothing;
* a schema the seam cannot ask (a URL-mode request, an unknown type, a
  malformed enum, an enum whose options cannot be told apart) is declined at
  once, with the reason in the result's ``_meta`` under
  ``dsh-user-interaction/reason``: whatever JSON a property schema holds,
  reading it never raises.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

import mcp_types as types
from mcp.client.session import ClientRequestContext, ElicitationFnT

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
    UserInteractionService,
    is_blank,
)
from dsh_user_interaction._json import js_quote

from ._errors import ElicitationCancelled
from ._provider import REASON_META_KEY

__all__ = ["DEFAULT_KEY", "ElicitationCallback", "Unsupported", "elicitation_callback"]

#: The labels of a boolean property's question.
YES: Final = "Yes"
NO: Final = "No"

#: The note on a required property: a skip is still offered, so say what it does.
REQUIRED: Final = "Required. A skip does not answer it: the question is asked again."
#: The note on a property that may be left out.
OPTIONAL: Final = "Optional: you may skip it."

#: The key of a question that holds its property's default, as the answer item a human
#: gives by accepting it (``{"selected": [label]}``, or ``{"selected": [], "custom": text}``
#: for text and numbers), without the ``id``. An extra key (``REQ-EXTRA-1``): a provider
#: may preselect it; one that does not still shows it in the question's ``detail``.
DEFAULT_KEY: Final = "dsh-user-interaction/default"

#: The callback the SDK's ``ClientSession`` (and ``Client``) takes as ``elicitation_callback``.
ElicitationCallback = ElicitationFnT

_Kind = Literal["choice", "choices", "boolean", "text", "integer", "number"]
_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_DATE_TIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\Z")
_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S*\Z")
_FORMATS: Final = {"date": _DATE, "date-time": _DATE_TIME, "email": _EMAIL, "uri": _URI}


class Unsupported(Exception):
    """A requested schema the seam cannot ask; its message is the reason given to the server."""


@dataclass(frozen=True, slots=True)
class _Property:
    """One property of the requested schema, as one question."""

    name: str
    kind: _Kind
    title: str
    required: bool
    #: label -> the value sent back, for the enums and the boolean.
    values: dict[str, str | bool] = field(default_factory=dict[str, "str | bool"])
    schema: Mapping[str, Any] = field(default_factory=dict[str, Any])

    def notes(self, default: str | None = None) -> list[str]:
        """The lines of the question's detail; *default* is the line on the property's default."""
        lines: list[str] = []
        description = self.schema.get("description")
        if isinstance(description, str) and description:
            lines.append(description)
        lines.extend(_constraints(self.kind, self.schema))
        if default is not None:
            lines.append(default)
        # Every UI of the seam offers a skip; say what it does here, never that it cannot be.
        lines.append(REQUIRED if self.required else OPTIONAL)
        return lines


def _constraints(kind: _Kind, schema: Mapping[str, Any]) -> list[str]:
    said: list[str] = []
    for key, words in (
        ("minLength", "At least {} characters."),
        ("maxLength", "At most {} characters."),
        ("minimum", "At least {}."),
        ("maximum", "At most {}."),
        ("minItems", "Choose at least {}."),
        ("maxItems", "Choose at most {}."),
    ):
        if key in schema:
            said.append(words.format(schema[key]))
    if "format" in schema:
        said.append(f"Format: {schema['format']}.")
    if kind == "integer":
        said.append("A whole number.")
    elif kind == "number":
        said.append("A number.")
    return said


def _choices(name: str, schema: Mapping[str, Any]) -> dict[str, str | bool]:
    """Map label to value for an enum schema (titled, untitled or legacy), or Unsupported."""
    values: list[str]
    titles: list[object]
    if "oneOf" in schema or "anyOf" in schema:
        # The shape is checked on the value that is read, oneOf first: a oneOf that is
        # not a list is declined, never iterated nor passed over for the anyOf.
        key = "oneOf" if "oneOf" in schema else "anyOf"
        listed: object = schema[key]
        if not isinstance(listed, list):
            msg = f"property {name!r} has a {key} that is not a list of options"
            raise Unsupported(msg)
        values, titles = [], []
        for entry in cast("list[object]", listed):
            option = cast("dict[str, object]", entry) if isinstance(entry, dict) else {}
            if not isinstance(option.get("const"), str):
                msg = f"property {name!r} has an option without a string const"
                raise Unsupported(msg)
            values.append(cast("str", option["const"]))
            titles.append(option.get("title"))
    elif "enum" in schema:
        listed = schema["enum"]
        if not isinstance(listed, list):
            msg = f"property {name!r} has an enum that is not a list of options"
            raise Unsupported(msg)
        enum = cast("list[object]", listed)
        if not all(isinstance(v, str) for v in enum):
            msg = f"property {name!r} has an enum that is not all strings"
            raise Unsupported(msg)
        values = cast("list[str]", enum)
        names = schema.get("enumNames")
        titles = cast("list[object]", names) if isinstance(names, list) else [None] * len(values)
    else:
        msg = f"property {name!r} has neither oneOf, anyOf nor enum options"
        raise Unsupported(msg)
    if not values:
        msg = f"property {name!r} offers no options"
        raise Unsupported(msg)
    for labels in (titles, values):
        usable = len(labels) == len(values) and all(isinstance(t, str) and t for t in labels)
        if usable and len(set(labels)) == len(labels):
            return dict(zip(cast("list[str]", labels), values, strict=True))
    msg = f"property {name!r} has options whose titles and values cannot be told apart"
    raise Unsupported(msg)


def _item_of(prop: _Property, value: object) -> tuple[AskUserQuestionAnswerItem | None, str]:
    """The answer item that gives *value* for *prop*, or ``None`` and why the field refuses it.

    Only the shape is judged here: the constraints are judged by reading the item back.
    """
    if prop.kind == "boolean":
        if not isinstance(value, bool):
            return None, "it is not true or false"
        return {"id": prop.name, "selected": [YES if value else NO]}, ""
    if prop.kind in ("choice", "choices"):
        by_value = {v: label for label, v in prop.values.items()}
        picked: list[object]
        if prop.kind == "choice":
            picked = [value]
        elif isinstance(value, list):
            picked = cast("list[object]", value)
        else:
            return None, "it is not a list"
        if not all(isinstance(v, str) and v in by_value for v in picked):
            return None, "it is not one of the options"
        chosen = set(cast("list[str]", picked))
        if len(chosen) < len(picked):
            return None, "it holds an option twice"
        selected = [label for label, v in prop.values.items() if v in chosen]
        return {"id": prop.name, "selected": selected}, ""
    if prop.kind == "text":
        if not isinstance(value, str):
            return None, "it is not text"
        return {"id": prop.name, "selected": [], "custom": value}, ""
    whole = prop.kind == "integer"
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        return None, "it is not a whole number" if whole else "it is not a number"
    try:
        text = str(value)
    except ValueError:  # an int past Python's limit on digits for str()
        return None, "it has too many digits"
    return {"id": prop.name, "selected": [], "custom": text}, ""


def _default(prop: _Property) -> tuple[dict[str, Any] | None, str | None]:
    """The property's default as the answer item that gives it (no id), and the line on it.

    ``(None, None)`` when the schema offers none: no ``default``, ``null``, blank
    text or an empty list (which a skip already leaves empty). A default the field
    does not take is never offered: ``(None, the line that says why)``.
    """
    if "default" not in prop.schema:
        return None, None
    value: object = prop.schema["default"]
    if value is None or value == [] or (prop.kind == "text" and _blank_text(value)):
        return None, None
    item, problem = _item_of(prop, value)
    if item is not None:
        # The constraints are the answer's: the default must read back as itself.
        _, problems = _content([prop], {"answers": [item]})
        problem = problems.get(prop.name, "")
    if item is None or problem:
        return None, f"The form's default does not fit this field ({problem}); it is not offered."
    if prop.kind in ("integer", "number", "text"):
        custom = item.get("custom", "")
        shown = js_quote(custom) if prop.kind == "text" else custom
        how = "type it to answer with it"
    else:
        shown = ", ".join(js_quote(label) for label in item["selected"])
        how = "choose it" if len(item["selected"]) == 1 else "choose them"
        how += " to answer with " + ("it" if len(item["selected"]) == 1 else "them")
    # MCP lets a client fill a default in; here only the human's answer gives it, never a skip.
    skip = "" if prop.required else "; a skip sends no answer"
    offer = {key: held for key, held in item.items() if key != "id"}
    return offer, f"Default: {shown} ({how}{skip})."


def _blank_text(value: object) -> bool:
    return isinstance(value, str) and is_blank(value)


def _property(name: str, schema: object, required: bool) -> _Property:
    if not name:
        msg = "the form has a property with an empty name"
        raise Unsupported(msg)
    if not isinstance(schema, dict):
        msg = f"property {name!r} has no schema object"
        raise Unsupported(msg)
    spec = cast("dict[str, Any]", schema)
    title = spec.get("title")
    shown = title if isinstance(title, str) and title.strip() else name
    kind = spec.get("type")
    if kind == "string":
        if any(key in spec for key in ("oneOf", "anyOf", "enum")):
            return _Property(name, "choice", shown, required, _choices(name, spec), spec)
        if spec.get("format") not in (None, *_FORMATS):
            msg = f"property {name!r} has an unknown format {spec.get('format')!r}"
            raise Unsupported(msg)
        return _Property(name, "text", shown, required, schema=spec)
    if kind == "array":
        items = spec.get("items")
        if not isinstance(items, dict):
            msg = f"property {name!r} is an array without an items schema"
            raise Unsupported(msg)
        values = _choices(name, cast("dict[str, Any]", items))
        return _Property(name, "choices", shown, required, values, spec)
    if kind == "boolean":
        return _Property(name, "boolean", shown, required, {YES: True, NO: False}, spec)
    if kind in ("integer", "number"):
        return _Property(name, kind, shown, required, schema=spec)
    msg = f"property {name!r} has the unsupported type {kind!r}"
    raise Unsupported(msg)


def questions_of(params: types.ElicitRequestParams) -> list[_Property]:
    """The properties of a form-mode request, in order, or :class:`Unsupported` with the reason."""
    if not isinstance(params, types.ElicitRequestFormParams):
        msg = "URL-mode elicitation is not supported: this client answers forms only"
        raise Unsupported(msg)
    schema = params.requested_schema
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        msg = "the requested schema has no properties object"
        raise Unsupported(msg)
    listed: object = schema.get("required")
    required = cast("list[object]", listed) if isinstance(listed, list) else []
    return [
        _property(str(name), prop, name in required)
        for name, prop in cast("dict[str, object]", properties).items()
    ]


def _request(
    message: str, props: Sequence[_Property], problems: Mapping[str, str]
) -> AskUserQuestionRequest[Any]:
    questions: list[AskUserQuestionItem] = []
    if not props:
        # A form without fields is a confirmation: one option, to go on.
        return {
            "questions": [{"id": "confirm", "question": message or "Continue?",
                           "options": [{"label": "Continue"}]}]
        }  # fmt: skip
    for number, prop in enumerate(props):
        offer, said = _default(prop)
        lines = ([message] if number == 0 and message else []) + prop.notes(said)
        if prop.name in problems:
            lines.insert(0, f"Please answer again: {problems[prop.name]}")
        question: dict[str, Any] = {
            "id": prop.name,
            "question": prop.title,
            "detail": "\n\n".join(lines),
        }
        if prop.values:
            question["options"] = [{"label": label} for label in prop.values]
        if prop.kind == "choices":
            question["multiSelect"] = True
        if offer is not None:
            question[DEFAULT_KEY] = offer
        questions.append(cast("AskUserQuestionItem", question))
    return {"questions": questions}


def _text_problem(prop: _Property, text: str) -> str | None:
    schema = prop.schema
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        return f"at least {low} characters, not {len(text)}"
    if isinstance(high, int) and len(text) > high:
        return f"at most {high} characters, not {len(text)}"
    pattern = _FORMATS.get(str(schema.get("format")))
    if pattern is not None and pattern.match(text) is None:
        return f"this is not a valid {schema['format']}"
    return None


def _number(prop: _Property, text: str) -> tuple[int | float | None, str | None]:
    try:
        value: int | float = int(text.strip()) if prop.kind == "integer" else float(text.strip())
    except ValueError:
        return None, f"{'a whole number' if prop.kind == 'integer' else 'a number'}, please"
    if isinstance(value, float) and not math.isfinite(value):
        return None, "a finite number, please"
    low, high = prop.schema.get("minimum"), prop.schema.get("maximum")
    if isinstance(low, int | float) and value < low:
        return None, f"at least {low}"
    if isinstance(high, int | float) and value > high:
        return None, f"at most {high}"
    return value, None


def _content(
    props: Sequence[_Property], answer: AskUserQuestionAnswer
) -> tuple[dict[str, str | int | float | bool | list[str] | None], dict[str, str]]:
    """The content for *answer*, and the problems that keep it from validating, by property."""
    content: dict[str, str | int | float | bool | list[str] | None] = {}
    problems: dict[str, str] = {}
    for prop, item in zip(props, answer["answers"], strict=True):
        selected, custom = item["selected"], item.get("custom")
        if not selected and custom is None:
            if prop.required:
                problems[prop.name] = "this field is required"
            continue
        if prop.kind in ("choice", "boolean", "choices"):
            if custom is not None:
                problems[prop.name] = "choose among the options; this field takes no text"
            elif prop.kind == "choices":
                chosen = [cast("str", prop.values[label]) for label in selected]
                low, high = prop.schema.get("minItems"), prop.schema.get("maxItems")
                if isinstance(low, int) and len(chosen) < low:
                    problems[prop.name] = f"choose at least {low}"
                elif isinstance(high, int) and len(chosen) > high:
                    problems[prop.name] = f"choose at most {high}"
                else:
                    content[prop.name] = chosen
            else:
                content[prop.name] = prop.values[selected[0]]
            continue
        text = custom if custom is not None else ""
        if prop.kind == "text":
            problem = _text_problem(prop, text)
            if problem is None:
                content[prop.name] = text
            else:
                problems[prop.name] = problem
        else:
            number, problem = _number(prop, text)
            if problem is None:
                content[prop.name] = number
            else:
                problems[prop.name] = problem
    return content, problems


def _declined(reason: str) -> types.ElicitResult:
    return types.ElicitResult(action="decline", _meta={REASON_META_KEY: reason})


def elicitation_callback(
    provider: UserInteractionProvider, *, attempts: int = 3
) -> ElicitationCallback:
    """An elicitation callback for the SDK's client session that asks *provider*.

    Pass it as ``elicitation_callback=`` to ``mcp.ClientSession`` or
    ``mcp.Client``. Each form-mode request becomes one ``ask()`` of
    *provider* (the terminal provider, the scripted one, anyone's); an answer
    that does not validate against the requested schema is asked again, with
    the problem shown, at most *attempts* times in all. A retry asks only the
    fields that did not validate; the others keep their first answer.
    """
    if attempts < 1:
        msg = f"attempts must be at least 1, got {attempts!r}"
        raise ValueError(msg)
    service = UserInteractionService()
    service.register_provider(provider)

    async def callback(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        try:
            props = questions_of(params)
        except Unsupported as unsupported:
            return _declined(str(unsupported))
        message = params.message
        problems: dict[str, str] = {}
        # A retry asks only the fields that did not validate: what the human already
        # answered well is kept, never asked again.
        kept: dict[str, str | int | float | bool | list[str] | None] = {}
        asking = props
        for _ in range(attempts):
            request = _request(message, asking, problems)
            try:
                answer = await service.ask(request)
            except ElicitationCancelled as ended:
                if ended.action == "decline":
                    return (
                        _declined(ended.reason)
                        if ended.reason
                        else types.ElicitResult(action="decline")
                    )
                return types.ElicitResult(action="cancel")
            except UserInteractionError as error:
                if error.code in (
                    ErrorCode.ASK_CANCELLED,
                    ErrorCode.ASK_ABORTED,
                    ErrorCode.PROVIDER_DISPOSED,
                ):
                    return types.ElicitResult(action="cancel")
                # An answer that breaks the seam's rules (BAD_ANSWER), or a provider that
                # cannot ask: the server gets a decline with the reason, not a JSON-RPC error.
                return _declined(f"the provider failed to answer ({error.code}): {error}")
            if not props:
                return types.ElicitResult(action="accept", content={})
            content, problems = _content(asking, answer)
            kept.update(content)
            if not problems:
                ordered = {prop.name: kept[prop.name] for prop in props if prop.name in kept}
                return types.ElicitResult(action="accept", content=ordered)
            asking = [prop for prop in asking if prop.name in problems]
        said = "; ".join(f"{name}: {problem}" for name, problem in problems.items())
        return _declined(f"the answer did not meet the form after {attempts} attempts ({said})")

    return callback
