"""Deferred calls answered through the seam: the durable pause of a pydantic-ai run.

Design notes:

* A run whose question tool defers (``deferred_seam_toolset``, or the
  harness's ``AskUser(answerer=None)``) ends with ``DeferredToolRequests``.
  The application keeps the messages, and later, in this process or
  another, asks each deferred call through any ``AskingService`` and
  resumes the run with the ``DeferredToolResults`` built here.
* The call's ``tool_call_id`` is the ask's ``askId``. Asked through a
  durable provider, a re-run after a restart finds the same ask in the
  store: still pending, it waits for it, without showing it again; settled,
  it gets its outcome at once. An ask that already ended is never shown
  twice.
* Calls are asked one after another, in the order the model made them.
  Calls of other tools are left for the application (``requests.remaining``
  names them). An id the caller names that is not a deferred call of the
  right tool is refused with ``ValueError`` before anyone is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Coroutine, Sequence
from typing import Any, Final, TypeAlias

from pydantic import ValidationError
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, RunContext
from pydantic_ai_harness.ask_user import TOOL_NAME, AskUserRequest, ask_user_result

from dsh_user_interaction import AbortSignal, AskingService

from ._answerer import SeamAnswerer
from ._tools import SEAM_TOOLS, checked_options, checked_seconds, run_seam_tool

__all__ = [
    "DeferredHandler",
    "answer_deferred",
    "answer_deferred_ask_user",
    "ask_user_deferred_handler",
    "seam_deferred_handler",
]

#: What pydantic-ai's ``HandleDeferredToolCalls(handler=...)`` takes: results, or
#: ``None`` to leave the calls to the next handler or the run's output.
DeferredHandler: TypeAlias = Callable[
    [RunContext[Any], DeferredToolRequests], Coroutine[Any, Any, DeferredToolResults | None]
]

#: The tool name of the harness's ``AskUser``.
HARNESS_TOOL: Final = TOOL_NAME


def _chosen(
    requests: DeferredToolRequests, names: Collection[str], ids: Collection[str] | None
) -> list[ToolCallPart]:
    """The deferred calls of the tools *names* to answer: all, or those *ids* name, checked."""
    mine = [call for call in requests.calls if call.tool_name in names]
    if ids is None:
        return mine
    if isinstance(ids, str):
        msg = f"ids must be a collection of tool call ids, not the string {ids!r}"
        raise TypeError(msg)
    wanted = set(ids)
    tools = " or ".join(sorted(names))
    by_id = {call.tool_call_id: call for call in requests.calls}
    approvals = {call.tool_call_id for call in requests.approvals}
    for call_id in sorted(wanted):
        call = by_id.get(call_id)
        if call is None:
            where = "an approval" if call_id in approvals else "not among the deferred calls"
            msg = f"tool call id {call_id!r} is {where}; only a deferred call of {tools} is asked"
            raise ValueError(msg)
        if call.tool_name not in names:
            msg = (
                f"tool call id {call_id!r} is a call of {call.tool_name!r}; only a deferred call"
                f" of {tools} is asked"
            )
            raise ValueError(msg)
    return [call for call in mine if call.tool_call_id in wanted]


async def answer_deferred(
    requests: DeferredToolRequests,
    service: AskingService,
    *,
    ids: Collection[str] | None = None,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> DeferredToolResults:
    """Ask each deferred call of our tools through *service*, for resuming the run.

    Every deferred ``ask_user_question`` and ``exit_plan_mode`` call of
    *requests* (or only those *ids* name) is run by our tool with its
    ``tool_call_id`` as ``askId``; the results hold the tool's exact text
    for each, an error result as ``ToolFailed``. Pass them to the next
    ``Agent.run`` with the run's messages. *signal*, *agent*,
    *answer_within* (seconds) and *recommended_defaults* go to each ask, as
    our tools take them.

    Raises ``ValueError`` before asking anyone for an id that is not a
    deferred call of our tools, a bad *answer_within*, or
    *recommended_defaults* without it; ``TypeError`` when *ids* is a string.
    Cancellation propagates; nothing else is raised.
    """
    checked_options(answer_within, recommended_defaults=recommended_defaults)
    results = DeferredToolResults()
    for call in _chosen(requests, SEAM_TOOLS, ids):
        result = await run_seam_tool(
            call.tool_name,
            service,
            call.args if call.args is not None else {},
            ask_id=call.tool_call_id,
            signal=signal,
            agent=agent,
            answer_within=answer_within,
            recommended_defaults=recommended_defaults,
        )
        results.calls[call.tool_call_id] = (
            ToolFailed(result.text) if result.is_error else result.text
        )
    return results


async def answer_deferred_ask_user(
    requests: DeferredToolRequests,
    service: AskingService,
    *,
    ids: Collection[str] | None = None,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
) -> DeferredToolResults:
    """Ask each deferred call of the harness's ``AskUser(answerer=None)`` through *service*.

    Each deferred ``ask_user_question`` call of the harness (or only those
    *ids* name) is rebuilt as the harness's request (its id the
    ``tool_call_id``, which becomes ``askId``), asked as ``SeamAnswerer``
    asks (with *signal*, *agent* and *answer_within*), and answered with the
    harness's own tool result: the picked labels or custom text by header,
    or its ``DECLINED`` text.

    Raises ``ValueError`` before asking anyone for an id that is not a
    deferred call of that tool, for a call whose arguments the harness
    refuses (naming the call), or a bad *answer_within*; ``TypeError`` when
    *ids* is a string; and what ``SeamAnswerer`` raises (``BAD_ANSWER``, an
    abort, a disposed provider), after which the calls asked before it keep
    their asks in a durable store.
    """
    answerer = SeamAnswerer(service, signal=signal, answer_within=answer_within, agent=agent)
    chosen = _chosen(requests, (HARNESS_TOOL,), ids)
    asked: list[AskUserRequest] = [_rebuilt(call) for call in chosen]
    results = DeferredToolResults()
    for request in asked:
        response = await answerer(request)
        results.calls[request.id] = ask_user_result(request, response)
    return results


def seam_deferred_handler(
    service: AskingService,
    *,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
    recommended_defaults: bool = False,
) -> DeferredHandler:
    """A handler for ``HandleDeferredToolCalls`` that answers our deferred calls inside the run.

    With it, an agent built with ``deferred_seam_toolset`` asks through
    *service* and goes on, as with ``seam_toolset``; without it, the same
    agent pauses for ``answer_deferred``. The handler answers our calls as
    ``answer_deferred`` does (the options are the same) and returns
    ``None`` when there are none, so other calls go on to the next handler
    or to the run's output. Raises ``ValueError`` at once for bad options.
    """
    checked_options(answer_within, recommended_defaults=recommended_defaults)

    async def handle(
        _ctx: RunContext[Any], requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        if not any(call.tool_name in SEAM_TOOLS for call in requests.calls):
            return None
        return await answer_deferred(
            requests,
            service,
            signal=signal,
            agent=agent,
            answer_within=answer_within,
            recommended_defaults=recommended_defaults,
        )

    return handle


def ask_user_deferred_handler(
    service: AskingService,
    *,
    signal: AbortSignal | None = None,
    agent: object = None,
    answer_within: float | None = None,
) -> DeferredHandler:
    """A handler for ``HandleDeferredToolCalls`` that answers ``AskUser(answerer=None)`` in the run.

    It answers the harness's deferred calls as ``answer_deferred_ask_user``
    does, and returns ``None`` when there are none. Raises ``ValueError``
    at once for a bad *answer_within*.
    """
    checked_seconds(answer_within)

    async def handle(
        _ctx: RunContext[Any], requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        if not any(call.tool_name == HARNESS_TOOL for call in requests.calls):
            return None
        return await answer_deferred_ask_user(
            requests, service, signal=signal, agent=agent, answer_within=answer_within
        )

    return handle


def _rebuilt(call: ToolCallPart) -> AskUserRequest:
    """The harness's request behind *call*; ``ValueError`` naming the call when it is malformed."""
    try:
        return AskUserRequest.from_tool_call(call)
    except ValidationError as error:
        problems: Sequence[Any] = error.errors(include_url=False, include_input=False)
        first = problems[0] if problems else {"loc": (), "msg": str(error)}
        where = ".".join(str(part) for part in first["loc"]) or "arguments"
        msg = (
            f"deferred call {call.tool_call_id!r} has malformed arguments: {where}: {first['msg']}"
        )
        raise ValueError(msg) from None
