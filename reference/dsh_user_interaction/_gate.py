"""The caller gate: which agents may ask a human at all.

Design notes:

* The gate is a policy object the application passes to the service
  (``UserInteractionService(gate=...)``). It has one method, :meth:`judge`,
  which looks at the request's ``agent`` and nothing else.
* The rule upstream is runtime ownership, not lineage: a live root agent may
  ask, a live child that another agent owns may not (it has no human of its
  own, and would wait for ever), and an agent the registry does not know, or
  no longer holds, is not live. A child session resumed as a new root is a
  root, and may ask.
* A child's owner is fixed when it enters the registry, as upstream's is: a
  child still live after its owner's entry ended is still a child, and is
  refused with ``DELEGATED_CALLER`` (its owner ending does not give it a
  human); only registering it again, as a root, makes it one.
* The gate runs after ``EMPTY_QUESTIONS`` and before ``BAD_REQUEST``
  (``GATE-1``): a caller that may not ask learns that first, rather than
  being led to fix a request that would be refused anyway, and the gate
  reads only ``agent``, which no structural rule reads (``REQ-AGENT-2``).
"""

from __future__ import annotations

import threading
import weakref
from typing import Final, Literal, Protocol, TypeAlias, final, runtime_checkable

from ._errors import ErrorCode

__all__ = ["CallerGate", "CallerVerdict", "LiveAgents"]

#: What :meth:`CallerGate.judge` returns: ``None`` admits the caller; either
#: code refuses it, and ``ask()`` raises that code with its fixed message.
CallerVerdict: TypeAlias = Literal[ErrorCode.CALLER_NOT_LIVE, ErrorCode.DELEGATED_CALLER] | None


@runtime_checkable
class CallerGate(Protocol):
    """Judges whether the calling agent may ask a human (``GATE-1`` to ``GATE-3``).

    Obligations:

    * :meth:`judge` is called once per ``ask()`` that passed stages 1 and 2,
      with the request's ``agent`` (``None`` when the request has none), on
      the event loop: it must be quick and must not block.
    * It returns ``None`` to admit, ``ErrorCode.CALLER_NOT_LIVE`` for an agent
      that is not the live one (stale, unknown, or no registry at all), or
      ``ErrorCode.DELEGATED_CALLER`` for a live agent another agent owns.
    * An exception it raises refuses the ask and propagates unchanged; a
      return value of any other kind refuses it with :class:`TypeError`.
    """

    def judge(self, agent: object) -> CallerVerdict:
        """Admit *agent* (``None``) or name why it may not ask."""
        ...


@final
class LiveAgents:
    """A registry of live agents that is also a :class:`CallerGate`.

    Register each agent when it starts, with the agent that owns it (``None``
    for a root), and forget it when it ends. Agents are held weakly when they
    can be, so a forgotten ``forget`` never keeps one alive, and a collected
    one is forgotten. Text and numbers are agents by value (``REQ-AGENT-2``):
    an equal one of the same type, built elsewhere, is the same agent.

    >>> from dsh_user_interaction import ErrorCode
    >>> class Agent:
    ...     pass
    >>> agents, root, child = LiveAgents(), Agent(), Agent()
    >>> agents.register(root)
    >>> agents.register(child, owner=root)
    >>> agents.judge(root) is None
    True
    >>> agents.judge(child)
    <ErrorCode.DELEGATED_CALLER: 'DELEGATED_CALLER'>
    >>> agents.forget(root)
    >>> agents.judge(root)
    <ErrorCode.CALLER_NOT_LIVE: 'CALLER_NOT_LIVE'>
    >>> agents.judge(child)  # its owner was fixed when it entered the registry
    <ErrorCode.DELEGATED_CALLER: 'DELEGATED_CALLER'>

    A request without an agent is admitted, as upstream admits one; pass
    ``require_agent=True`` to refuse it with ``CALLER_NOT_LIVE`` instead.
    """

    __slots__ = ("_lock", "_owners", "_require_agent")

    def __init__(self, *, require_agent: bool = False) -> None:
        self._require_agent = require_agent
        self._lock = threading.Lock()
        # An agent's key -> (a reference to the agent, whether another agent owns it).
        self._owners: dict[_Key, tuple[_Ref, bool]] = {}

    def register(self, agent: object, *, owner: object | None = None) -> None:
        """Record *agent* as live, owned by *owner* (``None``: a root agent).

        The owner is fixed here, as upstream fixes it when an agent enters
        its registry: the agent stays a child until it is registered again.
        """
        if agent is None:
            msg = "an agent to register must not be None"
            raise ValueError(msg)
        key = _key(agent)
        with self._lock:
            self._owners[key] = (self._ref(agent, key), owner is not None)

    def forget(self, agent: object) -> None:
        """Record that *agent* has ended; forgetting an unknown agent does nothing."""
        with self._lock:
            self._drop(_key(agent), agent)

    def judge(self, agent: object) -> CallerVerdict:
        """``None`` for a live root; ``DELEGATED_CALLER`` for a live child; else not live.

        A child is one registered with an owner, whether that owner is live
        or not: upstream fixes the owner when the child enters its registry.
        """
        if agent is None:
            return ErrorCode.CALLER_NOT_LIVE if self._require_agent else None
        with self._lock:
            if not self._holds(_key(agent), agent):
                return ErrorCode.CALLER_NOT_LIVE
            owned = self._owners[_key(agent)][1]
        return ErrorCode.DELEGATED_CALLER if owned else None

    def _holds(self, key: _Key, agent: object) -> bool:
        held = self._owners.get(key)
        return held is not None and _same(held[0](), agent)

    def _drop(self, key: _Key, agent: object) -> None:
        if self._holds(key, agent):
            del self._owners[key]

    def _ref(self, agent: object, key: _Key) -> _Ref:
        """A reference to *agent* that forgets it when it is collected."""
        if key[0] == "value":
            return _Strong(agent)

        def collected(_ref: object) -> None:
            with self._lock:
                held = self._owners.get(key)
                if held is not None and held[0]() is None:
                    del self._owners[key]

        try:
            return weakref.ref(agent, collected)
        except TypeError:
            return _Strong(agent)

    def __repr__(self) -> str:
        return f"<LiveAgents {len(self._owners)} live>"


class _Ref(Protocol):
    def __call__(self) -> object: ...


class _Strong:
    """A reference to an object that cannot be referenced weakly."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = value

    def __call__(self) -> object:
        return self._value


#: How an agent is found: text and numbers by value (an equal one of the same
#: type is the same agent, ``REQ-AGENT-2``), every other object by identity.
_Key: TypeAlias = tuple[str, object]
_BY_VALUE: Final = (str, int, float, bytes, bool)


def _key(agent: object) -> _Key:
    if type(agent) in _BY_VALUE:
        return ("value", (type(agent), agent))
    return ("identity", id(agent))


def _same(held: object, agent: object) -> bool:
    if type(agent) in _BY_VALUE:
        return type(held) is type(agent) and held == agent
    return held is agent
