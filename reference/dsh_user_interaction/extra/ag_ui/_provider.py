"""A provider of ours for an AG-UI server: each ask ends the run with an interrupt.

Design notes (the AG-UI rules, kept in one place):

* ``ask()`` opens an interrupt (its id is the ask id, the request's
  ``askId``, or a fresh one) and waits. The server's run loop sees it in
  :attr:`AgUiInterruptProvider.pending` (or waits for it with
  :meth:`~AgUiInterruptProvider.next_interrupts`) and ends the run with
  :meth:`~AgUiInterruptProvider.run_finished`. The ask stays suspended, in
  this process, until a later run's ``resume`` reaches
  :meth:`~AgUiInterruptProvider.resume`.
* Rule 1, all at once: a resume that answers any open interrupt answers every
  open interrupt that a run has ended with (through
  :meth:`~AgUiInterruptProvider.run_finished`), or it is refused
  (``MISSING_INTERRUPT``). An interrupt opened since, which no client has
  seen yet, is not required: the next run ends with it.
* Rule 2, all or nothing: a resume is checked whole before anything is
  delivered. A refused resume (a :class:`ResumeError`, which the server turns
  into a ``RUN_ERROR`` with :func:`run_error_of`) changes nothing: the asks
  still wait, their interrupts still open, and a corrected resume can follow.
* Rule 3, idempotent: an entry equal to the one that ended its interrupt
  (same status, same payload) is accepted again as a no-op with the same
  outcome. A different entry for an interrupt that already ended, however
  it ended, is refused (``INTERRUPT_ENDED``); its outcome is unchanged.
* Rule 4, expiry: an interrupt whose ``expiresAt`` has passed (by this
  provider's clock) is refused (``INTERRUPT_EXPIRED``), whether its ask is
  still being ended by its deadline or has ended already.
* Rule 5, asked once: an ask under the id of an interrupt a resume ended
  (the same tool call, run again) opens nothing and takes that outcome at
  once, as a durable provider does; after a restart of the process, a
  :class:`~dsh_user_interaction.durable.DurableProvider` keeps that promise.
* A ``cancelled`` entry dismisses the ask (``ASK_CANCELLED``); the request's
  signal aborting raises ``ASK_ABORTED``; :meth:`~AgUiInterruptProvider.dispose`
  raises ``PROVIDER_DISPOSED``. Each of them closes the interrupt.
* The interrupts that ended are remembered, for Rule 3 and for clear errors,
  up to *remember* of them, oldest forgotten first; a forgotten one is
  ``UNKNOWN_INTERRUPT``.
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, cast, final

import pydantic
from ag_ui.core import Interrupt, ResumeEntry, RunAgentInput, RunFinishedEvent

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    deadline_of,
)
from dsh_user_interaction._json import JsonError, read_json
from dsh_user_interaction.durable import ask_id_of

from ._answer import answer_of_payload
from ._errors import ResumeError, ResumeErrorCode
from ._interrupt import METADATA_KEY, interrupt_of, run_finished_interrupt

__all__ = ["AgUiInterruptProvider", "EndedHow", "Resumed"]

#: How an interrupt ended, as :class:`Resumed` and the errors name it.
EndedHow: TypeAlias = Literal[
    "answered", "cancelled", "expired", "aborted", "disposed", "withdrawn"
]

_WORDS: Final[dict[str, str]] = {
    "answered": "was answered by an earlier resume",
    "cancelled": "was cancelled by an earlier resume",
    "expired": "expired",
    "aborted": "was aborted by the program",
    "disposed": "ended when its provider was disposed",
    "withdrawn": "was withdrawn (its ask was cancelled)",
}


@dataclass(frozen=True, slots=True)
class Resumed:
    """What one resume entry did."""

    #: The interrupt it answered.
    interrupt_id: str
    #: ``answered`` or ``cancelled``.
    status: Literal["answered", "cancelled"]
    #: The answer it delivered, for ``answered``.
    answer: AskUserQuestionAnswer | None
    #: Whether it repeated the entry that had ended the interrupt already (a no-op).
    repeated: bool


@dataclass(slots=True)
class _Open:
    request: AskUserQuestionRequest[Any]
    interrupt: Interrupt
    future: asyncio.Future[AskUserQuestionAnswer]


@dataclass(frozen=True, slots=True)
class _Ended:
    how: EndedHow
    #: The entry that ended it, as plain JSON, when a resume did.
    entry: tuple[str, object] | None
    answer: AskUserQuestionAnswer | None
    #: The questions of its interrupt, as JSON (its metadata's copy).
    questions: object


@dataclass(frozen=True, slots=True)
class _Entry:
    index: int
    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: object


def _entries(resume: object) -> list[_Entry]:
    """The resume list read into plain entries, or ``MALFORMED_RESUME`` naming the entry."""
    if isinstance(resume, RunAgentInput):
        resume = resume.resume or []
    if not isinstance(resume, Sequence) or isinstance(resume, str | bytes):
        msg = f"resume: expected a list of resume entries, got {type(resume).__name__}"
        raise ResumeError(msg, ResumeErrorCode.MALFORMED_RESUME)
    read: list[_Entry] = []
    for index, raw in enumerate(cast("Sequence[object]", resume)):
        try:
            entry = (
                raw
                if isinstance(raw, ResumeEntry)
                else ResumeEntry.model_validate(raw, by_alias=True, by_name=True)
            )
        except pydantic.ValidationError as error:
            problem = error.errors()[0]
            field = ".".join(str(step) for step in problem["loc"])
            where = f"resume[{index}].{field}" if field else f"resume[{index}]"
            msg = f"{where}: {problem['msg']}"
            raise ResumeError(msg, ResumeErrorCode.MALFORMED_RESUME) from None
        try:
            payload = cast("list[object]", read_json([entry.payload]))[0]
        except JsonError as error:
            msg = f"resume[{index}].payload: is not JSON data: {error}"
            raise ResumeError(
                msg, ResumeErrorCode.BAD_PAYLOAD, interrupt_id=entry.interrupt_id
            ) from None
        read.append(_Entry(index, entry.interrupt_id, entry.status, payload))
    return read


def _questions_of(interrupt: Interrupt) -> object:
    return (interrupt.metadata or {}).get(METADATA_KEY)


def _fresh_id() -> str:
    return uuid.uuid4().hex


@final
class AgUiInterruptProvider:
    """A provider whose asks end the current AG-UI run with an interrupt and resume on a later one.

    Register it with a :class:`~dsh_user_interaction.UserInteractionService`
    (or show a store's asks through it with
    :func:`~dsh_user_interaction.durable.serve`). The server's run loop ends a
    run with :meth:`run_finished` while :attr:`pending` is not empty, and
    hands the next run's ``resume`` to :meth:`resume`. *clock* tells the time
    an ``expiresAt`` is judged by; *remember* bounds how many ended
    interrupts are kept for idempotent resumes.
    """

    __slots__ = (
        "_announced",
        "_clock",
        "_ended",
        "_new_id",
        "_open",
        "_remember",
        "_waiters",
        "asked",
    )

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        new_ask_id: Callable[[], str] = _fresh_id,
        remember: int = 1024,
    ) -> None:
        if remember < 0:
            msg = f"remember must not be negative, got {remember!r}"
            raise ValueError(msg)
        self._clock = clock
        self._new_id = new_ask_id
        self._remember = remember
        self._open: dict[str, _Open] = {}
        #: The open interrupts a run has ended with: a resume answers them all at once.
        self._announced: set[str] = set()
        self._ended: OrderedDict[str, _Ended] = OrderedDict()
        self._waiters: list[asyncio.Future[None]] = []
        #: How many interrupts this provider has opened, in all.
        self.asked = 0

    @property
    def pending(self) -> tuple[Interrupt, ...]:
        """The open interrupts, oldest first, which the current run must end with."""
        return tuple(shown.interrupt for shown in self._open.values())

    async def next_interrupts(self) -> tuple[Interrupt, ...]:
        """Wait until at least one interrupt is open, and return every open one."""
        await self._until(lambda: bool(self._open))
        return self.pending

    async def opened(self, interrupt_ids: Collection[str]) -> None:
        """Wait until each of *interrupt_ids* is open or has ended here.

        A server restarted with a durable store calls it before :meth:`resume`:
        the step run again asks again, and the store's ask opens its interrupt
        anew. Bound the wait (``asyncio.timeout``), since an id never asked
        again never opens.
        """
        wanted = set(interrupt_ids)
        await self._until(lambda: all(n in self._open or n in self._ended for n in wanted))

    async def _until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def run_finished(self, thread_id: str, run_id: str) -> RunFinishedEvent:
        """The ``RUN_FINISHED`` event with every open interrupt as its outcome.

        From then on a resume must answer each of them at once. Raises
        :class:`ValueError` when no interrupt is open.
        """
        event = run_finished_interrupt(thread_id, run_id, self.pending)
        self._announced.update(self._open)
        return event

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        """Open an interrupt for *request* and wait for the resume that answers it.

        Raises ``ASK_CANCELLED`` for a ``cancelled`` resume entry,
        ``ASK_ABORTED`` when the signal aborts, ``PROVIDER_DISPOSED`` on
        :meth:`dispose`, and ``BAD_REQUEST`` when another open interrupt has
        the same id or the request cannot travel as JSON.

        Asked again under the id of an interrupt a resume ended (a step run
        again), it opens nothing: it returns that answer, or raises
        ``ASK_CANCELLED`` for a cancelled one, at once, as a durable
        provider does (``DUR-REASK-1``); with other questions under that id it
        raises ``BAD_REQUEST`` (``DUR-REASK-2``).
        """
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        name = ask_id_of(request) or self._new_id()
        if name in self._open:
            msg = f"the interrupt {name!r} is open already: two asks cannot share an ask id"
            raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)
        interrupt = interrupt_of(request, ask_id=name)
        ended = self._ended.get(name)
        if ended is not None and ended.entry is not None:
            if ended.questions != _questions_of(interrupt):
                msg = (
                    f"the ask id {name!r} names an interrupt already answered with other"
                    " questions; a new question needs a new ask id"
                )
                raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)
            if ended.answer is None:
                raise UserInteractionError.of(ErrorCode.ASK_CANCELLED)
            return copy.deepcopy(ended.answer)  # each caller its own, as a store's read gives
        self.asked += 1
        future: asyncio.Future[AskUserQuestionAnswer] = asyncio.get_running_loop().create_future()
        shown = _Open(request, interrupt, future)
        self._ended.pop(name, None)
        self._open[name] = shown

        def on_abort(_signal: object) -> None:
            if not future.done():
                self._close(name, "aborted")
                future.set_exception(UserInteractionError.of(ErrorCode.ASK_ABORTED))

        remove = signal.add_listener(on_abort) if signal is not None else None
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        try:
            return await future
        finally:
            if remove is not None:
                remove()
            if self._open.get(name) is shown:
                # Cancelled (a service's deadline or abort, or the caller's own).
                deadline = deadline_of(request)
                expired = deadline is not None and self._clock() >= deadline
                self._close(name, "expired" if expired else "withdrawn")
            if not future.done():
                future.cancel()

    def dispose(self) -> None:
        """End every open interrupt's ask with ``PROVIDER_DISPOSED``, as a closing UI does."""
        for name, shown in list(self._open.items()):
            self._close(name, "disposed")
            if not shown.future.done():
                shown.future.set_exception(UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED))

    def resume(
        self, resume: RunAgentInput | Sequence[ResumeEntry | Mapping[str, Any]]
    ) -> list[Resumed]:
        """Deliver a run's resume entries (or a whole ``RunAgentInput``) to the waiting asks.

        Returns what each entry did, in order. Raises :class:`ResumeError`,
        having delivered nothing, for a malformed entry, an unknown or
        repeated interrupt id, an open interrupt left out, an expired
        interrupt, one that already ended otherwise, or a payload that is not
        an answer to its questions.
        """
        entries = _entries(resume)
        seen: dict[str, int] = {}
        for entry in entries:
            if entry.interrupt_id in seen:
                msg = (
                    f"resume[{entry.index}].interruptId: {entry.interrupt_id!r} is answered"
                    f" twice (also by resume[{seen[entry.interrupt_id]}])"
                )
                raise ResumeError(
                    msg, ResumeErrorCode.DUPLICATE_INTERRUPT, interrupt_id=entry.interrupt_id
                )
            seen[entry.interrupt_id] = entry.index
        now = self._clock()
        plan: list[tuple[_Entry, AskUserQuestionAnswer | None]] = []
        results: list[Resumed] = []
        for entry in entries:
            shown = self._open.get(entry.interrupt_id)
            if shown is not None:
                deadline = deadline_of(shown.request)
                if deadline is not None and now >= deadline:
                    raise self._expired(entry)
                answer = (
                    answer_of_payload(
                        shown.request,
                        entry.payload,
                        where=f"resume[{entry.index}].payload",
                        interrupt_id=entry.interrupt_id,
                    )
                    if entry.status == "resolved"
                    else None
                )
                plan.append((entry, answer))
                continue
            results.append(self._repeated(entry))
        if plan:
            missing = [name for name in self._open if name in self._announced and name not in seen]
            if missing:
                msg = (
                    f"resume: every open interrupt is answered at once; {len(missing)} left out:"
                    f" {', '.join(repr(name) for name in missing)}"
                )
                raise ResumeError(msg, ResumeErrorCode.MISSING_INTERRUPT, interrupt_id=missing[0])
        delivered: dict[int, Resumed] = {}
        for entry, answer in plan:
            shown = self._open[entry.interrupt_id]
            how: EndedHow = "answered" if answer is not None else "cancelled"
            self._close(entry.interrupt_id, how, (entry.status, entry.payload), answer)
            if answer is not None:
                shown.future.set_result(answer)
            else:
                shown.future.set_exception(UserInteractionError.of(ErrorCode.ASK_CANCELLED))
            delivered[entry.index] = Resumed(
                entry.interrupt_id, "answered" if answer is not None else "cancelled", answer, False
            )
        repeats = iter(results)
        return [
            delivered[entry.index] if entry.index in delivered else next(repeats)
            for entry in entries
        ]

    def _expired(self, entry: _Entry) -> ResumeError:
        msg = (
            f"resume[{entry.index}]: the interrupt {entry.interrupt_id!r} expired;"
            " no answer can reach it"
        )
        return ResumeError(msg, ResumeErrorCode.INTERRUPT_EXPIRED, interrupt_id=entry.interrupt_id)

    def _repeated(self, entry: _Entry) -> Resumed:
        """An entry for an interrupt that is not open: a repeat, or an error."""
        ended = self._ended.get(entry.interrupt_id)
        if ended is None:
            msg = f"resume[{entry.index}].interruptId: no interrupt {entry.interrupt_id!r} is known"
            raise ResumeError(
                msg, ResumeErrorCode.UNKNOWN_INTERRUPT, interrupt_id=entry.interrupt_id
            )
        if ended.entry == (entry.status, entry.payload):
            status: Literal["answered", "cancelled"] = (
                "answered" if ended.how == "answered" else "cancelled"
            )
            return Resumed(entry.interrupt_id, status, ended.answer, True)
        if ended.how == "expired":
            raise self._expired(entry)
        msg = (
            f"resume[{entry.index}]: the interrupt {entry.interrupt_id!r} {_WORDS[ended.how]};"
            " its outcome is unchanged"
        )
        raise ResumeError(msg, ResumeErrorCode.INTERRUPT_ENDED, interrupt_id=entry.interrupt_id)

    def _close(
        self,
        name: str,
        how: EndedHow,
        entry: tuple[str, object] | None = None,
        answer: AskUserQuestionAnswer | None = None,
    ) -> None:
        shown = self._open.pop(name)
        self._announced.discard(name)
        self._ended[name] = _Ended(how, entry, answer, _questions_of(shown.interrupt))
        while len(self._ended) > self._remember:
            self._ended.popitem(last=False)

    def __repr__(self) -> str:
        return f"<AgUiInterruptProvider open={len(self._open)} asked={self.asked}>"
