"""A fast, seeded fuzzer of the ``ask_user_question`` tool; not part of CI.

``nox -s fuzz -- 1000000`` feeds a million hostile inputs to the tool. The
arguments are JSON text and mappings: well formed, malformed, non-finite,
deeply nested, huge, or built from ``dict``, ``list``, ``str`` and ``bytes``
subclasses whose methods raise or lie. They are asked through strict, lenient
and bare services whose providers answer well, answer badly, or raise. Every
result is checked against TOOL-SAFE-1, TOOL-ERR-1 and TOOL-OK-1 (see
:func:`check_result`).

Input *I* of seed *S* is built from ``random.Random(f"{S}:{I}")`` alone, so
any one input can be replayed on its own::

    python fuzz/fuzz_tool.py [COUNT] [--seed S] [--index I] [--stop-on-first]

The run does not stop at the first failure unless asked to: failures are
grouped by signature (the exception and where it left the package, or the
invariant that broke), and each group prints its count and the replay
command of its first input. Each input counts once, under the first
invariant it breaks. The exit status is 1 when anything failed.

Exceptions allowed out of the tool: ``asyncio.CancelledError``
(TOOL-SAFE-1), and ``KeyboardInterrupt`` and ``SystemExit``, which stop the
run (the generator never raises those two). Any other exception out of the
tool is a failure, ``GeneratorExit`` and custom ``BaseException`` subclasses
included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import json
import random
import re
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, Self, TypeVar, cast

import dsh_user_interaction
from dsh_user_interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
    UserInteractionService,
    is_blank,
)
from dsh_user_interaction.tool import DEFAULT_MAX_ARGUMENT_BYTES, ToolResult, ask_user_question

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

__all__ = [
    "Case",
    "Finding",
    "Group",
    "Report",
    "Tool",
    "check_result",
    "describe",
    "fuzz",
    "main",
    "make_case",
    "replay",
    "run_case",
]

#: What the fuzzer calls: ``ask_user_question`` or a stand-in with its signature.
Tool = Callable[..., Awaitable[object]]

T = TypeVar("T")

#: Inputs per event loop; each batch runs in one ``asyncio.run``.
BATCH: Final = 2_000

# --------------------------------------------------------------------------
# Hostile objects. Each names the methods that raise (or lie) in ``broken``.
# --------------------------------------------------------------------------


class HostileMethodError(RuntimeError):
    """What a hostile object's broken method raises."""


class HostileBaseException(BaseException):
    """A ``BaseException`` subclass that a provider raises."""


class StrRaisingError(Exception):
    """An error whose ``__str__`` raises."""

    def __str__(self) -> str:
        raise HostileMethodError("__str__")


class StrNotStringError(Exception):
    """An error whose ``__str__`` returns something that is not a string."""

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value

    def __str__(self) -> str:
        return cast("str", self.value)


class StrHostileError(Exception):
    """An error whose ``__str__`` returns a hostile ``str`` subclass."""

    def __init__(self, value: HostileStr) -> None:
        super().__init__()
        self.value = value

    def __str__(self) -> str:
        return self.value


class ReprRaising:
    """An object whose ``__repr__`` and ``__str__`` raise; hashable."""

    def __repr__(self) -> str:
        raise HostileMethodError("__repr__")

    def __str__(self) -> str:
        raise HostileMethodError("__str__")


def _refuse(broken: tuple[str, ...], name: str) -> None:
    if name in broken:
        raise HostileMethodError(name)


class HostileStr(str):
    """A ``str`` whose methods named in ``broken`` raise; ``encode:lie`` returns an int."""

    __slots__ = ("broken",)
    broken: tuple[str, ...]

    def __new__(cls, value: str, broken: tuple[str, ...] = ()) -> Self:
        self = super().__new__(cls, value)
        self.broken = broken
        return self

    def __hash__(self) -> int:
        _refuse(self.broken, "__hash__")
        return str.__hash__(self)

    def __eq__(self, other: object, /) -> bool:
        _refuse(self.broken, "__eq__")
        return str.__eq__(self, other)

    def __ne__(self, other: object, /) -> bool:
        _refuse(self.broken, "__ne__")
        return str.__ne__(self, other)

    def __len__(self) -> int:
        _refuse(self.broken, "__len__")
        return str.__len__(self)

    def __contains__(self, key: object, /) -> bool:
        _refuse(self.broken, "__contains__")
        return str.__contains__(self, cast("str", key))

    def __str__(self) -> str:
        _refuse(self.broken, "__str__")
        return str.__str__(self)

    def __repr__(self) -> str:
        _refuse(self.broken, "__repr__")
        return str.__repr__(self)

    def __format__(self, format_spec: str, /) -> str:
        _refuse(self.broken, "__format__")
        return str.__format__(self, format_spec)

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        """Encode, unless broken; ``encode:lie`` returns an int."""
        _refuse(self.broken, "encode")
        if "encode:lie" in self.broken:
            return cast("bytes", str.__len__(self))
        return str.encode(self, encoding, errors)

    def splitlines(self, keepends: bool = False) -> list[str]:
        """Split, unless broken."""
        _refuse(self.broken, "splitlines")
        return str.splitlines(self, keepends)


class HostileBytes(bytes):
    """A ``bytes`` whose methods named in ``broken`` raise; ``len:lie`` claims one byte."""

    broken: tuple[str, ...]

    def __new__(cls, value: bytes, broken: tuple[str, ...] = ()) -> Self:
        self = super().__new__(cls, value)
        self.broken = broken
        return self

    def __len__(self) -> int:
        _refuse(self.broken, "__len__")
        return 1 if "len:lie" in self.broken else bytes.__len__(self)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        """Decode, unless broken; ``decode:lie`` returns an int."""
        _refuse(self.broken, "decode")
        if "decode:lie" in self.broken:
            return cast("str", bytes.__len__(self))
        return bytes.decode(self, encoding, errors)


class HostileDict(dict[object, object]):
    """A ``dict`` whose methods named in ``broken`` raise.

    ``items:hide`` makes ``items()`` show nothing, ``items:pad`` adds a huge
    entry to it, and ``getitem:lie`` makes ``d["questions"]`` return a huge
    list of questions that ``items()`` never shows.
    """

    __slots__ = ("broken",)

    def __init__(self, content: Mapping[object, object], broken: tuple[str, ...] = ()) -> None:
        super().__init__(content)
        self.broken = broken

    def __getitem__(self, key: object, /) -> object:
        _refuse(self.broken, "__getitem__")
        if "getitem:lie" in self.broken and key == "questions":
            return [_oversized_question()]
        return super().__getitem__(key)

    def __contains__(self, key: object, /) -> bool:
        _refuse(self.broken, "__contains__")
        return super().__contains__(key)

    def __iter__(self) -> Iterator[object]:
        _refuse(self.broken, "__iter__")
        return super().__iter__()

    def __len__(self) -> int:
        _refuse(self.broken, "__len__")
        return super().__len__()

    def __repr__(self) -> str:
        _refuse(self.broken, "__repr__")
        return super().__repr__()

    def get(self, key: object, default: object = None, /) -> object:
        """Get, unless broken."""
        _refuse(self.broken, "get")
        return super().get(key, default)

    def keys(self) -> dict_keys[object, object]:
        """Keys, unless broken."""
        _refuse(self.broken, "keys")
        return super().keys()

    def values(self) -> dict_values[object, object]:
        """Values, unless broken."""
        _refuse(self.broken, "values")
        return super().values()

    def items(self) -> dict_items[object, object]:
        """Items, unless broken; ``items:hide`` hides them, ``items:pad`` adds one."""
        _refuse(self.broken, "items")
        if "items:hide" in self.broken:
            empty: dict[object, object] = {}
            return empty.items()
        if "items:pad" in self.broken:
            padded = dict(super().items())
            padded["padding"] = _PADDING
            return padded.items()
        return super().items()


