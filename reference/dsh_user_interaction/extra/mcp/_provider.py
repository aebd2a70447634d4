"""The server side of the bridge: each ``ask()`` is one elicitation request to the MCP client.

Invariants (the ``ask()`` of one request goes through them in order):

* A request whose signal has already aborted raises ``ASK_ABORTED``, and
  nothing is sent (``PRV-ABORT-1``); an empty one raises ``EMPTY_QUESTIONS``.
* The request goes to the client of the tool call in progress: the one
  bound with :func:`tool_call` in the caller's context, or the one the
  provider was built with. Without a tool call, or when that client did not
  declare form elicitation (or the connection has no back-channel), ``ask()``
  raises :class:`ElicitationUnsupported` at once, before anything is sent.
* On protocol revision 2026-07-28, inside ``run_tool``, the batch is one
  input request of the call's round instead (see ``_rounds.py``): the
  answer a round gave, or a wait that ends with the round. The rest of these
  rules are the connections that can send requests.
* The whole batch is one ``elicitation/create`` request (see ``_form``),
  sent from a task of the provider's own. Its ``_meta`` carries the ask's
  number under ``dsh-user-interaction/ask``, so a client (or a test driver)
  can tell two pending asks with the same questions apart.
* An abort, or a cancellation of ``ask()``, cancels that task; the SDK then
  sends ``notifications/cancelled`` for the outstanding request, and the
  provider waits at most :attr:`McpElicitationProvider.cancel_grace` for
  that write before it raises ``ASK_ABORTED`` or lets ``CancelledError``
  propagate. A result the client had already sent wins over an abort that
  lands in the same loop iteration; on cancellation it is returned only if
  it is a valid answer (``PRV-CANCEL-1``).
* ``accept`` gives the answer (``BAD_ANSWER`` for malformed content);
  ``decline`` and ``cancel`` give :class:`ElicitationCancelled`
  (``ASK_CANCELLED``), which keeps which of the two it was.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.session import ServerSession
from mcp.shared.message import ServerMessageMetadata
from pydantic import ValidationError
from typing_extensions import TypeIs

from dsh_user_interaction import (
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)

from ._errors import ElicitationCancelled, ElicitationUnsupported
from ._form import Form, answer_of_content, form_of
from ._rounds import Rounds

__all__ = [
    "ASK_META_KEY",
    "CURRENT_CALL",
    "PROTOCOL_VERSION",
    "REASON_META_KEY",
    "Call",
    "McpElicitationProvider",
    "ToolCallContext",
    "abort_future",
    "call_of",
    "tool_call",
]

#: The MCP protocol revision whose elicitation form the bridge sends: the newest
#: one the SDK negotiates by handshake, and the first with titled enums.
PROTOCOL_VERSION: Final = "2025-11-25"
#: The ``_meta`` key of an elicitation request that holds the ask's number.
ASK_META_KEY: Final = "dsh-user-interaction/ask"
#: The ``_meta`` key of a ``decline`` result that holds the client's reason.
REASON_META_KEY: Final = "dsh-user-interaction/reason"

#: What identifies a tool call in progress: the low-level server's request
#: context, or the ``Context`` an ``MCPServer`` tool receives.
ToolCallContext: TypeAlias = "ServerRequestContext[Any, Any] | Context[Any, Any]"


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call in progress: the session to ask through, and the request it belongs to."""

    session: ServerSession
    request_id: types.RequestId | None
    #: On revision 2026-07-28, inside ``run_tool``: the round the call is in.
    rounds: Rounds | None = None

    def with_rounds(self, rounds: Rounds) -> Call:
        """The same call, asking in *rounds* (``_rounds.py``)."""
        return Call(self.session, self.request_id, rounds)


def _is_tool_context(value: object) -> TypeIs[Context[Any, Any]]:
    """Whether *value* is the ``Context`` an ``MCPServer`` tool receives."""
    return isinstance(value, Context)


def call_of(context: object) -> Call:
    if isinstance(context, ServerRequestContext):
        return Call(context.session, context.request_id)
    if _is_tool_context(context):
        inner = context.request_context
        return Call(inner.session, inner.request_id)
    msg = (
        "a tool call's context is the ServerRequestContext of a low-level handler "
        f"or the Context of an MCPServer tool, not {type(context).__name__}"
    )
    raise TypeError(msg)


CURRENT_CALL: ContextVar[Call | None] = ContextVar(
    "dsh_user_interaction_mcp_tool_call", default=None
)


@contextmanager
def tool_call(context: ToolCallContext) -> Generator[None]:
    """Ask through *context*'s client in this block: the tool call in progress.

    Every :class:`McpElicitationProvider` built without a context of its own
    asks the client of the innermost ``tool_call`` block of the caller's
    context. Tasks started inside the block inherit it, and concurrent tool
    calls each see their own.
    """
    token = CURRENT_CALL.set(call_of(context))
    try:
        yield
    finally:
        CURRENT_CALL.reset(token)


