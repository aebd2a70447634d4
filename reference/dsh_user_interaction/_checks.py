"""The request checks and the answer rules, written once.

Every rule here carries the requirement ID of the spec sentence it enforces
(``spec/user-interaction.md``). The service, :class:`ValidatingProvider` and
the conformance suite all call these functions, so the rules cannot drift.

Both functions take ``object``: they are the boundary where untyped data (JSON
from a model, an answer from another language) meets the types, so they never
assume a shape they have not checked, and they never raise anything but the
documented :class:`UserInteractionError`.

Both are single-pass and linear in questions x options.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from typing_extensions import TypeIs

from ._abort import AbortSignal
from ._errors import ErrorCode, UserInteractionError
from ._types import AskUserQuestionItem, AskUserQuestionRequest

__all__ = [
    "Violation",
    "answer_violations",
    "check_request",
    "is_blank",
]

Level = Literal["MUST", "SHOULD"]

#: Whitespace as ECMAScript's ``String.prototype.trim`` sees it (WhiteSpace and
#: LineTerminator). Note: the original trims with JavaScript, so we use its set,
#: not ``str.isspace``, which differs (``\x1c``-``\x1f`` are Python whitespace,
#: ``\ufeff`` is not).
_JS_WHITESPACE: Final = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_ITEM_KEYS: Final = frozenset({"id", "selected", "custom"})
_ANSWER_KEYS: Final = frozenset({"answers"})


def is_blank(text: str) -> bool:
    """Whether *text* is empty after trimming, as JavaScript's ``trim`` sees it.

    >>> is_blank(" \\u3000\\n"), is_blank(" x ")
    (True, False)
    """
    return all(char in _JS_WHITESPACE for char in text)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken answer rule, with the requirement it breaks.

    >>> Violation("ANS-SEL-3", "MUST", "q1", 'label "X" is not an option').describe()
    'ANS-SEL-3 (MUST): question "q1": label "X" is not an option'
    """

    #: The requirement ID in ``spec/user-interaction.md``.
    requirement: str
    #: ``MUST`` violations make a strict service raise; ``SHOULD`` ones do not.
    level: Level
    #: The id of the question the violation is about; ``None`` for the batch.
    question: str | None
    #: What is wrong, naming the field.
    message: str

    def describe(self) -> str:
        """One line: the requirement, the question and the problem."""
        where = f"question {_quote(self.question)}: " if self.question is not None else ""
        return f"{self.requirement} ({self.level}): {where}{self.message}"


#: Longer strings are shortened in messages, so a hostile input cannot make them huge.
_QUOTE_LIMIT: Final = 200


def _quote(value: str) -> str:
    # JSON quoting keeps control characters, bidi overrides and the like visible.
    if len(value) <= _QUOTE_LIMIT:
        return json.dumps(value)
    return f"{json.dumps(value[:_QUOTE_LIMIT])}... ({len(value)} characters)"


