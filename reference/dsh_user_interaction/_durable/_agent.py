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
* The provider keeps the request's deadline itself, with a timer of its own
  (``DUR-DEADLINE-2``).
* Rule: the agent's outcome is the store's (``DUR-AGREE-1``). An abort or a
  deadline is *offered* to the store, never assumed: the call ends with the
  outcome the store holds afterwards, which is the offered one, or a UI's
  answer or dismissal that was written first. No bound cuts the write
  short: a store that fails is tried again, with a pause that doubles from
  50 ms to 1 s, for *store_patience* seconds; then the call raises
  ``STORE_FAILED`` and the ask stays pending for whoever can reach the
  store (``DUR-FAIL-2``). A write whose call is cancelled meanwhile is
  waited for all the same, so that what the store did is known.
* A service that interrupts its provider itself (the default: it listens to
  the signal and times the deadline) gives it at most its cancel grace, one
  second at most, to end the ask; a store slower than that would leave the
  call behind and the service would answer alone, possibly not what the
  store then records. So this provider says it keeps its own time
  (``keeps_own_time = True``), and every service leaves both to it
  (``DUR-AGREE-2``), as ``enforce_deadlines=False, enforce_aborts=False``
  would: it never leaves an ask unanswered, bounded by its store patience.
  The seam's contract is unchanged for every other provider.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, TypeVar, cast, final

from typing_extensions import TypeVar as DefaultTypeVar

from .._deadline import deadline_of, default_answer, is_timeout
from .._errors import ErrorCode, UserInteractionError
from .._types import AskUserQuestionAnswer, AskUserQuestionRequest
from ._store import (
    ASK_ID_KEY,
    AskRecord,
    AskStore,
    Outcome,
    checked_ask_id,
    checked_time,
    store_failed,
    stored_request,
)

__all__ = ["DEFAULT_STORE_PATIENCE", "DurableProvider", "ask_id_of", "with_ask_id"]

_T = TypeVar("_T")

AgentT = DefaultTypeVar("AgentT", default=object)

#: The first pause before a failed store call is tried again, in seconds; it doubles.
_FIRST_PAUSE: Final = 0.05
#: The longest pause between two tries of a failed store call, in seconds.
_LONGEST_PAUSE: Final = 1.0
#: How long a failing store is tried again before ``STORE_FAILED``, by default, in seconds.
DEFAULT_STORE_PATIENCE: Final = 30.0

_ABORTED: Final = object()
_DEADLINE: Final = object()


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
            told = error
            if not isinstance(error, UserInteractionError):
                # DUR-FAIL-1: a store's own error reaches the agent as STORE_FAILED.
                told = store_failed("watch the asks", "the store raised an error", error)
                told.__cause__ = error
            for waiting in self._waiters.values():
                for future in waiting:
                    if not future.done():
                        future.set_exception(told)


