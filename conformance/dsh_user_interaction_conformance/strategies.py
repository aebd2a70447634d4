"""Hypothesis strategies for the seam: public API, for the suite and for your tests.

* :func:`hostile_text`: strings that break naive UIs.
* :func:`requests`: well-formed requests.
* :func:`invalid_requests`: malformed requests, each with the error it must raise.
* :func:`behaviours` and :func:`actions`: what the simulated human does.
* :func:`~dsh_user_interaction_conformance.expected_answer`: the answer the spec requires for them.
* :func:`valid_answers` and :func:`invalid_answers`: answers that keep, or
  break, the answer rules for a request.

Every strategy draws only JSON-representable data (no lone surrogates), so a
drawn request can cross to a provider in any language.

>>> from hypothesis import given
>>> from dsh_user_interaction import check_request
>>> @given(requests())
... def test_requests_are_well_formed(request):
...     check_request(request)
>>> test_requests_are_well_formed()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    is_blank,
)

from ._behaviour import Action, Behaviour, Dismiss, Nothing, Pick, Skip, Type, expected_answer
from ._capabilities import Capabilities

__all__ = [
    "InvalidAnswer",
    "InvalidRequest",
    "actions",
    "behaviours",
    "custom_texts",
    "hostile_text",
    "invalid_answers",
    "invalid_requests",
    "labels",
    "options",
    "questions",
    "requests",
    "valid_answers",
]

#: Pieces that break naive UIs: ANSI escapes, bidi overrides and isolates,
#: zero-width characters, combining marks, emoji sequences, control characters.
HOSTILE_PIECES: Final = (
    "\x1b[31m",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\u202e",
    "\u202d",
    "\u2066",
    "\u2069",
    "\u200b",
    "\u200d",
    "\u2060",
    "\ufeff",
    "e\u0301",
    "\U0001f469\u200d\U0001f4bb",
    "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\x00",
    "\x08",
    "\r",
    "\r\n",
    "\t",
    " ",
    "\u00a0",
    "\u3000",
    '"',
    "\\",
    "<b>",
    "%s",
    "{0}",
)

_plain_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


def hostile_text(*, min_size: int = 0) -> st.SearchStrategy[str]:
    """Strings with hostile pieces, surrounding whitespace, and long runs.

    Every string has at least *min_size* characters.
    """
    pieces = st.lists(st.sampled_from(HOSTILE_PIECES) | _plain_text, max_size=6).map("".join)
    padded = st.tuples(
        st.sampled_from(["", " ", "  ", "\t", "\n"]), _plain_text, st.sampled_from(["", " ", "\n"])
    ).map("".join)
    long = st.tuples(_plain_text.filter(bool), st.integers(32, 200)).map(
        lambda pair: pair[0] * pair[1]
    )
    strategy = st.one_of(_plain_text, pieces, padded, long)
    if min_size:
        strategy = strategy.filter(lambda text: len(text) >= min_size)
    return strategy


def labels() -> st.SearchStrategy[str]:
    """Non-empty option labels (and ids), hostile ones included."""
    return hostile_text(min_size=1)


def custom_texts() -> st.SearchStrategy[str]:
    """Custom text with at least one non-whitespace character (``ANS-CUSTOM-1``)."""
    return hostile_text(min_size=1).filter(lambda text: not is_blank(text))


@st.composite
def options(
    draw: st.DrawFn, *, min_size: int = 0, max_size: int = 5
) -> list[AskUserQuestionOption]:
    """A list of options with distinct labels (``REQ-OPTIONS-3``)."""
    names = draw(st.lists(labels(), min_size=min_size, max_size=max_size, unique=True))
    result: list[AskUserQuestionOption] = []
    for name in names:
        option: AskUserQuestionOption = {"label": name}
        if draw(st.booleans()):
            option["description"] = draw(hostile_text())
        result.append(option)
    return result


@st.composite
def questions(draw: st.DrawFn, *, question_id: str | None = None) -> AskUserQuestionItem:
    """One well-formed question, sometimes with a valid intent."""
    item: AskUserQuestionItem = {
        "id": question_id if question_id is not None else draw(labels()),
        "question": draw(hostile_text(min_size=1)),
    }
    if draw(st.booleans()):
        item["header"] = draw(hostile_text())
    offered = draw(st.none() | options())
    if offered is not None:
        item["options"] = offered
    multi = draw(st.sampled_from([None, False, True]))
    if multi is not None:
        item["multiSelect"] = multi
    if offered and draw(st.integers(0, 3)) == 0:
        item["intent"] = {"kind": "plan-review", "approve": draw(st.sampled_from(offered))["label"]}
        item["detail"] = draw(hostile_text(min_size=1).filter(bool))
    elif draw(st.booleans()):
        item["detail"] = draw(hostile_text())
    return item


@st.composite
def requests(
    draw: st.DrawFn, *, min_questions: int = 1, max_questions: int = 4
) -> AskUserQuestionRequest:
    """A well-formed request without a signal, with distinct question ids."""
    ids = draw(st.lists(labels(), min_size=min_questions, max_size=max_questions, unique=True))
    request: AskUserQuestionRequest = {"questions": [draw(questions(question_id=i)) for i in ids]}
    if draw(st.booleans()):
        request["agent"] = draw(hostile_text())
    return request


@dataclass(frozen=True)
class InvalidRequest:
    """A malformed request and what ``ask()`` must raise for it."""

    #: The request. It may hold any value where the spec wants a specific type.
    request: Any
    #: The code ``ask()`` must raise.
    code: ErrorCode
    #: The requirement the request breaks.
    requirement: str
    #: The field the message must name, when the code is ``BAD_REQUEST``.
    field: str | None = None


_NOT_STRING: Final = st.one_of(
    st.none(), st.integers(), st.booleans(), st.lists(st.integers(), max_size=2)
)
_NOT_BOOL: Final = st.one_of(st.none(), st.integers(), st.text(max_size=3))
_NOT_LIST: Final = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
_NOT_MAPPING: Final = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)
)

Mutation = Callable[[st.DrawFn, dict[str, Any]], tuple[ErrorCode, str, str | None]]


def _break_question(
    requirement: str, field: str, breaker: Callable[[st.DrawFn, dict[str, Any]], None]
) -> Mutation:
    def mutate(draw: st.DrawFn, question: dict[str, Any]) -> tuple[ErrorCode, str, str | None]:
        breaker(draw, question)
        return ErrorCode.BAD_REQUEST, requirement, field

    return mutate


def _set(
    key: str, values: st.SearchStrategy[object]
) -> Callable[[st.DrawFn, dict[str, Any]], None]:
    def breaker(draw: st.DrawFn, question: dict[str, Any]) -> None:
        question[key] = draw(values)

    return breaker


def _bad_option(draw: st.DrawFn, question: dict[str, Any]) -> None:
    bad = draw(
        st.one_of(
            _NOT_MAPPING,
            st.fixed_dictionaries({"label": _NOT_STRING | st.just("")}),
            st.just({"description": "no label"}),
        )
    )
    question["options"] = [*question.get("options", []), bad]


def _bad_description(draw: st.DrawFn, question: dict[str, Any]) -> None:
    name = draw(labels().filter(lambda label: label not in _labels_of(question)))
    question["options"] = [
        *question.get("options", []),
        {"label": name, "description": draw(_NOT_STRING)},
    ]


def _duplicate_label(draw: st.DrawFn, question: dict[str, Any]) -> None:
    offered = question.get("options") or [{"label": draw(labels())}]
    copy = dict(draw(st.sampled_from(offered)))
    question["options"] = [*offered, copy]


def _bad_intent(draw: st.DrawFn, question: dict[str, Any]) -> None:
    question["intent"] = draw(
        st.one_of(
            _NOT_MAPPING,
            st.fixed_dictionaries({"kind": _NOT_STRING, "approve": st.just("Approve")}),
            st.fixed_dictionaries({"kind": st.just("plan-review"), "approve": _NOT_STRING}),
        )
    )


def _labels_of(question: dict[str, Any]) -> list[str]:
    return [option["label"] for option in question.get("options", [])]


def _approve_unknown(
    draw: st.DrawFn, question: dict[str, Any]
) -> tuple[ErrorCode, str, str | None]:
    known = _labels_of(question)
    question["intent"] = {
        "kind": draw(st.sampled_from(["plan-review", "deploy-review"])),
        "approve": draw(labels().filter(lambda label: label not in known)),
    }
    question["detail"] = "the plan"
    return ErrorCode.BAD_INTENT, "INT-APPROVE-1", None


def _detail_missing(draw: st.DrawFn, question: dict[str, Any]) -> tuple[ErrorCode, str, str | None]:
    offered = question.get("options") or [{"label": "Approve"}]
    question["options"] = offered
    question["intent"] = {"kind": "plan-review", "approve": draw(st.sampled_from(offered))["label"]}
    if draw(st.booleans()):
        question.pop("detail", None)
    else:
        question["detail"] = ""
    return ErrorCode.BAD_INTENT, "INT-DETAIL-1", None


_QUESTION_MUTATIONS: Final[tuple[Mutation, ...]] = (
    _break_question("REQ-ID-1", "id", _set("id", _NOT_STRING | st.just(""))),
    _break_question("REQ-TEXT-1", "question", _set("question", _NOT_STRING | st.just(""))),
    _break_question("REQ-HEADER-1", "header", _set("header", _NOT_STRING)),
    _break_question("REQ-DETAIL-1", "detail", _set("detail", _NOT_STRING)),
    _break_question("REQ-OPTIONS-1", "options", _set("options", _NOT_LIST)),
    _break_question("REQ-OPTIONS-1", "options", _bad_option),
    _break_question("REQ-OPTIONS-2", "description", _bad_description),
    _break_question("REQ-OPTIONS-3", "label", _duplicate_label),
    _break_question("REQ-MULTI-1", "multiSelect", _set("multiSelect", _NOT_BOOL)),
    _break_question("REQ-INTENT-1", "intent", _bad_intent),
    _approve_unknown,
    _detail_missing,
)


def _plain(request: AskUserQuestionRequest) -> dict[str, Any]:
    """A deep, mutable copy of a drawn request."""
    copied: dict[str, Any] = dict(request)
    copied["questions"] = [
        {**question, "options": [dict(option) for option in question.get("options", [])]}
        if "options" in question
        else dict(question)
        for question in request["questions"]
    ]
    return copied


@st.composite
def invalid_requests(draw: st.DrawFn) -> InvalidRequest:
    """A request with exactly one defect, and the error ``ask()`` must raise.

    The rest of the request is well-formed, so the defect alone decides the
    outcome.
    """
    kind = draw(st.integers(0, 5))
    base = _plain(draw(requests()))
    if kind == 0:
        # SVC-ORDER-1 wins over every other defect, so break something else too.
        base["signal"] = AbortSignal.abort()
        base["questions"] = draw(st.sampled_from([[], base["questions"], None]))
        return InvalidRequest(base, ErrorCode.ASK_ABORTED, "SVC-ORDER-1")
    if kind == 1:
        base["questions"] = []
        return InvalidRequest(base, ErrorCode.EMPTY_QUESTIONS, "SVC-ORDER-2")
    if kind == 2:
        if draw(st.booleans()):
            base.pop("questions")
        else:
            base["questions"] = draw(_NOT_LIST)
        return InvalidRequest(base, ErrorCode.BAD_REQUEST, "REQ-QUESTIONS-1", "questions")
    if kind == 3:
        if draw(st.booleans()):
            base["agent"] = draw(_NOT_STRING)
            return InvalidRequest(base, ErrorCode.BAD_REQUEST, "REQ-AGENT-1", "agent")
        index = draw(st.integers(0, len(base["questions"])))
        base["questions"].insert(index, draw(_NOT_MAPPING))
        return InvalidRequest(base, ErrorCode.BAD_REQUEST, "REQ-ITEM-1", f"questions[{index}]")
    if kind == 4:
        source = draw(st.sampled_from(base["questions"]))
        twin = dict(draw(questions(question_id=source["id"])))
        twin.pop("intent", None)
        base["questions"].append(twin)
        return InvalidRequest(base, ErrorCode.BAD_REQUEST, "REQ-ID-2", "id")
    target = draw(st.sampled_from(base["questions"]))
    mutation = draw(st.sampled_from(_QUESTION_MUTATIONS))
    # An unrelated intent elsewhere must not decide the outcome.
    for question in base["questions"]:
        if question is not target:
            question.pop("intent", None)
    target.pop("intent", None)
    code, requirement, field = mutation(draw, target)
    return InvalidRequest(base, code, requirement, field)


def _custom_allowed(question: AskUserQuestionItem, capabilities: Capabilities) -> bool:
    if not question.get("options"):
        return True
    if question.get("multiSelect") is True:
        return capabilities.custom_on_multi
    return capabilities.custom_on_single


@st.composite
def _action(draw: st.DrawFn, question: AskUserQuestionItem, capabilities: Capabilities) -> Action:
    offered = [option["label"] for option in question.get("options", ())]
    multi = question.get("multiSelect") is True
    choices: list[st.SearchStrategy[Action]] = []
    if capabilities.can_skip:
        choices.append(st.just(Skip()))
    if offered:
        picked = (
            st.lists(st.sampled_from(offered), min_size=1, unique=True).map(tuple)
            if multi
            else st.sampled_from(offered).map(lambda label: (label,))
        )
        choices.append(picked.map(Pick))
    if _custom_allowed(question, capabilities):
        choices.append(st.builds(Type, custom_texts()))
        if multi and offered:
            extra = st.lists(st.sampled_from(offered), min_size=1, unique=True).map(tuple)
            choices.append(st.builds(Type, custom_texts(), extra))
    return draw(st.one_of(choices))


def actions(
    request: AskUserQuestionRequest, capabilities: Capabilities | None = None
) -> st.SearchStrategy[tuple[Action, ...]]:
    """One action per question that a UI with *capabilities* can perform."""
    capabilities = capabilities or Capabilities()
    return st.tuples(*(_action(question, capabilities) for question in request["questions"]))


def behaviours(
    request: AskUserQuestionRequest,
    capabilities: Capabilities | None = None,
    *,
    include_nothing: bool = False,
) -> st.SearchStrategy[Behaviour]:
    """Answer every question, or dismiss the batch, or (optionally) do nothing."""
    capabilities = capabilities or Capabilities()
    choices: list[st.SearchStrategy[Behaviour]] = [actions(request, capabilities)]
    if capabilities.can_dismiss:
        choices.append(st.just(Dismiss()))
    if include_nothing:
        choices.append(st.just(Nothing()))
    return st.one_of(choices)


@st.composite
def valid_answers(draw: st.DrawFn, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """An answer that keeps every answer rule for *request*."""
    return expected_answer(request, draw(actions(request)))


@dataclass(frozen=True)
class InvalidAnswer:
    """An answer that breaks one rule, and that rule's requirement ID."""

    answer: Any
    requirement: str


