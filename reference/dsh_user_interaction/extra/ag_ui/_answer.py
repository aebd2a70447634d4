"""The answer to one request as a JSON Schema, and a resume payload read back as that answer.

Design notes:

* The payload of a ``resolved`` resume entry is our answer itself,
  ``{"answers": [{"id", "selected", "custom"?}]}``, so nothing is renamed on
  the way back. :func:`answer_schema` is the schema of exactly the answers
  the request accepts, as far as JSON Schema can say it: one item per
  question in order (``prefixItems``), each id a ``const``, each label an
  ``enum`` of that question's labels, at most one label on a single-select
  question and none beside custom text there (``ANS-SINGLE-1``,
  ``ANS-SINGLE-2``), no label on a question without options, labels unique,
  custom text with a non-whitespace character (``ANS-CUSTOM-1``). Note: the
  ``SHOULD`` rule that labels come in option order (``ANS-MULTI-2``) is not
  in the schema; a payload that breaks it is still accepted, as the service
  accepts it.
* Reading a payload back is strict and never guesses: a payload that is not
  JSON data, not the answer's shape, or an answer the request does not accept
  raises :class:`~dsh_user_interaction.extra.ag_ui.ResumeError` with
  ``BAD_PAYLOAD``, naming the field by its path from the resume list.
"""

from __future__ import annotations

from typing import Any, Final, cast

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    answer_violations,
)
from dsh_user_interaction._json import JsonError, read_json
from dsh_user_interaction._violations import json_path, json_type

from ._errors import ResumeError, ResumeErrorCode

__all__ = ["answer_of_payload", "answer_schema"]

#: Text with a character that JavaScript's ``trim`` keeps: as ``spec/schema/answer.schema.json``.
_NOT_BLANK: Final = (
    "[^\\t\\n\\u000b\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
)
_ITEM_KEYS: Final = ("id", "selected", "custom")


def _labels(question: AskUserQuestionItem) -> list[str]:
    return [option["label"] for option in question.get("options", ())]


def _item_schema(question: AskUserQuestionItem) -> dict[str, Any]:
    labels = _labels(question)
    selected: dict[str, Any] = {"type": "array", "uniqueItems": True}
    multi = bool(question.get("multiSelect", False))
    if not labels:
        selected["maxItems"] = 0
    else:
        selected["items"] = {"enum": labels}
        if not multi:
            selected["maxItems"] = 1
    schema: dict[str, Any] = {
        "title": question["question"],
        "type": "object",
        "required": ["id", "selected"],
        "additionalProperties": False,
        "properties": {
            "id": {"const": question["id"]},
            "selected": selected,
            "custom": {"type": "string", "pattern": _NOT_BLANK},
        },
    }
    if labels and not multi:
        # ANS-SINGLE-2: custom text overrides the choice on a single-select question.
        schema["if"] = {"required": ["custom"]}
        schema["then"] = {"properties": {"selected": {"maxItems": 0}}}
    return schema


def answer_schema(request: AskUserQuestionRequest[Any]) -> dict[str, Any]:
    """The JSON Schema (2020-12) of the answers *request* accepts, as ``responseSchema``.

    *request* must pass :func:`~dsh_user_interaction.check_request`; this
    function does not check it again.

    >>> schema = answer_schema({"questions": [
    ...     {"id": "env", "question": "Where?", "options": [{"label": "prod"}, {"label": "dev"}]}]})
    >>> schema["properties"]["answers"]["prefixItems"][0]["properties"]["selected"]
    {'type': 'array', 'uniqueItems': True, 'items': {'enum': ['prod', 'dev']}, 'maxItems': 1}
    """
    questions = request["questions"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["answers"],
        "additionalProperties": False,
        "properties": {
            "answers": {
                "type": "array",
                "minItems": len(questions),
                "maxItems": len(questions),
                "prefixItems": [_item_schema(question) for question in questions],
                "items": False,
            }
        },
    }


def _path(where: tuple[str | int, ...]) -> str:
    """*where* as a field path: its first step as it is, then ``.key`` and ``[index]`` steps."""
    head, *steps = where
    return str(head) + json_path(tuple(steps)).removeprefix("$")