@final
class DurableProvider:
    """The provider an agent registers to keep its asks in an :class:`AskStore`.

    Each ask is written to the store and waits there until a UI, in this
    process or another, settles it (through :func:`serve`, say). Asking again
    with the same ``askId`` never shows the question twice: it returns the
    answer given meanwhile, waits for the pending ask, or raises what its
    dismissal raised.

    An abort or a deadline ends the ask only as the store records it: the
    call returns or raises the outcome the store holds (``DUR-AGREE-1``).
    A store that fails is tried again for *store_patience* seconds (30 by
    default); then the call raises ``STORE_FAILED`` and the ask stays
    pending. It keeps its own time (``keeps_own_time``): any service leaves
    the deadline and the abort to it (``DUR-AGREE-2``).

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

    __slots__ = ("_asking", "_clock", "_new_id", "_patience", "_store", "_via", "_watcher")

    #: It ends its asks' deadlines and aborts itself, as its store records them, so a
    #: service never times or interrupts it (``DUR-AGREE-2``).
    keeps_own_time: Final = True

    def __init__(
        self,
        store: AskStore,
        *,
        via: str | None = None,
        clock: Callable[[], float] = time.time,
        new_ask_id: Callable[[], str] = _new_ask_id,
        store_patience: float = DEFAULT_STORE_PATIENCE,
    ) -> None:
        patience = checked_time(store_patience, "store_patience")
        if patience < 0:
            msg = f"store_patience must not be negative, got {store_patience!r}"
            raise ValueError(msg)
        self._patience = patience
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
        asked_at = self._clock()
        put = asyncio.ensure_future(
            self._patiently(
                lambda: self._store.put(ask_id, data, asked_at=asked_at), f"add the ask {ask_id!r}"
            )
        )
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
        deadline = deadline_of(request)
        timer = (
            asyncio.get_running_loop().call_later(
                max(0.0, deadline - self._clock()), _resolve, future, _DEADLINE
            )
            if deadline is not None
            else None
        )
        try:
            # Settled between the put and the subscription: the watcher may have passed it.
            current = await self._patiently(
                lambda: self._store.get(ask_id), f"read the ask {ask_id!r}"
            )
            if current is not None and not current.pending:
                _resolve(future, current)
            got = await future
            if got is _ABORTED:
                # DUR-ABORT-1, DUR-AGREE-1: the outcome is what the store records.
                ended = await self._end(ask_id, Outcome.aborted(via=self._via))
                if ended.state == "aborted" and signal is not None and is_timeout(signal.reason):
                    raise UserInteractionError.timed_out_error()  # POL-TIMEOUT-1
                return outcome_of(ended)
            if got is _DEADLINE:
                # DUR-DEADLINE-2, DUR-AGREE-1: the deadline's outcome, once recorded.
                return outcome_of(await self._end(ask_id, self._deadline_outcome(request)))
            return outcome_of(cast("AskRecord", got))
        except asyncio.CancelledError:
            if signal is not None and signal.aborted:
                # A service interrupts its provider by cancelling it: write the abort.
                await self._ended_on_interrupt(ask_id, Outcome.aborted(via=self._via))
            elif self._deadline_passed(request):
                # DUR-DEADLINE-1: the request's deadline passed; write how it ended.
                await self._ended_on_interrupt(ask_id, self._deadline_outcome(request))
            raise
        finally:
            if timer is not None:
                timer.cancel()
            if remove is not None:
                remove()
            calls = self._asking[id(request)]
            calls.remove(entry)
            if not calls:
                del self._asking[id(request)]
            await self._watcher.unsubscribe(ask_id, future)

    async def _patiently(self, call: Callable[[], Awaitable[_T]], doing: str) -> _T:
        """Run a store *call*; try it again while it fails, for the provider's patience.

        Raises ``STORE_FAILED`` then (``DUR-FAIL-2``), with the last failure as
        its cause: a store's own ``STORE_FAILED`` as it is, anything else a
        store raised wrapped, so that no raw database error reaches the
        caller (``DUR-FAIL-1``).
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._patience
        pause = _FIRST_PAUSE
        while True:
            try:
                return await call()
            except UserInteractionError as error:
                if error.code is not ErrorCode.STORE_FAILED:
                    raise
                failed = error
            except Exception as error:  # noqa: BLE001 - a store's error, told as STORE_FAILED
                failed = store_failed(doing, "the store raised an error", error)
                failed.__cause__ = error
            if loop.time() + pause > give_up:
                raise failed
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)

    async def _end(self, ask_id: str, outcome: Outcome) -> AskRecord:
        """Offer *outcome* to the store; return the record it holds then (``DUR-AGREE-1``).

        The settlement is waited for to its end even when this call is
        cancelled meanwhile (the cancellation is raised after it), so that
        what the store did is known: it wrote *outcome*, or kept an earlier
        one, or failed (``STORE_FAILED``).
        """
        write = asyncio.ensure_future(
            self._patiently(lambda: self._settle(ask_id, outcome), f"settle the ask {ask_id!r}")
        )
        cancelled = False
        while True:
            try:
                record = await asyncio.shield(write)
            except asyncio.CancelledError:
                if write.cancelled():
                    raise
                cancelled = True
                continue
            if cancelled:
                raise asyncio.CancelledError
            return record

    async def _settle(self, ask_id: str, outcome: Outcome) -> AskRecord:
        try:
            settlement = await self._store.settle(ask_id, outcome, settled_at=self._clock())
        except KeyError as error:
            msg = f"settle the ask {ask_id!r}"
            raise store_failed(msg, "the store has no such ask any more", error) from error
        return settlement.record

    async def _ended_on_interrupt(self, ask_id: str, outcome: Outcome) -> None:
        """End an ask whose call the service interrupted, with *outcome*, as the store records it.

        Returns when the store recorded *outcome* (the service's own ending
        then says the same); raises the interrupt's error with the answer
        kept on it when a UI's answer was recorded first, so that the caller
        keeps it.
        """
        try:
            record = await self._end(ask_id, outcome)
        except UserInteractionError:
            return  # STORE_FAILED: left pending, for whoever can reach the store
        if _is(record, outcome):
            return
        kept = record.answer
        if kept is None:
            return  # dismissed or ended otherwise first: nothing to keep
        if outcome.state == "aborted":
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED, answer=kept) from None
        raise UserInteractionError.timed_out_error(answer=kept) from None

    async def _written_then_ended(
        self, put: asyncio.Future[AskRecord], ask_id: str, request: AskUserQuestionRequest
    ) -> None:
        """End, in the store, an ask whose call was interrupted while it was being written.

        A plain cancellation cancels the write too, as a crash would end it. An
        abort, or a deadline that has passed, lets the write finish and then
        writes how the ask ended; an answer already kept there (a human's,
        given before the agent came back) is raised on the error, so that the
        caller keeps it.
        """
        signal = request.get("signal")
        aborted = signal is not None and signal.aborted
        if not aborted and not self._deadline_passed(request):
            put.cancel()
            return
        try:
            await put
        except Exception:  # noqa: BLE001 - not written: nothing to end
            return
        outcome = Outcome.aborted(via=self._via) if aborted else self._deadline_outcome(request)
        await self._ended_on_interrupt(ask_id, outcome)

    def _deadline_passed(self, request: AskUserQuestionRequest) -> bool:
        deadline = deadline_of(request)
        return deadline is not None and deadline <= self._clock()

    def _deadline_outcome(self, request: AskUserQuestionRequest) -> Outcome:
        """How the request's deadline ends it: its defaults, or ``expired`` (``DUR-DEADLINE-1``)."""
        defaults = default_answer(request)
        if defaults is None:
            return Outcome.expired(via=self._via)
        return Outcome.answered(defaults, via=self._via)

    def __repr__(self) -> str:
        return f"<DurableProvider store={self._store!r}>"


def _resolve(future: asyncio.Future[object], value: object) -> None:
    if not future.done():
        future.set_result(value)


def _is(record: AskRecord, outcome: Outcome) -> bool:
    """Whether *record* was settled with *outcome* (this call's, or the same offered before)."""
    return record.state == outcome.state and record.answer == outcome.answer
