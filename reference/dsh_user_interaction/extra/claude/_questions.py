"""Claude's ``AskUserQuestion`` input as a request of the seam, and the answer back.

Design notes:

* The mapping is strict: an input Claude Code itself would refuse, or one
  whose answer could not be read back without a guess, raises
  ``BAD_REQUEST`` naming the JSON path and the problem. Nothing is dropped
  silently except what the seam cannot show and the docs list as lost: an
  option's ``preview``.
* Question ids are derived from the position, ``q1`` to ``q4``, so the same
  input always makes the same request: a durable ask asked again with the
  same ``askId`` finds the same questions (``DUR-REASK-2``).
* Claude's answers are keyed by question text, a multi-select answer is its
  labels joined by ``", "`` and "Other" is free text. So question texts must
  be unique, and in a multi-select no label may contain ``", "``.
* A skipped question has no value in Claude's shape: it is left out of
  ``answers``, as Claude Code leaves out a question nobody answered.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, NotRequired, Required, TypeAlias, cast

from typing_extensions import TypedDict

from ..._deadline import DEADLINE_KEY, DEFAULT_KEY
from ..._durable._store import ASK_ID_KEY
from ..._errors import ErrorCode, UserInteractionError
from ..._tool import checked_answer_within, checked_tool_ask_id
from ..._types import AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionRequest
from ..._violations import json_path, json_type

__all__ = [
    "ASK_USER_QUESTION",
    "HEADER_MAX",
    "JOIN",
    "OPTIONS_MAX",
    "OPTIONS_MIN",
    "QUESTIONS_MAX",
    "ClaudeAnswers",
    "ClaudeOption",
    "ClaudeQuestion",
    "answers_of",
    "question_id",
    "request_of",
]

#: The name of Claude Code's built-in question tool.
ASK_USER_QUESTION: Final = "AskUserQuestion"
#: At most this many questions in one ``AskUserQuestion`` call.
QUESTIONS_MAX: Final = 4
#: At least this many options per question.
OPTIONS_MIN: Final = 2
#: At most this many options per question.
OPTIONS_MAX: Final = 4
#: At most this many characters in a question's ``header`` (its chip), counted in UTF-16
#: code units as Claude Code counts them.
HEADER_MAX: Final = 12
#: What Claude puts between the labels of a multi-select answer.
JOIN: Final = ", "

_QUESTION_KEYS: Final = frozenset({"question", "header", "options", "multiSelect"})
_OPTION_KEYS: Final = frozenset({"label", "description", "preview"})
_RECOMMENDED: Final = "(Recommended)"


class ClaudeOption(TypedDict):
    """One option of an ``AskUserQuestion`` question, as Claude sends it."""

    #: What the human picks; echoed in the answer.
    label: Required[str]
    #: What choosing it means.
    description: NotRequired[str]
    #: A preview of the option (Markdown or HTML); the seam cannot show it.
    preview: NotRequired[str]


class ClaudeQuestion(TypedDict):
    """One question of an ``AskUserQuestion`` call, as Claude sends it."""

    #: The question; also the key of its answer.
    question: Required[str]
    #: A chip of at most ``HEADER_MAX`` characters.
    header: NotRequired[str]
    #: ``OPTIONS_MIN`` to ``OPTIONS_MAX`` options; "Other" is implied.
    options: Required[list[ClaudeOption]]
    #: Whether several options may be picked.
    multiSelect: NotRequired[bool]


#: Claude's answers: question text to a label, labels joined by ``", "``, or free text.
ClaudeAnswers: TypeAlias = dict[str, str]


def question_id(index: int) -> str:
    """The seam's id of the question at *index* (from 0) of an ``AskUserQuestion`` call.

    >>> question_id(0), question_id(3)
    ('q1', 'q4')
    """
    return f"q{index + 1}"


def _refuse(path: Sequence[str | int], problem: str) -> UserInteractionError:
    return UserInteractionError(
        f"AskUserQuestion input {json_path(tuple(path))}: {problem}", ErrorCode.BAD_REQUEST
    )


def _text(value: object, path: Sequence[str | int]) -> str:
    if not isinstance(value, str):
        raise _refuse(path, f"expected a string, got {json_type(value)}")
    if not value.strip():
        raise _refuse(path, "must not be blank")
    return str.__str__(value)


def _checked_questions(tool_input: object) -> list[ClaudeQuestion]:
    """The questions of *tool_input*, checked against Claude's shape and our rules."""
    if not isinstance(tool_input, Mapping):
        raise _refuse((), f"expected an object, got {json_type(tool_input)}")
    raw = cast("Mapping[str, object]", tool_input).get("questions")
    if not isinstance(raw, list | tuple):
        raise _refuse(("questions",), f"expected an array, got {json_type(raw)}")
    items = cast("Sequence[object]", raw)
    if not 1 <= len(items) <= QUESTIONS_MAX:
        raise _refuse(("questions",), f"expected 1 to {QUESTIONS_MAX} questions, got {len(items)}")
    questions: list[ClaudeQuestion] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        question = _checked_question(item, ("questions", index))
        if question["question"] in seen:
            raise _refuse(
                ("questions", index, "question"),
                "repeats an earlier question's text; Claude keys answers by question text",
            )
        seen.add(question["question"])
        questions.append(question)
    return questions