def _supports_form(session: ServerSession) -> bool:
    capabilities = session.client_capabilities
    elicitation = None if capabilities is None else capabilities.elicitation
    if elicitation is None:
        return False
    # An empty capability object is form elicitation (the revisions before URL mode).
    return elicitation.form is not None or elicitation.url is None


def abort_future(signal: AbortSignal | None) -> tuple[asyncio.Future[None], Callable[[], None]]:
    """A future that completes when *signal* aborts, and the remover of its listener."""
    aborted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_abort(_signal: object) -> None:
        if not aborted.done():
            aborted.set_result(None)

    remove = (lambda: None) if signal is None else signal.add_listener(on_abort)
    return aborted, remove


@dataclass(eq=False, slots=True)
class _Pending:
    number: int
    request: AskUserQuestionRequest[Any]


class McpElicitationProvider:
    """A :class:`~dsh_user_interaction.UserInteractionProvider` that asks through an MCP client.

    Each ``ask()`` sends one form-mode elicitation request to the client of
    the tool call in progress and maps its result back: ``accept`` to the
    answer, ``decline`` and ``cancel`` to ``ASK_CANCELLED``
    (:class:`ElicitationCancelled`). Build it with a tool call's *context*
    to ask that call's client, or without one and bind calls with
    :func:`tool_call`. *custom_text* adds an optional text field to every
    question with options, for an answer of the human's own.
    """

    def __init__(
        self,
        context: ToolCallContext | None = None,
        *,
        custom_text: bool = True,
        cancel_grace: float = 0.1,
    ) -> None:
        self._call = None if context is None else call_of(context)
        self._custom_text = custom_text
        #: At most this long, in seconds, an abort or cancellation waits for the
        #: cancellation of the outstanding request to be written.
        self.cancel_grace = cancel_grace
        self._pending: list[_Pending] = []
        self._numbers = 0

    @property
    def custom_text(self) -> bool:
        """Whether questions with options get a text field for an answer of the human's own."""
        return self._custom_text

    def form_of(self, request: AskUserQuestionRequest[Any]) -> Form:
        """The form this provider sends for *request*."""
        return form_of(request, custom_text=self._custom_text)

    def number_of(self, request: AskUserQuestionRequest[Any]) -> int | None:
        """The number a pending *request* carries in its ``_meta``, or ``None``."""
        return next((p.number for p in self._pending if p.request is request), None)

    @property
    def pending(self) -> int:
        """How many asks wait for the client."""
        return len(self._pending)

    def _current(self) -> Call:
        bound = CURRENT_CALL.get()
        call = bound if self._call is None else self._call
        if (
            call is not None
            and bound is not None
            and bound.rounds is not None
            and (bound.session, bound.request_id) == (call.session, call.request_id)
        ):
            call = bound  # a provider built with this call's context, inside run_tool
        if call is None:
            msg = (
                "McpElicitationProvider.ask() ran outside an MCP tool call: build the provider "
                "with the tool call's context, or ask inside `with tool_call(ctx):`"
            )
            raise ElicitationUnsupported(msg)
        if not _supports_form(call.session):
            msg = (
                "the MCP client did not declare form elicitation in its capabilities, "
                "so the user cannot be asked through it; asking again will not help"
            )
            raise ElicitationUnsupported(msg)
        if call.rounds is None and not call.session.can_send_request:
            msg = (
                "this MCP connection (protocol revision "
                f"{call.session.protocol_version}) has no back-channel for requests to the "
                "client: on revision 2026-07-28, run the tool's body with "
                "run_tool(ctx, body), which asks through input-required results"
            )
            raise ElicitationUnsupported(msg)
        return call

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        """Send *request* as one elicitation form and return the answer the client gives.

        Raises ``ASK_ABORTED`` when the signal aborts (or had aborted),
        ``ASK_CANCELLED`` (:class:`ElicitationCancelled`) when the user
        declines or cancels, ``BAD_ANSWER`` for malformed content, and
        :class:`ElicitationUnsupported` (``NO_PROVIDER``) when the client cannot be asked. An
        error response from the client (an ``MCPError``) propagates as it is.
        """
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        if not request["questions"]:
            # A service never passes this on (SVC-ORDER-2); a direct caller gets its code.
            raise UserInteractionError.of(ErrorCode.EMPTY_QUESTIONS)
        call = self._current()
        form = self.form_of(request)
        if call.rounds is not None:
            return await self._ask_in_rounds(call.rounds, request, form)
        self._numbers += 1
        pending = _Pending(self._numbers, request)
        params = self._params(form, pending.number)
        aborted, remove = abort_future(signal)
        self._pending.append(pending)
        elicit = asyncio.ensure_future(self._send(call, params))
        either: set[asyncio.Future[Any]] = {elicit, aborted}
        try:
            try:
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                if elicit.done() and not elicit.cancelled() and elicit.exception() is None:
                    try:
                        # Accepted in the loop iteration the cancellation landed in: it wins.
                        return self._read(request, form, elicit.result())
                    except UserInteractionError:
                        pass
                await self._withdraw(elicit)
                raise
            if not elicit.done():
                await self._withdraw(elicit)
                raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
            result = self._result(elicit)
        finally:
            remove()
            self._pending.remove(pending)
        return self._read(request, form, result)

    @staticmethod
    def _params(form: Form, number: int) -> types.ElicitRequestFormParams:
        meta = cast("types.RequestParamsMeta", {ASK_META_KEY: number})
        return types.ElicitRequestFormParams(
            message=form.message, requested_schema=form.schema, _meta=meta
        )

    async def _ask_in_rounds(
        self, rounds: Rounds, request: AskUserQuestionRequest[Any], form: Form
    ) -> AskUserQuestionAnswer:
        """Revision 2026-07-28: the answer a round gave, or an input request and a wait.

        The wait ends when the round does (``run_tool`` cancels the body),
        or with ``ASK_ABORTED`` when the signal aborts first (within a round,
        the service's own timers end it as on any connection). Once the
        ask's time limit, fixed in the round that first asked it, has passed,
        the ask ends as time running out ends it, and an answer a retry
        brings then is late (``_rounds.py``, Rule 5).
        """
        key = rounds.key_of(request)
        digest = form.digest
        given = rounds.response_for(key, digest)
        if given is None:
            kept = rounds.kept_for(key, digest)
            if kept is not None:
                return self._read(request, form, kept)  # given in time, in an earlier round
        # A limit an earlier round fixed: once passed, the retry is late. One fixed in
        # this round is the service's to enforce, as on any connection.
        carried = rounds.times.get(key)
        if carried is not None and carried <= time.time():
            return self._time_ran_out(request, form, given, by_deadline=rounds.by_deadline(key))
        rounds.time_of(key, request)
        if given is not None:
            rounds.keep(key, digest, given)
            return self._read(request, form, given)
        self._numbers += 1
        pending = _Pending(self._numbers, request)
        aborted, remove = abort_future(request.get("signal"))
        self._pending.append(pending)
        rounds.need(key, digest, self._params(form, pending.number))
        try:
            # Until the round ends (run_tool cancels the body), or the signal aborts.
            await asyncio.shield(aborted)
            rounds.withdraw(key)
        finally:
            remove()
            self._pending.remove(pending)
        raise UserInteractionError.of(ErrorCode.ASK_ABORTED)

    def _time_ran_out(
        self,
        request: AskUserQuestionRequest[Any],
        form: Form,
        late: types.ElicitResult | None,
        *,
        by_deadline: bool,
    ) -> AskUserQuestionAnswer:
        """How an ask ends whose time limit passed before a retry (Rule 5): timed out.

        ``ASK_ABORTED``, timed out (``POL-TIMEOUT-1``), with the text a
        legacy connection gives when the limit passes. A *late* answer the
        retry brought is kept on the error, and never replaced by the
        request's defaults (``POL-DEFAULT-1``). Without one, where the limit
        was the request's ``deadline`` (*by_deadline*), the error says so, and
        the service answers with the defaults, as a legacy connection's does.
        """
        kept: object | None = None
        if late is not None and late.action == "accept":
            try:
                kept = self._read(request, form, late)
            except UserInteractionError as error:
                kept = error.answer
        raise UserInteractionError.timed_out_error(
            answer=kept, deadline_passed=by_deadline and kept is None
        )

    async def _send(self, call: Call, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        return await call.session.send_request(
            types.ElicitRequest(params=params),
            types.ElicitResult,
            metadata=ServerMessageMetadata(related_request_id=call.request_id),
        )

    async def _withdraw(self, elicit: asyncio.Future[types.ElicitResult]) -> None:
        """Cancel the outstanding request; the SDK writes ``notifications/cancelled`` for it."""
        elicit.cancel()
        await asyncio.wait({elicit}, timeout=self.cancel_grace)
        if elicit.done() and not elicit.cancelled():
            elicit.exception()  # retrieved: the ask ends with the abort or the cancellation

    @staticmethod
    def _result(elicit: asyncio.Future[types.ElicitResult]) -> types.ElicitResult:
        try:
            return elicit.result()
        except ValidationError as error:
            # The client's result is not an elicitation result at all.
            problems = error.errors()
            where = ".".join(str(part) for part in problems[0]["loc"]) if problems else "result"
            what = problems[0]["msg"] if problems else str(error)
            message = f"the client's elicitation result is malformed at {where or 'result'}: {what}"
            raw = problems[0].get("input") if problems else None
            raise UserInteractionError(message, ErrorCode.BAD_ANSWER, answer=raw) from error

    @staticmethod
    def _read(
        request: AskUserQuestionRequest[Any], form: Form, result: types.ElicitResult
    ) -> AskUserQuestionAnswer:
        if result.action == "accept":
            return answer_of_content(request, form, result.content)
        reason = None if result.meta is None else result.meta.get(REASON_META_KEY)
        raise ElicitationCancelled.of_action(
            result.action, reason=reason if isinstance(reason, str) else None
        )
