"""PRV-MUTATE-1 in ValidatingProvider: the spec's data by value, everything else by identity.

Keys the spec does not name may hold any object (REQ-EXTRA-1): one that cannot
be copied, one whose copy is not equal to it, one whose ``==`` raises. None of
them may make an untouched request look mutated, and no mutation of the data
the spec defines may go unnoticed.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    ValidatingProvider,
)
from dsh_user_interaction_conformance._stand_ins import settle
from dsh_user_interaction_conformance.strategies import requests

from .helpers import run


class NoEq:
    """Equal only to itself, so its deep copy is not equal to it."""


class RaisingEq:
    """Refuses to be compared."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("not comparable")

    __hash__ = object.__hash__


class NoCopy:
    """Refuses to be copied."""

    def __deepcopy__(self, memo: object) -> NoCopy:
        raise TypeError("cannot copy a NoCopy")


#: Values an application may keep under its own keys.
EXTRA_VALUES: list[Callable[[], object]] = [
    NoEq,
    RaisingEq,
    NoCopy,
    threading.Lock,
    lambda: float("nan"),
    lambda: [NoEq(), {"nested": threading.Lock()}],
    lambda: {"label": "not an option"},
    lambda: "a string",
    lambda: None,
]

Mapping_ = dict[Any, Any]


def skip_all(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}


