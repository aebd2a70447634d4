"""Reading model text and the agent defensively, shared by the extras' UIs.

A request's text comes from a model and its agent from the caller: either may
be a str subclass with hostile overrides, or an object whose attributes
raise (``REQ-AGENT-2``). A UI reads them through these, so none of that code
runs and nothing it does can fail an ask.
"""

from __future__ import annotations

from typing import Final, cast

from dsh_user_interaction._violations import type_name

__all__ = ["NAME_LIMIT", "agent_name", "exact"]

#: The longest agent name shown, in characters; a longer one is cut, as it is one line.
NAME_LIMIT: Final = 80


def exact(value: object) -> str | None:
    """*value*'s characters as an exact ``str`` when it is a str of any kind, else ``None``.

    A str subclass is copied by ``str`` itself, so none of its overrides runs
    (``__hash__``, ``__eq__``, ``__len__``, ``__iter__``, ``__str__``...); an
    object that only claims to be a str, through its ``__class__``, is no str.
    A UI reads model text and the agent through this before it tests,
    compares or caches them.

    >>> class Loud(str):
    ...     def __hash__(self): raise RuntimeError("no")
    >>> type(exact(Loud("hi"))) is str, exact(3)
    (True, None)
    """
    if not issubclass(type(value), str):
        return None
    return str.__str__(cast("str", value))


def agent_name(agent: object) -> str | None:
    """Who is asking, as a UI shows it; ``None`` without an agent.

    The agent may be any object (``REQ-AGENT-2``), so it is read defensively,
    once per ask, and each step that raises or finds nothing falls to the next:
    its ``name`` when that is a non-empty str, the agent itself when it is a
    str, its ``str()``, and at last its type's name, which never fails. A str
    subclass is read as its characters (:func:`exact`), so none of its
    overrides runs; a name past :data:`NAME_LIMIT` characters is cut.

    >>> class Planner:
    ...     name = "planner"
    >>> agent_name(Planner()), agent_name("ops"), agent_name(None)
    ('planner', 'ops', None)
    """
    if agent is None:
        return None
    name = _name_attribute(agent) or exact(agent) or _str_of(agent) or type_name(agent)
    return name if len(name) <= NAME_LIMIT else name[:NAME_LIMIT] + "..."


def _name_attribute(agent: object) -> str | None:
    try:
        name = getattr(agent, "name", None)
    except Exception:  # noqa: BLE001 - a hostile agent object must not break the screen
        return None
    return exact(name)


def _str_of(agent: object) -> str | None:
    try:
        text = str(agent)  # may be a str subclass, from a __str__ of the agent's
    except Exception:  # noqa: BLE001 - a hostile agent object must not break the screen
        return None
    return exact(text)
