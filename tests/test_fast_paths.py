"""The fast accept paths are shortcuts of the full rules, never rules of their own.

Whatever they accept, the full rules accept too; and they do accept the
ordinary cases they exist for, so the shortcut is really taken.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
    answer_violations,
)
from dsh_user_interaction._checks import (
    fast_answer_accepted,
    fast_request_index,
    full_check_request,
    must_violations,
)
from dsh_user_interaction_conformance.strategies import (
    invalid_answers,
    invalid_requests,
    requests,
    valid_answers,
)

from .helpers import json_values, one_question


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
        "empty label", "description dropped", "deadline", "bad deadline", "agent",
        "agent and aborted signal", "unknown key and bad signal",
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
        case "empty label" if options:
            options[-1]["label"] = ""
        case "description dropped" if options:
            options[0].pop("description", None)
        case "deadline":
            edited["deadline"] = 4_000_000_000
        case "bad deadline":
            edited["deadline"] = "soon"
        case "agent":
            edited["agent"] = object()
        case "agent and aborted signal":
            controller = AbortController()
            controller.abort()
            edited["agent"] = "an agent"
            edited["signal"] = controller.signal
        case "unknown key and bad signal":
            edited["note"] = 1
            edited["signal"] = "stop"
        case _:
            pass
    return edited


@given(requests())
def test_the_fast_request_path_accepts_ordinary_requests(request: AskUserQuestionRequest) -> None:
    """Every well-formed request the strategies draw takes the shortcut."""
    assert fast_request_index(request) is not None


@given(st.one_of(requests().flatmap(lambda r: st.tuples(st.just(r), _EDITS, st.integers(0, 3)))))
def test_whatever_the_fast_request_path_accepts_the_full_rules_accept(
    case: tuple[AskUserQuestionRequest, str, int],
) -> None:
    """Differential: an accept by the shortcut is an accept by the full rules (edited requests)."""
    edited = _edit(*case)
    if fast_request_index(edited) is not None:
        assert _full_rules_accept(edited), edited


@given(st.one_of(invalid_requests().map(lambda case: case.request), json_values))
def test_the_fast_request_path_never_accepts_a_malformed_request(request: object) -> None:
    """Differential: no malformed request or junk value gets through the shortcut."""
    if fast_request_index(request) is not None:
        assert _full_rules_accept(request), request


def _raised_by(check: Callable[[], object]) -> tuple[ErrorCode, str]:
    with pytest.raises(UserInteractionError) as caught:
        check()
    return caught.value.code, str(caught.value)


@given(
    st.one_of(
        requests(),
        requests()
        .flatmap(lambda r: st.tuples(st.just(r), _EDITS, st.integers(0, 3)))
        .map(lambda case: _edit(*case)),
        invalid_requests().map(lambda case: case.request),
    )
)
def test_a_service_without_a_provider_raises_what_the_full_rules_raise(request: Any) -> None:
    """Without a provider the service raises what the full rules raise, shortcut or not.

    Their first error, or else ``NO_PROVIDER``, in the same code and words.
    """
    service = UserInteractionService()
    expected = _raised_by(lambda: full_check_request(request, has_provider=False))
    assert _raised_by(lambda: service.ask(request).send(None)) == expected


@given(st.data())
def test_the_fast_answer_path_agrees_with_the_full_rules(data: st.DataObject) -> None:
    """Differential: the answer shortcut accepts only what the full rules accept.

    And it takes every answer that has no violation at all.
    """
    request = data.draw(requests())
    index = fast_request_index(request)
    assert index is not None
    answer = data.draw(
        st.one_of(
            valid_answers(request),
            invalid_answers(request).map(lambda case: case.answer),
            json_values,
        )
    )
    accepted = fast_answer_accepted(request, answer, index)
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
    index = fast_request_index(request)
    assert index is not None
    answer = data.draw(valid_answers(request))
    edited = _edit_answer(answer, data.draw(_ANSWER_EDITS), data.draw(st.integers(0, 3)))
    if fast_answer_accepted(request, edited, index):
        assert must_violations(request, edited) == [], edited


def test_the_answer_path_reads_the_request_again_if_it_changed() -> None:
    """A provider that swaps the questions or options (PRV-MUTATE-1) never gets the shortcut."""
    request: Any = {"questions": [{"id": "q", "question": "?", "options": [{"label": "A"}]}]}
    index = fast_request_index(request)
    assert index is not None
    answer = {"answers": [{"id": "q", "selected": ["A"]}]}
    assert fast_answer_accepted(request, answer, index)
    request["questions"][0]["options"] = [{"label": "B"}]
    assert not fast_answer_accepted(request, answer, index)
    assert must_violations(request, answer) != []
    request["questions"] = [{"id": "q", "question": "?"}]
    assert not fast_answer_accepted(request, answer, index)


# --- Tables of near misses: every shortcut, one rule at a time -------------------------

#: A value of the right type for each optional key of a question, and a wrong one.
_OPTIONAL: dict[str, tuple[object, object]] = {
    "header": ("Head", 2),
    "detail": ("the plan", None),
    "multiSelect": (True, 1),
    "intent": ({"kind": "plan-review", "approve": "A"}, {"kind": 5, "approve": "A"}),
}


def _question_variants() -> list[tuple[str, dict[str, Any]]]:
    """Questions with and without options, each with every optional key good or bad."""
    found: list[tuple[str, dict[str, Any]]] = []
    for with_options in (False, True):
        base: dict[str, Any] = {"id": "q", "question": "Q?"}
        if with_options:
            base["options"] = [{"label": "A", "description": "why"}, {"label": "B"}]
        found.append((f"options={with_options}", base))
        for key, (good, bad) in _OPTIONAL.items():
            for value, verdict in ((good, "good"), (bad, "bad")):
                question = {**base, key: value}
                if key == "intent":
                    question["detail"] = "the plan"
                found.append((f"options={with_options} {key} {verdict}", question))
        found.append((f"options={with_options} unknown key", {**base, "note": object()}))
    return found


def _with_options(*options: object) -> dict[str, Any]:
    return {"questions": [{"id": "q", "question": "?", "options": list(options)}]}


_REQUESTS: list[tuple[str, object]] = [
    *[(name, {"questions": [question]}) for name, question in _question_variants()],
    *[
        (f"second of two: {name}", {"questions": [{"id": "p", "question": "P?"}, question]})
        for name, question in _question_variants()
    ],
    ("repeated id", {"questions": [{"id": "q", "question": "1?"}, {"id": "q", "question": "2?"}]}),
    (
        "repeated label",
        {"questions": [{"id": "q", "question": "?", "options": [{"label": "A"}, {"label": "A"}]}]},
    ),
    *[
        (f"option {name}", {"questions": [{"id": "q", "question": "?", "options": [option]}]})
        for name, option in [
            ("description not a string", {"label": "A", "description": 4}),
            ("description None", {"label": "A", "description": None}),
            ("description empty", {"label": "A", "description": ""}),
            ("description absent", {"label": "A"}),
            ("label not a string", {"label": 1}),
            ("label empty", {"label": ""}),
            ("not a mapping", "A"),
            ("with an unknown key", {"label": "A", "note": object()}),
        ]
    ],
    *[
        (f"second option, {name}", _with_options({"label": "A", "description": "why"}, option))
        for name, option in [
            ("label empty", {"label": ""}),
            ("label empty, with a description", {"label": "", "description": "why"}),
            ("description not a string", {"label": "B", "description": 5}),
            ("description absent", {"label": "B"}),
            ("the first one's label", {"label": "A", "description": "why"}),
        ]
    ],
    ("options not a list", {"questions": [{"id": "q", "question": "?", "options": "A"}]}),
    ("options None", {"questions": [{"id": "q", "question": "?", "options": None}]}),
    ("no id", {"questions": [{"question": "?"}]}),
    ("no question", {"questions": [{"id": "q"}]}),
    ("no label", {"questions": [{"id": "q", "question": "?", "options": [{"description": "d"}]}]}),
    (
        "intent without detail",
        {
            "questions": [
                {
                    "id": "q",
                    "question": "?",
                    "options": [{"label": "A"}],
                    "intent": {"kind": "plan-review", "approve": "A"},
                }
            ]
        },
    ),
    (
        "intent without kind",
        {
            "questions": [
                {
                    "id": "q",
                    "question": "?",
                    "detail": "d",
                    "options": [{"label": "A"}],
                    "intent": {"approve": "A"},
                }
            ]
        },
    ),
    ("signal None", {"questions": [{"id": "q", "question": "?"}], "signal": None}),
    ("signal not a signal", {"questions": [{"id": "q", "question": "?"}], "signal": 1}),
    ("empty questions", {"questions": []}),
    ("no questions", {}),
]


@pytest.mark.parametrize(("name", "request_"), _REQUESTS, ids=[n for n, _ in _REQUESTS])
def test_the_request_shortcut_on_each_near_miss(name: str, request_: object) -> None:
    """Each optional key is read whatever else the question holds; a repeat is never missed.

    The shortcut accepts exactly what the full rules accept, for these plain-typed requests.
    """
    assert (fast_request_index(request_) is not None) == _full_rules_accept(request_), name


def _aborted_signal() -> object:
    controller = AbortController()
    controller.abort()
    return controller.signal


#: (name, the keys a request has besides its questions, whether the shortcut takes it).
#: The shortcut judges a signal itself and leaves a deadline to the full rules.
_TOP_LEVEL: list[tuple[str, dict[str, object], bool]] = [
    ("questions alone", {}, True),
    ("an agent", {"agent": object()}, True),
    ("an askId", {"askId": "a1"}, True),
    ("an unknown key", {"note": [1]}, True),
    ("signal None", {"signal": None}, True),
    ("a live signal", {"signal": AbortController().signal}, True),
    ("a live signal and an agent", {"signal": AbortController().signal, "agent": 1}, True),
    ("an aborted signal", {"signal": _aborted_signal()}, False),
    ("an aborted signal and an agent", {"signal": _aborted_signal(), "agent": 1}, False),
    ("a signal that is not one", {"signal": "stop"}, False),
    ("a signal that is not one, and an unknown key", {"signal": 0, "note": 1}, False),
    ("a deadline", {"deadline": 4_000_000_000}, False),
    ("a deadline that is not a number", {"deadline": "soon"}, False),
    ("a deadline and an agent", {"deadline": "soon", "agent": 1}, False),
]


@pytest.mark.parametrize(("name", "extra", "taken"), _TOP_LEVEL, ids=[n for n, _, _ in _TOP_LEVEL])
def test_the_request_shortcut_on_each_top_level_key(
    name: str, extra: dict[str, object], taken: bool
) -> None:
    """A request with keys besides its questions still has its signal and deadline read.

    The shortcut takes a request only if the full rules accept it, and takes
    every one here that has no deadline and that they accept.
    """
    request = {**one_question(), **extra}
    index = fast_request_index(request)
    if index is not None:
        assert _full_rules_accept(request), name
    assert (index is not None) is taken, name


_SINGLE: dict[str, Any] = {"id": "s", "question": "S?", "options": [{"label": "A"}, {"label": "B"}]}
_MULTI: dict[str, Any] = {**_SINGLE, "id": "m", "multiSelect": True}
_OPEN: dict[str, Any] = {"id": "o", "question": "O?"}

#: (name, question, item): one answer item for a one-question request.
_ITEMS: list[tuple[str, dict[str, Any], object]] = [
    ("single, one label", _SINGLE, {"id": "s", "selected": ["A"]}),
    ("single, nothing", _SINGLE, {"id": "s", "selected": []}),
    ("single, custom", _SINGLE, {"id": "s", "selected": [], "custom": "mine"}),
    ("single, custom and a label", _SINGLE, {"id": "s", "selected": ["A"], "custom": "mine"}),
    ("single, two labels", _SINGLE, {"id": "s", "selected": ["A", "B"]}),
    ("single, a label not offered", _SINGLE, {"id": "s", "selected": ["C"]}),
    ("single, a label that is not a string", _SINGLE, {"id": "s", "selected": [1]}),
    ("single, blank custom", _SINGLE, {"id": "s", "selected": [], "custom": " \u3000"}),
    ("single, custom not a string", _SINGLE, {"id": "s", "selected": [], "custom": 3}),
    ("single, an unknown key", _SINGLE, {"id": "s", "selected": ["A"], "note": "x"}),
    (
        "single, custom and an unknown key",
        _SINGLE,
        {"id": "s", "selected": [], "custom": "mine", "note": "x"},
    ),
    ("single, no selected", _SINGLE, {"id": "s", "custom": "mine"}),
    ("single, no id", _SINGLE, {"selected": ["A"], "custom": "mine"}),
    ("single, another id", _SINGLE, {"id": "t", "selected": ["A"]}),
    ("single, selected a tuple", _SINGLE, {"id": "s", "selected": ("A",)}),
    ("multi, two labels", _MULTI, {"id": "m", "selected": ["A", "B"]}),
    ("multi, out of order", _MULTI, {"id": "m", "selected": ["B", "A"]}),
    ("multi, a repeated label", _MULTI, {"id": "m", "selected": ["A", "A"]}),
    ("multi, a label not offered", _MULTI, {"id": "m", "selected": ["A", "C"]}),
    ("multi, a label that is not a string", _MULTI, {"id": "m", "selected": ["A", 2]}),
    ("multi, custom and labels", _MULTI, {"id": "m", "selected": ["A"], "custom": "mine"}),
    ("open, custom", _OPEN, {"id": "o", "selected": [], "custom": "mine"}),
    ("open, a label", _OPEN, {"id": "o", "selected": ["A"]}),
    ("not a mapping", _SINGLE, ["s", ["A"]]),
]


@pytest.mark.parametrize(("name", "question", "item"), _ITEMS, ids=[n for n, _, _ in _ITEMS])
def test_the_answer_shortcut_on_each_near_miss(
    name: str, question: dict[str, Any], item: object
) -> None:
    """An answer takes the shortcut only if it keeps every MUST rule, and always if it keeps all."""
    request: Any = {"questions": [copy.deepcopy(question)]}
    index = fast_request_index(request)
    assert index is not None
    answer = {"answers": [item]}
    accepted = fast_answer_accepted(request, answer, index)
    if accepted:
        assert must_violations(request, answer) == [], name
    if not answer_violations(request, answer):
        assert accepted, name


@pytest.mark.parametrize(
    "answer",
    [{"answers": [{"id": "s", "selected": ["A"]}], "extra": 1}, {"extra": []}, {}],
    ids=["a key besides answers", "no answers", "empty"],
)
def test_the_answer_shortcut_reads_the_answer_keys(answer: object) -> None:
    """An answer with a key besides ``answers``, or without it, is left to the full rules."""
    request: Any = {"questions": [copy.deepcopy(_SINGLE)]}
    index = fast_request_index(request)
    assert index is not None
    assert not fast_answer_accepted(request, answer, index)


#: Registering ``dict`` as an ``Awaitable`` cannot be undone, so it runs in a child.
_REGISTERED_DICT = """
import asyncio
from collections.abc import Awaitable
from dsh_user_interaction import ScriptedProvider

answer = {"answers": [{"id": "q", "selected": []}]}
provider = ScriptedProvider(respond=lambda request: answer)
request = {"questions": [{"id": "q", "question": "Q?"}]}
assert asyncio.run(provider.ask(request)) is answer
Awaitable.register(dict)
try:
    asyncio.run(provider.ask(request))
except TypeError as error:
    print("awaited:", error)
else:
    print("returned the dict")
"""


def test_the_scripted_provider_awaits_a_dict_registered_as_awaitable() -> None:
    """A plain dict answer is returned at once until an ABC registration makes it awaitable.

    Then the provider awaits it, as ``inspect.isawaitable`` says it must (and the
    await fails, as it always did): the remembered verdict follows the ABC cache token.
    """
    done = subprocess.run(
        [sys.executable, "-c", _REGISTERED_DICT],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("awaited: "), done.stdout + done.stderr
