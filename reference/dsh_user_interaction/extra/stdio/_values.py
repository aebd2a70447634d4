"""Values on the wire: JSON with tagged objects (``HAR-VALUE-1``), and handles for identity.

See harness.md §4 and §6.

A :class:`Codec` belongs to one subject. It remembers every object that
crossed with a handle, in both directions, so that an object sent back is
written as a ``ref`` and a ``ref`` read back is the very object it names.

Rules the codec keeps:

* Only the suite's side mints handles beginning with ``s`` (``HAR-HANDLE-1``);
  a handle the other side mints is accepted as long as it does not.
* Encoding never runs the value's own code: no ``repr``, ``str``, ``__eq__``
  or ``__iter__`` of a foreign object is called, so a hostile value becomes
  an ``opaque`` tag instead of an exception.
* Decoding accepts exactly the schema's forms; anything else raises
  :class:`WireError` naming where in the value it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Generator, Iterable
from typing import Any, Final, cast

from dsh_user_interaction._abort import AbortController, AbortSignal
from dsh_user_interaction._errors import ErrorCode, HarnessError, UserInteractionError
from dsh_user_interaction._violations import type_name

__all__ = [
    "UNDEFINED",
    "Codec",
    "Opaque",
    "RemoteError",
    "Undefined",
    "WireError",
    "as_list",
    "as_object",
]

#: The largest integer every language reads exactly (JavaScript's ``Number.MAX_SAFE_INTEGER``).
SAFE_INTEGER: Final = 2**53 - 1
#: Keys whose plain-object values keep their identity across (``HAR-REF-1``): an agent.
IDENTITY_KEYS: Final = frozenset({"agent"})
#: Containers nested deeper than this are sent as opaque values.
MAX_DEPTH: Final = 200
_CODES: Final = frozenset(code.value for code in ErrorCode)
_NUMBERS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}
_STR: Final[type[Any]] = str
_DICT: Final[type[Any]] = dict
_LIST: Final[type[Any]] = list


def as_object(value: object) -> dict[str, Any] | None:
    """*value* as a JSON object (a plain ``dict``), or ``None`` when it is none."""
    return cast("dict[str, Any]", value) if type(value) is dict else None


def as_list(value: object) -> list[Any] | None:
    """*value* as a JSON array (a plain ``list``), or ``None`` when it is none."""
    if type(value) is not list:
        return None
    found: list[Any] = cast("Any", value)  # a cast both type checkers accept
    return found


class WireError(Exception):
    """A message's value breaks the protocol; the text says where and how."""


class Undefined:
    """JavaScript's ``undefined``, as it arrived: distinct from ``None``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


#: The one :class:`Undefined`.
UNDEFINED: Final = Undefined()


class Opaque:
    """A value the other side sent without a JSON form; only its identity counts."""

    __slots__ = ("handle", "type")

    def __init__(self, handle: str, type_: str) -> None:
        self.handle = handle
        self.type = type_

    def __repr__(self) -> str:
        return f"<opaque {self.type} {self.handle}>"


class RemoteError(Exception):
    """An error of the implementation that is not the seam's own (``HAR-ERROR-1``).

    It keeps the class *name* the implementation gave it, its *code* if it
    carries one (``None`` otherwise) and any *answer* it holds.

    >>> error = RemoteError("TypeError", "x is undefined")
    >>> str(error), error.name, error.code
    ('x is undefined', 'TypeError', None)
    """

    def __init__(
        self, name: str, message: str, code: str | None = None, *, answer: object = None
    ) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        self.code = code
        self.answer = answer

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        code = f", code={self.code!r}" if self.code is not None else ""
        return f"RemoteError({self.name!r}, {self.message!r}{code})"


def _plain_str(value: str) -> str:
    """A ``str`` subclass's characters as a plain ``str``, without its own methods."""
    return cast("str", _STR.__getitem__(value, slice(None)))