@st.composite
def invalid_answers(draw: st.DrawFn, request: AskUserQuestionRequest) -> InvalidAnswer:
    """An answer to *request* that breaks exactly one ``MUST`` rule (it may break more)."""
    answer: dict[str, Any] = dict(draw(valid_answers(request)))
    items: list[dict[str, Any]] = [dict(item) for item in answer["answers"]]
    answer["answers"] = items
    index = draw(st.integers(0, len(items) - 1))
    item, question = items[index], request["questions"][index]
    offered = [option["label"] for option in question.get("options", ())]
    multi = question.get("multiSelect") is True
    breakers: list[str] = ["shape", "keys", "count", "order", "sel-type", "sel-unknown", "blank"]
    if offered:
        breakers.append("sel-dup")
    if offered and not multi and len(offered) >= 2:
        breakers.append("single-many")
    if offered and not multi:
        breakers.append("single-custom")
    breaker = draw(st.sampled_from(breakers))
    if breaker == "shape":
        return InvalidAnswer(
            draw(st.sampled_from([None, [], "answers", {"answers": None}, {}])), "ANS-SHAPE-1"
        )
    if breaker == "keys":
        target = draw(st.sampled_from(["answer", "item"]))
        if target == "answer":
            answer["extra"] = True
        else:
            item["note"] = "extra"
        return InvalidAnswer(answer, "ANS-KEYS-1")
    if breaker == "count":
        if draw(st.booleans()) or len(items) == 1:
            items.append(dict(items[-1]))
        else:
            items.pop()
        return InvalidAnswer(answer, "ANS-COUNT-1")
    if breaker == "order":
        item["id"] = draw(labels().filter(lambda text: text != question["id"]))
        return InvalidAnswer(answer, "ANS-ORDER-1")
    if breaker == "sel-type":
        item["selected"] = draw(st.sampled_from([None, "label", [1], {"a": 1}]))
        return InvalidAnswer(answer, "ANS-SEL-1")
    if breaker == "sel-unknown":
        item["selected"] = [draw(labels().filter(lambda text: text not in offered))]
        item.pop("custom", None)
        return InvalidAnswer(answer, "ANS-SEL-3")
    if breaker == "blank":
        item["custom"] = draw(st.sampled_from(["", " ", "\n\t", "\u3000", "\ufeff"]))
        return InvalidAnswer(answer, "ANS-CUSTOM-1")
    if breaker == "sel-dup":
        label = draw(st.sampled_from(offered))
        item["selected"] = [label, label]
        item.pop("custom", None)
        return InvalidAnswer(answer, "ANS-SEL-2")
    if breaker == "single-many":
        item["selected"] = draw(
            st.lists(st.sampled_from(offered), min_size=2, max_size=2, unique=True)
        )
        item.pop("custom", None)
        return InvalidAnswer(answer, "ANS-SINGLE-1")
    item["selected"] = [draw(st.sampled_from(offered))]
    item["custom"] = draw(custom_texts())
    return InvalidAnswer(answer, "ANS-SINGLE-2")
