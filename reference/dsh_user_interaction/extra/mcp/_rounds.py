"""Asks across round trips: the input-required results of MCP revision 2026-07-28.

Design notes (the invariants this module keeps):

Rule 1: one code path. Revision 2026-07-28 has no server-initiated
requests: a tool call that needs the user's input ends with an
``InputRequiredResult`` (its input requests, keyed, and a ``requestState``),
the client asks its user, then calls the tool again with the answers
(``inputResponses``) and the state echoed, and the tool's body runs again
from the top. :func:`run_tool` runs a tool's body either way. On a
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
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least
from pydantic import ValidationError

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction._durable._store import ASK_ID_KEY

from ._ledger import ProcessLedger, StateLedger
from ._provider import CURRENT_CALL, ToolCallContext, call_of, tool_call

__all__ = ["DEFAULT_STATE_TTL", "ROUND_TRIP_VERSION", "Rounds", "run_tool"]

T = TypeVar("T")

#: The first protocol revision whose tool calls take input in rounds.
ROUND_TRIP_VERSION: Final = "2026-07-28"
#: How long a ``requestState`` is accepted after it was issued, in seconds (the SDK's default).
DEFAULT_STATE_TTL: Final = 600.0
#: Loop steps a round waits, once an ask needs input, for the body's other asks to need it too.
_GATHER_STEPS: Final = 5
_STATE_FORMAT: Final = 1

#: The ledger of ``run_tool`` calls that name none: this process's memory.
_PROCESS_LEDGER: Final = ProcessLedger()


def _refused(why: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"requestState refused: {why}")


@dataclass(eq=False)
class Rounds:
    """One round of a tool call on 2026-07-28: the answers known, and the input still needed."""

    #: Each key's form digest and answer (an ``ElicitResult`` as JSON), from earlier rounds.
    known: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict[str, Any])
    #: The form digest of each input request the last round sent.
    asked: dict[str, str] = field(default_factory=dict[str, str])
    #: This round's responses, by key.
    responses: Mapping[str, object] = field(default_factory=dict[str, object])
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
            rounds.known = {
                str(key): (str(value[0]), cast("dict[str, Any]", value[1]))
                for key, value in known.items()
            }
            rounds.asked = {str(key): str(digest) for key, digest in asked.items()}
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

    def answer_for(self, key: str, digest: str) -> types.ElicitResult | None:
        """The answer to the ask *key* with the form *digest*, if a round gave it (Rule 2)."""
        if key in self.responses and self.asked.get(key) == digest:
            response = self.responses[key]
            try:
                result = types.ElicitResult.model_validate(
                    response.model_dump(by_alias=True, exclude_none=True)
                    if isinstance(response, types.Result)
                    else response
                )
            except ValidationError:
                return None  # not an answer to a form: asked again
            self.known[key] = (digest, result.model_dump(by_alias=True, exclude_none=True))
            return result
        kept = self.known.get(key)
        if kept is not None and kept[0] == digest:
            return types.ElicitResult.model_validate(kept[1])
        return None

    def need(self, key: str, digest: str, params: types.ElicitRequestFormParams) -> None:
        """Ask *key* in this round's result."""
        self.needed[key] = (digest, params)
        self.waiting.set()

    def withdraw(self, key: str) -> None:
        """*key* no longer needs input (its ask ended otherwise)."""
        self.needed.pop(key, None)

    def result(self, ttl: float) -> types.InputRequiredResult:
        """This round's result: what it needs, and a state with every answer so far."""
        state = {
            "v": _STATE_FORMAT,
            "n": secrets.token_hex(16),
            "call": self.call,
            "exp": time.time() + ttl,
            "known": {key: [digest, answer] for key, (digest, answer) in self.known.items()},
            "asked": {key: digest for key, (digest, _) in self.needed.items()},
        }
        requests: dict[str, types.InputRequest] = {
            key: types.ElicitRequest(params=params) for key, (_, params) in self.needed.items()
        }
        return types.InputRequiredResult(
            input_requests=requests,
            request_state=json.dumps(state, separators=(",", ":"), ensure_ascii=True),
        )


def _version_of(context: ToolCallContext) -> str:
    if isinstance(context, ServerRequestContext):
        return context.protocol_version
    return context.protocol_version or ""


def _input_of(
    context: ToolCallContext, params: types.CallToolRequestParams | None
) -> tuple[str | None, Mapping[str, object] | None]:
    if params is not None:
        return params.request_state, params.input_responses
    if isinstance(context, ServerRequestContext):
        msg = (
            "run_tool() in a low-level tool handler on revision 2026-07-28 needs the "
            "call's params, for its input responses and request state"
        )
        raise TypeError(msg)
    return context.request_state, context.input_responses


async def run_tool(
    context: ToolCallContext,
    body: Callable[[], Awaitable[T]],
    *,
    params: types.CallToolRequestParams | None = None,
    ttl: float = DEFAULT_STATE_TTL,
    ledger: StateLedger | None = None,
) -> T | types.InputRequiredResult:
    """Run a tool's *body*, whose asks go to the client of the tool call *context*.

    On a connection that can send requests (revisions before 2026-07-28),
    this awaits *body* inside :func:`~dsh_user_interaction.extra.mcp.tool_call`.
    On 2026-07-28 it returns *body*'s result once every ask in it has its
    answer, and until then an ``InputRequiredResult`` for the client to
    answer and retry (see the module's rules): return what it returns.
    *params* are the call's, needed only in a low-level handler (a
    ``Context`` carries them). A state older than *ttl* seconds is refused,
    as is one that *ledger* says was used (this process's memory by default;
    a :class:`~dsh_user_interaction.extra.mcp.SQLiteLedger` that several
    workers open refuses a state used by any of them).
    """
    if isinstance(ttl, bool) or not (math.isfinite(ttl) and ttl > 0):
        msg = f"ttl must be a positive, finite number of seconds, got {ttl!r}"
        raise ValueError(msg)
    call = call_of(context)
    if call.session.can_send_request or not is_version_at_least(
        _version_of(context), ROUND_TRIP_VERSION
    ):
        with tool_call(context):
            return await body()
    state, responses = _input_of(context, params)
    rounds = await Rounds.resume(state, responses, _PROCESS_LEDGER if ledger is None else ledger)
    token = CURRENT_CALL.set(call.with_rounds(rounds))
    try:
        task: asyncio.Future[T] = asyncio.ensure_future(body())
    finally:
        CURRENT_CALL.reset(token)
    waiting = asyncio.ensure_future(rounds.waiting.wait())
    either: set[asyncio.Future[Any]] = {task, waiting}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        for _ in range(_GATHER_STEPS):
            if task.done():
                break
            await asyncio.sleep(0)  # the body's other asks, started together, need input too
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait({task})
        raise
    finally:
        waiting.cancel()
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
        if task.cancelled():
            return rounds.result(ttl)
    return task.result()
