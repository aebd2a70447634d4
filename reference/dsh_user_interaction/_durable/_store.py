"""The ask store: where a durable ask and its one outcome are kept.

A store holds one :class:`AskRecord` per ask id. A record is *pending* until
it is settled, exactly once, with an :class:`Outcome`; the first settlement
wins and every later one is refused, returning the winner
(``DUR-ONCE-1``). Every put and every settlement takes the next number of
the store's change sequence, so a watcher reads what changed after the last
number it saw, and misses nothing whatever it was doing in between.

The protocol is small on purpose. Everything else (the provider that waits
on a store, the relay that shows its asks on a UI, expiry and the audit
export) is written once against it, in :mod:`dsh_user_interaction.durable`.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, Protocol, TypeAlias, cast

from .._errors import ErrorCode, UserInteractionError
from .._json import JsonError, read_json
from .._types import AskUserQuestionAnswer, AskUserQuestionRequest

__all__ = [
    "ASK_ID_KEY",
    "SETTLED_STATES",
    "AskRecord",
    "AskState",
    "AskStore",
    "Outcome",
    "Settlement",
    "StoredRequest",
    "decode_json",
    "encode_json",
    "store_failed",
    "stored_request",
]

#: The request's extra key (``REQ-EXTRA-1``) that names an ask: a caller that
#: can name its ask (a model's tool-call id, say) passes it, so that asking
#: again after a restart finds the same ask (``DUR-ID-1``).
ASK_ID_KEY: Final = "askId"

#: Where an ask stands. ``pending`` until settled; then one of the others, for good.
AskState: TypeAlias = Literal["pending", "answered", "cancelled", "aborted", "expired"]

#: The states of a settled ask.
SETTLED_STATES: Final[frozenset[str]] = frozenset({"answered", "cancelled", "aborted", "expired"})

#: A request as a store keeps it: plain JSON data, without the live ``signal``,
#: and with the ``agent`` as the text a UI shows, when there is one.
StoredRequest: TypeAlias = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an ask ended: what :meth:`AskStore.settle` writes, once.

    Build one with :meth:`answered`, :meth:`cancelled`, :meth:`aborted` or
    :meth:`expired`. *principal* is who answered or dismissed, as the UI
    names them; *via* is which UI.

    >>> Outcome.answered({"answers": []}, principal="ana", via="web").state
    'answered'
    """

    state: Literal["answered", "cancelled", "aborted", "expired"]
    answer: AskUserQuestionAnswer | None = None
    principal: str | None = None
    via: str | None = None

    def __post_init__(self) -> None:
        if self.state not in SETTLED_STATES:
            msg = f"Outcome.state must be one of {sorted(SETTLED_STATES)}, got {self.state!r}"
            raise ValueError(msg)
        if (self.state == "answered") != (self.answer is not None):
            msg = "Outcome.answer is required when the state is 'answered', and only then"
            raise ValueError(msg)
        for name in ("principal", "via"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                msg = f"Outcome.{name} must be a string or None, got {value!r}"
                raise TypeError(msg)

    @classmethod
    def answered(
        cls, answer: AskUserQuestionAnswer, *, principal: str | None = None, via: str | None = None
    ) -> Outcome:
        """The human answered (the ask returns *answer*)."""
        return cls("answered", answer, principal, via)

    @classmethod
    def cancelled(cls, *, principal: str | None = None, via: str | None = None) -> Outcome:
        """The human dismissed the batch (the ask raises ``ASK_CANCELLED``)."""
        return cls("cancelled", None, principal, via)

    @classmethod
    def aborted(cls, *, via: str | None = None) -> Outcome:
        """The asking program's signal aborted (the ask raises ``ASK_ABORTED``)."""
        return cls("aborted", None, None, via)

    @classmethod
    def expired(cls, *, via: str | None = None) -> Outcome:
        """No agent came back for the ask in time (the ask raises ``ASK_ABORTED``)."""
        return cls("expired", None, None, via)


@dataclass(frozen=True, slots=True)
class AskRecord:
    """One ask as a store keeps it, and, once settled, its audit record.

    Times are seconds since the epoch (``time.time()``), read by the process
    that wrote them. *seq* is the store's change number of the record's last
    change: a put, or its settlement.
    """

    ask_id: str
    request: StoredRequest
    asked_at: float
    seq: int
    state: AskState = "pending"
    answer: AskUserQuestionAnswer | None = None
    principal: str | None = None
    via: str | None = None
    settled_at: float | None = None

    @property
    def pending(self) -> bool:
        """Whether the ask still waits for its outcome."""
        return self.state == "pending"

    @property
    def outcome(self) -> Outcome | None:
        """The outcome the record was settled with; ``None`` while pending."""
        if self.state == "pending":
            return None
        return Outcome(self.state, self.answer, self.principal, self.via)

    def to_json(self) -> dict[str, object]:
        """The record as plain JSON data: one line of the audit export."""
        return {
            "askId": self.ask_id,
            "state": self.state,
            "askedAt": self.asked_at,
            "settledAt": self.settled_at,
            "principal": self.principal,
            "via": self.via,
            "answer": self.answer,
            "request": self.request,
            "seq": self.seq,
        }


class Settlement(NamedTuple):
    """What :meth:`AskStore.settle` returns: whether this call won, and the record."""

    #: Whether this call settled the ask; ``False`` when an earlier outcome stands.
    won: bool
    #: The settled record, with this call's outcome when it won, else the earlier one.
    record: AskRecord


class AskStore(Protocol):
    """Where durable asks are kept; see the spec's ``DUR-STORE-*`` requirements.

    Every method may be called from several tasks at once, and several
    stores (in several processes, or on several machines) may open the same
    data: each method is atomic across all of them.

    A store whose database fails (disk full, read-only, locked beyond its
    wait, out of reach, corrupt, of another layout) raises
    :class:`~dsh_user_interaction.UserInteractionError` with the code
    ``STORE_FAILED``, the database's own error as its ``__cause__`` and the
    cause named in its message (``DUR-FAIL-1``); a write that raised it may
    or may not have been kept, and trying it again is safe (a put is
    put-if-absent, a settlement compare-and-set).
    """

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        """Add a pending ask, unless *ask_id* is known: return the record that is kept.

        A known ask id keeps its record, pending or settled, unchanged.
        """
        ...

    async def get(self, ask_id: str) -> AskRecord | None:
        """The record of *ask_id*, or ``None`` when the store has none."""
        ...

    async def pending(self) -> list[AskRecord]:
        """Every pending ask, oldest first (by ``seq``)."""
        ...

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        """Settle *ask_id* with *outcome* if it is pending; the first settlement wins.

        Raises :class:`KeyError` when the store has no such ask.
        """
        ...

    async def changes(self, after: int) -> list[AskRecord]:
        """The records whose last change came after change number *after*, by ``seq``."""
        ...

    def watch(self, after: int = 0) -> AsyncIterator[AskRecord]:
        """Yield each record that changes after change number *after*, as it changes.

        Never ends by itself; a put or a settlement by any store on the same
        data shows up promptly (a store documents how promptly).
        """
        ...

    async def records(self, *, settled_after: float | None = None) -> list[AskRecord]:
        """The settled records, oldest settlement first: the audit record."""
        ...

    async def purge(self, *, settled_before: float) -> int:
        """Delete the settled records settled before *settled_before*; return how many."""
        ...

    async def close(self) -> None:
        """Release the store's connections; the data stays for the next opening."""
        ...


def encode_json(value: object) -> str:
    """*value* as compact, ASCII-only JSON text, which every store keeps unchanged.

    Lone surrogates and NUL survive as escapes (a PostgreSQL ``jsonb`` column
    would refuse them, so stores keep the text).
    """
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def decode_json(text: str) -> Any:  # noqa: ANN401 - JSON data, as json.loads returns it
    """Read what :func:`encode_json` wrote."""
    return json.loads(text)


def stored_request(request: AskUserQuestionRequest) -> StoredRequest:
    """*request* as a store keeps it: JSON data, no signal, the agent as text.

    Raises :class:`ValueError` naming the key when a value cannot be kept as
    JSON (an extra key holding an object, say).

    >>> stored_request({"questions": [{"id": "q", "question": "Go?"}], "askId": "call-1"})
    {'questions': [{'id': 'q', 'question': 'Go?'}], 'askId': 'call-1'}
    """
    data: dict[str, object] = {}
    for key, value in request.items():
        if key == "signal":
            continue
        if key == "agent":
            label = agent_label(value)
            if label is not None:
                data["agent"] = label
            continue
        data[key] = value
    try:
        plain = read_json(data)
    except JsonError as error:
        msg = f"the request cannot be kept in a store: {error}"
        raise ValueError(msg) from None
    return cast("StoredRequest", plain)


def agent_label(agent: object) -> str | None:
    """What a UI in another process shows for the asking *agent*: its name, or its text."""
    if agent is None:
        return None
    if isinstance(agent, str):
        return agent
    name = getattr(agent, "name", None)
    if isinstance(name, str):
        return name
    return None


def checked_time(value: object, name: str) -> float:
    """*value* as a finite number of seconds, or a ``TypeError``/``ValueError`` naming *name*."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{name} must be a number of seconds, got {value!r}"
        raise TypeError(msg)
    if not math.isfinite(value):
        msg = f"{name} must be finite, got {value!r}"
        raise ValueError(msg)
    return float(value)


def checked_ask_id(value: object) -> str:
    """*value* as an ask id: a non-empty string, or a ``TypeError``/``ValueError``."""
    if not isinstance(value, str):
        msg = f"the ask id ({ASK_ID_KEY}) must be a string, got {value!r}"
        raise TypeError(msg)
    if not value:
        msg = f"the ask id ({ASK_ID_KEY}) must not be empty"
        raise ValueError(msg)
    return value


def store_failed(doing: str, reason: str, cause: BaseException) -> UserInteractionError:
    """The ``STORE_FAILED`` error of a store that failed while *doing* something (``DUR-FAIL-1``).

    *reason* names the cause in plain words; the database's own words follow.
    Raise it ``from`` *cause*, so that the cause is kept as ``__cause__``.

    >>> error = store_failed("settle the ask 'a'", "the disk is full", OSError("no space"))
    >>> error.code
    <ErrorCode.STORE_FAILED: 'STORE_FAILED'>
    >>> print(error)
    the ask store could not settle the ask 'a': the disk is full (OSError: no space)
    """
    detail = str(cause).strip().splitlines()
    if detail and detail[0] in reason:
        return UserInteractionError(
            f"the ask store could not {doing}: {reason}", ErrorCode.STORE_FAILED
        )
    words = f"{type(cause).__name__}: {detail[0]}" if detail else type(cause).__name__
    return UserInteractionError(
        f"the ask store could not {doing}: {reason} ({words})", ErrorCode.STORE_FAILED
    )