class Codec:
    """Encodes and decodes the values of one subject, keeping its handles."""

    def __init__(self, mint: Callable[[], str], *, suite: bool = True) -> None:
        self._mint = mint
        #: Whether this is the suite's side, whose handles begin with ``s``.
        self.suite = suite
        #: Handle to object, for both sides' handles.
        self.objects: dict[str, object] = {}
        #: ``id()`` of an object with a handle to its handle; ``objects`` keeps it alive.
        self._handles: dict[int, str] = {}
        #: The suite's own signals, by handle, and the child's signals' controllers.
        self.signals: dict[str, AbortSignal] = {}
        self.controllers: dict[str, AbortController] = {}
        #: Called with (handle, signal) the first time one of our signals is sent.
        self.on_signal: Callable[[str, AbortSignal], None] | None = None
        #: Where the handles used while :meth:`collecting` go (``HAR-RELEASE-1``).
        self._touched: set[str] | None = None

    # -- handles ---------------------------------------------------------

    def handle_of(self, value: object) -> str | None:
        """The handle *value* already has, if any."""
        return self._handles.get(id(value))

    def remember(self, value: object, handle: str | None = None) -> str:
        """Give *value* a handle (a fresh one of ours unless *handle* is given)."""
        known = self._handles.get(id(value))
        if known is not None:
            self._touch(known)
            return known
        handle = handle if handle is not None else self._mint()
        self.objects[handle] = value
        self._handles[id(value)] = handle
        self._touch(handle)
        return handle

    # -- releasing (HAR-RELEASE-1) ---------------------------------------

    @contextlib.contextmanager
    def collecting(self, into: set[str]) -> Generator[set[str]]:
        """Add to *into* every handle encoded or decoded inside the block."""
        outer, self._touched = self._touched, into
        try:
            yield into
        finally:
            self._touched = outer
            if outer is not None:
                outer |= into

    def _touch(self, handle: str) -> None:
        if self._touched is not None:
            self._touched.add(handle)

    def release(self, handles: Iterable[str]) -> None:
        """Never name *handles* again: their objects, sent again, go as new ones.

        What the other side wrote before it read the release still decodes,
        until :meth:`forget` drops the objects too.
        """
        for handle in handles:
            value = self.objects.get(handle)
            if value is not None and self._handles.get(id(value)) == handle:
                del self._handles[id(value)]
            signal = self.signals.get(handle)
            if signal is not None and self._handles.get(id(signal)) == handle:
                del self._handles[id(signal)]

    def forget(self, handles: Iterable[str]) -> None:
        """Drop *handles* and their objects altogether; unknown ones are skipped."""
        self.release(handles)
        for handle in handles:
            self.objects.pop(handle, None)
            self.signals.pop(handle, None)
            self.controllers.pop(handle, None)

    def check_theirs(self, handle: object, where: str) -> str:
        """*handle* as the other side may mint it (``HAR-HANDLE-1``).

        The suite's handles begin with ``s``, and the child's never do.
        """
        if type(handle) is not str or not handle:
            raise WireError(f"{where}: a handle must be a non-empty string (HAR-HANDLE-1)")
        if handle not in self.objects and handle.startswith("s") == self.suite:
            side = "only the suite mints" if self.suite else "the suite's begin with 's'"
            raise WireError(f"{where}: the handle {handle!r} is not the other side's: {side}")
        return handle

    # -- encoding --------------------------------------------------------

    def encode(self, value: object) -> object:
        """*value* as the wire writes it; objects with a handle become ``ref`` tags."""
        return self._encode(value, 0, set())

    def encode_top(self, value: object) -> tuple[object, str | None]:
        """*value* with a handle for the value itself (``HAR-REF-2``): the wire form and handle.

        Plain scalars have no identity to keep, and get no handle.
        """
        known = self.handle_of(value)
        if known is not None:
            self._touch(known)
            return {"$": "ref", "handle": known}, known
        encoded = self._encode(value, 0, set())
        if type(encoded) is _DICT:
            tagged: dict[str, Any] = encoded  # type: ignore[assignment]
            if tagged.get("$") in {"ref", "signal", "opaque"}:
                return encoded, str(tagged["handle"])
        if type(value) in {_DICT, _LIST}:
            return encoded, self.remember(value)
        return encoded, None

    def encode_value(self, value: object) -> object:
        """*value* written out in full at the top, even if it has a handle (``HAR-MUTATE-1``)."""
        return self._encode(value, 0, set(), top=True)

    def _encode(
        self, value: object, depth: int, path: set[int], *, top: bool = False, named: bool = False
    ) -> object:
        kind = type(value)
        if value is None or kind is bool:
            return value
        if kind is _STR:
            return value
        if not top:
            known = self._handles.get(id(value))
            if known is not None:
                self._touch(known)
                return {"$": "ref", "handle": known}
        if isinstance(value, AbortSignal):
            return self._signal(value)
        if isinstance(value, str):
            return _plain_str(value)
        if isinstance(value, int):
            number = int.__index__(value)
            if -SAFE_INTEGER <= number <= SAFE_INTEGER:
                return number
            return {"$": "bigint", "value": int.__repr__(number)}
        if isinstance(value, float):
            real = float.__float__(value)
            if math.isnan(real):
                return {"$": "number", "value": "NaN"}
            if math.isinf(real):
                return {"$": "number", "value": "Infinity" if real > 0 else "-Infinity"}
            if real == 0 and math.copysign(1.0, real) < 0:
                return {"$": "number", "value": "-0"}
            return real
        if value is UNDEFINED:
            return {"$": "undefined"}
        if depth < MAX_DEPTH and id(value) not in path:
            items = as_list(value)
            if items is not None:
                path.add(id(value))
                try:
                    return [self._encode(item, depth + 1, path) for item in items[:]]
                finally:
                    path.discard(id(value))
            mapping = as_object(value)
            if mapping is not None:
                pairs = list(mapping.items())
                if all(type(key) is str for key, _ in pairs):
                    path.add(id(value))
                    try:
                        body = {
                            key: self._encode(item, depth + 1, path, named=key in IDENTITY_KEYS)
                            for key, item in pairs
                        }
                    finally:
                        path.discard(id(value))
                    if named:
                        return {"$": "object", "value": body, "handle": self.remember(value)}
                    return {"$": "object", "value": body} if "$" in body else body
        return {"$": "opaque", "handle": self.remember(value), "type": type_name(value)}

    def _signal(self, signal: AbortSignal) -> object:
        known = self._handles.get(id(signal))
        first = known is None
        handle = self.remember(signal)
        if first:
            self.signals[handle] = signal
            if self.on_signal is not None:
                self.on_signal(handle, signal)
        if handle not in self.signals:
            return {"$": "ref", "handle": handle}  # the child's own signal, sent back
        tag: dict[str, object] = {"$": "signal", "handle": handle, "aborted": signal.aborted}
        if signal.aborted:
            tag["reason"] = self.encode(signal.reason)
        return tag

    def encode_error(self, error: BaseException) -> dict[str, object]:
        """*error* as §6 writes it: a ``ref``, or its fields with a fresh handle."""
        known = self.handle_of(error)
        if known is not None:
            return {"$": "ref", "handle": known}
        seam = isinstance(error, UserInteractionError)
        code: object = None
        if isinstance(error, HarnessError):
            code = str(error.code)
        elif isinstance(error, RemoteError):
            code = error.code
        encoded: dict[str, object] = {
            "is_seam_error": seam,
            "code": code,
            "message": _message_of(error),
            "name": type_name(error),
            "handle": self.remember(error),
        }
        answer = getattr(error, "answer", None) if seam or isinstance(error, RemoteError) else None
        if answer is not None:
            encoded["answer"] = self.encode(answer)
        if isinstance(error, asyncio.CancelledError):
            encoded["cancellation"] = True  # raised by the code itself, not a cancel of the call
        return encoded

    # -- decoding --------------------------------------------------------

    def decode(self, value: object, where: str = "value") -> object:
        """The object *value* stands for; raises :class:`WireError` for a malformed one."""
        return self._decode(value, where, 0)

    def decode_top(self, value: object, handle: object, where: str) -> object:
        """Decode *value* and remember it under the other side's *handle*, when given."""
        decoded = self._decode(value, where, 0)
        if handle is not None:
            mine = self.check_theirs(handle, f"{where} handle")
            if mine not in self.objects:
                self.remember(decoded, mine)
            self._touch(mine)
        return decoded

    def _decode(self, value: object, where: str, depth: int) -> object:
        if depth > MAX_DEPTH:
            raise WireError(f"{where}: nested deeper than {MAX_DEPTH}")
        kind = type(value)
        if value is None or kind in {bool, str, int, float}:
            return value
        if kind is _LIST:
            items: list[Any] = value  # type: ignore[assignment]
            return [self._decode(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(items)]
        if kind is not _DICT:
            raise WireError(f"{where}: {type_name(value)} is no JSON value")
        mapping: dict[str, Any] = value  # type: ignore[assignment]
        if "$" not in mapping:
            return {k: self._decode(v, f"{where}.{k}", depth + 1) for k, v in mapping.items()}
        return self._tag(mapping, where, depth)

    def _tag(self, tag: dict[str, Any], where: str, depth: int) -> object:
        name = tag["$"]
        keys = set(tag)

        def need(*fields: str, optional: tuple[str, ...] = ()) -> None:
            missing = [f for f in fields if f not in tag]
            extra = sorted(keys - {"$", *fields, *optional})
            if missing or extra:
                problem = (
                    f"lacks {missing[0]!r}" if missing else f"has the unknown key {extra[0]!r}"
                )
                raise WireError(f"{where}: the {name!r} tag {problem}")

        if name == "ref":
            need("handle")
            handle = tag["handle"]
            if type(handle) is not str or handle not in self.objects:
                raise WireError(f"{where}: 'ref' names {handle!r}, which no object was sent as")
            self._touch(handle)
            return self.objects[handle]
        if name == "signal":
            need("handle", "aborted", optional=("reason",))
            return self._their_signal(tag, where, depth)
        if name == "opaque":
            need("handle", "type")
            handle = self.check_theirs(tag["handle"], f"{where}.handle")
            found = self.objects.get(handle)
            if found is None:
                found = Opaque(handle, str(tag["type"]))
                self.remember(found, handle)
            self._touch(handle)
            return found
        if name == "number":
            need("value")
            number = tag["value"]
            if type(number) is not str or number not in _NUMBERS:
                raise WireError(f"{where}: the 'number' tag holds {number!r}")
            return _NUMBERS[number]
        if name == "bigint":
            need("value")
            digits = tag["value"]
            if type(digits) is not str or not digits.lstrip("-").isdigit() or not digits.isascii():
                raise WireError(f"{where}: the 'bigint' tag holds {digits!r}, not decimal digits")
            return int(digits)
        if name == "undefined":
            need()
            return UNDEFINED
        if name == "object":
            need("value", optional=("handle",))
            body = tag["value"]
            if type(body) is not dict:
                raise WireError(f"{where}: the 'object' tag's value is no object")
            inner = cast("dict[str, Any]", body)
            found = {k: self._decode(v, f"{where}.{k}", depth + 1) for k, v in inner.items()}
            if "handle" in tag:
                self.remember(found, self.check_theirs(tag["handle"], f"{where}.handle"))
            return found
        raise WireError(f"{where}: unknown tag {name!r}")

    def _their_signal(self, tag: dict[str, Any], where: str, depth: int) -> AbortSignal:
        handle = tag["handle"]
        if type(handle) is str and handle in self.signals:
            self._touch(handle)
            return self.signals[handle]  # our own, sent back as a tag
        handle = self.check_theirs(handle, f"{where}.handle")
        aborted = tag["aborted"]
        if type(aborted) is not bool:
            raise WireError(f"{where}: the signal's 'aborted' is not a boolean")
        controller = self.controllers.get(handle)
        if controller is None:
            controller = AbortController()
            self.controllers[handle] = controller
            self.remember(controller.signal, handle)
        else:
            self._touch(handle)
        if aborted and not controller.signal.aborted:
            controller.abort(self._decode(tag.get("reason"), f"{where}.reason", depth + 1))
        return controller.signal

    def decode_error(self, error: object, where: str) -> BaseException:
        """The exception a §6 error stands for."""
        if type(error) is not dict:
            raise WireError(f"{where}: an error must be an object")
        fields = cast("dict[str, Any]", error)
        if fields.get("$") == "ref":
            found = self._decode(fields, where, 0)
            if not isinstance(found, BaseException):
                raise WireError(f"{where}: the error 'ref' names something that is not an error")
            return found
        message, code = fields.get("message"), fields.get("code")
        if type(message) is not str:
            raise WireError(f"{where}: the error's 'message' is not a string")
        if code is not None and type(code) is not str:
            raise WireError(f"{where}: the error's 'code' is neither a string nor null")
        if type(fields.get("is_seam_error")) is not bool:
            raise WireError(f"{where}: the error's 'is_seam_error' is not a boolean")
        answer = (
            self._decode(fields["answer"], f"{where}.answer", 1) if "answer" in fields else None
        )
        name = fields.get("name")
        decoded: BaseException
        if fields.get("cancellation") is True:
            decoded = asyncio.CancelledError(message)
        elif fields["is_seam_error"] and code in _CODES:
            decoded = UserInteractionError(message, ErrorCode(code), answer=answer)
        else:
            shown = name if type(name) is str and name else "Error"
            decoded = RemoteError(shown, message, code, answer=answer)
        handle = fields.get("handle")
        if handle is not None:
            self.remember(decoded, self.check_theirs(handle, f"{where}.handle"))
        return decoded


def _message_of(error: BaseException) -> str:
    """The error's message, without trusting a hostile ``__str__``."""
    if isinstance(error, HarnessError | RemoteError):
        message: object = error.message
        if type(message) is str:
            return message
    try:
        text = BaseException.__str__(error)
    except Exception:  # noqa: BLE001 - the message is only for the other side
        return type_name(error)
    return text if type(text) is str else type_name(error)