class HostileList(list[object]):
    """A ``list`` whose methods named in ``broken`` raise.

    With *hidden* items, the second and later iterations also yield them,
    so ``json.dumps`` (the first reader) never sees them.
    """

    __slots__ = ("_hidden", "_iterations", "broken")

    def __init__(
        self, content: Iterable[object], broken: tuple[str, ...] = (), hidden: Sequence[object] = ()
    ) -> None:
        super().__init__(content)
        self.broken = broken
        self._hidden = tuple(hidden)
        self._iterations = 0

    def __iter__(self) -> Iterator[object]:
        _refuse(self.broken, "__iter__")
        self._iterations += 1
        if self._hidden and self._iterations > 1:
            return iter([*super().__iter__(), *self._hidden])
        return super().__iter__()

    def __len__(self) -> int:
        _refuse(self.broken, "__len__")
        return super().__len__()

    def __contains__(self, key: object, /) -> bool:
        _refuse(self.broken, "__contains__")
        return super().__contains__(key)

    def __repr__(self) -> str:
        _refuse(self.broken, "__repr__")
        return super().__repr__()


class HostileMapping(Mapping[str, object]):
    """A ``Mapping`` that is not a ``dict``, whose methods named in ``broken`` raise."""

    def __init__(self, content: Mapping[str, object], broken: tuple[str, ...] = ()) -> None:
        self._content = dict(content)
        self.broken = broken

    def __getitem__(self, key: str) -> object:
        _refuse(self.broken, "__getitem__")
        return self._content[key]

    def __iter__(self) -> Iterator[str]:
        _refuse(self.broken, "__iter__")
        return iter(self._content)

    def __len__(self) -> int:
        _refuse(self.broken, "__len__")
        return len(self._content)


_STR_BREAKS: Final = (
    "__hash__", "__eq__", "__ne__", "__len__", "__contains__", "__str__", "__repr__",
    "__format__", "encode", "encode:lie", "splitlines",
)  # fmt: skip
_DICT_BREAKS: Final = (
    "__getitem__", "__contains__", "__iter__", "__len__", "__repr__", "get", "keys",
    "values", "items",
)  # fmt: skip
_LIST_BREAKS: Final = ("__iter__", "__len__", "__contains__", "__repr__")
_MAPPING_BREAKS: Final = ("__getitem__", "__iter__", "__len__")
_BYTES_BREAKS: Final = ("__len__", "decode", "decode:lie")


def _breaks(rng: random.Random, pool: Sequence[str]) -> tuple[str, ...]:
    """No broken method a quarter of the time (a well-behaved subclass), else one or two."""
    if rng.random() < 0.25:
        return ()
    return tuple(rng.sample(pool, rng.choice((1, 1, 2))))


# --------------------------------------------------------------------------
# Pools, built once from a fixed seed so that every run sees the same ones.
# --------------------------------------------------------------------------

_WORDS: Final = (
    "q", "mode", "targets", "notes", "name", "Yes", "No", "Fast", "Safe", "Proceed?",
    "Which one?", "Confirm", "docs", "tests", "a", "b", "x",
)  # fmt: skip

#: Fragments of hostile text: line breaks of every kind, lone and paired
#: surrogates, controls, bidi overrides, JSON-looking tokens.
_ATOMS: Final = (
    "q", "Yes", "x", " ", "\xe9", "\u65e5\u672c", "\U0001f600", "\u200b", "\ufeff", "\x00",
    "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x7f", "\x85",
    "\u2028", "\u2029", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00", "\\", '"',
    "'", "\u202e", "NaN", "Infinity", "null", "{", "]", "(Recommended)", "\u3000", "\xa0",
    "Error: ", "$.questions[0]", "\\ud800",
)  # fmt: skip

_LIMIT: Final = DEFAULT_MAX_ARGUMENT_BYTES


def _build_texts() -> tuple[tuple[str, ...], str]:
    """8,192 short texts of one to five atoms, and one of 100,000 characters.

    The huge one is mostly ``x`` with an atom every 100 characters or so: as
    hostile as the short ones, but cheap enough to send often.
    """
    rng = random.Random("texts")  # noqa: S311 - a reproducible pool, not secrets
    texts = tuple("".join(rng.choices(_ATOMS, k=rng.randrange(1, 6))) for _ in range(8_192))
    huge = "".join("x" * rng.randrange(200) + rng.choice(_ATOMS) for _ in range(1_000))
    return texts, huge


_TEXTS, _HUGE_TEXT = _build_texts()
#: The same texts, made non-blank (as JavaScript's ``trim`` sees it) where they were not.
_NONBLANK: Final = tuple(text if not is_blank(text) else text + "x" for text in _TEXTS)
#: A question text that puts a one-question request over the default limit.
_OVER: Final = "x" * (_LIMIT + 4_096)
#: One that keeps it under the limit, though not by much.
_UNDER: Final = "x" * (_LIMIT - 4_096)
#: What ``items:pad`` adds: enough to go over the limit on its own.
_PADDING: Final = "p" * (_LIMIT + 4_096)


