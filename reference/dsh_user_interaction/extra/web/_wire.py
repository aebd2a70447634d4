"""A behaviour on its way to the browser host, as JSON: each action named by its class."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Final, cast

from dsh_user_interaction_conformance import (
    Action,
    Behaviour,
    Dismiss,
    Nothing,
    Pick,
    Revise,
    Skip,
    TypeText,
)

__all__ = ["decode_behaviour", "encode_behaviour"]

_KINDS: Final[dict[str, type[Any]]] = {
    kind.__name__: kind for kind in (Pick, TypeText, Skip, Revise, Dismiss, Nothing)
}


def encode_behaviour(behaviour: Behaviour) -> object:
    """*behaviour* as JSON: a list of actions, or one object, each named by its class."""
    if isinstance(behaviour, tuple):
        return [_encode(action) for action in behaviour]
    return _encode(behaviour)


def _encode(value: Action | Dismiss | Nothing) -> dict[str, object]:
    return {"kind": type(value).__name__, **{f.name: getattr(value, f.name) for f in fields(value)}}


def _tuples(value: object) -> object:
    """*value* with every JSON list made a tuple again, as the behaviours hold them."""
    if isinstance(value, list):
        items = cast("list[object]", value)
        return tuple(_tuples(item) for item in items)
    return value


def decode_behaviour(wire: object) -> Behaviour:
    """The behaviour :func:`encode_behaviour` wrote."""
    if isinstance(wire, list):
        items = cast("list[object]", wire)
        return tuple(cast("Action", _decode(item)) for item in items)
    return cast("Dismiss | Nothing", _decode(wire))


def _decode(wire: object) -> object:
    if not isinstance(wire, dict):
        msg = f"a behaviour's part is an object, not {type(wire).__name__}"
        raise TypeError(msg)
    given = {str(k): _tuples(v) for k, v in cast("dict[object, object]", wire).items()}
    kind = _KINDS[str(given.pop("kind"))]
    made: object = kind(**given)
    return made
