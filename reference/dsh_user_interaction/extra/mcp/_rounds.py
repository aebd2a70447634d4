"""Asks across round trips: the round state of MCP revision 2026-07-28.

This module holds what a round knows and what its ``requestState`` carries
(:class:`Rounds`); :func:`~dsh_user_interaction.extra.mcp.run_tool`
(``_run_tool.py``) runs a tool's body in rounds, and the provider
(``_provider.py``) asks through them. Imports go one way: ``_run_tool`` uses
``_provider``, which uses this module, which uses neither.

Design notes (the invariants these modules keep):

Rule 1: one code path. Revision 2026-07-28 has no server-initiated
requests: a tool call that needs the user's input ends with an
``InputRequiredResult`` (its input requests, keyed, and a ``requestState``),
the client asks its user, then calls the tool again with the answers
(``inputResponses``) and the state echoed, and the tool's body runs again
from the top. :func:`~dsh_user_interaction.extra.mcp.run_tool` runs a tool's body either way. On a
connection that can send requests (the revisions before 2026-07-28) it is
:func:`~dsh_user_interaction.extra.mcp.tool_call` around the body, and each
ask is one ``elicitation/create`` request. On 2026-07-28 it runs the body in
a task of its own; an ask that finds its answer returns it at once, and one
that does not registers its input request and waits. As soon as the body
waits on input alone, the round ends: the body is cancelled (its asks raise
``CancelledError``), and the tool's result is the input requests, with a
state that carries every answer given so far.

Rule 2: an answer goes only to the ask it answers. The *n*-th ask of a body
is keyed ``ask-<n>.<call>``, where *call* is the tool call's own id, minted
on its first round and carried in the state (or by its request's ``askId``):
the keys tell a client which ask a form belongs to, since the SDK does not
carry an input request's ``_meta`` to the client. The state keeps,
for each key, a digest of the form that was sent. A response, or an answer
kept in the state, is used only by an ask with the same key and the same
form: a body that asks something else on a later round is asked again.

Rule 3: a state is used once, and expires. The SDK seals the state
(``RequestStateSecurity``: encrypted, and bound to the tool, its arguments,
the server and, with OAuth, the principal, for a time to live). This module
adds a nonce to each state, marked in a ledger (``_ledger.py``) once the
state is used, until it expires: a state sent twice is refused, as is one
past its own ``ttl`` (so a state sealed by a codec of the application's
expires too). A refused state is a JSON-RPC error, ``INVALID_PARAMS``, that
says why. Several server processes accept each other's states when they
share the sealing keys; with a ledger they share too, a state used by one is
refused by all.

Rule 4: nothing waits between rounds. Between a result and its retry, no
ask is pending on the server: a client that never retries leaves nothing
behind, and a retry may reach a restarted server. Each round is a separate
``ask()`` to the seam, so observers hear one ask per round, each round but
the last cancelled.

Rule 5: time holds across rounds. An ask's wait ends at a moment fixed in
the round that first asks it (for the first ask, when the call first runs):
the first of its request's ``deadline`` and its signal's timeout
(``AbortSignal.timeout``, alone or in ``AbortSignal.any``), as an absolute
time carried in the state. A later round keeps that moment, whatever the
body's fresh signal or deadline says. An answer a retry brings after it is
late, and the ask ends as time running out ends it: ``ASK_ABORTED``, timed
out, the late answer kept on the error (never replaced by the request's
defaults). A late retry that brings no answer ends it as a legacy
connection's deadline does: where the moment was the request's
``deadline``, the error says so (``deadline_passed``), and the service
answers with the request's defaults where every question has one. Within a
round, the service's own timers end the ask as on any connection.

Rule 6: a state carries bounded data. A round whose state would keep more
answers than ``max_answers``, or be larger than ``max_state_bytes`` before
sealing, is refused with ``INVALID_PARAMS`` and a message that names the
limit: the client would otherwise send the state back, growing, on every
later round.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction._abort import times_out_at
from dsh_user_interaction._deadline import deadline_of
from dsh_user_interaction._durable._store import ASK_ID_KEY

from ._ledger import StateLedger

__all__ = [
    "DEFAULT_MAX_ANSWERS",
    "DEFAULT_MAX_STATE_BYTES",
    "DEFAULT_STATE_TTL",
    "ROUND_TRIP_VERSION",
    "Rounds",
    "StateLimits",
    "time_limit_of",
]

#: The first protocol revision whose tool calls take input in rounds.
ROUND_TRIP_VERSION: Final = "2026-07-28"
#: How long a ``requestState`` is accepted after it was issued, in seconds (the SDK's default).
DEFAULT_STATE_TTL: Final = 600.0
#: How many answers a ``requestState`` keeps at most, by default (Rule 6).
DEFAULT_MAX_ANSWERS: Final = 100
#: How large a ``requestState`` may be, by default, in bytes of its JSON before sealing (Rule 6).
DEFAULT_MAX_STATE_BYTES: Final = 256 * 1024
_STATE_FORMAT: Final = 1


def _refused(why: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"requestState refused: {why}")


def time_limit_of(request: AskUserQuestionRequest[Any]) -> float | None:
    """When *request*'s wait ends as this round sees it: the first of its deadline and its timeout.

    Seconds since the epoch, as :func:`time.time` gives; ``None`` when
    neither can end it (no ``deadline``, and a signal that only a controller
    aborts, or none).
    """
    limit = _limit_of(request)
    return None if limit is None else limit[0]


def _limit_of(request: AskUserQuestionRequest[Any]) -> tuple[float, bool] | None:
    """:func:`time_limit_of`, and whether the moment is the request's ``deadline``.

    The deadline is the limit when it comes no later than the signal's
    timeout: a legacy connection's service then answers with the defaults.
    """
    deadline = deadline_of(request)
    signal = request.get("signal")
    fires = None if signal is None else times_out_at(signal)
    timeout = None if fires is None else time.time() + (fires - asyncio.get_running_loop().time())
    if deadline is not None and (timeout is None or deadline <= timeout):
        return deadline, True
    if timeout is not None:
        return timeout, False
    return None


@dataclass(frozen=True, slots=True)
class StateLimits:
    """What a ``requestState`` may carry (Rule 6): answers kept, and its size before sealing."""

    max_answers: int = DEFAULT_MAX_ANSWERS
    max_bytes: int = DEFAULT_MAX_STATE_BYTES

    def __post_init__(self) -> None:
        for name, value in (
            ("max_answers", cast("object", self.max_answers)),
            ("max_state_bytes", cast("object", self.max_bytes)),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive int, got {value!r}"
                raise ValueError(msg)


@dataclass(eq=False)
class Rounds:
    """One round of a tool call on 2026-07-28: the answers known, and the input still needed."""

    #: Each key's form digest and answer (an ``ElicitResult`` as JSON), from earlier rounds.
    known: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict[str, Any])
    #: The form digest of each input request the last round sent.
    asked: dict[str, str] = field(default_factory=dict[str, str])
    #: This round's responses, by key.
    responses: Mapping[str, object] = field(default_factory=dict[str, object])
    #: When the wait of each ask not yet answered ends (seconds since the epoch), fixed
    #: in the round that first asked it.
    times: dict[str, float] = field(default_factory=dict[str, float])
    #: The keys of :attr:`times` whose moment is the request's ``deadline``.
    deadlines: set[str] = field(default_factory=set[str])
    #: The input requests this round needs, by key, with their form digests.
    needed: dict[str, tuple[str, types.ElicitRequestFormParams]] = field(
        default_factory=dict[str, Any]
    )
    #: Set once an ask needs input.
    waiting: asyncio.Event = field(default_factory=asyncio.Event)
    #: The tool call's own id, the same on every round of it: part of each key.
    call: str = field(default_factory=lambda: secrets.token_hex(6))
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @classmethod
    async def resume(
        cls, state: str | None, responses: Mapping[str, object] | None, ledger: StateLedger
    ) -> Rounds:
        """The round a retry starts, from its state and responses; refuses a bad state."""
        rounds = cls(responses=dict(responses or {}))
        if state is None:
            return rounds
        try:
            data: object = json.loads(state)
            if not isinstance(data, dict):
                raise TypeError
            fields = cast("dict[str, Any]", data)
            if fields.get("v") != _STATE_FORMAT:
                raise ValueError
            nonce, expires, call = fields["n"], fields["exp"], fields["call"]
            if not (isinstance(nonce, str) and isinstance(call, str)):
                raise TypeError
            if not isinstance(expires, int | float):
                raise TypeError
            rounds.call = call
            known = cast("dict[str, list[Any]]", fields["known"])
            asked = cast("dict[str, str]", fields["asked"])
            times = cast("dict[str, Any]", fields.get("t", {}))
            rounds.known = {
                str(key): (str(value[0]), cast("dict[str, Any]", value[1]))
                for key, value in known.items()
            }
            rounds.asked = {str(key): str(digest) for key, digest in asked.items()}
            rounds.times = {str(key): float(moment) for key, moment in times.items()}
            deadlines = cast("list[Any]", fields.get("d", []))
            rounds.deadlines = {str(key) for key in deadlines} & rounds.times.keys()
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            raise _refused("it is not a state this server issued") from None
        if not math.isfinite(expires) or expires < time.time():
            raise _refused("it has expired; call the tool again from the start")
        if not await ledger.use(nonce, expires):
            raise _refused("it was used already; call the tool again from the start")
        return rounds

    def key_of(self, request: AskUserQuestionRequest[Any]) -> str:
        """The key of the next ask of the body: ``ask-<n>.<call>``, or its ``askId``.

        The call's id makes the keys of two calls differ, so a client (or a
        test driver) can tell their asks apart; the SDK does not carry an
        input request's ``_meta`` to the client.
        """
        ask_id = cast("Mapping[str, object]", request).get(ASK_ID_KEY)
        number = next(self._numbers)
        return ask_id if isinstance(ask_id, str) and ask_id else f"ask-{number}.{self.call}"

    def time_of(self, key: str, request: AskUserQuestionRequest[Any]) -> float | None:
        """When the wait of ask *key* ends: as a round carried it, or as *request* says (Rule 5)."""
        limit = self.times.get(key)
        if limit is None:
            found = _limit_of(request)
            if found is not None:
                limit, is_deadline = found
                self.times[key] = limit
                if is_deadline:
                    self.deadlines.add(key)
        return limit

    def by_deadline(self, key: str) -> bool:
        """Whether ask *key*'s carried time limit is its request's ``deadline`` (Rule 5)."""
        return key in self.deadlines

    def kept_for(self, key: str, digest: str) -> types.ElicitResult | None:
        """The answer an earlier round gave ask *key* with the form *digest* (Rule 2)."""
        kept = self.known.get(key)
        if kept is not None and kept[0] == digest:
            return types.ElicitResult.model_validate(kept[1])
        return None

    def response_for(self, key: str, digest: str) -> types.ElicitResult | None:
        """This round's response to ask *key*, if the last round sent it the form *digest*."""
        if key not in self.responses or self.asked.get(key) != digest:
            return None
        response = self.responses[key]
        try:
            return types.ElicitResult.model_validate(
                response.model_dump(by_alias=True, exclude_none=True)
                if isinstance(response, types.Result)
                else response
            )
        except ValidationError:
            return None  # not an answer to a form: asked again

    def keep(self, key: str, digest: str, result: types.ElicitResult) -> None:
        """Keep *result* as ask *key*'s answer for the rounds after this one."""
        self.known[key] = (digest, result.model_dump(by_alias=True, exclude_none=True))
        self.times.pop(key, None)
        self.deadlines.discard(key)

    def need(self, key: str, digest: str, params: types.ElicitRequestFormParams) -> None:
        """Ask *key* in this round's result."""
        self.needed[key] = (digest, params)
        self.waiting.set()

    def withdraw(self, key: str) -> None:
        """*key* no longer needs input (its ask ended otherwise)."""
        self.needed.pop(key, None)

    def result(self, ttl: float, limits: StateLimits) -> types.InputRequiredResult:
        """This round's result: what it needs, and a state with every answer so far (Rule 6)."""
        if len(self.known) > limits.max_answers:
            msg = (
                f"inputResponses refused: the call would keep {len(self.known)} answers, over "
                f"this server's limit of {limits.max_answers} (run_tool's max_answers); "
                "call the tool again from the start"
            )
            raise MCPError(types.INVALID_PARAMS, msg)
        state = {
            "v": _STATE_FORMAT,
            "n": secrets.token_hex(16),
            "call": self.call,
            "exp": time.time() + ttl,
            "known": {key: [digest, answer] for key, (digest, answer) in self.known.items()},
            "asked": {key: digest for key, (digest, _) in self.needed.items()},
            "t": {key: moment for key, moment in self.times.items() if key not in self.known},
            "d": sorted(key for key in self.deadlines if key not in self.known),
        }
        text = json.dumps(state, separators=(",", ":"), ensure_ascii=True)
        if len(text) > limits.max_bytes:
            msg = (
                f"inputResponses refused: the answers kept so far would make a requestState of "
                f"{len(text)} bytes, over this server's limit of {limits.max_bytes} "
                "(run_tool's max_state_bytes); call the tool again from the start, "
                "with shorter answers"
            )
            raise MCPError(types.INVALID_PARAMS, msg)
        requests: dict[str, types.InputRequest] = {
            key: types.ElicitRequest(params=params) for key, (_, params) in self.needed.items()
        }
        return types.InputRequiredResult(input_requests=requests, request_state=text)
