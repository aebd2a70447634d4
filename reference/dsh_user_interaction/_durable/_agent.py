"""The agent's side of a durable ask: write it to a store, wait for its one outcome.

Design notes:

* The ask id comes from the request's ``askId`` key (``DUR-ID-1``); a request
  without one gets a fresh random id, durable across UIs but not across a
  restart of the agent.
* ``put`` is put-if-absent, so asking again with the same id never adds a
  second ask: the kept record's outcome is the call's outcome at once, or the
  call waits for it (``DUR-REASK-1``). The same id with other questions is a
  caller's mistake and raises ``BAD_REQUEST`` (``DUR-REASK-2``).
* One watcher per provider serves every pending call: a call subscribes, then
  reads its record once, so a settlement made before the watcher saw it is
  not missed. The watcher stops when no call waits (``PRV-LEAK-1``).
* The request's signal aborting settles the ask as ``aborted``
  (``DUR-ABORT-1``), which withdraws it from every UI. A cancellation of the
  call (a service's disposal, the caller's cancellation, a shutdown) leaves
  the stored ask pending, as a crash would: a UI can still answer, and the
  agent that asks again takes the answer (``DUR-ABORT-2``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Final, cast, final

from typing_extensions import TypeVar

from .._deadline import deadline_of, default_answer
from .._errors import ErrorCode, UserInteractionError
from .._types import AskUserQuestionAnswer, AskUserQuestionRequest
from ._store import ASK_ID_KEY, AskRecord, AskStore, Outcome, checked_ask_id, stored_request

__all__ = ["DurableProvider", "ask_id_of", "with_ask_id"]

AgentT = TypeVar("AgentT", default=object)

#: How long the provider tries to write an abort before giving up on it, in seconds.
#: Below the service's cancel grace (0.25 s), so a slow store never gets the call left
#: behind; an abort that could not be written leaves the ask pending, for expiry.
_SETTLE_BOUND: Final = 0.2

_ABORTED: Final = object()


def _new_ask_id() -> str:
    return uuid.uuid4().hex


def with_ask_id(
    request: AskUserQuestionRequest[AgentT], ask_id: str
) -> AskUserQuestionRequest[AgentT]:
    """A copy of *request* named *ask_id* (its ``askId`` key), for a durable provider.

    >>> with_ask_id({"questions": [{"id": "q", "question": "Go?"}]}, "call-1")["askId"]
    'call-1'
    """
    named = dict(request)
    named[ASK_ID_KEY] = checked_ask_id(ask_id)
    return cast("AskUserQuestionRequest[AgentT]", named)


def ask_id_of(request: AskUserQuestionRequest) -> str | None:
    """The request's ask id (its ``askId`` key), checked; ``None`` when it has none."""
    value = cast("Mapping[str, object]", request).get(ASK_ID_KEY)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        msg = f"the request's {ASK_ID_KEY} must be a non-empty string, got {value!r}"
        raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)
    return value


def outcome_of(record: AskRecord) -> AskUserQuestionAnswer:
    """Return a settled record's answer, or raise the error its outcome stands for."""
    if record.state == "answered" and record.answer is not None:
        return record.answer
    if record.state == "cancelled":
        raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)
    deadline = deadline_of(record.request)
    if record.state == "expired" and deadline is not None:
        # DUR-DEADLINE-1: its deadline ended it; say so, as the service would.
        raise UserInteractionError.timed_out_error()
    raise UserInteractionError.of(ErrorCode.ASK_ABORTED)


@final
class _Watcher:
    """One watch of the store for every call of one provider."""

    __slots__ = ("_store", "_task", "_waiters")

    def __init__(self, store: AskStore) -> None:
        self._store = store
        self._waiters: dict[str, set[asyncio.Future[object]]] = {}
        self._task: asyncio.Task[None] | None = None

    def subscribe(self, record: AskRecord) -> asyncio.Future[object]:
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(record.ask_id, set()).add(future)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._watch(record.seq), name=f"dsh-durable-watch-{record.ask_id}"
            )
        return future

    async def unsubscribe(self, ask_id: str, future: asyncio.Future[object]) -> None:
        waiting = self._waiters.get(ask_id)
        if waiting is not None:
            waiting.discard(future)
            if not waiting:
                del self._waiters[ask_id]
        task = self._task
        if not self._waiters and task is not None:
            self._task = None
            task.cancel()
            # Leave nothing behind (PRV-LEAK-1); the watch ends at its next await.
            await asyncio.gather(task, return_exceptions=True)

    def settled(self, record: AskRecord) -> None:
        for future in self._waiters.get(record.ask_id, ()):
            if not future.done():
                future.set_result(record)

    async def _watch(self, after: int) -> None:
        try:
            async for record in self._store.watch(after):
                if not record.pending:
                    self.settled(record)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - every waiter is told, none hangs
            for waiting in self._waiters.values():
                for future in waiting:
                    if not future.done():
                        future.set_exception(error)


