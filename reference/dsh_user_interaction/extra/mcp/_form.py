"""A batch of questions as one MCP elicitation form, and the form's content as an answer.

The mapping (protocol revision 2025-11-25, the newest the SDK negotiates by
handshake):

* question *n* (counting from 1) is the property ``q<n>``; the custom text of
  a question with options is ``q<n>_other``. Names are generated, never taken
  from ids, since ids are arbitrary strings; :attr:`Form.fields` maps them back;
* a single-select question is a titled single-choice enum (``oneOf`` of
  ``{const, title}``), whose values and titles are the labels exactly;
* a multi-select question is an array whose items are a titled enum
  (``items.anyOf``);
* a question without options is a plain string;
* option descriptions go into the field's ``description``; the header and
  the question go into the field's ``title`` only, so a client that shows
  both the message and the titles never repeats a question. The message is a
  short lead line (``Please answer the question below.``), then each
  question's ``detail`` under its number and header, when it has one;
* no field is required: a field left out (or ``null``, or blank text) is a
  skipped question, ``{id, selected: []}``;
* every text field has the ``default`` ``""`` and every multi-select the
  ``default`` ``[]``: the value of a field left alone, which a client that
  sends every field (fastmcp's typed response types do) sends instead of a
  ``null`` its own validation refuses. A single-select has no default,
  since any would preselect an option.

Reading the content back is strict: anything the form did not offer (an
unknown property, a label that is not an option, a value of the wrong type,
a label twice) raises ``BAD_ANSWER`` naming the question and the field, with
the raw content kept on the error. It never becomes a wrong answer.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    is_blank,
)
from dsh_user_interaction._json import js_quote

__all__ = ["Form", "FormField", "FormFieldKind", "answer_of_content", "form_of"]

#: What a property holds: a label, a list of labels, typed text, or a question's custom text.
FormFieldKind = Literal["choice", "choices", "text", "other"]

#: Quoted values in error messages are shortened past this many characters.
_SHOWN: Final = 60


@dataclass(frozen=True, slots=True)
class FormField:
    """One property of the form: its generated name, the question it belongs to, what it holds."""

    #: The property name, ``q<n>`` or ``q<n>_other``.
    name: str
    #: The position of its question in the request.
    index: int
    kind: FormFieldKind


@dataclass(frozen=True, slots=True)
class Form:
    """One elicitation form for a whole batch: the message, the schema, and the field map."""

    #: The text shown above the form, a lead line and each question's detail under its
    #: number and header; the questions themselves are in the field titles only.
    message: str
    #: The ``requestedSchema``: a flat object of primitive properties, none required.
    schema: dict[str, Any]
    #: Every property, in schema order.
    fields: tuple[FormField, ...]

    def field(self, name: str) -> FormField | None:
        """The field of property *name*, or ``None`` for a name the form never offered."""
        return next((f for f in self.fields if f.name == name), None)

    @property
    def digest(self) -> str:
        """The digest of the message and the schema, which ties an answer to its form.

        Lone surrogates in model text are escaped, so every form has one.
        """
        text = json.dumps([self.message, self.schema], sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


def _labels(question: AskUserQuestionItem) -> list[str]:
    return [option["label"] for option in question.get("options", ())]


def _title(question: AskUserQuestionItem) -> str:
    header = question.get("header")
    return f"{header}: {question['question']}" if header else question["question"]


def _option_notes(question: AskUserQuestionItem) -> str | None:
    lines = [
        f"{option['label']}: {description}"
        for option in question.get("options", ())
        if (description := option.get("description"))
    ]
    return "\n".join(lines) if lines else None


def _lead(count: int) -> str:
    return (
        "Please answer the question below."
        if count == 1
        else f"Please answer the {count} questions below."
    )


def _section(question: AskUserQuestionItem, number: int | None) -> str | None:
    """The detail of *question* for the message, under its number and header; ``None`` without."""
    detail = question.get("detail")
    if not detail:
        return None
    header = question.get("header")
    label = f"{number}. {header}" if number is not None and header else header
    if label is None and number is not None:
        label = f"{number}."
    return f"{label}\n{detail}" if label else detail


def _choices(labels: Sequence[str]) -> list[dict[str, str]]:
    return [{"const": label, "title": label} for label in labels]


def form_of(request: AskUserQuestionRequest[Any], *, custom_text: bool = True) -> Form:
    """The elicitation form for *request*.

    With *custom_text*, every question with options also gets an optional
    text field, ``q<n>_other``, for an answer of the human's own.

    >>> form = form_of({"questions": [{"id": "mode", "question": "Which mode?",
    ...     "options": [{"label": "Fast"}, {"label": "Safe", "description": "Slower."}]}]})
    >>> form.schema["properties"]["q1"]["oneOf"]
    [{'const': 'Fast', 'title': 'Fast'}, {'const': 'Safe', 'title': 'Safe'}]
    >>> form.schema["properties"]["q1"]["description"]
    'Safe: Slower.'
    >>> [(f.name, f.kind) for f in form.fields]
    [('q1', 'choice'), ('q1_other', 'other')]
    """
    questions = request["questions"]
    single = len(questions) == 1
    properties: dict[str, dict[str, Any]] = {}
    fields: list[FormField] = []
    sections: list[str] = []
    for index, question in enumerate(questions):
        number = index + 1
        name = f"q{number}"
        title = _title(question) if single else f"{number}. {_title(question)}"
        section = _section(question, None if single else number)
        if section is not None:
            sections.append(section)
        labels = _labels(question)
        prop: dict[str, Any]
        if not labels:
            prop = {"type": "string", "title": title, "default": ""}
            fields.append(FormField(name, index, "text"))
        elif question.get("multiSelect") is True:
            prop = {
                "type": "array",
                "title": title,
                "items": {"anyOf": _choices(labels)},
                "default": [],
            }
            fields.append(FormField(name, index, "choices"))
        else:
            prop = {"type": "string", "title": title, "oneOf": _choices(labels)}
            fields.append(FormField(name, index, "choice"))
        notes = _option_notes(question)
        if notes is not None:
            prop["description"] = notes
        properties[name] = prop
        if labels and custom_text:
            other = f"{name}_other"
            instead = (
                "with or instead of the choices"
                if question.get("multiSelect") is True
                else ("instead of a choice")
            )
            properties[other] = {
                "type": "string",
                "title": f"{title} (your own answer)",
                "description": f"Type an answer of your own, {instead}.",
                "default": "",
            }
            fields.append(FormField(other, index, "other"))
    message = "\n\n".join((_lead(len(questions)), *sections))
    return Form(message, {"type": "object", "properties": properties}, tuple(fields))


def _shown(value: object) -> str:
    """*value* for an error message: JSON-quoted text, shortened; other values by type."""
    if isinstance(value, str):
        if len(value) > _SHOWN:
            return js_quote(value[:_SHOWN])[:-1] + '..." ' + f"({len(value)} characters)"
        return js_quote(value)
    return type(value).__name__


def _bad(
    request: AskUserQuestionRequest[Any], field: FormField, content: object, problem: str
) -> UserInteractionError:
    question_id = request["questions"][field.index]["id"]
    message = f"question {_shown(question_id)} (field {field.name}): {problem}"
    return UserInteractionError(message, ErrorCode.BAD_ANSWER, answer=content)


def answer_of_content(
    request: AskUserQuestionRequest[Any], form: Form, content: object
) -> AskUserQuestionAnswer:
    """The answer that accepted form *content* gives, or ``BAD_ANSWER`` for malformed content.

    >>> request = {"questions": [{"id": "go", "question": "Deploy?", "multiSelect": True,
    ...     "options": [{"label": "a"}, {"label": "b"}]}]}
    >>> form = form_of(request)
    >>> answer_of_content(request, form, {"q1": ["b", "a"], "q1_other": "and c"})
    {'answers': [{'id': 'go', 'selected': ['a', 'b'], 'custom': 'and c'}]}
    >>> try:
    ...     answer_of_content(request, form, {"q1": ["c"]})
    ... except UserInteractionError as error:
    ...     print(error.code, "|", error, "|", error.answer)
    BAD_ANSWER | question "go" (field q1): "c" is not one of its options | {'q1': ['c']}
    """
    if not isinstance(content, Mapping):
        message = f"an accepted form must have content, an object of fields; got {_shown(content)}"
        raise UserInteractionError(message, ErrorCode.BAD_ANSWER, answer=content)
    values = cast("Mapping[object, object]", content)
    # Sets and counts built once keep reading linear in the size of the content:
    # a client may pick thousands of options, and this runs on the event loop.
    offered = {field.name for field in form.fields}
    for key in values:
        if not isinstance(key, str) or key not in offered:
            message = f"the content has a field the form never offered: {_shown(key)}"
            raise UserInteractionError(message, ErrorCode.BAD_ANSWER, answer=values)
    questions = request["questions"]
    selected: list[list[str]] = [[] for _ in questions]
    custom: list[str | None] = [None for _ in questions]
    for field in form.fields:
        value = values.get(field.name)
        if value is None:
            continue
        labels = _labels(questions[field.index])
        if field.kind in ("text", "other"):
            if not isinstance(value, str):
                raise _bad(request, field, values, f"expected text, got {_shown(value)}")
            if not is_blank(value):
                custom[field.index] = value
        elif field.kind == "choice":
            if not isinstance(value, str):
                raise _bad(request, field, values, f"expected one label, got {_shown(value)}")
            if value not in labels:
                raise _bad(request, field, values, f"{_shown(value)} is not one of its options")
            selected[field.index] = [value]
        else:
            if not isinstance(value, list):
                problem = f"expected a list of labels, got {_shown(value)}"
                raise _bad(request, field, values, problem)
            picked = cast("list[object]", value)
            options = set(labels)
            # Only text can equal a label, so counting the text counts every repeat.
            counts = Counter(label for label in picked if isinstance(label, str))
            for label in picked:
                if not isinstance(label, str) or label not in options:
                    problem = f"{_shown(label)} is not one of its options"
                    raise _bad(request, field, values, problem)
                if counts[label] > 1:
                    raise _bad(request, field, values, f"{_shown(label)} is picked twice")
            selected[field.index] = [label for label in labels if label in counts]
    items: list[AskUserQuestionAnswerItem] = []
    for index, question in enumerate(questions):
        item: AskUserQuestionAnswerItem = {"id": question["id"], "selected": selected[index]}
        text = custom[index]
        if text is not None:
            if question.get("multiSelect") is not True:
                # A single-select question: custom text overrides the choice, as in the original.
                item["selected"] = []
            item["custom"] = text
        items.append(item)
    return {"answers": items}
