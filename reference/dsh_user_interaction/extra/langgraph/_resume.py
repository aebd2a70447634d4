"""The answering side of a paused run: show its interrupts through a service, build the resume.

Design notes:

* Every pending interrupt is read before anything is asked: an interrupt this
  package cannot answer (not an ask of ours, not a ``HITLRequest``) refuses
  the whole resume with ``BAD_REQUEST`` naming its id, so nothing is shown
  and nothing half-answered.
* The asks are shown one after another, in the run's order, each under its
  LangGraph id (the request's ``askId``, else ``<thread id>:<interrupt
  id>``): a durable service asked again after a restart shows none twice.
* An error that ends no ask (``BAD_ANSWER``, ``STORE_FAILED``...) propagates
  and no resume is built: the run stays paused and nothing is lost.
* :func:`checked_resume` is for resume values gathered elsewhere: an id the
  run never paused on, or one whose ask already ended, is refused with
  :class:`InterruptNotPending`; so is a resume that leaves a pending
  interrupt unanswered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final, Protocol, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Interrupt, StateSnapshot

from ... import (
    AskingService,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    check_request,
)
from ...durable import ASK_ID_KEY
from ._hitl import Unanswered, answer_hitl, hitl_questions, tool_approval_review
from ._interrupt import INTERRUPT_KIND, answer_of_resume, ask_id_for, resume_value

__all__ = [
    "InterruptNotPending",
    "PausedGraph",
    "answer_interrupts",
    "checked_resume",
    "resume_command",
]


class PausedGraph(Protocol):
    """What the resume helpers need of a compiled graph: its state and history."""

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The run's current state."""
        ...

    def aget_state_history(self, config: RunnableConfig) -> AsyncIterator[StateSnapshot]:
        """The run's past states, newest first (an async iterator)."""
        ...


class InterruptNotPending(LookupError):
    """A resume names an interrupt the run is not paused on, or misses one it is.

    ``interrupt_id`` names it; ``ended`` is true when the run paused on it
    before and its ask has since ended (a late or repeated resume), as the
    run's history shows; false when the history does not show it (an id
    never raised, or an ask ended earlier in a node that paused again), and,
    with ``missing``, when it is pending and the resume leaves it unanswered.
    """

    def __init__(self, interrupt_id: str, *, ended: bool = False, missing: bool = False) -> None:
        if missing:
            why = "is pending and the resume does not answer it; answer every one at once"
        elif ended:
            why = "already ended: its ask was answered, and the run went on"
        else:
            why = "is not pending: the run never paused on it, or its ask already ended"
        super().__init__(f"interrupt {interrupt_id!r} {why}")
        #: The interrupt's id.
        self.interrupt_id = interrupt_id
        #: Whether the run paused on it before and went on.
        self.ended = ended
        #: Whether it is pending and the resume left it out.
        self.missing = missing


#: The codes of the errors that end an ask, each with its resume value.
_ENDINGS: Final = frozenset(
    {ErrorCode.ASK_CANCELLED, ErrorCode.ASK_ABORTED, ErrorCode.PROVIDER_DISPOSED}
)


def _thread_id(config: RunnableConfig) -> object:
    return cast("Mapping[str, object]", config.get("configurable") or {}).get("thread_id")


def _kind(pending: Interrupt) -> str:
    """``"ask"`` or ``"hitl"``; ``BAD_REQUEST`` naming the interrupt for anything else."""
    value: object = pending.value
    if isinstance(value, Mapping):
        fields = cast("Mapping[str, object]", value)
        if fields.get("kind") == INTERRUPT_KIND:
            check_request(fields.get("request"))
            return "ask"
        if "action_requests" in fields:
            hitl_questions(fields)  # refused here, before anything is asked
            return "hitl"
        if fields.get("type") == "tool_approval":
            tool_approval_review(fields, pending.response_schema)
            return "approval"
    msg = (
        f"interrupt {pending.id!r}: its value is neither an ask of dsh_user_interaction nor a"
        " HumanInTheLoopMiddleware review, so it cannot be shown; resume it yourself"
    )
    raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)


async def answer_interrupts(
    service: AskingService,
    interrupts: Sequence[Interrupt],
    *,
    thread_id: str,
    unanswered: Unanswered = "raise",
) -> Command[Any]:
    """Show each pending interrupt through *service*; return the ``Command`` that resumes them all.

    *interrupts* are a paused run's (``state.interrupts``, or the stream's
    ``__interrupt__``); *thread_id* is its thread. An ask of ours resumes with
    its :func:`resume_value` (a dismissal, an abort, a timeout or a disposal
    included); a ``HITLRequest`` with its ``HITLResponse``, as
    :func:`answer_hitl` makes it, with *unanswered*; a ``per_call``
    ``ToolApprovalRequest`` with its one decision (:func:`tool_approval_review`).
    Raises ``BAD_REQUEST`` before asking anything when an interrupt cannot be
    shown; any error that ends no ask propagates, and the run stays paused.
    Cancellation propagates.
    """
    kinds = [_kind(pending) for pending in interrupts]
    if len({pending.id for pending in interrupts}) != len(interrupts):
        msg = "two pending interrupts share one id; LangGraph cannot resume them apart"
        raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)
    resume: dict[str, object] = {}
    for pending, kind in zip(interrupts, kinds, strict=True):
        value = cast("Mapping[str, Any]", pending.value)
        if kind != "ask":
            review = (
                value if kind == "hitl" else tool_approval_review(value, pending.response_schema)
            )
            response = await answer_hitl(
                service, review, ask_id=ask_id_for(thread_id, pending.id), unanswered=unanswered
            )
            # A per-call approval is resumed with its one decision.
            resume[pending.id] = response if kind == "hitl" else response["decisions"][0]
            continue
        request = dict(cast("Mapping[str, object]", value["request"]))
        request.setdefault(ASK_ID_KEY, ask_id_for(thread_id, pending.id))
        try:
            outcome = await service.ask(cast("AskUserQuestionRequest[Any]", request))
        except UserInteractionError as error:
            if error.code not in _ENDINGS:
                raise  # it ended no ask: the run stays paused
            resume[pending.id] = resume_value(error)
            continue
        resume[pending.id] = resume_value(outcome)
    return Command(resume=resume)