def outcome_of(request: AskUserQuestionRequest, act: Callable[[Mapping_], object]) -> object:
    """Ask a ValidatingProvider whose provider calls *act* on the request, then skips all."""
    answer = skip_all(request)

    def respond(seen: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        act(cast("Mapping_", seen))  # the test mutates it on purpose
        return answer

    outcome = run(settle(ValidatingProvider(ScriptedProvider(respond=respond)).ask(request)))
    assert outcome is answer or isinstance(outcome, UserInteractionError), outcome
    return outcome


def is_mutation_error(outcome: object) -> bool:
    return (
        isinstance(outcome, UserInteractionError)
        and outcome.code is ErrorCode.BAD_ANSWER
        and "PRV-MUTATE-1" in str(outcome)
    )


def with_extra(value: object) -> AskUserQuestionRequest:
    request: Mapping_ = {
        "questions": [
            {
                "id": "q",
                "question": "Go?",
                "options": [{"label": "Yes", "x-option": value}],
                "x-question": value,
            }
        ],
        "x-request": value,
    }
    return cast("AskUserQuestionRequest", request)


@pytest.mark.parametrize(
    "make", [NoEq, RaisingEq, NoCopy, threading.Lock], ids=lambda m: m.__name__
)
def test_extras_that_do_not_copy_or_compare_are_not_mutations(make: Callable[[], object]) -> None:
    """REQ-EXTRA-1: any object may sit under an unknown key; an untouched request passes."""
    request = with_extra(make())
    assert outcome_of(request, lambda _seen: None) == skip_all(request)


def test_replacing_an_extra_is_a_mutation() -> None:
    """PRV-MUTATE-1: an unknown value compares by identity, so an equal stand-in is caught."""
    request = with_extra([1, 2])
    outcome = outcome_of(request, lambda seen: seen["questions"][0].update({"x-question": [1, 2]}))
    assert is_mutation_error(outcome)


def test_mutating_inside_an_extra_is_the_applications_business() -> None:
    """What happens inside a value the spec does not define is not compared."""
    request = with_extra([1, 2])
    assert outcome_of(request, lambda seen: seen["x-request"].append(3)) == skip_all(request)


def test_a_known_flag_replaced_by_an_equal_integer_is_a_mutation() -> None:
    """A known flag compares by type and value: multiSelect True and 1 differ."""
    request: AskUserQuestionRequest = {
        "questions": [{"id": "q", "question": "Go?", "multiSelect": True}]
    }
    outcome = outcome_of(request, lambda seen: seen["questions"][0].update({"multiSelect": 1}))
    assert is_mutation_error(outcome)


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

_extra_keys = st.one_of(
    st.text(max_size=4).map(lambda text: f"x-{text}"), st.integers(), st.tuples(st.integers())
)
_extras = st.dictionaries(
    _extra_keys, st.sampled_from(EXTRA_VALUES).map(lambda make: make()), max_size=2
)


@st.composite
def requests_with_extras(draw: st.DrawFn) -> Mapping_:
    """A well-formed request with unknown keys at every level, holding awkward objects."""
    request: Mapping_ = dict(draw(requests()))
    places: list[Mapping_] = [request]
    for question in request["questions"]:
        places.append(question)
        places.extend(question.get("options", ()))
        if "intent" in question:
            places.append(question["intent"])
    for place in places:
        place.update(draw(_extras))
    if draw(st.booleans()):
        request["signal"] = AbortController().signal
    return request


def _set(place: Mapping_, key: object, value: object) -> None:
    place[key] = value


def _pop(place: Mapping_, key: object) -> None:
    del place[key]


def _setdefault(place: Mapping_, key: object, value: object) -> None:
    place.setdefault(key, value)


def _put(items: list[Any], index: int, value: object) -> None:
    items[index] = value


Mutations = dict[str, Callable[[], object]]


def _known_mutations(request: Mapping_) -> Mutations:
    """Every way to change the data the spec defines, or to replace a value, by name."""
    found: Mutations = {}
    questions: list[Mapping_] = request["questions"]
    found["append a question"] = partial(questions.append, {"id": "new", "question": "New?"})
    found["remove the last question"] = questions.pop
    found["replace questions with an equal list"] = partial(
        _set, request, "questions", list(questions)
    )
    if len(questions) > 1:
        found["reverse the questions"] = questions.reverse
    for key, value in (("agent", "someone else"), ("signal", AbortController().signal)):
        if key in request:
            found[f"request: delete {key}"] = partial(_pop, request, key)
        found[f"request: set {key}"] = partial(_set, request, key, value)
    _mapping_mutations(found, "request", request, known=("questions", "agent", "signal"))
    for index, question in enumerate(questions):
        where = f"questions[{index}]"
        found[f"{where}: replace with an equal copy"] = partial(
            _put, questions, index, dict(question)
        )
        for key in ("id", "question", "detail", "header"):
            _text_mutations(found, where, question, key)
        if "multiSelect" in question:
            multi = question["multiSelect"]
            found[f"{where}: flip multiSelect"] = partial(_set, question, "multiSelect", not multi)
            found[f"{where}: multiSelect as an int"] = partial(
                _set, question, "multiSelect", int(multi)
            )
            found[f"{where}: delete multiSelect"] = partial(_pop, question, "multiSelect")
        else:
            found[f"{where}: setdefault multiSelect"] = partial(
                _setdefault, question, "multiSelect", False
            )
        if "options" in question:
            options: list[Mapping_] = question["options"]
            found[f"{where}: add an option"] = partial(options.append, {"label": "\x00new"})
            found[f"{where}: delete options"] = partial(_pop, question, "options")
            found[f"{where}: replace options with an equal list"] = partial(
                _set, question, "options", list(options)
            )
            if options:
                found[f"{where}: remove an option"] = options.pop
            for number, option in enumerate(options):
                there = f"{where}.options[{number}]"
                _text_mutations(found, there, option, "label")
                _text_mutations(found, there, option, "description")
                found[f"{there}: replace with an equal copy"] = partial(
                    _put, options, number, dict(option)
                )
                _mapping_mutations(found, there, option, known=("label", "description"))
        else:
            found[f"{where}: setdefault options"] = partial(_setdefault, question, "options", [])
        if "intent" in question:
            intent: Mapping_ = question["intent"]
            _text_mutations(found, f"{where}.intent", intent, "kind")
            _text_mutations(found, f"{where}.intent", intent, "approve")
            found[f"{where}: delete intent"] = partial(_pop, question, "intent")
            found[f"{where}: replace intent with an equal copy"] = partial(
                _set, question, "intent", dict(intent)
            )
            _mapping_mutations(found, f"{where}.intent", intent, known=("kind", "approve"))
        else:
            found[f"{where}: setdefault intent"] = partial(
                _setdefault, question, "intent", {"kind": "plan-review", "approve": "Yes"}
            )
        known = ("id", "question", "detail", "header", "multiSelect", "options", "intent")
        _mapping_mutations(found, where, question, known=known)
    return found


def _text_mutations(found: Mutations, where: str, place: Mapping_, key: str) -> None:
    if key in place:
        found[f"{where}: change {key}"] = partial(_set, place, key, f"{place[key]}!")
        found[f"{where}: delete {key}"] = partial(_pop, place, key)
    else:
        found[f"{where}: setdefault {key}"] = partial(_setdefault, place, key, "")


def _mapping_mutations(
    found: Mutations, where: str, place: Mapping_, *, known: tuple[str, ...]
) -> None:
    """Add an unknown key, and delete or replace each one already there."""
    found[f"{where}: add an unknown key"] = partial(_setdefault, place, object(), None)
    for key, value in place.items():
        if key in known:
            continue
        # An equal copy where one can be made: only identity tells it apart.
        stand_in: object = (
            copy.copy(cast("object", value)) if type(value) in {list, dict} else NoEq()
        )
        found[f"{where}: delete unknown key {key!r}"] = partial(_pop, place, key)
        found[f"{where}: replace unknown key {key!r}"] = partial(_set, place, key, stand_in)


@given(requests_with_extras())
def test_a_provider_that_touches_nothing_is_never_blamed(request: Mapping_) -> None:
    """Whatever the extras hold, an untouched request is not a mutation."""
    typed = cast("AskUserQuestionRequest", request)
    assert outcome_of(typed, lambda _seen: None) == skip_all(typed)


@given(requests_with_extras(), st.data())
def test_every_mutation_of_known_data_is_caught(request: Mapping_, data: st.DataObject) -> None:
    """PRV-MUTATE-1: one random change to the spec's data, or a replaced value, is caught."""
    mutations = _known_mutations(request)
    name = data.draw(st.sampled_from(sorted(mutations)), label="mutation")
    typed = cast("AskUserQuestionRequest", request)
    outcome = outcome_of(typed, lambda _seen: mutations[name]())
    assert is_mutation_error(outcome), (name, outcome)