def _checked_question(item: object, path: tuple[str | int, ...]) -> ClaudeQuestion:
    if not isinstance(item, Mapping):
        raise _refuse(path, f"expected an object, got {json_type(item)}")
    fields = cast("Mapping[str, object]", item)
    for key in fields:
        if key not in _QUESTION_KEYS:
            raise _refuse((*path, str(key)), "is not a key of an AskUserQuestion question")
    question: ClaudeQuestion = {
        "question": _text(fields.get("question"), (*path, "question")),
        "options": [],
    }
    if "header" in fields:
        header = fields["header"]
        if not isinstance(header, str):
            raise _refuse((*path, "header"), f"expected a string, got {json_type(header)}")
        # Counted as Claude Code counts, in UTF-16 code units: an emoji counts two.
        length = len(header.encode("utf-16-le", "surrogatepass")) // 2
        if length > HEADER_MAX:
            raise _refuse(
                (*path, "header"), f"has {length} characters, at most {HEADER_MAX} allowed"
            )
        if header.strip():  # a blank chip shows nothing: the question has no header
            question["header"] = str.__str__(header)
    multi = fields.get("multiSelect", False)
    if not isinstance(multi, bool):
        raise _refuse((*path, "multiSelect"), f"expected a boolean, got {json_type(multi)}")
    question["multiSelect"] = multi
    raw = fields.get("options")
    if not isinstance(raw, list | tuple):
        raise _refuse((*path, "options"), f"expected an array, got {json_type(raw)}")
    options = cast("Sequence[object]", raw)
    if not OPTIONS_MIN <= len(options) <= OPTIONS_MAX:
        raise _refuse(
            (*path, "options"),
            f"expected {OPTIONS_MIN} to {OPTIONS_MAX} options, got {len(options)}",
        )
    labels: set[str] = set()
    for number, raw_option in enumerate(options):
        option = _checked_option(raw_option, (*path, "options", number), multi=multi)
        if option["label"] in labels:
            raise _refuse((*path, "options", number, "label"), "repeats an earlier label")
        labels.add(option["label"])
        question["options"].append(option)
    return question