def _bad(where: tuple[str | int, ...], problem: str, interrupt_id: str | None) -> ResumeError:
    return ResumeError(
        f"{_path(where)}: {problem}",
        ResumeErrorCode.BAD_PAYLOAD,
        interrupt_id=interrupt_id,
    )


def _item(
    raw: object, where: tuple[str | int, ...], interrupt_id: str | None
) -> AskUserQuestionAnswerItem:
    if not isinstance(raw, dict):
        raise _bad(where, f"expected an object, got {json_type(raw)}", interrupt_id)
    fields = cast("dict[str, object]", raw)
    for key in fields:
        if key not in _ITEM_KEYS:
            raise _bad((*where, key), "is not a key of an answer item", interrupt_id)
    for key in ("id", "selected"):
        if key not in fields:
            raise _bad((*where, key), "required", interrupt_id)
    question_id = fields["id"]
    if not isinstance(question_id, str):
        raise _bad((*where, "id"), f"expected a string, got {json_type(question_id)}", interrupt_id)
    selected = fields["selected"]
    if not isinstance(selected, list):
        got = json_type(selected)
        raise _bad((*where, "selected"), f"expected an array, got {got}", interrupt_id)
    labels: list[str] = []
    for number, label in enumerate(cast("list[object]", selected)):
        if not isinstance(label, str):
            got = json_type(label)
            raise _bad((*where, "selected", number), f"expected a string, got {got}", interrupt_id)
        labels.append(label)
    item: AskUserQuestionAnswerItem = {"id": question_id, "selected": labels}
    if "custom" in fields:
        custom = fields["custom"]
        if not isinstance(custom, str):
            got = json_type(custom)
            raise _bad((*where, "custom"), f"expected a string, got {got}", interrupt_id)
        item["custom"] = custom
    return item


def answer_of_payload(
    request: AskUserQuestionRequest[Any],
    payload: object,
    *,
    where: str = "payload",
    interrupt_id: str | None = None,
) -> AskUserQuestionAnswer:
    """The answer a resume *payload* gives *request*, checked by every answer rule.

    *where* is the payload's path, for the messages (``resume[0].payload``,
    say); a payload is JSON data already, so a string is a string, never
    JSON text read again; *interrupt_id* goes on the error. Raises
    :class:`~dsh_user_interaction.extra.ag_ui.ResumeError` with ``BAD_PAYLOAD``
    naming the field and the problem; nothing is delivered then.

    >>> request = {"questions": [{"id": "go", "question": "Go?", "options": [{"label": "Yes"}]}]}
    >>> answer_of_payload(request, {"answers": [{"id": "go", "selected": ["Yes"]}]})
    {'answers': [{'id': 'go', 'selected': ['Yes']}]}
    >>> answer_of_payload(request, {"answers": [{"id": "go", "selected": ["No"]}]})
    Traceback (most recent call last):
    ...
    dsh_user_interaction.extra.ag_ui._errors.ResumeError: payload: ANS-SEL-3 (MUST): \
question "go": answers[0].selected label "No" is not one of the question's options
    """
    path: tuple[str | int, ...] = (where,)
    try:
        # In a list, so that a string payload stays a string rather than being parsed.
        plain = cast("list[object]", read_json([payload]))[0]
    except JsonError as error:
        raise _bad(path, f"is not JSON data: {error}", interrupt_id) from None
    if not isinstance(plain, dict):
        raise _bad(path, f"expected an object, got {json_type(plain)}", interrupt_id)
    fields = cast("dict[str, object]", plain)
    for key in fields:
        if key != "answers":
            raise _bad((*path, key), "is not a key of an answer", interrupt_id)
    if "answers" not in fields:
        raise _bad((*path, "answers"), "required", interrupt_id)
    raw_items = fields["answers"]
    if not isinstance(raw_items, list):
        got = json_type(raw_items)
        raise _bad((*path, "answers"), f"expected an array, got {got}", interrupt_id)
    items = [
        _item(raw, (*path, "answers", index), interrupt_id)
        for index, raw in enumerate(cast("list[object]", raw_items))
    ]
    answer: AskUserQuestionAnswer = {"answers": items}
    for violation in answer_violations(request, answer):
        if violation.level == "MUST":
            raise _bad(path, violation.describe(), interrupt_id)
    return answer