@final
class DurableProvider:
    """The provider an agent registers to keep its asks in an :class:`AskStore`.

    Each ask is written to the store and waits there until a UI, in this
    process or another, settles it (through :func:`serve`, say). Asking again
    with the same ``askId`` never shows the question twice: it returns the
    answer given meanwhile, waits for the pending ask, or raises what its
    dismissal raised.

    >>> import asyncio, tempfile, os
    >>> from dsh_user_interaction import UserInteractionService
    >>> from dsh_user_interaction.durable import SQLiteStore, Outcome
    >>> async def main(path):
    ...     async with SQLiteStore(path) as store:
    ...         service = UserInteractionService()
    ...         service.register_provider(DurableProvider(store))
    ...         request = {"askId": "call-7", "questions": [{"id": "q", "question": "Go?"}]}
    ...         asking = asyncio.ensure_future(service.ask(request))
    ...         while not await store.pending():
    ...             await asyncio.sleep(0.01)
    ...         answer = {"answers": [{"id": "q", "selected": [], "custom": "yes"}]}
    ...         await store.settle("call-7", Outcome.answered(answer, via="doc"), settled_at=0.0)
    ...         first = await asking
    ...         again = await service.ask(request)  # asked again: the same answer, at once
    ...         return first == again == answer
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     asyncio.run(main(os.path.join(folder, "asks.db")))
    True
    """

    __slots__ = ("_asking", "_clock", "_new_id", "_store", "_via", "_watcher")

    def __init__(
        self,
        store: AskStore,
        *,
        via: str | None = None,
        clock: Callable[[], float] = time.time,
        new_ask_id: Callable[[], str] = _new_ask_id,
    ) -> None:
        self._store = store
        self._via = via
        self._clock = clock
        self._new_id = new_ask_id
        self._watcher = _Watcher(store)
        #: The pending calls' requests and ask ids, by the request's identity.
        #: The same request object may be asked by several calls at once: a list each.
        self._asking: dict[int, list[tuple[AskUserQuestionRequest, str]]] = {}

    @property
    def store(self) -> AskStore:
        """The store the asks are kept in."""
        return self._store

    def ask_id_of(self, request: AskUserQuestionRequest) -> str | None:
        """The ask id of *request* (this very object) while its call waits; else ``None``.

        A request without ``askId`` gets a fresh id; a test driver finds the
        ask it must answer in the store by it.
        """
        for asked, ask_id in self._asking.get(id(request), ()):
            if asked is request:
                return ask_id
        return None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Keep *request* in the store and return its outcome once a UI settles it."""
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)  # PRV-ABORT-1: nothing stored
        ask_id = ask_id_of(request) or self._new_id()
        try:
            data = stored_request(request)
        except ValueError as error:
            raise UserInteractionError(str(error), ErrorCode.BAD_REQUEST) from None
        data[ASK_ID_KEY] = ask_id
        put = asyncio.ensure_future(self._store.put(ask_id, data, asked_at=self._clock()))
        try:
            record = await asyncio.shield(put)
        except asyncio.CancelledError:
            # Interrupted while the ask was being written: an abort or a deadline
            # still ends it in the store, once written (DUR-ABORT-1, DUR-DEADLINE-1).
            await self._written_then_ended(put, ask_id, request)
            raise
        if record.request.get("questions") != data["questions"]:
            msg = (
                f"the {ASK_ID_KEY} {ask_id!r} names an ask already kept with other questions;"
                " a new question needs a new ask id"
            )
            raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)
        if not record.pending:
            return outcome_of(record)  # DUR-REASK-1: settled while we were away
        future = self._watcher.subscribe(record)
        entry = (request, ask_id)
        self._asking.setdefault(id(request), []).append(entry)
        remove = (
            signal.add_listener(lambda _signal: _resolve(future, _ABORTED))
            if signal is not None
            else None
        )
        if signal is not None and signal.aborted:
            _resolve(future, _ABORTED)  # aborted while the ask was being written
        try:
            # Settled between the put and the subscription: the watcher may have passed it.
            current = await self._store.get(ask_id)
            if current is not None and not current.pending:
                _resolve(future, current)
            got = await future
            if got is _ABORTED:
                raise await self._aborted(ask_id)
            return outcome_of(cast("AskRecord", got))
        except asyncio.CancelledError:
            if signal is not None and signal.aborted:
                # A service interrupts its provider by cancelling it: write the abort.
                await self._aborted(ask_id)
            elif self._deadline_passed(request):
                # DUR-DEADLINE-1: the request's deadline passed; write how it ended.
                await self._timed_out(ask_id, request)
            raise
        finally:
            if remove is not None:
                remove()
            calls = self._asking[id(request)]
            calls.remove(entry)
            if not calls:
                del self._asking[id(request)]
            await self._watcher.unsubscribe(ask_id, future)

    async def _aborted(self, ask_id: str) -> UserInteractionError:
        """Settle the ask as aborted (if it is still pending) and build the caller's error."""
        answer: object | None = None
        try:
            async with asyncio.timeout(_SETTLE_BOUND):
                settlement = await self._store.settle(
                    ask_id, Outcome.aborted(via=self._via), settled_at=self._clock()
                )
        except TimeoutError:
            pass  # left pending: a UI may still answer it, and expiry ends it
        else:
            if not settlement.won:
                answer = settlement.record.answer  # answered just before: kept on the error
        return UserInteractionError.of(ErrorCode.ASK_ABORTED, answer=answer)

    async def _written_then_ended(
        self, put: asyncio.Future[AskRecord], ask_id: str, request: AskUserQuestionRequest
    ) -> None:
        """End, in the store, an ask whose call was interrupted while it was being written.

        A plain cancellation cancels the write too, as a crash would end it. An
        abort, or a deadline that has passed, lets the write finish (within a
        bound) and then writes how the ask ended; an answer already kept there
        (a human's, given before the agent came back) is raised on the error,
        so that the caller keeps it.
        """
        signal = request.get("signal")
        aborted = signal is not None and signal.aborted
        if not aborted and not self._deadline_passed(request):
            put.cancel()
            return
        try:
            async with asyncio.timeout(_SETTLE_BOUND):
                await put
        except (TimeoutError, Exception):  # noqa: BLE001 - not written: nothing to end
            put.cancel()
            return
        if aborted:
            error = await self._aborted(ask_id)
            if error.answer is not None:
                raise error from None
            return
        await self._timed_out(ask_id, request)

    def _deadline_passed(self, request: AskUserQuestionRequest) -> bool:
        deadline = deadline_of(request)
        return deadline is not None and deadline <= self._clock()

    async def _timed_out(self, ask_id: str, request: AskUserQuestionRequest) -> None:
        """Settle an ask whose deadline passed: its defaults, or ``expired``.

        When a human's answer is the ask's outcome already (it won the race to
        the store, or was given while no agent waited), raise the timed-out
        error with that answer on it, so that the caller keeps it.
        """
        defaults = default_answer(request)
        outcome = (
            Outcome.expired(via=self._via)
            if defaults is None
            else Outcome.answered(defaults, via=self._via)
        )
        try:
            async with asyncio.timeout(_SETTLE_BOUND):
                settlement = await self._store.settle(ask_id, outcome, settled_at=self._clock())
        except TimeoutError:
            return  # left pending: expiry ends it
        kept = settlement.record.answer
        if not settlement.won and kept is not None and kept != defaults:
            raise UserInteractionError.timed_out_error(answer=kept) from None

    def __repr__(self) -> str:
        return f"<DurableProvider store={self._store!r}>"


def _resolve(future: asyncio.Future[object], value: object) -> None:
    if not future.done():
        future.set_result(value)
