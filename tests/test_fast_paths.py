"""The fast accept paths are shortcuts of the full rules, never rules of their own.

Whatever they accept, the full rules accept too; and they do accept the
ordinary cases they exist for, so the shortcut is really taken.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionRequest,
    UserInteractionError,
    answer_violations,
)
from dsh_user_interaction._checks import (
    _fast_answer,
    _fast_request,
    full_check_request,
    must_violations,
)
from dsh_user_interaction_conformance.strategies import (
    invalid_answers,
    invalid_requests,
    requests,
    valid_answers,
)

from .helpers import json_values


def _full_rules_accept(request: object) -> bool:
    try:
        full_check_request(request)
    except UserInteractionError:
        return False
    return True


#: Small edits that keep a request's shape but may break a rule.
_EDITS = st.sampled_from(
    [
        "none", "empty id", "id to int", "duplicate id", "empty text", "header to int",
        "detail to None", "options to tuple", "options to None", "label to int",
        "duplicate label", "description to int", "multi to int", "intent broken",
        "intent approve unknown", "detail emptied", "aborted signal", "questions to tuple",
    ]
)  # fmt: skip


def _edit(request: AskUserQuestionRequest, edit: str, where: int) -> Any:
    edited: Any = copy.deepcopy(dict(request))
    question = edited["questions"][where % len(edited["questions"])]
    options: list[Any] = question.get("options") or []
    match edit:
        case "empty id":
            question["id"] = ""
        case "id to int":
            question["id"] = 1
        case "duplicate id":
            edited["questions"].append(dict(question))
        case "empty text":
            question["question"] = ""
        case "header to int":
            question["header"] = 2
        case "detail to None":
            question["detail"] = None
        case "options to tuple":
            question["options"] = tuple(options)
        case "options to None":
            question["options"] = None
        case "label to int" if options:
            options[0]["label"] = 3
        case "duplicate label" if options:
            options.append(dict(options[0]))
        case "description to int" if options:
            options[0]["description"] = 4
        case "multi to int":
            question["multiSelect"] = 1
        case "intent broken":
            question["intent"] = {"kind": 5, "approve": "x"}
        case "intent approve unknown":
            question["intent"] = {"kind": "plan-review", "approve": "\x00not an option"}
            question["detail"] = "the plan"
        case "detail emptied" if "intent" in question:
            question["detail"] = ""
        case "aborted signal":
            controller = AbortController()
            controller.abort()
            edited["signal"] = controller.signal
        case "questions to tuple":
            edited["questions"] = tuple(edited["questions"])
        case _:
            pass
    return edited


@given(requests())
def test_the_fast_request_path_accepts_ordinary_requests(request: AskUserQuestionRequest) -> None:
    """Every well-formed request the strategies draw takes the shortcut."""
    assert _fast_request(request) is not None


@given(st.one_of(requests().flatmap(lambda r: st.tuples(st.just(r), _EDITS, st.integers(0, 3)))))
def test_whatever_the_fast_request_path_accepts_the_full_rules_accept(
    case: tuple[AskUserQuestionRequest, str, int],
) -> None:
    """Differential: an accept by the shortcut is an accept by the full rules (edited requests)."""
    edited = _edit(*case)
    if _fast_request(edited) is not None:
        assert _full_rules_accept(edited), edited


@given(st.one_of(invalid_requests().map(lambda case: case.request), json_values))
def test_the_fast_request_path_never_accepts_a_malformed_request(request: object) -> None:
    """Differential: no malformed request or junk value gets through the shortcut."""
    if _fast_request(request) is not None:
        assert _full_rules_accept(request), request


@given(st.data())
def test_the_fast_answer_path_agrees_with_the_full_rules(data: st.DataObject) -> None:
    """Differential: the answer shortcut accepts only what the full rules accept.

    And it takes every answer that has no violation at all.
    """
    request = data.draw(requests())
    index = _fast_request(request)
    assert index is not None
    answer = data.draw(
        st.one_of(
            valid_answers(request),
            invalid_answers(request).map(lambda case: case.answer),
            json_values,
        )
    )
    accepted = _fast_answer(request, answer, index)
    if accepted:
        assert must_violations(request, answer) == [], answer
    if not answer_violations(request, answer):
        assert accepted, answer


_ANSWER_EDITS = st.sampled_from(
    [
        "repeat a label", "reverse labels", "extra key", "label to int", "blank custom",
        "custom and label", "unknown label", "wrong id", "drop an item", "selected to tuple",
        "extra answer key", "custom to int",
    ]
)  # fmt: skip


def _edit_answer(answer: Any, edit: str, where: int) -> Any:
    edited: Any = copy.deepcopy(answer)
    item = edited["answers"][where % len(edited["answers"])]
    selected = item["selected"]
    match edit:
        case "repeat a label" if selected:
            selected.append(selected[0])
        case "reverse labels":
            selected.reverse()
        case "extra key":
            item["note"] = "x"
        case "label to int":
            selected.append(1)
        case "blank custom":
            item["custom"] = " \u3000"
        case "custom and label":
            item["custom"] = "typed"
        case "unknown label":
            selected.append("\x00not offered")
        case "wrong id":
            item["id"] = item["id"] + "\x00"
        case "drop an item":
            edited["answers"].pop()
        case "selected to tuple":
            item["selected"] = tuple(selected)
        case "extra answer key":
            edited["more"] = 1
        case "custom to int":
            item["custom"] = 7
        case _:
            pass
    return edited


@given(st.data())
def test_an_edited_answer_gets_the_shortcut_only_if_the_full_rules_accept_it(
    data: st.DataObject,
) -> None:
    """Differential: near misses of a valid answer, one rule at a time."""
    request = data.draw(requests())
    index = _fast_request(request)
    assert index is not None
    answer = data.draw(valid_answers(request))
    edited = _edit_answer(answer, data.draw(_ANSWER_EDITS), data.draw(st.integers(0, 3)))
    if _fast_answer(request, edited, index):
        assert must_violations(request, edited) == [], edited


def test_the_answer_path_reads_the_request_again_if_it_changed() -> None:
    """A provider that swaps the questions or options (PRV-MUTATE-1) never gets the shortcut."""
    request: Any = {"questions": [{"id": "q", "question": "?", "options": [{"label": "A"}]}]}
    index = _fast_request(request)
    assert index is not None
    answer = {"answers": [{"id": "q", "selected": ["A"]}]}
    assert _fast_answer(request, answer, index)
    request["questions"][0]["options"] = [{"label": "B"}]
    assert not _fast_answer(request, answer, index)
    assert must_violations(request, answer) != []
    request["questions"] = [{"id": "q", "question": "?"}]
    assert not _fast_answer(request, answer, index)