def _deep_list(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


#: Nested 100,000 levels deep; shared, never mutated.
_DEEP_LIST: Final = _deep_list(100_000)
_DEEP_DICT: Final = _deep_dict(100_000)
_HUGE_INT: Final = 10**5000
#: JSON text nested deeper than the parser's recursion limit, within the size limit.
_DEEP_TEXT: Final = "[" * 30_000 + "]" * 30_000
_DEEP_QUESTIONS_TEXT: Final = '{"questions":' + "[" * 20_000 + "]" * 20_000 + "}"
#: Nested 100,000 levels: over the default size limit, parsed only with a larger one.
_DEEPER_TEXT: Final = (
    '{"questions":[{"id":"q","question":"?","x":' + "[" * 100_000 + "]" * 100_000 + "}]}"
)


def _oversized_question() -> dict[str, object]:
    return {"id": "hidden", "question": _OVER}


_SCALARS: Final[tuple[object, ...]] = (
    None, True, False, 0, 1, -1, 2**53 + 1, 2**64, -0.0, 0.5, 1e308, -1e-308,
    float("nan"), float("inf"), float("-inf"), "", "x", "\ud800", "\u2028",
)  # fmt: skip

_NON_FINITE: Final = (float("nan"), float("inf"), float("-inf"))


def _below(rng: random.Random, bound: int) -> int:
    """A number in ``range(bound)``; cheaper than ``randrange``, which matters here."""
    return int(rng.random() * bound)


def _one(rng: random.Random, items: Sequence[T]) -> T:
    """One of *items*; cheaper than ``choice``."""
    return items[int(rng.random() * len(items))]


def _text(rng: random.Random, pool: tuple[str, ...] = _TEXTS) -> str:
    """A word, a hostile short text, or (one time in 200) a slice of the huge one."""
    roll = rng.random()
    if roll < 0.4:
        return _WORDS[int(roll * 2.5 * len(_WORDS))]
    if roll < 0.995:
        return pool[int((roll - 0.4) / 0.595 * len(pool))]
    start = _below(rng, len(_HUGE_TEXT) // 2)
    return _HUGE_TEXT[start : start + 1_000 + _below(rng, len(_HUGE_TEXT) // 2)]


def _nonblank(rng: random.Random) -> str:
    """A text with a character that is not whitespace, as JavaScript's ``trim`` sees it."""
    return _text(rng, _NONBLANK)


def _json_value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth >= 3 or roll < 0.6:
        return _one(rng, _SCALARS) if rng.random() < 0.5 else _text(rng)
    if roll < 0.8:
        return [_json_value(rng, depth + 1) for _ in range(_below(rng, 4))]
    return {_text(rng): _json_value(rng, depth + 1) for _ in range(_below(rng, 4))}


def _cyclic() -> list[object]:
    value: list[object] = []
    value.append(value)
    return value


#: Values of the wrong type for some field, including ones JSON cannot hold.
_WRONG: Final[tuple[Callable[[random.Random], object], ...]] = (
    lambda rng: rng.choice(_SCALARS),
    lambda rng: rng.choice(_NON_FINITE),
    _json_value,
    _text,
    lambda rng: [],
    lambda rng: {},
    lambda rng: _HUGE_INT,
    lambda rng: b"bytes",
    lambda rng: ("a", "tuple"),
    lambda rng: {"a set"},
    lambda rng: object(),
    lambda rng: ReprRaising(),
    lambda rng: _DEEP_LIST,
    lambda rng: _DEEP_DICT,
    lambda rng: _cyclic(),
    lambda rng: HostileStr(_text(rng), _breaks(rng, _STR_BREAKS)),
    lambda rng: HostileDict({"label": "A"}, _breaks(rng, _DICT_BREAKS)),
    lambda rng: HostileList(["A"], _breaks(rng, _LIST_BREAKS)),
    lambda rng: HostileMapping({"label": "A"}, _breaks(rng, _MAPPING_BREAKS)),
)


def _wrong(rng: random.Random) -> object:
    return rng.choice(_WRONG)(rng)


def _json_wrong(rng: random.Random) -> object:
    """A wrong value that JSON text can hold (NaN and Infinity included)."""
    return rng.choice(_SCALARS) if rng.random() < 0.5 else _json_value(rng)


# --------------------------------------------------------------------------
# Arguments.
# --------------------------------------------------------------------------

_EXTRA_KEYS: Final = (
    "detail", "intent", "multiSelect", "signal", "agent", "priority", "id", "questions",
    "\ud800", "",
)  # fmt: skip


def _extras(rng: random.Random, target: dict[str, object]) -> None:
    for _ in range(_one(rng, (1, 1, 2, 3))):
        key = _one(rng, _EXTRA_KEYS) if rng.random() < 0.6 else _text(rng)
        if key not in target:
            target[key] = _json_value(rng)


def _well_formed(rng: random.Random) -> dict[str, object]:
    """A request that keeps every rule, with unknown keys a model may add."""
    questions: list[object] = []
    for number in range(_one(rng, (1, 1, 1, 2, 2, 3, 5))):
        question: dict[str, object] = {
            "id": f"{_nonblank(rng)}{number}",
            "question": _nonblank(rng),
        }
        if rng.random() < 0.3:
            question["header"] = _text(rng)
        if rng.random() < 0.6:
            options: list[object] = []
            for label_number in range(_below(rng, 5)):
                option: dict[str, object] = {"label": f"{_nonblank(rng)}{label_number}"}
                if rng.random() < 0.3:
                    option["description"] = _text(rng)
                if rng.random() < 0.1:
                    _extras(rng, option)
                options.append(option)
            question["options"] = options
        if rng.random() < 0.4:
            question["multi_select"] = rng.random() < 0.5
        if rng.random() < 0.2:
            _extras(rng, question)
        questions.append(question)
    request: dict[str, object] = {"questions": questions}
    if rng.random() < 0.2:
        _extras(rng, request)
    return request


def _slots(request: dict[str, object]) -> list[tuple[dict[str, object] | list[object], object]]:
    """Every (container, key) of a request: the places a field can go wrong.

    Only exact dicts and lists are entered, so a field already made wrong is
    a leaf (its own methods are never called here).
    """
    found: list[tuple[dict[str, object] | list[object], object]] = [(request, "questions")]
    questions = request.get("questions")
    if type(questions) is not list:
        return found
    for number, raw in enumerate(cast("list[object]", questions)):
        found.append((cast("list[object]", questions), number))
        if type(raw) is not dict:
            continue
        question = cast("dict[str, object]", raw)
        found.extend(
            (question, key) for key in ("id", "question", "header", "options", "multi_select")
        )
        options = question.get("options")
        if type(options) is not list:
            continue
        for option_number, option in enumerate(cast("list[object]", options)):
            found.append((cast("list[object]", options), option_number))
            if type(option) is dict:
                found.extend(
                    (cast("dict[str, object]", option), key) for key in ("label", "description")
                )
    return found


def _malformed(rng: random.Random, wrong: Callable[[random.Random], object] = _wrong) -> object:
    """A request with one or two fields of the wrong type, missing, empty or repeated."""
    request = _well_formed(rng)
    roll = rng.random()
    if roll < 0.05:
        return wrong(rng)
    questions = cast("list[object]", request["questions"])
    if roll < 0.15:
        first = cast("dict[str, object]", questions[0])
        match rng.randrange(4):
            case 0:
                request["questions"] = []
            case 1:
                questions.append(dict(first))  # a duplicate id
            case 2:
                first["id"] = rng.choice(("", " ", "\u3000"))
            case _:
                first["question"] = rng.choice(("", "\n"))
        return request
    for _ in range(rng.choice((1, 1, 2))):
        container, key = rng.choice(_slots(request))
        if isinstance(container, dict) and rng.random() < 0.25:
            container.pop(cast("str", key), None)
        elif isinstance(container, dict):
            container[cast("str", key)] = wrong(rng)
        else:
            container[cast("int", key)] = wrong(rng)
    return request


def _hostilize(
    rng: random.Random, value: object, rate: float, keys: list[HostileStr], swaps: list[int]
) -> object:
    """*value* with some containers and strings swapped for hostile twins.

    Hostile dict keys are collected in *keys*, unarmed, to be armed once every
    dict that holds them is built (a broken ``__hash__`` would stop that).
    Each swap appends a 1 to *swaps*.
    """
    if type(value) is dict:
        content: dict[object, object] = {}
        for key, item in cast("dict[object, object]", value).items():
            if type(key) is str and rng.random() < rate / 2:
                hostile_key = HostileStr(key)
                keys.append(hostile_key)
                content[hostile_key] = _hostilize(rng, item, rate, keys, swaps)
            else:
                content[key] = _hostilize(rng, item, rate, keys, swaps)
        if rng.random() < rate:
            swaps.append(1)
            return HostileDict(content, _breaks(rng, _DICT_BREAKS))
        return content
    if type(value) is list:
        items = [_hostilize(rng, item, rate, keys, swaps) for item in cast("list[object]", value)]
        if rng.random() < rate:
            swaps.append(1)
            return HostileList(items, _breaks(rng, _LIST_BREAKS))
        return items
    if type(value) is str and rng.random() < rate:
        swaps.append(1)
        return HostileStr(value, _breaks(rng, _STR_BREAKS))
    return value


def _hostile_types(rng: random.Random) -> object:
    """A well-formed request in which dicts, lists and strings are hostile subclasses."""
    request = _well_formed(rng)
    if rng.random() < 0.1:
        return HostileMapping(request, _breaks(rng, _MAPPING_BREAKS))
    keys: list[HostileStr] = []
    swaps: list[int] = []
    hostile = _hostilize(rng, request, rng.choice((0.1, 0.2, 0.4)), keys, swaps)
    if not swaps and not keys:  # nothing was swapped: swap the top
        hostile = HostileDict(cast("dict[object, object]", hostile), _breaks(rng, _DICT_BREAKS))
    for key in keys:
        key.broken = _breaks(rng, _STR_BREAKS)
    return hostile


def _dumps(rng: random.Random, value: object) -> str:
    match rng.randrange(4):
        case 0:
            return json.dumps(value)
        case 1:
            return json.dumps(value, ensure_ascii=False)
        case 2:
            return json.dumps(value, separators=(",", ":"))
        case _:
            return json.dumps(value, indent=rng.choice((None, 1, "\t")), ensure_ascii=False)


def _json_text(rng: random.Random) -> str | bytes:
    """JSON text: valid or not, with NaN tokens, duplicate keys, escapes and encodings."""
    request = _well_formed(rng)
    roll = rng.random()
    if roll < 0.3:
        text = _dumps(rng, request)
    elif roll < 0.4:
        text = _dumps(rng, _malformed(rng, _json_wrong))
    elif roll < 0.5:  # NaN, Infinity and -Infinity tokens, where extras or fields go
        token = rng.choice(("NaN", "Infinity", "-Infinity"))
        where = rng.choice(("extra", "id", "label", "multi_select"))
        text = _dumps(rng, request)
        if where == "extra":
            text = text.replace("{", '{"x": ' + token + ",", 1)
        else:
            text = re.sub(f'"{where}": ?"(?:[^"\\\\]|\\\\.)*"', f'"{where}":{token}', text, count=1)
    elif roll < 0.6:  # duplicate keys: the last one wins in Python, as in JavaScript
        first, second = _dumps(rng, request), _dumps(rng, _well_formed(rng))
        text = "{" + first[1:-1] + "," + second[1:-1] + "}"
    elif roll < 0.7:  # surrogate escapes, lone and paired, as a model may write them
        escape = rng.choice(("\\ud800", "\\udfff", "\\ud83d\\ude00", "\\ude00\\ud83d", "\\u0000"))
        text = '{"questions":[{"id":"' + escape + '","question":"' + escape + '?"}]}'
    elif roll < 0.85:  # broken JSON
        text = _dumps(rng, request)
        match rng.randrange(6):
            case 0:
                text = text[: rng.randrange(len(text))]
            case 1:
                at = rng.randrange(len(text))
                text = text[:at] + rng.choice(("'", ",", "}", "\x00", "\\", "\ud800")) + text[at:]
            case 2:
                text = text.replace(",", ",,", 1)
            case 3:
                text = "\ufeff" + text
            case 4:
                text = text + rng.choice(("x", "{}", " \n", ",", "\ud800"))
            case _:
                text = rng.choice(("", " ", "null", "nul", "[", "{", "{}", '"x"', "1e999"))
    elif roll < 0.9:  # deep
        text = rng.choice((_DEEP_TEXT, _DEEP_QUESTIONS_TEXT))
    else:  # another encoding, or bytes that are not text
        text = _dumps(rng, request)
        match rng.randrange(5):
            case 0:
                return text.encode("utf-8", "surrogatepass")
            case 1:
                return text.encode("utf-16", "surrogatepass")
            case 2:
                return text.encode("utf-8-sig", "surrogatepass")
            case 3:
                return b"\xff\xfe\xfd" + text.encode("utf-8", "surrogatepass")
            case _:
                return text.encode("utf-32", "surrogatepass")
    return text


def _hostile_whole(rng: random.Random) -> object:
    """The whole argument is a hostile ``str`` or ``bytes`` of valid JSON."""
    text = _dumps(rng, _well_formed(rng))
    if rng.random() < 0.6:
        return HostileStr(text, _breaks(rng, _STR_BREAKS))
    return HostileBytes(text.encode("utf-8", "surrogatepass"), _breaks(rng, _BYTES_BREAKS))


def _junk(rng: random.Random) -> object:
    """Any JSON value, as data or text, or any Python value: seldom a request."""
    if rng.random() < 0.5:
        value = _json_value(rng)
        return _dumps(rng, value) if rng.random() < 0.5 else value
    return _wrong(rng)


Expect = Literal["refused", "not-size-refused"]


def _size_case(rng: random.Random) -> tuple[str, object, Expect]:
    """Arguments whose size the tool must judge by what it reads."""
    over: dict[object, object] = {"questions": [{"id": "q", "question": _OVER}]}
    under: dict[object, object] = {"questions": [{"id": "q", "question": _UNDER}]}
    small: dict[object, object] = {"questions": [{"id": "q", "question": "?"}]}
    match rng.randrange(9):
        case 0:
            return "size/over-mapping", over, "refused"
        case 1:
            return "size/over-text", json.dumps(over), "refused"
        case 2:
            return "size/under-mapping", under, "not-size-refused"
        case 3:
            return "size/under-text", json.dumps(under), "not-size-refused"
        case 4:  # items() shows nothing; d["questions"] is over the limit but never read
            return "size/items-hide", HostileDict(over, ("items:hide",)), "refused"
        case 5:  # items() adds a huge entry: the tool reads items(), so that is what it sizes
            return "size/items-pad", HostileDict(small, ("items:pad",)), "refused"
        case 6:  # d["questions"] returns a huge list, but the tool reads items() only
            return "size/getitem-lie", HostileDict(small, ("getitem:lie",)), "not-size-refused"
        case 7:  # a second iteration would yield a huge question; the tool iterates once
            questions = HostileList([{"id": "q", "question": "?"}], (), [_oversized_question()])
            return "size/iter-hidden", {"questions": questions}, "not-size-refused"
        case _:  # bytes whose len() claims one byte
            raw = json.dumps(over).encode()
            return "size/len-lie", HostileBytes(raw, ("len:lie",)), "refused"


# --------------------------------------------------------------------------
# Providers and answers.
# --------------------------------------------------------------------------

Plan = Literal[
    "echo", "bad-answer", "raise", "abort-self", "abort-return", "cancelled", "not-awaitable"
]
Mode = Literal["strict", "lenient", "bare", "none"]


def _echo(rng: random.Random, request: AskUserQuestionRequest) -> dict[str, object]:
    """An answer that keeps every rule: skips, choices and custom text."""
    items: list[object] = []
    for question in request["questions"]:
        labels = [option["label"] for option in question.get("options", ())]
        item: dict[str, object] = {"id": question["id"], "selected": []}
        roll = rng.random()
        if question.get("multiSelect") is True:
            item["selected"] = [label for label in labels if rng.random() < 0.5]
            if roll < 0.3:
                item["custom"] = _nonblank(rng)
        elif labels and roll < 0.6:
            item["selected"] = [_one(rng, labels)]
        elif roll < 0.8:
            item["custom"] = _nonblank(rng)
        items.append(item)
    return {"answers": items}


_ANSWER_WRONG: Final[tuple[Callable[[random.Random], object], ...]] = (
    lambda rng: rng.choice(_NON_FINITE),
    lambda rng: [rng.choice(_NON_FINITE)],
    lambda rng: [1, None],
    lambda rng: None,
    lambda rng: "A",
    lambda rng: ("A",),
    lambda rng: _DEEP_LIST,
    lambda rng: _DEEP_DICT,
    lambda rng: _HUGE_INT,
    lambda rng: [_HUGE_INT],
    lambda rng: object(),
    lambda rng: ReprRaising(),
    lambda rng: HostileStr(_nonblank(rng), _breaks(rng, _STR_BREAKS)),
    lambda rng: [HostileStr(_nonblank(rng), _breaks(rng, _STR_BREAKS))],
    lambda rng: HostileList(["A"], _breaks(rng, _LIST_BREAKS)),
    _text,
    lambda rng: "\ud800" + _text(rng),
    lambda rng: _HUGE_TEXT,
    lambda rng: "",
)

_HUGE_KEY: Final = "k" * 100_000


def _answer_wrong(rng: random.Random) -> object:
    return rng.choice(_ANSWER_WRONG)(rng)


def _bad_answer(rng: random.Random, request: AskUserQuestionRequest) -> object:
    """A correct answer with one or two things wrong with it."""
    answer = _echo(rng, request)
    items = cast("list[object]", answer["answers"])
    result: object = answer
    for _ in range(rng.choice((1, 1, 2))):
        item = cast("dict[object, object]", rng.choice(items)) if items else {}
        match rng.randrange(16):
            case 0:
                return _answer_wrong(rng)
            case 1:
                result = HostileDict(
                    cast("dict[object, object]", answer),
                    _breaks(rng, (*_DICT_BREAKS, "get", "get")),
                )
            case 2:
                result = HostileMapping(answer, _breaks(rng, _MAPPING_BREAKS))
            case 3:
                answer["answers"] = rng.choice(
                    (
                        tuple(items),
                        HostileList(items, _breaks(rng, _LIST_BREAKS)),
                        {"0": items},
                        None,
                        "answers",
                        iter(items),
                    )
                )
            case 4:
                key = rng.choice((_HUGE_KEY, ReprRaising(), 1, None, "extra"))
                cast("dict[object, object]", answer)[key] = _text(rng)
            case 5:
                if items and rng.random() < 0.5:
                    items.pop()
                elif items:
                    items.append(items[0])
            case 6:
                if items:
                    items[rng.randrange(len(items))] = rng.choice(
                        (
                            HostileDict(item, _breaks(rng, (*_DICT_BREAKS, "get", "get"))),
                            HostileMapping(
                                cast("dict[str, object]", item), _breaks(rng, _MAPPING_BREAKS)
                            ),
                            _answer_wrong(rng),
                        )
                    )
            case 7 | 8:
                item["id"] = _answer_wrong(rng)
            case 9 | 10:
                item["selected"] = _answer_wrong(rng)
            case 11 | 12:
                item["custom"] = _answer_wrong(rng)
            case 13:
                item.pop(rng.choice(("id", "selected", "custom")), None)
            case 14:
                item[rng.choice((_HUGE_KEY, ReprRaising(), 1, None, "extra", "detail"))] = 1
            case _:
                item["selected"] = tuple(cast("list[object]", item.get("selected", [])))
    return result


def _hostile_exception(rng: random.Random) -> BaseException:
    match rng.randrange(18):
        case 0:
            return UserInteractionError.of(ErrorCode.ASK_CANCELLED)
        case 1:
            return UserInteractionError.of(rng.choice(list(ErrorCode)))
        case 2 | 3:
            return RuntimeError(_text(rng))
        case 4:
            return ValueError(rng.choice(("", "\n", "\n\n", " ", "\u2028", "\r\n\r\n")))
        case 5:
            return StrRaisingError()
        case 6:
            return StrNotStringError(rng.choice((None, 5, b"bytes", ["x"])))
        case 7:
            return StrHostileError(HostileStr(_text(rng), _breaks(rng, _STR_BREAKS)))
        case 8:
            message = HostileStr(_text(rng), _breaks(rng, _STR_BREAKS))
            return UserInteractionError(message, ErrorCode.ASK_CANCELLED)
        case 9:
            return HostileBaseException(_text(rng))
        case 10:
            return GeneratorExit()
        case 11:
            return StopIteration()
        case 12:
            return StopAsyncIteration()
        case 13:
            return ExceptionGroup("group", [ValueError("inner")])
        case 14:
            return BaseExceptionGroup("group", [HostileBaseException("inner")])
        case 15:
            return RecursionError()
        case 16:
            return UserInteractionError(_HUGE_TEXT, ErrorCode.ASK_CANCELLED)
        case _:
            return KeyError(_text(rng))


class HostileProvider:
    """A provider that follows the plan the generator chose for it.

    It records every request it is shown and the answer it returns, so the
    checker can tell a success the provider made from one the tool made up.
    """

    def __init__(
        self, rng: random.Random, plan: Plan, controller: AbortController | None, style: str
    ) -> None:
        self.rng = rng
        self.plan: Plan = plan
        self.controller = controller
        self.style = style
        self.requests: list[AskUserQuestionRequest] = []
        self.answered = False
        self.answer: object = None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Answer, fail or abort, by the plan."""
        self.requests.append(request)
        rng = self.rng
        answer: object
        match self.plan:
            case "echo" | "not-awaitable":
                answer = _echo(rng, request)
            case "bad-answer":
                answer = _bad_answer(rng, request)
            case "raise":
                raise _hostile_exception(rng)
            case "cancelled":
                raise asyncio.CancelledError
            case "abort-return":
                if self.controller is not None:
                    self.controller.abort(ReprRaising())
                answer = _echo(rng, request)
            case "abort-self":
                if self.controller is not None:
                    self.controller.abort(rng.choice((None, "stop", ReprRaising())))
                try:
                    for _ in range(3):
                        await asyncio.sleep(0)
                except asyncio.CancelledError:
                    if self.style == "propagate":
                        raise
                    if self.style == "convert":
                        raise RuntimeError("the provider turned the interrupt into this") from None
                answer = _echo(rng, request)  # answers anyway: swallowed, or never interrupted
        self.answered = True
        self.answer = answer
        return cast("AskUserQuestionAnswer", answer)


class _Unawaitable:
    """A provider whose ``ask`` is not a coroutine function: it returns a dict."""

    def __init__(self, provider: HostileProvider) -> None:
        self.provider = provider

    def ask(self, request: AskUserQuestionRequest) -> object:
        self.provider.requests.append(request)
        return _echo(self.provider.rng, request)


@dataclass(slots=True)
class Case:
    """One generated input: the arguments, and the service and provider that answer them."""

    seed: int
    index: int
    #: Which generator branch made the arguments, such as ``json/nan-token``.
    kind: str
    arguments: object
    provider: HostileProvider
    mode: Mode
    signal: AbortSignal | None
    agent: str | None
    max_bytes: int
    #: What the size limit must do with these arguments, when that is known.
    expect: Expect | None
    #: A draw taken after generation: equal for equal (seed, index).
    fingerprint: int = 0

    def service(self) -> object:
        """The service to pass to the tool: a fresh one, or the bare provider."""
        provider: object = self.provider
        if self.provider.plan == "not-awaitable":
            provider = _Unawaitable(self.provider)
        if self.mode == "bare":
            return provider
        service = UserInteractionService(strict=self.mode == "strict")
        if self.mode != "none":
            service.register_provider(cast("UserInteractionProvider", provider))
        return service

    def replay_command(self) -> str:
        """The command that runs this input alone."""
        return f"python fuzz/fuzz_tool.py --seed {self.seed} --index {self.index}"


def _pick(rng: random.Random, weighted: Sequence[tuple[float, str]]) -> str:
    roll = rng.random()
    for weight, name in weighted:
        if roll < weight:
            return name
        roll -= weight
    return weighted[-1][1]


_KINDS: Final = (
    (0.26, "mapping"),
    (0.14, "json"),
    (0.14, "mapping-malformed"),
    (0.14, "json-hostile"),
    (0.18, "mapping-hostile-types"),
    (0.04, "whole-hostile"),
    (0.04, "junk"),
    (0.02, "deep"),
    (0.04, "size"),
)
_PLANS: Final = (
    (0.50, "echo"),
    (0.30, "bad-answer"),
    (0.13, "raise"),
    (0.04, "abort-self"),
    (0.01, "abort-return"),
    (0.01, "cancelled"),
    (0.01, "not-awaitable"),
)
_MODES: Final = ((0.50, "strict"), (0.35, "lenient"), (0.12, "bare"), (0.03, "none"))


def make_case(seed: int, index: int) -> Case:
    """Input *index* of *seed*: a function of the two alone."""
    rng = random.Random(f"{seed}:{index}")  # noqa: S311 - reproducible inputs, not secrets
    kind = _pick(rng, _KINDS)
    expect: Expect | None = None
    arguments: object
    match kind:
        case "mapping":
            arguments = _well_formed(rng)
        case "json":
            arguments = _dumps(rng, _well_formed(rng))
        case "mapping-malformed":
            arguments = _malformed(rng)
        case "json-hostile":
            arguments = _json_text(rng)
        case "mapping-hostile-types":
            arguments = _hostile_types(rng)
        case "whole-hostile":
            arguments = _hostile_whole(rng)
        case "junk":
            arguments = _junk(rng)
        case "deep":
            arguments = rng.choice(
                (
                    {"questions": _DEEP_LIST},
                    {"questions": [{"id": "q", "question": "?", "x": _DEEP_DICT}]},
                    {"questions": [{"id": "q", "question": "?", "x": _cyclic()}]},
                    _DEEPER_TEXT,
                )
            )
        case _:
            kind, arguments, expect = _size_case(rng)
    if expect is not None:
        plan: Plan = "echo"
        mode: Mode = "strict"
    else:
        plan = cast("Plan", _pick(rng, _PLANS))
        mode = cast("Mode", _pick(rng, _MODES))
    controller: AbortController | None = None
    signal: AbortSignal | None = None
    roll = rng.random()
    if plan in ("abort-self", "abort-return") or (expect is None and roll < 0.1):
        controller = AbortController()
        signal = controller.signal
        if plan not in ("abort-self", "abort-return") and roll < 0.03:
            controller.abort()
    agent = _text(rng) if expect is None and rng.random() < 0.2 else None
    max_bytes = _LIMIT
    if expect is None:
        roll = rng.random()
        if roll < 0.06 or kind == "deep":
            max_bytes = 1 << 21
        elif roll < 0.08:
            max_bytes = rng.randrange(-1, 200)
    style = rng.choice(("propagate", "swallow", "convert"))
    provider = HostileProvider(rng, plan, controller, style)
    case = Case(seed, index, kind, arguments, provider, mode, signal, agent, max_bytes, expect)
    case.fingerprint = rng.getrandbits(64)
    return case


# --------------------------------------------------------------------------
# The checker.
# --------------------------------------------------------------------------


@dataclass(slots=True)
class Finding:
    """One broken invariant: a signature to group by, and what was seen."""

    signature: str
    detail: str
    #: The exception the tool raised, if it raised; kept for the first of a group only.
    error: BaseException | None = None


#: Every character ``str.splitlines`` splits on.
_LINE_BREAK: Final = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
#: A surrogate pair written as two escapes (not after an escaped backslash); a JSON
#: parser joins it into one character.
_ESCAPED_PAIR: Final = re.compile(
    r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})"
)
_SIZE_ERROR: Final = re.compile(r"Error: \$: arguments are -?\d+ bytes, over the -?\d+-byte limit")
_ITEM_KEYS: Final = (["id", "selected"], ["id", "selected", "custom"])


class _NonFinite(ValueError):
    pass


class _Pairs(list[tuple[str, object]]):
    """A parsed JSON object, as its pairs in order."""


def _refuse_constant(token: str) -> object:
    raise _NonFinite(token)


def _escape_surrogates(text: str) -> str:
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _join_pair(match: re.Match[str]) -> str:
    high, low = int(match.group(2), 16), int(match.group(3), 16)
    return match.group(1) + chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def _joined(text: str) -> str:
    """*text* with surrogate pairs joined, as a JSON round trip joins them."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _short(text: str, limit: int = 160) -> str:
    shown = ascii(text[:limit])
    if len(text) <= limit and len(shown) <= limit + 2:
        return shown
    return f"{shown[:limit]}... ({len(text)} characters)"


def _is_plain(value: object, depth: int) -> bool:
    """Whether *value* is JSON-like data of exact built-in types, not too deep."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if depth > 32:
        return False
    if kind is dict:
        return all(
            type(key) is str and _is_plain(item, depth + 1)
            for key, item in cast("dict[object, object]", value).items()
        )
    if kind in (list, tuple):
        return all(_is_plain(item, depth + 1) for item in cast("Sequence[object]", value))
    return False


def _normalized(value: object) -> object:
    if type(value) is str:
        return _joined(value)
    if type(value) is dict:
        return {key: _normalized(item) for key, item in cast("dict[str, object]", value).items()}
    if type(value) in (list, tuple):
        return [_normalized(item) for item in cast("Sequence[object]", value)]
    return value


def _projection(answer: object) -> object | None:
    """What the tool must return for a plain *answer*; ``None`` when not plain."""
    if not _is_plain(answer, 0) or type(answer) is not dict:
        return None
    items = cast("dict[str, object]", answer).get("answers")
    if type(items) not in (list, tuple):
        return None
    projected: list[object] = []
    for raw in cast("Sequence[object]", items):
        if type(raw) is not dict:
            return None
        item = cast("dict[str, object]", raw)
        entry = {"id": item.get("id"), "selected": item.get("selected")}
        if "custom" in item:
            entry["custom"] = item["custom"]
        projected.append(entry)
    return _normalized({"answers": projected})


def _shape_problem(parsed: object) -> str | None:
    if not isinstance(parsed, _Pairs) or [key for key, _ in parsed] != ["answers"]:
        return 'the top level is not {"answers": [...]}'
    answers = parsed[0][1]
    if type(answers) is not list:
        return "answers is not an array"
    for item in cast("list[object]", answers):
        if not isinstance(item, _Pairs):
            return "an answer item is not an object"
        keys = [key for key, _ in item]
        if keys not in _ITEM_KEYS:
            if sorted(keys) in (sorted(shape) for shape in _ITEM_KEYS):
                return "an item's keys are not in the order id, selected, custom"
            return "an item's keys are not id, selected and an optional custom"
        fields = dict(item)
        if type(fields["id"]) is not str:
            return "an item's id is not a string"
        selected = fields["selected"]
        if type(selected) is not list or any(
            type(label) is not str for label in cast("list[object]", selected)
        ):
            return "an item's selected is not an array of strings"
        if "custom" in fields and type(fields["custom"]) is not str:
            return "an item's custom is not a string"
    return None


def _unpaired(parsed: _Pairs) -> dict[str, object]:
    answers = cast("list[_Pairs]", parsed[0][1])
    return {"answers": [dict(item) for item in answers]}


def check_result(result: object, case: Case | None = None) -> Finding | None:
    """The first invariant *result* breaks, or ``None``.

    Always: a :class:`ToolResult` whose text is one non-empty line (no
    character ``str.splitlines`` splits on) that encodes as strict UTF-8.
    An error starts with ``Error:`` and a non-blank message. A success is
    compact JSON without NaN or Infinity tokens, of exactly
    ``{"answers":[{"id":str,"selected":[str...],"custom"?:str}]}`` in that
    key order. With the *case*: a success is the provider's own answer,
    projected; and the size limit refuses what is over it in what the tool
    reads, and nothing else.
    """
    if type(result) is not ToolResult:
        return Finding("returned something other than a ToolResult", type(result).__name__)
    text: object = result.text
    is_error: object = result.is_error
    if type(is_error) is not bool:
        return Finding("is_error is not a bool", type(is_error).__name__)
    outcome = "error" if is_error else "success"
    if type(text) is not str:
        return Finding(f"{outcome} text is not a str", type(text).__name__)
    if not text:
        return Finding(f"{outcome} text is empty", "")
    line_break = _LINE_BREAK.search(text)
    if line_break is not None:
        name = f"U+{ord(line_break.group()):04X}"
        return Finding(f"{outcome} text holds a line break ({name})", _short(text))
    if _SURROGATE.search(text) is not None:
        return Finding(f"{outcome} text is not strict UTF-8 (a lone surrogate)", _short(text))
    if is_error:
        return _check_error(text, case)
    return _check_success(text, case)


def _check_error(text: str, case: Case | None) -> Finding | None:
    if not text.startswith("Error: "):
        return Finding("error text does not start with 'Error: '", _short(text))
    if not text[7:].strip():
        return Finding("error message is blank", _short(text))
    if case is not None and case.expect == "not-size-refused" and _SIZE_ERROR.match(text):
        signature = f"refused over the size limit for data the tool never reads ({case.kind})"
        return Finding(signature, _short(text))
    return None


def _check_success(text: str, case: Case | None) -> Finding | None:
    try:
        parsed = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_Pairs)
    except _NonFinite as error:
        return Finding("success holds a NaN or Infinity token", f"{error}: {_short(text)}")
    except (ValueError, RecursionError) as error:
        return Finding("success is not JSON", f"{error}: {_short(text)}")
    problem = _shape_problem(parsed)
    if problem is not None:
        return Finding(f"success shape: {problem}", _short(text))
    plain = _unpaired(cast("_Pairs", parsed))
    canonical = _escape_surrogates(json.dumps(plain, ensure_ascii=False, separators=(",", ":")))
    # As JSON.stringify writes it, but for U+0085, U+2028 and U+2029, escaped to keep one line.
    canonical = re.sub("[\x85\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", canonical)
    if _ESCAPED_PAIR.sub(_join_pair, text) != canonical:
        return Finding("success is not compact JSON as JSON.stringify writes it", _short(text))
    if case is None:
        return None
    if case.expect == "refused":
        signature = f"not refused, though what the tool reads is over the size limit ({case.kind})"
        return Finding(signature, _short(text))
    if not case.provider.answered:
        return Finding("success, but the provider gave no answer", _short(text))
    expected = _projection(case.provider.answer)
    if expected is not None and expected != plain:
        return Finding("success differs from the provider's answer", _short(text))
    return None


_QUESTION_KEYS: Final = frozenset({"id", "question", "header", "options", "multiSelect"})


def _check_forwarded(case: Case) -> Finding | None:
    """TOOL-ARGS-2: the provider sees the question keys the schema names, and the caller's own."""
    for raw in cast("list[object]", case.provider.requests):
        if type(raw) is not dict:
            return Finding("the provider got a request that is not a dict", type(raw).__name__)
        request = cast("dict[str, object]", raw)
        if not request.keys() <= {"questions", "agent", "signal"}:
            return Finding("the provider got a request with unknown keys", "")
        if request.get("agent") is not case.agent or request.get("signal") is not case.signal:
            return Finding("the provider got another agent or signal than the caller's", "")
        questions = request.get("questions")
        if type(questions) is not list:
            return Finding("the provider got questions that are not a list", "")
        for question in cast("list[object]", questions):
            if type(question) is not dict:
                return Finding("the provider got a question that is not a dict", "")
            fields = cast("dict[str, object]", question)
            if not fields.keys() <= _QUESTION_KEYS:
                return Finding("the provider got a question with keys the schema does not name", "")
            options = fields.get("options", [])
            if type(options) is not list:
                return Finding("the provider got options that are not a list", "")
            # Options go on as the model sent them, extra option keys included, as
            # plain data (TOOL-ARGS-2).
            for option in cast("list[object]", options):
                if type(option) is not dict:
                    return Finding("the provider got an option that is not a dict", "")
    return None


_PACKAGE: Final = str(Path(dsh_user_interaction.__file__).parent)


def _where(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def _raised(error: BaseException) -> Finding:
    """A finding for an exception out of the tool, signed by where it left the package."""
    package: str | None = None
    innermost = "?"
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        where = f"{_where(code.co_filename)}:{code.co_name}"
        if code.co_filename.startswith(_PACKAGE):
            package = f"{where}:{tb.tb_lineno}"
        innermost = where
        tb = tb.tb_next
    signature = f"raised {type(error).__qualname__}"
    if package is not None:
        signature += f" from {package}"
    if package is None or not innermost.startswith(package.rsplit(":", 1)[0]):
        signature += f" (raised in {innermost})"
    return Finding(signature, _safe_str(error), error)


def _safe_str(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception as problem:  # noqa: BLE001 - hostile errors are what we describe
        return f"<{type(error).__name__}; str() raised {type(problem).__name__}>"
    return _short(text) if type(text) is str else f"<{type(error).__name__}>"


async def run_case(
    case: Case, tool: Tool = ask_user_question, *, seen: list[object] | None = None
) -> Finding | None:
    """Call *tool* on *case* and return the first invariant it breaks, or ``None``.

    What the tool returned is appended to *seen*, when given.
    """
    service = case.service()
    try:
        result = await tool(
            service,
            case.arguments,
            signal=case.signal,
            agent=case.agent,
            max_bytes=case.max_bytes,
        )
    except asyncio.CancelledError:
        return None  # TOOL-SAFE-1: the one exception the tool may raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - everything else out of the tool is a finding
        return _raised(error)
    if seen is not None:
        seen.append(result)
    finding = check_result(result, case)
    if finding is None:
        finding = _check_forwarded(case)
    if finding is None and isinstance(service, UserInteractionService) and service.pending_count:
        finding = Finding("the service keeps a pending call after the tool returned", "")
    return finding


# --------------------------------------------------------------------------
# The run.
# --------------------------------------------------------------------------


@dataclass(slots=True)
class Group:
    """Failures with one signature: how many, and the first one."""

    signature: str
    count: int
    seed: int
    index: int
    kind: str
    detail: str
    trace: str

    def replay_command(self) -> str:
        """The command that runs the group's first input alone."""
        return f"python fuzz/fuzz_tool.py --seed {self.seed} --index {self.index}"


@dataclass(slots=True)
class Report:
    """What a run found, grouped by signature."""

    seed: int
    inputs: int = 0
    failures: int = 0
    asked: int = 0
    seconds: float = 0.0
    groups: dict[str, Group] = field(default_factory=dict[str, Group])

    def add(self, case: Case, finding: Finding) -> None:
        """Count *finding*; keep the details of the first of its group."""
        self.failures += 1
        group = self.groups.get(finding.signature)
        if group is not None:
            group.count += 1
            return
        trace = ""
        if finding.error is not None:
            lines = traceback.format_exception(finding.error, limit=-8)
            trace = "".join(lines)[-4_000:]
        self.groups[finding.signature] = Group(
            finding.signature, 1, case.seed, case.index, case.kind, finding.detail, trace
        )

    def summary(self) -> str:
        """Counts first, then each group, most frequent first."""
        rate = self.inputs / self.seconds if self.seconds else 0.0
        asked = 100 * self.asked / self.inputs if self.inputs else 0.0
        lines = [
            f"{self.inputs} inputs (seed {self.seed}) in {self.seconds:.1f} s: {rate:.0f} inputs/s;"
            f" the provider was asked for {asked:.0f}% of them",
            f"{self.failures} failing input(s) in {len(self.groups)} group(s)",
        ]
        for group in sorted(self.groups.values(), key=lambda g: -g.count):
            lines += [
                "",
                f"[{group.count}] {group.signature}",
                f"    first: seed {group.seed} index {group.index} ({group.kind})",
                f"    seen: {group.detail}",
                f"    replay: {group.replay_command()}",
            ]
        return "\n".join(lines)


async def _batch(
    tool: Tool, seed: int, indices: range, *, report: Report, stop: bool, position: list[int]
) -> None:
    """Run *indices* in one loop; *position* holds the next index, for a fresh loop."""
    task = asyncio.current_task()
    for index in indices:
        position[0] = index + 1
        case = make_case(seed, index)
        finding = await run_case(case, tool)
        report.inputs += 1
        report.asked += bool(case.provider.requests)
        if finding is None and task is not None and task.cancelling():
            finding = Finding("the caller's task is left with a cancellation request", "")
        if finding is not None:
            report.add(case, finding)
            if stop:
                return
        if task is not None and task.cancelling():
            return  # the loop is tainted: go on in a fresh one


def fuzz(
    count: int,
    seed: int,
    *,
    tool: Tool = ask_user_question,
    start: int = 0,
    stop_on_first: bool = False,
    progress: Callable[[Report], None] | None = None,
) -> Report:
    """Run inputs *start* to *start* + *count* of *seed* through *tool*."""
    report = Report(seed)
    began = time.perf_counter()
    position = [start]
    end = start + count
    while position[0] < end and not (stop_on_first and report.groups):
        indices = range(position[0], min(end, position[0] + BATCH))
        # A cancellation left on the batch's task is counted; the run goes on.
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(
                _batch(tool, seed, indices, report=report, stop=stop_on_first, position=position)
            )
        report.seconds = time.perf_counter() - began
        if progress is not None:
            progress(report)
    return report


def _tagged(value: object, shown: str, plain: tuple[type, ...]) -> str:
    if type(value) in plain:
        return shown
    return f"{type(value).__name__}({shown}, broken={getattr(value, 'broken', ())})"


def describe(value: object, depth: int = 0) -> str:
    """A bounded description of *value* that calls none of its own methods."""
    kind = type(value)
    if depth > 6:
        return "..."
    if kind is int and abs(cast("int", value)) > 10**40:
        return f"<int of {cast('int', value).bit_length()} bits>"
    if kind in (int, float, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return _tagged(value, _short(str.__str__(value), 80), (str,))
    if isinstance(value, bytes):
        head = bytes.__getitem__(value, slice(0, 60))
        return _tagged(value, f"{head!r}, {bytes.__len__(value)} bytes", (bytes,))
    if isinstance(value, dict):
        mapping = cast("dict[object, object]", value)
        pairs = list(dict[object, object].items(mapping))
        inner = ", ".join(
            f"{describe(key, depth + 1)}: {describe(item, depth + 1)}" for key, item in pairs[:8]
        )
        return _tagged(mapping, f"{{{inner}{', ...' if len(pairs) > 8 else ''}}}", (dict,))
    if isinstance(value, list | tuple):
        sequence = cast("list[object] | tuple[object, ...]", value)
        items: list[object] = (
            list(list[object].__iter__(sequence))
            if isinstance(sequence, list)
            else list(tuple[object, ...].__iter__(sequence))
        )
        inner = ", ".join(describe(item, depth + 1) for item in items[:8])
        return _tagged(sequence, f"[{inner}{', ...' if len(items) > 8 else ''}]", (list, tuple))
    if isinstance(value, ToolResult):
        text: object = value.text
        shown = _short(text, 1_000) if type(text) is str else describe(text, depth + 1)
        return f"ToolResult({shown}, is_error={value.is_error!r})"
    if isinstance(value, HostileMapping):
        content = value._content  # noqa: SLF001 - our own class
        return _tagged(value, describe(content, depth + 1), ())
    return f"<{kind.__name__}>"


def replay(seed: int, index: int, tool: Tool = ask_user_question) -> int:
    """Run one input, print what it was and what came back; 1 if it failed."""
    case = make_case(seed, index)
    print(f"seed {seed} index {index}: {case.kind}")
    print(f"service: {case.mode}; provider plan: {case.provider.plan} ({case.provider.style})")
    print(f"arguments: {describe(case.arguments)}")
    print(f"signal: {case.signal!r}; agent: {describe(case.agent)}; max_bytes: {case.max_bytes}")
    print(f"the size limit must: {case.expect or 'no expectation'}")

    seen: list[object] = []

    async def once() -> Finding | None:
        return await run_case(case, tool, seen=seen)

    finding = asyncio.run(once())
    for request in case.provider.requests:
        print(f"the provider was asked: {describe(request)}")
    if case.provider.answered:
        print(f"the provider answered: {describe(case.provider.answer)}")
    for result in seen:
        print(f"the tool returned: {describe(result)}")
    if finding is None:
        print("every invariant holds")
        return 0
    print(f"FAILED: {finding.signature}\n    {finding.detail}")
    if finding.error is not None:
        traceback.print_exception(finding.error)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("count", nargs="?", type=int, default=10_000, help="inputs to run (10000)")
    parser.add_argument("--seed", type=int, help="the run's seed (default: a fresh one, printed)")
    parser.add_argument("--index", type=int, help="replay this one input of --seed")
    parser.add_argument("--stop-on-first", action="store_true", help="stop at the first failure")
    options = parser.parse_args(argv)
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr] # a TextIOWrapper
    if options.index is not None:
        if options.seed is None:
            parser.error("--index needs --seed")
        return replay(options.seed, options.index)
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"fuzzing ask_user_question: {options.count} inputs, seed {seed}", flush=True)
    last = [time.perf_counter()]

    def progress(report: Report) -> None:
        faulthandler.dump_traceback_later(300, exit=True)  # a hung input stops the run
        now = time.perf_counter()
        if now - last[0] > 10:
            last[0] = now
            rate = report.inputs / report.seconds
            print(f"  {report.inputs} inputs, {rate:.0f}/s, {report.failures} failing", flush=True)

    faulthandler.dump_traceback_later(300, exit=True)
    try:
        report = fuzz(options.count, seed, stop_on_first=options.stop_on_first, progress=progress)
    finally:
        faulthandler.cancel_dump_traceback_later()
    print(report.summary())
    return 1 if report.groups else 0


if __name__ == "__main__":
    sys.exit(main())
