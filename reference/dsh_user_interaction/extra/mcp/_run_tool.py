"""``run_tool``: a tool's body on either protocol revision, in rounds on 2026-07-28.

The rules it keeps are ``_rounds.py``'s. It binds the call's round to the
provider (``_provider.py``) through the call in the caller's context, runs
the body in a task of its own, and ends the round as soon as the body waits
on input alone.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import is_version_at_least

from ._ledger import ProcessLedger, StateLedger
from ._provider import CURRENT_CALL, ToolCallContext, call_of, tool_call
from ._rounds import (
    DEFAULT_MAX_ANSWERS,
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_STATE_TTL,
    ROUND_TRIP_VERSION,
    Rounds,
    StateLimits,
)

__all__ = ["run_rounds", "run_tool"]

T = TypeVar("T")

#: Loop steps a round waits, once an ask needs input, for the body's other asks to need it too.
_GATHER_STEPS: Final = 5

#: The ledger of ``run_tool`` calls that name none: this process's memory.
_PROCESS_LEDGER: Final = ProcessLedger()


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
    max_answers: int = DEFAULT_MAX_ANSWERS,
    max_state_bytes: int = DEFAULT_MAX_STATE_BYTES,
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
    workers open refuses a state used by any of them). A round whose state
    would keep more than *max_answers* answers, or exceed *max_state_bytes*
    bytes before sealing, is refused with ``INVALID_PARAMS``.
    """
    return await run_rounds(
        context,
        body,
        params=params,
        ttl=ttl,
        ledger=ledger,
        limits=StateLimits(max_answers, max_state_bytes),
    )


async def run_rounds(
    context: ToolCallContext,
    body: Callable[[], Awaitable[T]],
    *,
    params: types.CallToolRequestParams | None = None,
    ttl: float = DEFAULT_STATE_TTL,
    ledger: StateLedger | None = None,
    limits: StateLimits | None = None,
    rounds_type: type[Rounds] = Rounds,
) -> T | types.InputRequiredResult:
    """:func:`run_tool`, with its limits in one object and the round's type (the gallery's hook)."""
    if isinstance(ttl, bool) or not (math.isfinite(ttl) and ttl > 0):
        msg = f"ttl must be a positive, finite number of seconds, got {ttl!r}"
        raise ValueError(msg)
    limits = StateLimits() if limits is None else limits
    call = call_of(context)
    if call.session.can_send_request or not is_version_at_least(
        _version_of(context), ROUND_TRIP_VERSION
    ):
        with tool_call(context):
            return await body()
    state, responses = _input_of(context, params)
    rounds = await rounds_type.resume(
        state, responses, _PROCESS_LEDGER if ledger is None else ledger
    )
    token = CURRENT_CALL.set(call.with_rounds(rounds))
    try:
        task: asyncio.Future[T] = asyncio.ensure_future(body())
    finally:
        CURRENT_CALL.reset(token)
    waiting = asyncio.ensure_future(rounds.waiting.wait())
    try:
        while True:
            either: set[asyncio.Future[Any]] = {task, waiting}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            for _ in range(_GATHER_STEPS):
                if task.done():
                    break
                await asyncio.sleep(0)  # the body's other asks, started together, need input too
            if task.done() or rounds.needed:
                break
            # Every ask that needed input ended otherwise meanwhile (its deadline passed
            # in this round): no round ends with nothing to ask; the body goes on.
            rounds.waiting.clear()
            waiting.cancel()
            waiting = asyncio.ensure_future(rounds.waiting.wait())
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
            return rounds.result(ttl, limits)
    return task.result()
