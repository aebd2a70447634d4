"""The durable pause: our tools behind the SDK's approval, answered through any service.

And the other way: the SDK's approval of any other tool, shown as one of our
questions (:meth:`ApprovalQuestions.review`, with the rules of ``_review``).

Design notes:

* The tools of an :class:`ApprovalQuestions` need approval: the run stops
  with a ``ToolApprovalItem`` per call, and ``RunState.to_json()`` can carry
  it across a restart. :meth:`ApprovalQuestions.answer` asks each pending
  question through the service, named by its ``call_id`` (the ask's
  ``askId``), and decides the interruption by the outcome.
* Rule 1: the model reads the same text on both paths. What the tool
  function would have returned becomes either the body's result (approve)
  or the ``rejection_message`` (reject), byte for byte. Approve when the
  result is normal (an answer, a default, an approved plan); reject when it
  is an error line (dismissed, aborted, timed out, keep planning, arguments
  the checks refuse). An ask that reached no human (no provider, a provider
  disposed, a store that failed) decides nothing: the interruption stays
  pending in the state, and the ask, if a durable store keeps it, stays
  pending there, to be answered later.
* Rule 2: never asked twice. The approved body returns the text kept for
  its call. A body that finds none (a new process resumed the state) asks
  again with the same ``askId``, which a durable provider answers at once
  from its store with the outcome it kept.
* Rule 3: refuse, never guess. Two interruptions with one ``call_id``, a
  ``call_id`` named that is not pending, one being asked or already
  decided here (remembered for the object's life), or an
  interruption for a tool of our names that this object did not make raise
  :class:`InterruptionError` naming the call and the problem; nothing is
  asked and nothing is decided then. A review follows Rules 2 and 3 too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast, final

from agents import FunctionTool, RunState, Tool, ToolApprovalItem
from agents.tool_context import ToolContext

from ..._deadline import DEADLINE_KEY
from ..._durable._store import ASK_ID_KEY
from ..._errors import ErrorCode, UserInteractionError
from ..._tool import ask_through
from ..._types import AskUserQuestionAnswer, AskUserQuestionRequest
from ...plan_review import EXIT_PLAN_MODE_TOOL
from ...tool import ASK_USER_QUESTION_TOOL, DEFAULT_MAX_ARGUMENT_BYTES, AskingService
from ._review import Verdict, review_outcome, review_question
from ._tools import (
    ASK_USER_QUESTION,
    EXIT_PLAN_MODE,
    Invoke,
    checked_options,
    function_tool_of,
)

__all__ = [
    "UNDECIDED_CODES",
    "ApprovalQuestions",
    "Decision",
    "InterruptionError",
    "PendingQuestion",
]

#: The codes of an ask that reached no human: nothing is decided on them.
UNDECIDED_CODES: Final = frozenset(
    {ErrorCode.NO_PROVIDER, ErrorCode.PROVIDER_DISPOSED, ErrorCode.STORE_FAILED}
)


class InterruptionError(ValueError):
    """The run's interruptions cannot be answered as asked; nothing was asked or decided.

    Raised by :meth:`ApprovalQuestions.pending` and
    :meth:`ApprovalQuestions.answer`. ``call_id`` names the call (``None``
    when no one call is at fault).
    """

    def __init__(self, message: str, *, call_id: str | None = None) -> None:
        super().__init__(message)
        #: The call the problem is about, when there is one.
        self.call_id = call_id


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """One pending interruption of our tools: the call to ask about."""

    #: The model's tool-call id: the ask's ``askId``.
    call_id: str
    #: ``ask_user_question`` or ``exit_plan_mode``.
    tool_name: str
    #: The model's arguments, as JSON text.
    arguments: str
    #: The SDK's interruption itself, to approve or reject.
    item: ToolApprovalItem


@dataclass(frozen=True, slots=True)
class Decision:
    """How one interruption was decided, and the text the model reads for it."""

    #: The model's tool-call id.
    call_id: str
    #: ``ask_user_question`` or ``exit_plan_mode``.
    tool_name: str
    #: ``approved``, ``rejected``, or ``undecided`` (left pending in the state).
    verdict: Verdict
    #: What the model reads once the run resumes: the tool's result when
    #: approved (empty for a review: the reviewed tool's own result follows),
    #: the ``rejection_message`` when rejected. When undecided, why, for the
    #: application: the error that kept the ask from a human, or a skip.
    text: str


@final
class _Watching:
    """*service*, remembering the ``UserInteractionError`` its one ask raised."""

    __slots__ = ("_service", "failure")

    def __init__(self, service: AskingService) -> None:
        self._service = service
        self.failure: UserInteractionError | None = None

    async def ask(self, request: AskUserQuestionRequest[Any], /) -> AskUserQuestionAnswer:
        try:
            return await self._service.ask(request)
        except UserInteractionError as error:
            self.failure = error
            raise


@final
class ApprovalQuestions:
    """Our two tools behind the SDK's approval, and the function that answers them.

    Give :attr:`tools` to an ``Agent``. A call stops the run with an
    interruption; ``result.to_state()`` (and ``RunState.to_json()``, to
    resume in another process) keeps it. :meth:`answer` asks each pending
    question through *service* and approves or rejects it; then
    ``Runner.run(agent, state)`` goes on, and the model reads the outcome.
    Use a service on a ``DurableProvider`` for a wait that survives a
    restart. The options are those of
    :func:`~dsh_user_interaction.tool.ask_user_question`; a bad one raises
    ``TypeError`` or ``ValueError`` here.

    >>> from dsh_user_interaction import UserInteractionService
    >>> questions = ApprovalQuestions(UserInteractionService())
    >>> [(tool.name, tool.needs_approval) for tool in questions.tools]
    [('ask_user_question', True), ('exit_plan_mode', True)]
    """

    __slots__ = (
        "_asking",
        "_decided",
        "_options",
        "_service",
        "_texts",
        "ask_user_question",
        "exit_plan_mode",
    )

    def __init__(
        self,
        service: AskingService,
        *,
        answer_within: float | None = None,
        recommended_defaults: bool = False,
        max_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
    ) -> None:
        self._service = service
        self._options = checked_options(answer_within, recommended_defaults, max_bytes)
        #: The text each approved call's body returns, by call id, until it runs.
        self._texts: dict[str, str] = {}
        #: How each call was decided here, by call id, for the object's life.
        self._decided: dict[str, Verdict] = {}
        #: The calls an answer() is asking about now.
        self._asking: set[str] = set()
        #: The approval-gated ``ask_user_question`` tool.
        self.ask_user_question: FunctionTool = function_tool_of(
            ASK_USER_QUESTION_TOOL, self._invoke(ASK_USER_QUESTION), needs_approval=True
        )
        #: The approval-gated ``exit_plan_mode`` tool.
        self.exit_plan_mode: FunctionTool = function_tool_of(
            EXIT_PLAN_MODE_TOOL, self._invoke(EXIT_PLAN_MODE), needs_approval=True
        )

    @property
    def tools(self) -> list[Tool]:
        """Both tools, for an ``Agent``'s ``tools``."""
        return [self.ask_user_question, self.exit_plan_mode]

    def _invoke(self, name: str) -> Invoke:
        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            call_id = context.tool_call_id
            kept = self._texts.pop(call_id, None)
            if kept is not None:
                return kept  # Rule 2: answered before the approval
            # Resumed elsewhere, or approved by hand: ask, by the same askId.
            result = await self._options.run(name, self._service, arguments, call_id, context.agent)
            return result.text

        return invoke

    def pending(self, state: RunState[Any, Any]) -> list[PendingQuestion]:
        """The interruptions of *state* that are calls of these tools, in order.

        Interruptions of other tools are left out (see :meth:`approvals`).
        Raises :class:`InterruptionError` for two interruptions with one call
        id, an interruption without one, or one for a tool named like ours
        that this object did not make (another object's, or the same name
        reused).
        """
        return self._scan(state)[0]

    def approvals(self, state: RunState[Any, Any]) -> list[PendingQuestion]:
        """The interruptions of *state* for every other tool: calls to review, in order.

        Raises as :meth:`pending`.
        """
        return self._scan(state)[1]

    def _scan(
        self, state: RunState[Any, Any]
    ) -> tuple[list[PendingQuestion], list[PendingQuestion]]:
        """The pending calls of our tools, and of the others; checked (Rule 3)."""
        mine = {ASK_USER_QUESTION: self.ask_user_question, EXIT_PLAN_MODE: self.exit_plan_mode}
        ours: list[PendingQuestion] = []
        others: list[PendingQuestion] = []
        seen: set[str] = set()
        for item in state.get_interruptions():
            name = item.qualified_name or item.name or "a tool"
            call_id = item.call_id
            if not isinstance(call_id, str) or not call_id:
                msg = f"an interruption of {name} has no call_id: it cannot name its ask"
                raise InterruptionError(msg)
            if call_id in seen:
                msg = (
                    f"two interruptions have the call_id {call_id!r}: one ask id cannot name"
                    " two asks"
                )
                raise InterruptionError(msg, call_id=call_id)
            seen.add(call_id)
            question = PendingQuestion(call_id, name, item.arguments or "", item)
            if name not in mine or item.tool_namespace is not None:
                others.append(question)
                continue
            tools: Sequence[object] = getattr(item.agent, "tools", ())
            if not any(tool is mine[name] for tool in tools):
                msg = (
                    f"the interruption {call_id!r} is a call of a tool named {name} that this"
                    " ApprovalQuestions did not make; answer it with the object whose tools the"
                    " agent holds"
                )
                raise InterruptionError(msg, call_id=call_id)
            ours.append(question)
        return ours, others

    async def answer(
        self, state: RunState[Any, Any], *, call_ids: Collection[str] | None = None
    ) -> list[Decision]:
        """Ask each pending question of *state* through the service; approve or reject it.

        All are asked at once, each named by its call id, and each is
        decided on *state* as soon as its ask ends; the decisions come back
        in the interruptions' order. Calls already decided by this object
        are skipped, and so are those another call of this object is asking
        about. *call_ids* limits the asks to those calls. Raises
        :class:`InterruptionError` (nothing asked) for a bad interruption
        (see :meth:`pending`), or a named call id that is not pending, that
        is being asked, or that was decided already. Cancellation
        propagates: decisions already made stay on *state*, and the other
        asks are left as a crash would leave them.
        """
        return await self._settle(state, self.pending(state), call_ids, self._decide)

    async def review(
        self, state: RunState[Any, Any], *, call_ids: Collection[str] | None = None
    ) -> list[Decision]:
        """Show each pending call of another tool to the human for approval; decide it.

        Each call becomes one question (``review_question``: "Allow the call
        of <tool>?", its arguments, Approve or Reject), asked through the
        service by its call id. Only an exact Approve approves; Reject, or
        free text (the model reads the human's words), rejects; a skip, an
        ask that reached no human, an answer that breaks the rules, or
        arguments larger than *max_bytes* (never shown cut short) decide
        nothing. Dismissed, aborted and timed out reject, with a
        text saying which. Skips, refusals and cancellation as :meth:`answer`.
        """
        return await self._settle(state, self.approvals(state), call_ids, self._review)

    async def _settle(
        self,
        state: RunState[Any, Any],
        pending: list[PendingQuestion],
        call_ids: Collection[str] | None,
        decide: Callable[[RunState[Any, Any], PendingQuestion], Awaitable[Decision]],
    ) -> list[Decision]:
        """Decide each of *pending* (or the named *call_ids*) on *state* by *decide*, at once."""
        if call_ids is not None:
            pending = self._chosen(pending, call_ids)
        else:
            pending = [
                question
                for question in pending
                if question.call_id not in self._decided and question.call_id not in self._asking
            ]
        decisions: list[Decision | None] = [None] * len(pending)

        async def one(index: int, question: PendingQuestion) -> None:
            decision = await decide(state, question)
            if decision.verdict != "undecided":
                self._decided[question.call_id] = decision.verdict
            decisions[index] = decision

        asking = {question.call_id for question in pending}
        self._asking |= asking
        try:
            async with asyncio.TaskGroup() as group:
                for index, question in enumerate(pending):
                    group.create_task(one(index, question), name=f"ask-{question.call_id}")
        finally:
            self._asking -= asking
        return [decision for decision in decisions if decision is not None]

    def _chosen(
        self, pending: list[PendingQuestion], call_ids: Collection[str]
    ) -> list[PendingQuestion]:
        if isinstance(call_ids, str):
            msg = f"call_ids must be a collection of call ids, not the string {call_ids!r}"
            raise TypeError(msg)
        by_id = {question.call_id: question for question in pending}
        chosen: list[PendingQuestion] = []
        for call_id in call_ids:
            if call_id in self._decided:
                msg = (
                    f"the call {call_id!r} was {self._decided[call_id]} already: its ask has"
                    " ended, and it is not asked again"
                )
                raise InterruptionError(msg, call_id=call_id)
            if call_id in self._asking:
                msg = f"the call {call_id!r} is being asked already: it is not shown twice"
                raise InterruptionError(msg, call_id=call_id)
            if call_id not in by_id:
                known = ", ".join(repr(key) for key in by_id) or "none"
                msg = f"no pending call has the call_id {call_id!r} (pending: {known})"
                raise InterruptionError(msg, call_id=call_id)
            chosen.append(by_id[call_id])
        return chosen

    async def _review(self, state: RunState[Any, Any], question: PendingQuestion) -> Decision:
        size = len(question.arguments.encode("utf-8", "surrogatepass"))
        if size > self._options.max_bytes:
            # Never shown cut short: a human must see all of what they approve.
            why = (
                f"the call's arguments are {size} bytes, more than max_bytes"
                f" ({self._options.max_bytes}): too large to show for review"
            )
            return Decision(question.call_id, question.tool_name, "undecided", why)
        request: dict[str, object] = {
            "questions": [review_question(question.tool_name, question.arguments)],
            ASK_ID_KEY: question.call_id,
            "agent": question.item.agent,
        }
        if self._options.answer_within is not None:
            request[DEADLINE_KEY] = time.time() + self._options.answer_within
        answer, failure = await ask_through(
            self._service, cast("AskUserQuestionRequest[Any]", request)
        )
        verdict, text = review_outcome(answer, failure)
        if verdict == "approved":
            state.approve(question.item)
        elif verdict == "rejected":
            state.reject(question.item, rejection_message=text)
        return Decision(question.call_id, question.tool_name, verdict, text)

    async def _decide(self, state: RunState[Any, Any], question: PendingQuestion) -> Decision:
        watching = _Watching(self._service)
        result = await self._options.run(
            question.tool_name,
            watching,
            question.arguments,
            question.call_id,
            question.item.agent,
        )
        failure = watching.failure
        verdict: Verdict
        if failure is not None and failure.code in UNDECIDED_CODES:
            verdict = "undecided"
        elif result.is_error:
            verdict = "rejected"
            state.reject(question.item, rejection_message=result.text)
        else:
            verdict = "approved"
            self._texts[question.call_id] = result.text
            state.approve(question.item)
        return Decision(question.call_id, question.tool_name, verdict, result.text)

    def __repr__(self) -> str:
        return f"<ApprovalQuestions service={self._service!r}>"
