"""Broken rules as data: what was broken, where, and the requirement it breaks.

A violation is found once, by the checks in ``_checks.py``, and then worded
for whoever reads it: the service's ``BAD_REQUEST`` and ``BAD_ANSWER``
messages, and the tool's ``Error: $.path: problem`` lines for a model. Every
quoted value is shortened and no ``repr`` of a caller's object is ever
called, so a hostile input cannot make a message huge or make the wording
itself raise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, Literal, cast

__all__ = [
    "MISSING",
    "Level",
    "RequestViolation",
    "Violation",
    "json_path",
    "json_type",
    "quote",
    "type_name",
]

Level = Literal["MUST", "SHOULD"]

#: Longer strings are shortened in messages, so a hostile input cannot make them huge.
QUOTE_LIMIT: Final = 200


_SURROGATES: Final = re.compile("[\ud800-\udfff]")


def _js_quote(value: str) -> str:
    # As JSON.stringify writes it: non-ASCII raw, lone surrogates as \\udXXX.
    quoted = json.dumps(value, ensure_ascii=False)
    return _SURROGATES.sub(lambda match: f"\\u{ord(match.group()):04x}", quoted)


def quote(value: str) -> str:
    """*value* quoted as ``JSON.stringify`` writes it, shortened past :data:`QUOTE_LIMIT`.

    >>> print(quote("é\\nb"), quote("x" * 300)[-20:])
    "é\\nb" ..." (300 characters)
    """
    value = str.__str__(value)  # a str subclass's own methods are never called
    if len(value) <= QUOTE_LIMIT:
        return _js_quote(value)
    return f'{_js_quote(value[:QUOTE_LIMIT])[:-1]}..." ({len(value)} characters)'


_NAME_OF_TYPE: Final = type.__dict__["__name__"]


def type_name(value: object) -> str:
    """The name of *value*'s type, for messages, shortened; never runs the value's own code.

    The name is read through ``type`` itself, so a metaclass that overrides
    ``__name__`` cannot make it raise, return a non-string, or grow a message.
    """
    try:
        name = _NAME_OF_TYPE.__get__(type(value))
    except Exception:  # noqa: BLE001 - the name is only for a message
        return "object"
    if type(name) is not str:  # pragma: no cover - type.__name__ is always a str
        return "object"
    return name if len(name) <= 60 else f"{name[:60]}..."


class _Missing:
    """The value of a key that is absent."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: Stands for the value of an absent key in a :class:`RequestViolation`.
MISSING: Final = _Missing()

#: How each kind a request field must have is named for Python callers and for a model.
_EXPECTED: Final[dict[str, tuple[str, str]]] = {
    "mapping": ("a mapping", "an object"),
    "list": ("a list", "an array"),
    "non-empty list": ("a non-empty list", "an array"),
    "string": ("a string", "a string"),
    "non-empty string": ("a non-empty string", "a non-empty string"),
    "bool": ("a bool", "a boolean"),
    "AbortSignal": ("an AbortSignal", "an AbortSignal"),
    "finite number": ("a finite number (seconds since the epoch)", "a finite number"),
}

#: The model-facing spelling of keys whose wire spelling differs.
_MODEL_KEYS: Final = {"multiSelect": "multi_select"}


#: Keys written ``.key`` in a JSON path; others are written ``["key"]``.
_IDENTIFIER: Final = re.compile("[A-Za-z_$][A-Za-z0-9_$]*")


def json_path(path: tuple[str | int, ...]) -> str:
    """A JSON path such as ``$.questions[2].options[0].label``.

    >>> json_path(("questions", 2, "multi_select"))
    '$.questions[2].multi_select'
    >>> json_path(("questions", 0, "a.b]"))
    '$.questions[0]["a.b]"]'
    """
    parts = ["$"]
    for step in path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif _IDENTIFIER.fullmatch(step):
            parts.append(f".{step}")
        else:
            parts.append(f"[{quote(step)}]")  # quoted and shortened, so never ambiguous
    return "".join(parts)


