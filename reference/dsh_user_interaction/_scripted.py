"""A real provider whose human is code: the reference provider.

Each ``ask()`` becomes a :class:`PendingAsk` in a queue. A test, a driver or a
script looks at the queue and settles each ask: answer it, dismiss it, or
reject it. Several asks may be pending at once, and they settle in any order.

Invariants:

* An ask is in :attr:`ScriptedProvider.pending` exactly while its ``ask()``
  call is suspended; after it settles, in any way, it is gone and its signal
  listener is removed.
* When the request's signal aborts, the ask raises ``ASK_ABORTED`` and leaves
  the queue (the UI is cleared).
* Settling an ask twice raises :class:`asyncio.InvalidStateError`, so a
  driver never believes an answer went through when it did not. Settling an
  ask that an abort, a disposal or a cancellation has already ended raises it
  too.
* An answer :meth:`PendingAsk.answer` accepts is never dropped: the answer
  wins. The call resumes one loop step after ``answer()``, and whatever lands
  in between (the signal aborts, :meth:`ScriptedProvider.dispose`, or the
  call is cancelled) the call returns the accepted answer. A cancellation is
  how a service interrupts its provider for an abort or a disposal, so
  through a service the service's rules then decide: its abort or disposal
  still wins and keeps the answer on the error as ``error.answer``
  (``SVC-ABORT-3``), and a caller's cancellation still propagates
  (``SVC-CANCEL-1``). Used without a service, a call cancelled in that step
  returns the answer, and the cancellation request stays counted in
  ``Task.cancelling()``. A dismissal or a rejection that a cancellation
  overtakes in the same way gives way to it: the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import inspect
from abc import get_cache_token
from collections.abc import Awaitable, Callable
from typing import TypeAlias, TypeGuard, final

from ._errors import ErrorCode, UserInteractionError
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest

__all__ = ["PendingAsk", "Responder", "ScriptedProvider"]

#: Computes the answer to a request at once, for providers that need no queue.
Responder: TypeAlias = Callable[
    [AskUserQuestionRequest], AskUserQuestionAnswer | Awaitable[AskUserQuestionAnswer]
]

#: ``(token, isinstance({}, Awaitable))``, with the ABC cache token it was found under.
#: For a plain dict ``inspect.isawaitable`` is that ABC check alone (a dict is no
#: coroutine or generator), and the ABC machinery keeps its answer until its
#: caches are invalidated, which every registration does and which changes
#: :func:`abc.get_cache_token`. So the answer is remembered with the token, and
#: the Python-level ``__instancecheck__`` runs once per token, not once per answer.
_dict_awaitable: tuple[object, bool] = (None, False)


@final
class PendingAsk:
    """One ask shown by a :class:`ScriptedProvider`, waiting for the human."""

    __slots__ = ("_future", "request")

    def __init__(
        self, request: AskUserQuestionRequest, future: asyncio.Future[AskUserQuestionAnswer]
    ) -> None:
        #: The very request the service passed, unchanged.
        self.request = request
        self._future = future

    @property
    def done(self) -> bool:
        """Whether the ask has settled."""
        return self._future.done()

    def answer(self, answer: AskUserQuestionAnswer) -> None:
        """Answer the ask with *answer*, passed on as the very same object."""
        self._settle().set_result(answer)

    def dismiss(self) -> None:
        """Dismiss the whole batch, as closing the dialog does: ``ASK_CANCELLED``."""
        self.reject(UserInteractionError.of(ErrorCode.ASK_CANCELLED))

    def reject(self, error: BaseException) -> None:
        """Make the ask raise *error*."""
        self._settle().set_exception(error)

    def _settle(self) -> asyncio.Future[AskUserQuestionAnswer]:
        if self._future.done():
            msg = "this ask has already settled (answered, dismissed, aborted or cancelled)"
            raise asyncio.InvalidStateError(msg)
        return self._future

    def __repr__(self) -> str:
        ids = [question["id"] for question in self.request["questions"]]
        state = "settled" if self.done else "pending"
        return f"<PendingAsk {state} ids={ids!r}>"


@final
class ScriptedProvider:
    """A provider answered by code, for tests, drivers and demos.

    Without *respond*, each ask waits in :attr:`pending` until settled:

    >>> import asyncio
    >>> from dsh_user_interaction import UserInteractionService, answer_custom, answer_of
    >>> async def main():
    ...     service, provider = UserInteractionService(), ScriptedProvider()
    ...     with service.register_provider(provider):
    ...         ask = asyncio.ensure_future(service.ask(
    ...             {"questions": [{"id": "name", "question": "Branch name?"}]}))
    ...         pending = await provider.next_ask()
    ...         pending.answer(answer_of(answer_custom("name", "release/2.0")))
    ...         return await ask
    >>> asyncio.run(main())
    {'answers': [{'id': 'name', 'selected': [], 'custom': 'release/2.0'}]}

    With *respond*, each ask is answered at once by calling it.
    """

    __slots__ = ("_pending", "_respond", "_waiters", "asked")

    def __init__(self, *, respond: Responder | None = None) -> None:
        self._respond = respond
        self._pending: list[PendingAsk] = []
        self._waiters: list[asyncio.Future[None]] = []
        #: How many asks this provider has been shown, in all.
        self.asked = 0

    @property
    def pending(self) -> tuple[PendingAsk, ...]:
        """The asks on screen, oldest first."""
        return tuple(self._pending)

    async def next_ask(self) -> PendingAsk:
        """Wait until an ask is pending and return the oldest.

        Wrap it in :func:`asyncio.timeout` in tests, so nothing waits forever.
        """
        return await self.wait_for(lambda _pending: True)

    async def wait_for(self, predicate: Callable[[PendingAsk], bool]) -> PendingAsk:
        """Wait until a pending ask satisfies *predicate*, and return it.

        ``wait_for(lambda p: p.request is request)`` waits for one request.
        """
        loop = asyncio.get_running_loop()
        while True:
            for pending in self._pending:
                if predicate(pending):
                    return pending
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def dispose(self) -> None:
        """Reject every pending ask with ``PROVIDER_DISPOSED``, as a closing UI does."""
        for pending in list(self._pending):
            if not pending.done:
                pending.reject(UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED))

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Show *request*: queue it, or answer it with *respond*."""
        self.asked += 1
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        respond = self._respond
        if respond is not None:
            result = respond(request)
            if _plain_answer(result):
                return result
            if inspect.isawaitable(result):
                return await result
            return result
        future: asyncio.Future[AskUserQuestionAnswer] = asyncio.get_running_loop().create_future()
        pending = PendingAsk(request, future)

        def on_abort(_signal: object) -> None:
            if not future.done():
                future.set_exception(UserInteractionError.of(ErrorCode.ASK_ABORTED))

        remove = signal.add_listener(on_abort) if signal is not None else _noop
        self._pending.append(pending)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                # Note: the only cancellation this provider does not re-raise. The
                # human answered before it landed, and the answer was accepted, so
                # it is handed on rather than dropped. Nothing uncancels the task:
                # whoever cancelled it (a service, an asyncio.timeout) still sees
                # the request in Task.cancelling() and decides what wins.
                return future.result()
            raise
        finally:
            remove()
            self._pending.remove(pending)
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()  # mark it retrieved when a cancellation beat it

    def __repr__(self) -> str:
        return f"<ScriptedProvider pending={len(self._pending)} asked={self.asked}>"


def _noop() -> None:
    return None


def _plain_answer(result: object) -> TypeGuard[AskUserQuestionAnswer]:
    """Whether *result* is a plain dict that ``inspect.isawaitable`` would not await.

    Said without the ABC check while the ABC cache token is the one its verdict
    was found under (see ``_dict_awaitable``).
    """
    global _dict_awaitable  # noqa: PLW0603 - one tuple, replaced whole, so readers never see half
    if type(result) is not dict:
        return False
    token = get_cache_token()
    known, awaitable = _dict_awaitable
    if known != token:
        awaitable = isinstance(result, Awaitable)
        _dict_awaitable = (token, awaitable)
    return not awaitable
