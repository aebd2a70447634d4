"""JSON as ``JSON.stringify`` writes it, and lossless reading of what a model sends.

Design notes:

* :func:`js_quote` and :func:`js_stringify` write JSON the way ECMAScript's
  ``JSON.stringify`` does: non-ASCII characters raw, control characters
  escaped, lone surrogates as ``\\udXXX`` (so the text is always strict
  UTF-8), no spaces. The BAD_INTENT message and the tools' output share them.
* :func:`read_json` turns untrusted input (JSON text, or a mapping built by a
  harness) into plain ``dict``/``list``/``str``/``int``/``float``/``bool``/
  ``None`` data, reading every container exactly once. What it returns is
  what was read, so a mapping subclass that shows one thing to ``len`` and
  another to ``items`` cannot get past the size limit. It never raises
  anything but :class:`JsonError`, which names the JSON path of the problem:
  ``NaN`` and ``Infinity`` are not JSON, and nor is anything JSON cannot carry.
* Nothing here recurses on the input, so depth costs no stack.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Final, cast

from ._violations import json_path, type_name

__all__ = [
    "MAX_DEPTH",
    "JsonError",
    "js_quote",
    "js_stringify",
    "json_path",
    "read_json",
    "replace_surrogates",
]

#: Containers nested deeper than this are refused; a model never needs more.
#: Note: the original has no limit; this reader never recurses, and refuses more.
MAX_DEPTH: Final = 64

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
#: Characters that ``str.splitlines`` breaks on and JSON leaves unescaped.
_LINE_BREAKS: Final = re.compile("[\x85\u2028\u2029]")


def _escape_surrogates(text: str) -> str:
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def replace_surrogates(text: str) -> str:
    """*text* with each lone surrogate replaced by U+FFFD, so it encodes as strict UTF-8."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def js_quote(value: str) -> str:
    """*value* quoted as ECMAScript's ``JSON.stringify`` writes it, never shortened.

    Non-ASCII characters stay raw, control characters are escaped, and lone
    surrogates are written ``\\udXXX``, so the text is always valid UTF-8.

    >>> print(js_quote("Approuvé \\"x\\"\\n\\ud800"))
    "Approuvé \\"x\\"\\n\\ud800"
    """
    return _escape_surrogates(json.dumps(value, ensure_ascii=False))


def js_stringify(value: object) -> str:
    """Plain JSON *value* as compact ``JSON.stringify`` text (no spaces), on one line.

    *value* must be data that :func:`read_json` returns, or the like; a
    non-finite number raises ``ValueError`` instead of writing ``NaN``.

    >>> print(js_stringify({"answers": [{"id": "é", "selected": []}]}))
    {"answers":[{"id":"é","selected":[]}]}
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Note: JSON.stringify writes U+0085, U+2028 and U+2029 raw; they are escaped
    # here, so the text is one line for every reader (the same JSON data).
    return _LINE_BREAKS.sub(lambda match: f"\\u{ord(match.group()):04x}", _escape_surrogates(text))


class JsonError(Exception):
    """Input that is not lossless JSON, with the path of the first problem."""

    def __init__(self, path: tuple[str | int, ...], problem: str) -> None:
        super().__init__(f"{json_path(path)}: {problem}")
        #: Where the problem is, from the root.
        self.path = path
        #: What is wrong there.
        self.problem = problem


class _NonFinite:
    """What ``NaN``, ``Infinity`` or ``-Infinity`` in JSON text parse to, to be refused."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token


def _plain_str(value: str) -> str:
    # A str subclass may override every method; the plain copy is what was sent.
    return str.__str__(value)