def _checked_option(raw: object, path: tuple[str | int, ...], *, multi: bool) -> ClaudeOption:
    if not isinstance(raw, Mapping):
        raise _refuse(path, f"expected an object, got {json_type(raw)}")
    fields = cast("Mapping[str, object]", raw)
    for key in fields:
        if key not in _OPTION_KEYS:
            raise _refuse((*path, str(key)), "is not a key of an AskUserQuestion option")
    label = _text(fields.get("label"), (*path, "label"))
    if multi and JOIN in label:
        raise _refuse(
            (*path, "label"),
            f"contains {JOIN!r}, which would make a multi-select answer ambiguous",
        )
    option: ClaudeOption = {"label": label}
    if "description" in fields:
        description = fields["description"]
        if not isinstance(description, str):
            raise _refuse(
                (*path, "description"), f"expected a string, got {json_type(description)}"
            )
        option["description"] = str.__str__(description)
    if "preview" in fields and not isinstance(fields["preview"], str):
        raise _refuse((*path, "preview"), f"expected a string, got {json_type(fields['preview'])}")
    return option


def request_of(
    tool_input: Mapping[str, Any],
    *,
    ask_id: str | None = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> AskUserQuestionRequest[Any]:
    """The seam's request for Claude's ``AskUserQuestion`` *tool_input*.

    Question ``i`` (from 0) gets the id ``q{i+1}``; ``multiSelect`` becomes
    ``multiSelect``; each option keeps its label and description. *ask_id*
    (Claude's tool-use id) becomes the request's ``askId``. *answer_within*
    gives the human that many seconds (a ``deadline``); with
    *recommended_defaults* too, and only when every question's first option
    ends in "(Recommended)", that option is each question's default.

    Raises ``UserInteractionError`` with ``BAD_REQUEST`` naming the JSON
    path for an input that breaks Claude's shape (1 to 4 questions, 2 to 4
    options, a header of at most 12 characters, no unknown keys) or that
    could not be answered without a guess (a repeated question text, a
    repeated label, a multi-select label containing ``", "``). Raises
    ``TypeError`` or ``ValueError`` for an *ask_id* that is not a non-empty
    string, an *answer_within* that is not a positive number of seconds, or
    *recommended_defaults* without *answer_within*.

    >>> request = request_of({"questions": [{"question": "Which DB?", "header": "DB",
    ...     "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}, ask_id="toolu_1")
    >>> request["askId"], request["questions"][0]["id"]
    ('toolu_1', 'q1')
    >>> request_of({"questions": []})
    Traceback (most recent call last):
    ...
    dsh_user_interaction...UserInteractionError: AskUserQuestion input $.questions: expected 1 \
to 4 questions, got 0
    """
    questions = _checked_questions(tool_input)
    items: list[AskUserQuestionItem] = []
    defaults = (
        recommended_defaults
        and answer_within is not None
        and all(question["options"][0]["label"].endswith(_RECOMMENDED) for question in questions)
    )
    for index, question in enumerate(questions):
        item: dict[str, object] = {"id": question_id(index), "question": question["question"]}
        if "header" in question:
            item["header"] = question["header"]
        item["options"] = [
            {"label": option["label"], "description": option["description"]}
            if "description" in option
            else {"label": option["label"]}
            for option in question["options"]
        ]
        if question.get("multiSelect", False):
            item["multiSelect"] = True
        if defaults:
            item[DEFAULT_KEY] = {"selected": [question["options"][0]["label"]]}
        items.append(cast("AskUserQuestionItem", item))
    request: dict[str, object] = {"questions": items}
    checked_id = checked_tool_ask_id(ask_id)
    if checked_id is not None:
        request[ASK_ID_KEY] = checked_id
    if answer_within is not None or recommended_defaults:
        request[DEADLINE_KEY] = time.time() + checked_answer_within(answer_within)
    return cast("AskUserQuestionRequest[Any]", request)


def _bad_answer(path: Sequence[str | int], problem: str, answer: object) -> UserInteractionError:
    return UserInteractionError(
        f"the answer to AskUserQuestion {json_path(tuple(path))}: {problem}",
        ErrorCode.BAD_ANSWER,
        answer=answer,
    )


def answers_of(tool_input: Mapping[str, Any], answer: AskUserQuestionAnswer) -> ClaudeAnswers:
    """Claude's ``answers`` for *answer*, the seam's answer to ``request_of``'s request.

    Each answered question's text maps to its label (single select), its
    labels and any free text joined by ``", "`` (multi-select), or its free
    text ("Other"). A skipped question (nothing selected, no text) is left
    out. Raises ``UserInteractionError`` with ``BAD_REQUEST`` if
    *tool_input* is not a valid ``AskUserQuestion`` input, and with
    ``BAD_ANSWER`` (the answer kept on the error) for an answer that does
    not answer those questions: a missing, unknown or repeated id, a label
    that was not offered, two labels for a single-select question.

    >>> tool_input = {"questions": [{"question": "Which?", "multiSelect": True,
    ...     "options": [{"label": "A"}, {"label": "B"}]}]}
    >>> answers_of(tool_input, {"answers": [{"id": "q1", "selected": ["A", "B"]}]})
    {'Which?': 'A, B'}
    """
    questions = _checked_questions(tool_input)
    # A lenient service passes on whatever its provider returned: read it as an object.
    plain = cast("object", answer)
    items = (
        cast("Mapping[str, object]", plain).get("answers") if isinstance(plain, Mapping) else None
    )
    if not isinstance(items, list | tuple):
        raise _bad_answer(("answers",), f"expected an array, got {json_type(items)}", answer)
    by_id: dict[str, tuple[int, Mapping[str, object]]] = {}
    for number, raw in enumerate(cast("Sequence[object]", items)):
        if not isinstance(raw, Mapping):
            raise _bad_answer(
                ("answers", number), f"expected an object, got {json_type(raw)}", answer
            )
        item = cast("Mapping[str, object]", raw)
        item_id = item.get("id")
        if not isinstance(item_id, str) or item_id in by_id:
            raise _bad_answer(
                ("answers", number, "id"), f"unknown or repeated id {item_id!r}", answer
            )
        by_id[item_id] = (number, item)
    expected = {question_id(index) for index in range(len(questions))}
    unknown = sorted(set(by_id) - expected)
    if unknown:
        number = by_id[unknown[0]][0]
        raise _bad_answer(("answers", number, "id"), f"unknown id {unknown[0]!r}", answer)
    result: ClaudeAnswers = {}
    for index, question in enumerate(questions):
        found = by_id.get(question_id(index))
        if found is None:
            raise _bad_answer(("answers",), f"no item for question {question_id(index)!r}", answer)
        number, item = found
        value = _value(question, item, ("answers", number), answer)
        if value is not None:
            result[question["question"]] = value
    return result


def _value(
    question: ClaudeQuestion,
    item: Mapping[str, object],
    path: tuple[str | int, ...],
    answer: object,
) -> str | None:
    selected = item.get("selected")
    if not isinstance(selected, list | tuple):
        raise _bad_answer(
            (*path, "selected"), f"expected an array, got {json_type(selected)}", answer
        )
    labels = {option["label"] for option in question["options"]}
    picked: list[str] = []
    for number, label in enumerate(cast("Sequence[object]", selected)):
        if not isinstance(label, str) or label not in labels or label in picked:
            raise _bad_answer(
                (*path, "selected", number), f"{label!r} is not an offered label", answer
            )
        picked.append(str.__str__(label))
    custom = item.get("custom")
    if custom is not None and (not isinstance(custom, str) or not custom.strip()):
        raise _bad_answer((*path, "custom"), "expected non-blank text", answer)
    texts = [*picked, *([str.__str__(custom)] if isinstance(custom, str) else [])]
    if not question.get("multiSelect", False) and len(texts) > 1:
        raise _bad_answer(
            (*path, "selected"), "a single-select question takes one label or text", answer
        )
    return JOIN.join(texts) if texts else None