def js_quote(value: str) -> str:
    """*value* quoted as ECMAScript's ``JSON.stringify`` writes it, never shortened.

    Non-ASCII characters stay raw, control characters are escaped, and lone
    surrogates are written ``\\udXXX``, so the text is always valid UTF-8.

    >>> print(js_quote("Approuvé \\"x\\"\\n\\ud800"))
    "Approuvé \\"x\\"\\n\\ud800"
    """
    quoted = json.dumps(value, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _is_mapping(value: object) -> TypeIs[Mapping[object, object]]:
    # A dict is by far the common case; the ABC check is the slow path.
    return type(value) is dict or isinstance(value, Mapping)


def _is_list(value: object) -> TypeIs[list[object] | tuple[object, ...]]:
    return isinstance(value, list | tuple)


def _type_name(value: object) -> str:
    return type(value).__name__


def _bad_request(message: str) -> UserInteractionError:
    return UserInteractionError(message, ErrorCode.BAD_REQUEST)


def _where(index: int, question_id: object) -> str:
    if isinstance(question_id, str) and question_id:
        return f"question {_quote(question_id)} (questions[{index}])"
    return f"questions[{index}]"


def _question_error(index: int, question_id: object, problem: str) -> UserInteractionError:
    # Messages are built only on failure: the success path formats nothing.
    return _bad_request(f"{_where(index, question_id)}: {problem}")


def _check_structure(
    request: Mapping[object, object], questions: Sequence[object]
) -> list[tuple[Mapping[object, object], dict[str, None]]]:
    """Stage 3: raise ``BAD_REQUEST`` for the first structural problem.

    Return each question that has an intent, with its option labels, for stage 4.
    """
    signal = request.get("signal")
    if signal is not None and not isinstance(signal, AbortSignal):
        msg = f"request.signal must be an AbortSignal, got {_type_name(signal)}"
        raise _bad_request(msg)
    if "agent" in request and not isinstance(request["agent"], str):
        msg = f"request.agent must be a string, got {_type_name(request['agent'])}"
        raise _bad_request(msg)
    seen_ids: set[str] = set()
    checked: list[tuple[Mapping[object, object], dict[str, None]]] = []
    for index, question in enumerate(questions):
        if not _is_mapping(question):
            msg = f"questions[{index}] must be a mapping, got {_type_name(question)}"
            raise _bad_request(msg)
        question_id: object = question.get("id")
        # REQ-ID-1, REQ-ID-2
        if not isinstance(question_id, str) or not question_id:
            got = "an empty string" if question_id == "" else _type_name(question_id)
            raise _question_error(index, question_id, f"id must be a non-empty string, got {got}")
        if question_id in seen_ids:
            raise _question_error(index, question_id, "id duplicates an earlier question's id")
        seen_ids.add(question_id)
        # REQ-TEXT-1
        text: object = question.get("question")
        if not isinstance(text, str) or not text:
            got = "an empty string" if text == "" else _type_name(text)
            problem = f"question must be a non-empty string, got {got}"
            raise _question_error(index, question_id, problem)
        # REQ-HEADER-1, REQ-DETAIL-1
        for key in ("header", "detail"):
            if key in question and not isinstance(question[key], str):
                problem = f"{key} must be a string, got {_type_name(question[key])}"
                raise _question_error(index, question_id, problem)
        # REQ-OPTIONS-1, REQ-OPTIONS-2, REQ-OPTIONS-3
        labels = (
            _check_options(index, question_id, question["options"]) if "options" in question else {}
        )
        # REQ-MULTI-1
        if "multiSelect" in question and not isinstance(question["multiSelect"], bool):
            problem = f"multiSelect must be a bool, got {_type_name(question['multiSelect'])}"
            raise _question_error(index, question_id, problem)
        # REQ-INTENT-1
        if "intent" in question:
            intent = question["intent"]
            if not _is_mapping(intent):
                problem = f"intent must be a mapping, got {_type_name(intent)}"
                raise _question_error(index, question_id, problem)
            for key in ("kind", "approve"):
                value: object = intent.get(key)
                if not isinstance(value, str):
                    problem = f"intent.{key} must be a string, got {_type_name(value)}"
                    raise _question_error(index, question_id, problem)
            checked.append((question, labels))
    return checked


def _check_options(index: int, question_id: str, options: object) -> dict[str, None]:
    """Check one question's options; return their labels, in order, as a set-like dict."""
    if not _is_list(options):
        raise _question_error(
            index, question_id, f"options must be a list, got {_type_name(options)}"
        )
    labels: dict[str, None] = {}
    for number, option in enumerate(options):
        if not _is_mapping(option):
            problem = f"options[{number}] must be a mapping, got {_type_name(option)}"
            raise _question_error(index, question_id, problem)
        label: object = option.get("label")
        if not isinstance(label, str) or not label:
            got = "an empty string" if label == "" else _type_name(label)
            problem = f"options[{number}].label must be a non-empty string, got {got}"
            raise _question_error(index, question_id, problem)
        if "description" in option and not isinstance(option["description"], str):
            got = _type_name(option["description"])
            problem = f"options[{number}].description must be a string, got {got}"
            raise _question_error(index, question_id, problem)
        if label in labels:
            problem = (
                f"options[{number}].label {_quote(label)} duplicates an earlier option's label"
            )
            raise _question_error(index, question_id, problem)
        labels[label] = None
    return labels


def _check_intents(checked: list[tuple[Mapping[object, object], dict[str, None]]]) -> None:
    """Stage 4: raise ``BAD_INTENT`` for the first intent problem."""
    for question, labels in checked:
        intent = question["intent"]
        if not _is_mapping(intent):  # pragma: no cover - checked at stage 3
            continue
        kind: object = intent.get("kind")
        approve: object = intent.get("approve")
        # INT-APPROVE-1
        if approve not in labels:
            msg = (
                f"question {question['id']} declares intent {kind} whose approve label "
                f"{js_quote(str(approve))} names none of its options"
            )
            raise UserInteractionError(msg, ErrorCode.BAD_INTENT)
        # INT-DETAIL-1. Note: the original accepts an empty detail; we do not,
        # since a review of nothing cannot be approved meaningfully.
        if not question.get("detail"):
            msg = f"question {question['id']} declares intent {kind} without the detail it reviews"
            raise UserInteractionError(msg, ErrorCode.BAD_INTENT)


def check_request(request: object, *, has_provider: bool = True) -> None:
    """Raise the :class:`UserInteractionError` that ``ask(request)`` would raise.

    The stages run in the spec's order (``SVC-ORDER-1`` to ``SVC-ORDER-5``) and
    each scans the questions in order; the first failure wins. Pass
    ``has_provider=False`` to include the last stage, ``NO_PROVIDER``.

    >>> check_request({"questions": [{"id": "q", "question": "Ship it?"}]})
    >>> def code_and_message(request):
    ...     try:
    ...         check_request(request)
    ...     except UserInteractionError as error:
    ...         return f"{error.code}: {error}"
    >>> code_and_message({"questions": []})
    'EMPTY_QUESTIONS: ask_user_question requires at least one question'
    >>> code_and_message({"questions": [{"id": "q", "question": "Ship?", "multiSelect": "no"}]})
    'BAD_REQUEST: question "q" (questions[0]): multiSelect must be a bool, got str'
    """
    if not _is_mapping(request):
        msg = f"request must be a mapping, got {_type_name(request)}"
        raise _bad_request(msg)
    # SVC-ORDER-1
    signal = request.get("signal")
    if isinstance(signal, AbortSignal) and signal.aborted:
        raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
    # SVC-ORDER-2
    questions: object = request.get("questions")
    if _is_list(questions) and not questions:
        raise UserInteractionError.of(ErrorCode.EMPTY_QUESTIONS)
    # SVC-ORDER-3, starting with REQ-QUESTIONS-1
    if not _is_list(questions):
        got = "nothing" if "questions" not in request else _type_name(questions)
        msg = f"request.questions must be a non-empty list, got {got}"
        raise _bad_request(msg)
    items: Sequence[object] = questions
    checked = _check_structure(request, items)
    # SVC-ORDER-4
    _check_intents(checked)
    # SVC-ORDER-5
    if not has_provider:
        raise UserInteractionError.of(ErrorCode.NO_PROVIDER)


def answer_violations(request: AskUserQuestionRequest, answer: object) -> list[Violation]:
    """Every way *answer* breaks the answer rules for *request*.

    *request* must pass :func:`check_request`. *answer* may be anything. An
    empty list means the answer keeps every rule. ``SHOULD`` violations are
    listed too; a strict service raises only for ``MUST`` ones.

    >>> request = {"questions": [{"id": "mode", "question": "Mode?",
    ...                           "options": [{"label": "Fast"}, {"label": "Safe"}]}]}
    >>> answer_violations(request, {"answers": [{"id": "mode", "selected": ["Safe"]}]})
    []
    >>> [v.requirement for v in answer_violations(
    ...     request, {"answers": [{"id": "mode", "selected": ["Fast", "Safe"]}]})]
    ['ANS-SINGLE-1']
    """
    found: list[Violation] = []

    def add(requirement: str, question: str | None, message: str) -> None:
        found.append(Violation(requirement, LEVELS[requirement], question, message))

    # ANS-SHAPE-1
    if not _is_mapping(answer):
        add("ANS-SHAPE-1", None, f"answer must be a mapping, got {_type_name(answer)}")
        return found
    if not answer.keys() <= _ANSWER_KEYS:
        extra = sorted(repr(key) for key in answer if key not in _ANSWER_KEYS)
        add("ANS-KEYS-1", None, f"answer has keys besides answers: {', '.join(extra)}")
    items: object = answer.get("answers")
    if not _is_list(items):
        got = "nothing" if "answers" not in answer else _type_name(items)
        add("ANS-SHAPE-1", None, f"answer.answers must be a list, got {got}")
        return found
    questions = request["questions"]
    answers: Sequence[object] = items
    # ANS-COUNT-1
    if len(answers) != len(questions):
        add(
            "ANS-COUNT-1",
            None,
            f"answers has {len(answers)} item(s) for {len(questions)} question(s)",
        )
    for index, (question, item) in enumerate(zip(questions, answers, strict=False)):
        _item_violations(index, question, item, add)
    return found


def _item_violations(
    index: int,
    question: AskUserQuestionItem,
    item: object,
    add: Callable[[str, str | None, str], None],
) -> None:
    question_id = question["id"]
    if not _is_mapping(item):
        add(
            "ANS-SHAPE-1",
            question_id,
            f"answers[{index}] must be a mapping, got {_type_name(item)}",
        )
        return
    if not item.keys() <= _ITEM_KEYS:
        extra = sorted(repr(key) for key in item if key not in _ITEM_KEYS)
        add("ANS-KEYS-1", question_id, f"answers[{index}] has unknown keys: {', '.join(extra)}")
    # ANS-ORDER-1
    item_id: object = item.get("id")
    if item_id != question_id:
        got = _quote(item_id) if isinstance(item_id, str) else _type_name(item_id)
        add(
            "ANS-ORDER-1",
            question_id,
            f"answers[{index}].id must be {_quote(question_id)} (question order), got {got}",
        )
    # ANS-SEL-1
    selected: object = item.get("selected")
    labels: list[str] = []
    if not _is_list(selected):
        got = "nothing" if "selected" not in item else _type_name(selected)
        add(
            "ANS-SEL-1",
            question_id,
            f"answers[{index}].selected must be a list of labels, got {got}",
        )
    else:
        for label in selected:
            if isinstance(label, str):
                labels.append(label)
            else:
                got = _type_name(label)
                add(
                    "ANS-SEL-1",
                    question_id,
                    f"answers[{index}].selected holds a {got}, not a label",
                )
    options = question.get("options") or ()
    offered = {option["label"]: number for number, option in enumerate(options)}
    # ANS-SEL-2, ANS-SEL-3
    seen: set[str] = set()
    repeated: set[str] = set()
    for label in labels:
        if label in seen:
            if label not in repeated:  # one violation per repeated label, however often
                repeated.add(label)
                add(
                    "ANS-SEL-2",
                    question_id,
                    f"answers[{index}].selected repeats label {_quote(label)}",
                )
            continue
        seen.add(label)
        if label not in offered:
            add(
                "ANS-SEL-3",
                question_id,
                f"answers[{index}].selected label {_quote(label)}"
                " is not one of the question's options",
            )
    # ANS-CUSTOM-1
    has_custom = "custom" in item
    if has_custom:
        custom: object = item["custom"]
        if not isinstance(custom, str):
            add(
                "ANS-CUSTOM-1",
                question_id,
                f"answers[{index}].custom must be a string, got {_type_name(custom)}",
            )
        elif is_blank(custom):
            add(
                "ANS-CUSTOM-1",
                question_id,
                f"answers[{index}].custom must hold a non-whitespace character; omit it to skip",
            )
    if question.get("multiSelect") is True:
        # ANS-MULTI-2
        ranks = [offered[label] for label in labels if label in offered]
        if ranks != sorted(ranks):
            add(
                "ANS-MULTI-2",
                question_id,
                f"answers[{index}].selected labels are not in option order",
            )
        return
    # ANS-SINGLE-1, ANS-SINGLE-2
    if len(labels) > 1:
        add(
            "ANS-SINGLE-1",
            question_id,
            f"answers[{index}].selected has {len(labels)} labels on a single-select question",
        )
    if has_custom and labels:
        add(
            "ANS-SINGLE-2",
            question_id,
            f"answers[{index}] has both selected and custom on a single-select question;"
            " custom overrides the choice, so selected must be empty",
        )


#: The level of every requirement an answer can break.
LEVELS: Final[dict[str, Level]] = {
    "ANS-SHAPE-1": "MUST",
    "ANS-KEYS-1": "MUST",
    "ANS-COUNT-1": "MUST",
    "ANS-ORDER-1": "MUST",
    "ANS-SEL-1": "MUST",
    "ANS-SEL-2": "MUST",
    "ANS-SEL-3": "MUST",
    "ANS-SINGLE-1": "MUST",
    "ANS-SINGLE-2": "MUST",
    "ANS-MULTI-2": "SHOULD",
    "ANS-CUSTOM-1": "MUST",
}


def bad_answer(answer: object, violations: Sequence[Violation]) -> UserInteractionError:
    """The ``BAD_ANSWER`` error for the ``MUST`` *violations*, keeping *answer*."""
    first = violations[0]
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    message = f"the provider's answer breaks {first.describe()}{more}"
    return UserInteractionError(message, ErrorCode.BAD_ANSWER, answer=answer, violations=violations)


def must_violations(request: AskUserQuestionRequest, answer: object) -> list[Violation]:
    """The ``MUST`` violations only: the ones that make an answer unusable."""
    return [v for v in answer_violations(request, answer) if v.level == "MUST"]
