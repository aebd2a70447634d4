"""A provider wrapper that checks both directions of the interface at runtime.

In the spirit of :mod:`wsgiref.validate`: put it between a service and a
provider under development, and every request the provider receives and every
answer it returns is checked against the spec.

How ``PRV-MUTATE-1`` is checked: before the call, the wrapper takes a
snapshot of what the spec defines, and compares it with a second one after.

* The spec's own data is compared by value: the questions list (the same
  list object, its length, each question), and in every question ``id``,
  ``question``, ``detail``, ``header``, ``multiSelect``, ``options`` (the same
  list, each option's ``label`` and ``description``) and ``intent`` (its
  ``kind`` and ``approve``). Strings and booleans compare by type and value;
  lists and mappings by identity and contents; a key added or removed is a
  change.
* Everything else is compared by identity, never with ``==`` and never
  copied: the values of keys the spec does not name (``REQ-EXTRA-1`` allows
  any object there: a lock, a handle, an object whose copy is not equal to
  it), and the request's ``agent`` and ``signal``. Replacing such a value is a
  mutation; what happens inside it is the application's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, TypeAlias, cast, final

from ._checks import bad_answer, check_request, must_violations
from ._errors import ErrorCode, UserInteractionError
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest, UserInteractionProvider

__all__ = ["ValidatingProvider"]


@final
class _Same:
    """A value compared by identity only; holding it keeps its identity from being reused."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value

    __hash__ = None  # type: ignore[assignment] # compared, never hashed


@final
class _Items:
    """The shape of a list whose items all have the shape *item*."""

    __slots__ = ("item",)

    def __init__(self, item: _Shape) -> None:
        self.item = item


#: A shape: a mapping's known keys and their shapes, a list of items, or a scalar.
_Shape: TypeAlias = "dict[str, _Shape] | _Items | str"

#: A string or a boolean, compared by type and value.
_SCALAR: Final = "scalar"
_OPTION: Final[_Shape] = {"label": _SCALAR, "description": _SCALAR}
_INTENT: Final[_Shape] = {"kind": _SCALAR, "approve": _SCALAR}
_QUESTION: Final[_Shape] = {
    "id": _SCALAR,
    "question": _SCALAR,
    "detail": _SCALAR,
    "header": _SCALAR,
    "multiSelect": _SCALAR,
    "options": _Items(_OPTION),
    "intent": _INTENT,
}
#: ``agent`` and ``signal`` are not listed: like unknown keys, they compare by identity.
_REQUEST: Final[_Shape] = {"questions": _Items(_QUESTION)}


def _snapshot(value: object, shape: _Shape | None) -> object:
    """What ``PRV-MUTATE-1`` compares of *value*, found where the spec expects *shape*.

    A value that does not have its expected shape (which a provider can only
    have put there after the request was checked) compares by identity.
    """
    if shape is None:
        return _Same(value)
    if isinstance(shape, str):
        kind = type(value)
        return (kind, value) if kind is str or kind is bool else _Same(value)
    if isinstance(shape, _Items):
        if not isinstance(value, list | tuple):
            return _Same(value)
        items = cast("list[object] | tuple[object, ...]", value)
        return _Same(items), tuple(_snapshot(item, shape.item) for item in items)
    if not (type(value) is dict or isinstance(value, Mapping)):
        return _Same(value)
    mapping = cast("Mapping[object, object]", value)
    return _Same(mapping), {
        key: _snapshot(item, shape.get(key) if type(key) is str else None)
        for key, item in mapping.items()
    }


@final
class ValidatingProvider:
    """Wrap *provider* so that both sides of every ask are checked.

    * The request it receives must pass :func:`check_request`; a bad one
      raises that error before the provider sees it.
    * The provider must not mutate the request (``PRV-MUTATE-1``): the data
      the spec defines compares by value, and every other value by identity.
    * The answer must keep every ``MUST`` answer rule; a bad one raises
      ``BAD_ANSWER`` with the raw answer on the error.

    >>> import asyncio
    >>> from dsh_user_interaction import ScriptedProvider, answer_of, answer_selected
    >>> from dsh_user_interaction import UserInteractionError
    >>> sloppy = ScriptedProvider(respond=lambda request: answer_of(answer_selected("go", "yes")))
    >>> request = {"questions": [{"id": "go", "question": "Go?", "options": [{"label": "Yes"}]}]}
    >>> try:
    ...     asyncio.run(ValidatingProvider(sloppy).ask(request))
    ... except UserInteractionError as error:
    ...     print(error.code, error.violations[0].requirement, error.answer)
    BAD_ANSWER ANS-SEL-3 {'answers': [{'id': 'go', 'selected': ['yes']}]}
    """

    __slots__ = ("_provider",)

    def __init__(self, provider: UserInteractionProvider) -> None:
        self._provider = provider

    @property
    def provider(self) -> UserInteractionProvider:
        """The wrapped provider."""
        return self._provider

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Check *request*, ask the wrapped provider, and check its answer."""
        check_request(request)
        before = _snapshot(request, _REQUEST)
        answer = await self._provider.ask(request)
        if _snapshot(request, _REQUEST) != before:
            msg = "the provider mutated the request it was given (PRV-MUTATE-1)"
            raise UserInteractionError(msg, ErrorCode.BAD_ANSWER, answer=answer)
        violations = must_violations(request, answer)
        if violations:
            raise bad_answer(answer, violations)
        return answer

    def __repr__(self) -> str:
        return f"ValidatingProvider({self._provider!r})"