async def resume_command(
    graph: PausedGraph,
    config: RunnableConfig,
    service: AskingService,
    *,
    unanswered: Unanswered = "raise",
) -> Command[Any] | None:
    """The ``Command`` that resumes the run of *config*, its interrupts answered through *service*.

    ``None`` when the run is not paused on any interrupt. Raises
    :class:`ValueError` when *config* has no ``thread_id``; otherwise as
    :func:`answer_interrupts`.
    """
    thread_id = _thread_id(config)
    ask_id_for(thread_id, "")  # the thread's check, before anything is read
    state = await graph.aget_state(config)
    if not state.interrupts:
        return None
    return await answer_interrupts(
        service, state.interrupts, thread_id=cast("str", thread_id), unanswered=unanswered
    )


async def checked_resume(
    graph: PausedGraph, config: RunnableConfig, resume: Mapping[str, object]
) -> Command[Any]:
    """The ``Command`` for *resume* (interrupt id to value), once checked against the run.

    Raises :class:`InterruptNotPending` for an id the run is not paused on
    (``ended`` when its ask already ended) or a pending one *resume* leaves
    out. A value for an ask of ours must be a :class:`ResumeValue` that fits
    its request (``BAD_ANSWER`` otherwise, naming the field); one for a
    ``HITLRequest`` must be a ``HITLResponse`` with one decision per action,
    and one for a ``ToolApprovalRequest`` a decision it allows.
    """
    state = await graph.aget_state(config)
    pending = {item.id: item for item in state.interrupts}
    for interrupt_id in resume:
        if interrupt_id not in pending:
            raise InterruptNotPending(
                interrupt_id, ended=await _paused_on(graph, config, interrupt_id)
            )
    for interrupt_id, item in pending.items():
        if interrupt_id not in resume:
            raise InterruptNotPending(interrupt_id, missing=True)
        _check_value(item, resume[interrupt_id])
    return Command(resume=dict(resume))


async def _paused_on(graph: PausedGraph, config: RunnableConfig, interrupt_id: str) -> bool:
    async for snapshot in graph.aget_state_history(config):
        if any(item.id == interrupt_id for item in snapshot.interrupts):
            return True
    return False


def _check_value(pending: Interrupt, raw: object) -> None:
    value: object = raw
    kind = _kind(pending)
    fields = cast("Mapping[str, Any]", pending.value)
    if kind == "ask":
        request = cast("AskUserQuestionRequest[Any]", fields["request"])
        try:
            answer_of_resume(value, request)
        except UserInteractionError as error:
            if error.code is ErrorCode.BAD_ANSWER:
                msg = f"interrupt {pending.id!r}: {error}"
                raise UserInteractionError(
                    msg, ErrorCode.BAD_ANSWER, answer=raw, violations=error.violations
                ) from None
        return
    if kind == "approval":
        allowed = tool_approval_review(fields, pending.response_schema)["review_configs"][0]
        kind_of = (
            cast("Mapping[str, object]", value).get("type") if isinstance(value, Mapping) else None
        )
        if kind_of not in allowed["allowed_decisions"]:
            msg = (
                f"interrupt {pending.id!r}: $.type: expected one of"
                f" {', '.join(allowed['allowed_decisions'])}, got {kind_of!r}"
            )
            raise UserInteractionError(msg, ErrorCode.BAD_ANSWER, answer=raw)
        return
    decisions = (
        cast("Mapping[str, object]", value).get("decisions") if isinstance(value, Mapping) else None
    )
    if not isinstance(decisions, list):
        msg = f"interrupt {pending.id!r}: $.decisions: expected an array of decisions"
        raise UserInteractionError(msg, ErrorCode.BAD_ANSWER, answer=raw)
    expected = len(cast("list[object]", fields["action_requests"]))
    if len(cast("list[object]", decisions)) != expected:
        msg = (
            f"interrupt {pending.id!r}: $.decisions: expected {expected} decisions, one per"
            f" action, got {len(cast('list[object]', decisions))}"
        )
        raise UserInteractionError(msg, ErrorCode.BAD_ANSWER, answer=raw)
