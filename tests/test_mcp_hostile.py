"""The MCP bridge against hostile peers: a client's huge answer, a server's malformed schema.

On the server side, reading a client's form content back runs on the event
loop, so it must stay linear however many options or fields the client
sends. On the client side, the reader of a requested schema turns any JSON,
in any position of a property schema, into questions or a decline with the
reason, and never raises; a ``default`` it offers is one the field takes,
which reads back as itself when the human accepts it.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientRequestContext

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    check_request,
    is_blank,
)
from dsh_user_interaction.extra.mcp import (
    DEFAULT_KEY,
    REASON_META_KEY,
    Unsupported,
    answer_of_content,
    elicitation_callback,
    form_of,
)
from dsh_user_interaction.extra.mcp._callback import _content, _request, questions_of

#: How much more CPU a reading ten times larger may take than the smaller one: a
#: linear reading takes about ten times as much, the quadratic one took a hundred.
GROWTH_BOUND = 30.0


def _cpu_of(read: Callable[[], object]) -> float:
    """The least CPU time (this thread's) of three readings: the machine's noise left out."""
    spent: list[float] = []
    for _ in range(3):
        start = time.thread_time()
        read()
        spent.append(time.thread_time() - start)
    return min(spent)


def _growth(make: Callable[[int], Callable[[], object]], small: int) -> float:
    """How many times the CPU of a reading of ``10 * small`` items is that of *small* items.

    A ratio of two readings on the same machine at the same moment: it says
    how the reading grows, whatever the machine's speed or load.
    """
    return _cpu_of(make(10 * small)) / max(_cpu_of(make(small)), 1e-6)


# -- the server side: content with thousands of labels or fields ---------------------


def _multi(labels: Sequence[str]) -> AskUserQuestionRequest:
    """One multi-select question offering *labels*."""
    options = [{"label": label} for label in labels]
    question = {"id": "all", "question": "Which?", "multiSelect": True, "options": options}
    return cast("AskUserQuestionRequest", {"questions": [question]})


def _full_pick(count: int) -> tuple[AskUserQuestionRequest, Callable[[], AskUserQuestionAnswer]]:
    """A request of *count* options, and the reading of content that picks them all in reverse."""
    labels = [f"option {n}" for n in range(count)]
    request = _multi(labels)
    form = form_of(request)
    content = {"q1": labels[::-1], "q1_other": "and more"}
    return request, lambda: answer_of_content(request, form, content)


def test_a_full_pick_of_ten_thousand_options_reads_back_in_option_order_in_linear_time() -> None:
    """All 10,000 options picked in reverse read back in option order, in linear time."""
    _, read = _full_pick(10_000)
    labels = [f"option {n}" for n in range(10_000)]
    assert read() == {"answers": [{"id": "all", "selected": labels, "custom": "and more"}]}
    grew = _growth(lambda count: _full_pick(count)[1], 1_000)
    assert grew < GROWTH_BOUND, f"10,000 labels took {grew:.0f} times the CPU of 1,000"


def _fields(count: int) -> tuple[AskUserQuestionRequest, Callable[[], AskUserQuestionAnswer]]:
    """*count* questions with custom text (twice as many fields), and the reading of them all."""
    request: AskUserQuestionRequest = {
        "questions": [
            {"id": f"id{n}", "question": "?", "options": [{"label": "a"}, {"label": "b"}]}
            for n in range(count)
        ]
    }
    form = form_of(request)
    content: dict[str, object] = {}
    for n in range(1, count + 1):
        content[f"q{n}"] = "b"
        content[f"q{n}_other"] = " "
    return request, lambda: answer_of_content(request, form, content)


def test_content_for_ten_thousand_fields_reads_back_in_linear_time() -> None:
    """5,000 questions with custom text are 10,000 fields; all answered, read in linear time."""
    count = 5_000
    _, read = _fields(count)
    assert read()["answers"] == [{"id": f"id{n}", "selected": ["b"]} for n in range(count)]
    grew = _growth(lambda each: _fields(each)[1], 500)
    assert grew < GROWTH_BOUND, f"10,000 fields took {grew:.0f} times the CPU of 1,000"


def _expected(labels: Sequence[str], picked: Sequence[object]) -> list[str] | str:
    """The reading the bridge promises, stated plainly: the selection, or the first problem.

    The picks are judged in order; the first that is not an offered label, or
    that is picked more than once, is the problem. Otherwise the selection is
    the labels picked, in option order.
    """
    for label in picked:
        if not isinstance(label, str) or label not in labels:
            shown = f'"{label}"' if isinstance(label, str) else type(label).__name__
            return f"{shown} is not one of its options"
        if picked.count(label) > 1:
            return f'"{label}" is picked twice'
    return [label for label in labels if label in picked]


_LABELS = ("a", "b", "c", "d")
_picks = st.lists(
    st.sampled_from([*_LABELS, "e", "A"]) | st.none() | st.integers(0, 2) | st.lists(st.just("a")),
    max_size=8,
)


@given(picked=_picks)
@settings(deadline=None)
def test_a_multi_select_reads_as_before_picked_twice_and_unknown_labels_in_pick_order(
    picked: list[object],
) -> None:
    """The selection in option order, or the first bad pick in order: unknown first or repeated."""
    request = _multi(_LABELS)
    content = {"q1": picked}
    expected = _expected(_LABELS, picked)
    if isinstance(expected, list):
        answer = answer_of_content(request, form_of(request), content)
        assert answer == {"answers": [{"id": "all", "selected": expected}]}
        return
    with pytest.raises(UserInteractionError) as raised:
        answer_of_content(request, form_of(request), content)
    assert raised.value.code is ErrorCode.BAD_ANSWER
    assert str(raised.value) == f'question "all" (field q1): {expected}'
    assert raised.value.answer == content


def test_a_repeat_before_an_unknown_label_is_reported_first() -> None:
    """["a", "x", "a"] is "a" picked twice: the picks are judged in order, each against them all."""
    request = _multi(_LABELS)
    with pytest.raises(UserInteractionError, match=r'"a" is picked twice'):
        answer_of_content(request, form_of(request), {"q1": ["a", "x", "a"]})
    with pytest.raises(UserInteractionError, match=r'"x" is not one of its options'):
        answer_of_content(request, form_of(request), {"q1": ["x", "a", "a"]})


# -- the client side: any JSON anywhere in a property schema -------------------------

#: The example that raised TypeError: the reader checked anyOf and iterated oneOf.
_MALFORMED_ONE_OF: dict[str, Any] = {
    "type": "object",
    "properties": {
        "x": {"type": "string", "oneOf": 5, "anyOf": [{"const": "x", "title": "X"}]},
    },
}


def _form_params(schema: dict[str, Any]) -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(message="Set it up.", requested_schema=schema)


def test_a_one_of_that_is_no_list_is_declined_by_the_reader() -> None:
    """A oneOf of 5 beside a valid anyOf is Unsupported, naming the property and the key."""
    with pytest.raises(Unsupported, match=r"property 'x' has a oneOf that is not a list"):
        questions_of(_form_params(_MALFORMED_ONE_OF))


def test_a_one_of_that_is_no_list_is_declined_by_the_callback_with_the_reason() -> None:
    """The callback declines it at once, the reason in _meta, and never asks the provider."""
    asked: list[AskUserQuestionRequest] = []

    def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        asked.append(request)
        return {"answers": [{"id": "x", "selected": ["X"]}]}

    callback = elicitation_callback(ScriptedProvider(respond=respond))
    # The callback never reads its request context, so a direct call needs no connection.
    context = cast("ClientRequestContext", None)
    result = asyncio.run(callback(context, _form_params(_MALFORMED_ONE_OF)))
    assert isinstance(result, types.ElicitResult)
    assert result.action == "decline"
    assert result.meta == {
        REASON_META_KEY: "property 'x' has a oneOf that is not a list of options"
    }
    assert not asked


#: Every key of a property schema the reader looks at, and a few it should ignore.
_KEYS = (
    "type", "title", "description", "default", "const", "enum", "enumNames", "oneOf",
    "anyOf", "items", "minItems", "maxItems", "minLength", "maxLength", "minimum",
    "maximum", "format", "required", "properties",
)  # fmt: skip

#: A sound property schema of every kind the reader asks.
_BASES: tuple[dict[str, Any], ...] = (
    {"type": "string", "title": "Name", "description": "Yours.", "minLength": 1,
     "maxLength": 9, "format": "email", "default": "a@b.c"},
    {"type": "string", "format": "date-time"},
    {"type": "integer", "title": "Count", "minimum": 1, "maximum": 9, "default": 3},
    {"type": "number", "minimum": 0.5, "maximum": 1e9},
    {"type": "boolean", "title": "Agree?", "default": True},
    {"type": "number", "minimum": 0.5, "maximum": 1e9, "default": 2.5},
    {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
    {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
     "default": "g"},
    {"type": "string", "anyOf": [{"const": "r", "title": "Red"}, {"const": "g"}]},
    {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"], "default": "s"},
    {"type": "array", "title": "Tags", "minItems": 1, "maxItems": 2,
     "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}},
    {"type": "array", "minItems": 1, "maxItems": 2, "default": ["b", "a"],
     "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}},
    {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["a"]},
)  # fmt: skip

Path = tuple[str | int, ...]


def _schema(prop: dict[str, Any]) -> dict[str, Any]:
    """A requested schema with *prop* as its required property ``p``, beside a plain one."""
    return {
        "type": "object",
        "properties": {"p": prop, "q": {"type": "string"}},
        "required": ["p"],
    }


def _positions(node: object, path: Path) -> list[Path]:
    """Every position in and under *node*: each item of a list, each key and known key of a dict."""
    found: list[Path] = []
    if isinstance(node, dict):
        spec = cast("dict[str, object]", node)
        for key in dict.fromkeys([*spec, *_KEYS]):
            found.append((*path, key))
            if key in spec:
                found.extend(_positions(spec[key], (*path, key)))
    elif isinstance(node, list):
        for index, item in enumerate(cast("list[object]", node)):
            found.append((*path, index))
            found.extend(_positions(item, (*path, index)))
    return found


#: For each base, every position in its requested schema: the property schema and all in it.
_PATHS: tuple[tuple[Path, ...], ...] = tuple(
    (("properties",), ("required",), ("properties", "p"), *_positions(base, ("properties", "p")))
    for base in _BASES
)


def _placed(schema: dict[str, Any], path: Path, value: object) -> dict[str, Any]:
    """*schema* with *value* at *path*; unchanged when an earlier placement removed the path."""
    placed = copy.deepcopy(schema)
    node: object = placed
    for step in path[:-1]:
        if isinstance(node, dict) and isinstance(step, str):
            node = cast("dict[str, object]", node).get(step)
        elif isinstance(node, list) and isinstance(step, int):
            items = cast("list[object]", node)
            node = items[step] if step < len(items) else None
        else:
            return placed
    last = path[-1]
    if isinstance(node, dict) and isinstance(last, str):
        cast("dict[str, object]", node)[last] = value
    elif isinstance(node, list) and isinstance(last, int):
        items = cast("list[object]", node)
        if last < len(items):
            items[last] = value
    return placed


def _an_answer(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """Each question answered: its first option, or the text ``1``."""
    items: list[AskUserQuestionAnswerItem] = []
    for question in request["questions"]:
        options = question.get("options")
        if options:
            items.append({"id": question["id"], "selected": [options[0]["label"]]})
        else:
            items.append({"id": question["id"], "selected": [], "custom": "1"})
    return {"answers": items}


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "boolean": (bool,), "integer": (int,), "number": (int, float),
    "array": (list,),
}  # fmt: skip


def _offered_defaults_read_back(
    schema: dict[str, Any], request: AskUserQuestionRequest
) -> list[str]:
    """Each default a question offers is of its property's type, and accepting it gives it back.

    Returns the names of the properties whose default was offered.
    """
    props = questions_of(_form_params(schema))
    offered: list[str] = []
    for prop, question in zip(props, request["questions"], strict=True):
        offer = cast("dict[str, Any] | None", dict(question).get(DEFAULT_KEY))
        if offer is None:
            continue
        offered.append(prop.name)
        default: object = prop.schema["default"]
        kind: str = prop.schema["type"]
        assert isinstance(default, _JSON_TYPES[kind]), (default, kind)
        assert not (isinstance(default, bool) and kind in ("integer", "number"))
        item = cast("AskUserQuestionAnswerItem", {"id": prop.name, **offer})
        content, problems = _content([prop], {"answers": [item]})
        assert not problems, problems
        if kind == "array":
            picked = cast("list[str]", content[prop.name])  # in option order
            assert sorted(picked) == sorted(cast("list[str]", default))
        else:
            assert content[prop.name] == default
    return offered


def _asks_or_declines(schema: dict[str, Any]) -> list[str]:
    """The reader declines *schema* with a reason, or its questions make a request the seam takes.

    An answer to that request is then turned into content (or problems) without raising
    either: constraints are read from the same hostile schema. A default offered reads
    back as itself. Returns the names of the properties whose default was offered.
    """
    try:
        props = questions_of(_form_params(schema))
    except Unsupported as unsupported:
        assert str(unsupported)
        return []
    request = _request("Set it up.", props, {})
    check_request(request)
    if not props:
        return []  # a confirmation: nothing to default
    _content(props, _an_answer(request))
    return _offered_defaults_read_back(schema, request)


#: JSON values of every kind that break a shape: numbers, null, text, empty and odd containers.
_ODD_VALUES: tuple[object, ...] = (
    None, True, False, 0, 5, -1, 2.5, 1e308, "", " ", "x", "string", "array", [], {}, [5],
    [None], [dict[str, object]()], ["a", "a"], [""], [{"const": 5}], [{"const": "a", "title": 5}],
    {"const": "a"}, {"type": "string"}, {"anyOf": 5}, {"enum": ["a"]},
)  # fmt: skip


def test_every_position_of_a_property_schema_takes_odd_values_without_raising() -> None:
    """A sweep: each odd JSON value in each position of each kind of property: asked or declined."""
    for base, paths in zip(_BASES, _PATHS, strict=True):
        for path in paths:
            for value in _ODD_VALUES:
                _asks_or_declines(_placed(_schema(base), path, value))


#: Any JSON value; dict keys are text, often a key the reader looks at.
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


#: Built once: a strategy made inside a draw is validated afresh on every example.
_BASE_NUMBERS = st.sampled_from(range(len(_BASES)))
_BASE_PATHS = tuple(st.sampled_from(paths) for paths in _PATHS)


@st.composite
def _hostile_bases(draw: st.DrawFn) -> tuple[dict[str, Any], tuple[Path, ...]]:
    """A requested schema of one kind of property, with arbitrary JSON in up to two positions.

    Returned with every position of that kind of property, for a value to be placed in.
    """
    number = draw(_BASE_NUMBERS)
    schema = _schema(_BASES[number])
    for _ in range(draw(st.integers(0, 2))):
        schema = _placed(schema, draw(_BASE_PATHS[number]), draw(_json))
    return schema, _PATHS[number]


@given(base=_hostile_bases(), value=_json)
@settings(max_examples=50, deadline=None)
def test_any_json_anywhere_in_a_property_schema_is_asked_or_declined_never_raised(
    base: tuple[dict[str, Any], tuple[Path, ...]], value: object
) -> None:
    """Arbitrary JSON, in each position of a property schema in turn, is asked or declined.

    The positions: the properties object, the required list, the whole property schema,
    each key the reader looks at, and everything nested in an option list or items schema.
    """
    schema, paths = base
    for path in paths:
        _asks_or_declines(_placed(schema, path, value))


def test_every_sound_default_is_offered() -> None:
    """Each sound base that has a default offers it, and it reads back as itself."""
    for base in _BASES:
        offered = _asks_or_declines(_schema(base))
        assert offered == (["p"] if "default" in base else [])


#: Values near a sound default: the options' values and titles, lists of them, numbers.
_NEAR_DEFAULTS = st.sampled_from(
    ["r", "g", "Red", "s", "Small", "a", "b", "A", "", " ", "a@b.c", ["a"], ["a", "b"], ["b", "a"],
     ["a", "a"], ["A"], [], 0.5, 1, 3, 9, 10, 1e9, 2e9, True, False]
)  # fmt: skip


@given(number=_BASE_NUMBERS, value=_json | _NEAR_DEFAULTS, required=st.booleans())
@settings(max_examples=200, deadline=None)
def test_any_json_as_a_default_is_offered_only_when_the_field_takes_it(
    number: int, value: object, required: bool
) -> None:
    """Arbitrary JSON as the default of each kind of property is asked, never raised.

    A default is offered only when it is of the property's type and reads back as
    itself; a default that is not offered is said to be so in the question's detail,
    unless it is null, blank text or an empty list, which offer nothing.
    """
    schema = _schema({**_BASES[number], "default": value})
    if not required:
        schema["required"] = []
    offered = _asks_or_declines(schema)
    props = questions_of(_form_params(schema))
    detail = _request("Set it up.", props, {})["questions"][0].get("detail", "")
    text = props[0].kind == "text"
    nothing = value is None or value == [] or (text and isinstance(value, str) and is_blank(value))
    if offered:
        assert "Default: " in detail
    elif not nothing:
        assert "The form's default does not fit this field" in detail
    else:
        assert "default" not in detail.lower()