def read_json(value: object, *, max_bytes: int | None = None) -> object:
    """*value* as plain JSON data, or :class:`JsonError` naming the path of the problem.

    *value* is JSON text (``str`` or ``bytes``) or data built by a program.
    With *max_bytes*, input larger than that many bytes of UTF-8 JSON is
    refused: the text itself, or the compact JSON of what was read.

    >>> read_json('{"a": [1, "x"]}')
    {'a': [1, 'x']}
    >>> read_json('{"a": [NaN]}')
    Traceback (most recent call last):
    ...
    dsh_user_interaction._json.JsonError: $.a[0]: NaN is not a JSON number
    """
    if isinstance(value, str | bytes | bytearray):
        # The plain text, copied without calling any method a subclass overrides.
        text: str | bytes = (
            _plain_str(value) if isinstance(value, str) else memoryview(value).tobytes()
        )
        if max_bytes is not None:
            size = len(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
            if size > max_bytes:
                raise JsonError((), f"arguments are {size} bytes, over the {max_bytes}-byte limit")
        try:
            parsed: object = json.loads(text, parse_constant=_NonFinite)
        except RecursionError:
            raise JsonError((), "arguments are not valid JSON: nested too deeply") from None
        except ValueError as error:
            raise JsonError((), f"arguments are not valid JSON: {error}") from None
        # json.loads built plain containers; walk them for non-finite numbers and depth.
        return _walk(parsed, None)
    return _walk(value, max_bytes)


_MAPPING: Final = 1
_LIST: Final = 2


def _kind(value: object, path: tuple[str | int, ...]) -> tuple[int, object]:
    """``(0, plain copy)`` for a scalar, or ``(_MAPPING | _LIST, None)`` for a container."""
    try:
        if value is None or value is True or value is False:
            return 0, value
        if isinstance(value, str):
            return 0, _plain_str(value)
        if isinstance(value, int):
            plain_int = int.__index__(value)
            len(str(plain_int))  # refuses what no JSON text can hold
            return 0, plain_int
        if isinstance(value, float):
            plain_float = float.__float__(value)
            if not math.isfinite(plain_float):
                token = (
                    "NaN"
                    if math.isnan(plain_float)
                    else f"{'-' if plain_float < 0 else ''}Infinity"
                )
                raise JsonError(path, f"{token} is not a JSON number")
            return 0, plain_float
        if isinstance(value, _NonFinite):
            raise JsonError(path, f"{value.token} is not a JSON number")
        if isinstance(value, Mapping):
            return _MAPPING, None
        if isinstance(value, list | tuple):
            return _LIST, None
    except JsonError:
        raise
    except Exception as error:  # noqa: BLE001 - hostile values become errors
        raise JsonError(path, f"could not be read: {type_name(error)}") from None
    raise JsonError(path, f"a {type_name(value)} is not a JSON value")


def _children(
    value: object, kind: int, path: tuple[str | int, ...], limit: int | None
) -> list[tuple[str | int, object]]:
    """The items of a container, read once, with their keys or indices.

    With *limit*, at most that many items are read: a container with more is
    over the size limit anyway (every item costs a byte of JSON at least), and
    one that never ends is never read to the end.
    """
    if len(path) >= MAX_DEPTH:
        raise JsonError(path, f"nested more than {MAX_DEPTH} levels deep")
    try:
        listed: list[tuple[object, object]]
        if kind == _LIST:
            items = cast("list[object] | tuple[object, ...]", value)
            listed = list(itertools.islice(enumerate(items), limit))
        else:
            mapping = cast("Mapping[object, object]", value)
            listed = list(itertools.islice(mapping.items(), limit))
        if limit is not None and len(listed) >= limit:
            raise JsonError((), f"arguments are over the {limit - 1}-byte limit")
        pairs: list[tuple[str | int, object]] = []
        for key, item in listed:
            if isinstance(key, int) and kind == _LIST:
                pairs.append((key, item))
            elif isinstance(key, str):
                pairs.append((_plain_str(key), item))
            else:
                raise JsonError(path, f"object keys must be strings, got {type_name(key)}")
    except JsonError:
        raise
    except Exception as error:  # noqa: BLE001 - hostile containers become errors
        raise JsonError(path, f"could not be read: {type_name(error)}") from None
    return pairs


#: A container being copied: the copy, the items still to read, and its path.
_Frame = tuple[
    dict[str, object] | list[object], Iterator[tuple[str | int, object]], tuple[str | int, ...]
]


def _walk(root: object, max_bytes: int | None) -> object:
    """Copy *root* into plain JSON data without recursion, reading each container once."""
    kind, plain = _kind(root, ())
    if kind == 0:
        _check_size(plain, max_bytes)
        return plain
    limit = None if max_bytes is None else max_bytes + 1
    top: dict[str, object] | list[object] = {} if kind == _MAPPING else []
    # A lower bound of the JSON size, so that reading stops once it is over the limit.
    estimate = 2
    stack: list[_Frame] = [(top, iter(_children(root, kind, (), limit)), ())]
    while stack:
        target, pending, path = stack[-1]
        step = next(pending, None)
        if step is None:
            stack.pop()
            continue
        key, value = step
        where = (*path, key)
        kind, copied = _kind(value, where)
        if kind == 0:
            estimate += len(copied) if isinstance(copied, str) else 1
        else:
            container: dict[str, object] | list[object] = {} if kind == _MAPPING else []
            copied = container
            stack.append((container, iter(_children(value, kind, where, limit)), where))
        if isinstance(target, dict):
            target[cast("str", key)] = copied
            estimate += len(cast("str", key)) + 3
        else:
            target.append(copied)
            estimate += 1
        if max_bytes is not None and estimate > max_bytes:
            raise JsonError((), f"arguments are over the {max_bytes}-byte limit")
    _check_size(top, max_bytes)
    return top


def _check_size(data: object, max_bytes: int | None) -> None:
    if max_bytes is None:
        return
    size = len(json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise JsonError((), f"arguments are {size} bytes, over the {max_bytes}-byte limit")