def json_type(value: object) -> str:
    """The JSON name of *value*'s type: ``null``, ``boolean``, ``number`` and so on."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type_name(value)


def _field(path: tuple[str | int, ...]) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


@dataclass(frozen=True, slots=True)
class RequestViolation:
    """One broken request rule (``REQ-*``), with the path of the field that breaks it.

    >>> violation = RequestViolation(
    ...     "REQ-MULTI-1", ("questions", 0, "multiSelect"), "bool", "no", question="q")
    >>> violation.describe()
    'question "q" (questions[0]): multiSelect must be a bool, got str'
    >>> violation.describe_for_model()
    '$.questions[0].multi_select: expected a boolean, got string'
    """

    #: The requirement ID in ``spec/user-interaction.md``.
    requirement: str
    #: The path of the field from the request, such as
    #: ``("questions", 2, "options", 0, "label")``.
    path: tuple[str | int, ...]
    #: What the field must be, one of ``mapping``, ``list``, ``non-empty list``,
    #: ``string``, ``non-empty string``, ``bool``, ``AbortSignal``,
    #: ``finite number``, ``unique``, ``answer`` (a default the answer rules
    #: accept) and ``present`` (a key that defaults elsewhere require).
    expected: str
    #: The offending value; ``MISSING`` when the key is absent.
    value: object = MISSING
    #: The id of the question, when it has a valid one.
    question: str | None = None
    #: For ``unique``: the path of the earlier field it repeats.
    earlier: tuple[str | int, ...] | None = None
    #: For ``answer`` (a question's ``default``): what the answer rules found.
    detail: str | None = None

    def _got(self, model: bool) -> str:
        if self.value is MISSING:
            return "nothing"
        if isinstance(self.value, str) and not str.__len__(self.value):
            return "an empty string"
        return json_type(self.value) if model else type_name(self.value)

    def _where(self) -> tuple[str, str]:
        """The question part of the location, and the field inside it."""
        path = self.path
        if len(path) >= 2 and path[0] == "questions" and isinstance(path[1], int):
            if len(path) == 2:
                return f"questions[{path[1]}]", ""
            if self.question is not None:
                return f"question {quote(self.question)} (questions[{path[1]}])", _field(path[2:])
            return f"questions[{path[1]}]", _field(path[2:])
        return "", _field(("request", *path))

    def location(self) -> str:
        """Where the problem is, as a ``BAD_REQUEST`` message starts (``SVC-ORDER-3``).

        ``request.<key>`` for a key of the request (``request`` for the request
        itself); ``questions[<i>]`` for a question that is not a mapping; and
        for a field of a question, ``question "<id>" (questions[<i>]): <field>``,
        or ``questions[<i>]: <field>`` when the question has no valid id.

        >>> RequestViolation("REQ-OPTIONS-1", ("questions", 1, "options", 0, "label"),
        ...                  "non-empty string", None, question="q").location()
        'question "q" (questions[1]): options[0].label'
        """
        where, field = self._where()
        if not where:
            return field
        return f"{where}: {field}" if field else where

    def describe(self) -> str:
        """The ``BAD_REQUEST`` message: the :meth:`location`, then the problem."""
        where, field = self._where()
        if self.expected == "unique":
            if self.path and self.path[-1] == "id":
                return f"{where}: id duplicates an earlier question's id"
            label = quote(cast("str", self.value))
            return f"{where}: {field} {label} duplicates an earlier option's label"
        if self.expected == "answer":
            return f"{self.location()} is not an answer the question accepts: {self.detail}"
        if self.expected == "present":
            return f"{self.location()} is required when any question has a default"
        problem = f"must be {_EXPECTED[self.expected][0]}, got {self._got(model=False)}"
        return f"{self.location()} {problem}"

    def model_path(self) -> tuple[str | int, ...]:
        """The path in the model's vocabulary (``multi_select``, not ``multiSelect``)."""
        return tuple(_MODEL_KEYS.get(step, step) if isinstance(step, str) else step
                     for step in self.path)  # fmt: skip

    def describe_for_model(self) -> str:
        """The tool's wording: ``$.questions[2].multi_select: expected a boolean, got string``."""
        here = json_path(self.model_path())
        if self.expected == "unique":
            earlier = json_path(self.earlier or ())
            return f"{here}: {quote(cast('str', self.value))} duplicates {earlier}"
        if self.expected == "answer":
            return f"{here}: not an answer the question accepts: {self.detail}"
        if self.value is MISSING:
            return f"{here}: required"
        return f"{here}: expected {_EXPECTED[self.expected][1]}, got {self._got(model=True)}"


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
        where = f"question {quote(self.question)}: " if self.question is not None else ""
        return f"{self.requirement} ({self.level}): {where}{self.message}"
