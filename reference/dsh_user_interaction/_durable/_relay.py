"""The UI's side of a durable ask: show a store's pending asks through any provider.

:func:`serve` watches a store. Each pending ask is shown through the given
provider, by a service of its own (so every answer is checked by the answer
rules before it is written); the provider's outcome is written back, and the
first outcome written wins (``DUR-RELAY-1``). When an ask is settled
elsewhere, the provider's request signal aborts with a
:class:`~dsh_user_interaction.durable.Withdrawn` reason saying how and where
(``DUR-TELL-1``).

What is written, and what is not:

* an answer: ``answered``, with the principal and ``via``;
* ``ASK_CANCELLED`` (the human dismissed the batch): ``cancelled``;
* anything else (the provider was disposed, crashed, or gave an answer that
  breaks the rules): nothing. The ask stays pending for other UIs and is not
  shown again by this relay while it stays pending; the error goes to
  *on_error*.

Design notes (the invariants this module keeps):

Rule 1: an outcome the provider gave is never dropped (``DUR-KEEP-1``). A
store error on writing it (any exception from ``settle`` but ``KeyError``)
goes to *on_error*, and the write is tried again after a pause that doubles
from :data:`RETRY_FIRST` to :data:`RETRY_MAX`, until the store takes it or
answers with an outcome written elsewhere. Each ask holds at most one
outcome, so what the relay keeps is bounded by the asks it shows. When the
relay is stopped first, the outcome is logged (the
``dsh_user_interaction.durable`` logger, at ``ERROR``: stderr when logging is
not configured) with its ask id, reported as an
:class:`~dsh_user_interaction.durable.UnsavedAnswer`, and the ask stays
pending in the store.

Rule 2: the provider learns the store's verdict when it asks for it
(``DUR-ACK-1``). A provider that implements
:class:`~dsh_user_interaction.durable.VerdictAware` gets, before each ask, a
future that the relay resolves once: ``saved`` when its outcome was written,
``lost`` (with the winner) when another came first, ``unsaved`` when the
relay stopped before writing it; cancelled when the provider gave no
outcome. So a UI says "answered" only once the store has the answer.

Rule 3: a failing watch never stops the relay: it is reported and watched
again from the last change seen, after the same pauses.

An answer that loses to an earlier outcome goes to *on_error* as a
:class:`~dsh_user_interaction.durable.LostAnswer`, never dropped silently
(``DUR-LOST-1``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Final, TypeAlias, cast

from .._abort import AbortController
from .._deadline import deadline_of
from .._errors import ErrorCode, UserInteractionError
from .._service import UserInteractionService
from .._types import AskUserQuestionAnswer, AskUserQuestionRequest, UserInteractionProvider
from ._store import ASK_ID_KEY, AskRecord, AskStore, Outcome, Settlement, encode_json
from ._verdict import Verdict, VerdictAware
from ._withdrawn import LostAnswer, UnsavedAnswer, Withdrawn

__all__ = ["RETRY_FIRST", "RETRY_MAX", "ErrorHandler", "Principal", "serve"]

_log: Final = logging.getLogger("dsh_user_interaction.durable")

#: Who answers through a relay: a fixed name, or one read off each record.
Principal: TypeAlias = "str | Callable[[AskRecord], str | None] | None"
#: Told of every error the relay does not write to the store.
ErrorHandler: TypeAlias = Callable[[AskRecord, BaseException], object]

#: Seconds before a failed write (or watch) is tried again the first time.
RETRY_FIRST: Final = 0.05
#: The longest pause between two tries, in seconds.
RETRY_MAX: Final = 2.0


def _log_error(record: AskRecord, error: BaseException) -> None:
    _log.warning("ask %r: %s: %s", record.ask_id, type(error).__name__, error)


def _pause(delay: float) -> float:
    """*delay*, give or take a quarter: relays that failed together do not retry together."""
    return delay * random.uniform(0.75, 1.25)  # noqa: S311 - jitter, not a secret


def _timed_out(record: AskRecord) -> bool:
    """Whether an ``expired`` *record* was ended by its deadline (``DUR-DEADLINE-1``)."""
    return record.state == "expired" and deadline_of(record.request) is not None


def _tell(verdict: asyncio.Future[Verdict] | None, told: Verdict) -> None:
    if verdict is not None and not verdict.done():
        verdict.set_result(told)


async def serve(
    store: AskStore,
    provider: UserInteractionProvider,
    *,
    via: str,
    principal: Principal = None,
    on_error: ErrorHandler = _log_error,
    clock: Callable[[], float] = time.time,
) -> None:
    """Show *store*'s pending asks through *provider* until cancelled.

    *via* names this UI in the audit record, and *principal* who answers
    through it. Cancel the task running it to stop: every ask it shows is
    withdrawn from the provider (left pending in the store), an outcome not
    yet written is logged with its ask id, and nothing is left running.
    """
    # The agent's side keeps each ask's deadline (DUR-DEADLINE-1); the UI only shows it.
    service = UserInteractionService(enforce_deadlines=False)
    shown: dict[str, AbortController] = {}
    #: Asks whose provider failed, by id, with the change number of the pending record
    #: that failed: not shown again while that record stays pending. Bounded: an id
    #: leaves as soon as the watch sees the ask settled. A pending record of the same
    #: id with another change number is a new ask (put again after a purge the watch
    #: never saw the settlement of), and is shown.
    failed: dict[str, int] = {}
    hears = isinstance(provider, VerdictAware)

    def report(record: AskRecord, error: BaseException) -> None:
        try:
            on_error(record, error)
        except Exception:  # noqa: BLE001 - a handler that raises never stops the relay
            _log.exception("ask %r: on_error raised", record.ask_id)

    def name_of(record: AskRecord) -> str | None:
        return principal(record) if callable(principal) else principal

    async def write(record: AskRecord, outcome: Outcome) -> Settlement:
        """Settle *record* with *outcome*, through any number of store errors (Rule 1)."""
        delay = RETRY_FIRST
        while True:
            try:
                return await store.settle(record.ask_id, outcome, settled_at=clock())
            except KeyError:
                raise  # the store has no such ask (purged): no try will write it
            except Exception as error:  # noqa: BLE001 - a store error: kept, and tried again
                report(record, error)
                last[record.ask_id] = error
            await asyncio.sleep(_pause(delay))
            delay = min(delay * 2, RETRY_MAX)

    last: dict[str, BaseException] = {}

    async def show(record: AskRecord, controller: AbortController) -> None:
        request = cast(
            "AskUserQuestionRequest",
            {**record.request, ASK_ID_KEY: record.ask_id, "signal": controller.signal},
        )
        verdict: asyncio.Future[Verdict] | None = None
        if hears:
            verdict = asyncio.get_running_loop().create_future()
            try:
                cast("VerdictAware", provider).expect_verdict(request, verdict)
            except Exception as error:  # noqa: BLE001 - the provider's bug stops no ask
                report(record, error)
                verdict = None
        outcome: Outcome | None = None
        try:
            try:
                answer = await service.ask(request)
            except UserInteractionError as error:
                reason = controller.signal.reason
                if error.code is ErrorCode.ASK_CANCELLED:
                    outcome = Outcome.cancelled(principal=name_of(record), via=via)
                elif error.code is ErrorCode.ASK_ABORTED and isinstance(reason, Withdrawn):
                    lost = Verdict(
                        record.ask_id, "lost", reason.outcome, timed_out=reason.how == "timed_out"
                    )
                    _tell(verdict, lost)
                    if error.answer is not None:  # given as it was withdrawn: kept (DUR-LOST-1)
                        late = cast("AskUserQuestionAnswer", error.answer)
                        report(
                            record,
                            LostAnswer(late, reason.outcome, ask_id=record.ask_id),
                        )
                    return
                else:
                    failed[record.ask_id] = record.seq
                    report(record, error)
                    if error.answer is not None:
                        _log.warning("ask %r: the rejected answer: %r", record.ask_id, error.answer)
                    return
            else:
                outcome = Outcome.answered(answer, principal=name_of(record), via=via)
            try:
                settlement = await write(record, outcome)
            except KeyError as error:
                report(record, error)
                _tell(
                    verdict,
                    Verdict(record.ask_id, "unsaved", reason="the store no longer has this ask"),
                )
                return
            winner = settlement.record.outcome
            if settlement.won or winner == outcome:  # (a retried write that had gone through)
                _tell(verdict, Verdict(record.ask_id, "saved", outcome))
                return
            _tell(
                verdict,
                Verdict(record.ask_id, "lost", winner, timed_out=_timed_out(settlement.record)),
            )
            if winner is not None and outcome.answer is not None:
                report(record, LostAnswer(outcome.answer, winner, ask_id=record.ask_id))
        except asyncio.CancelledError:
            if outcome is not None:
                # Stopped before the store took it (Rule 1): logged, never dropped silently.
                unsaved = UnsavedAnswer(
                    outcome, ask_id=record.ask_id, cause=last.get(record.ask_id)
                )
                _log.error(
                    "ask %r: NOT SAVED, the relay stopped first; it stays pending. %s outcome: %s",
                    record.ask_id,
                    outcome.state,
                    encode_json(
                        {
                            "answer": outcome.answer,
                            "principal": outcome.principal,
                            "via": outcome.via,
                        }
                    ),
                )
                report(record, unsaved)
                _tell(
                    verdict,
                    Verdict(
                        record.ask_id,
                        "unsaved",
                        reason="the relay stopped before the store took it",
                    ),
                )
            raise
        except Exception as error:  # noqa: BLE001 - one ask's failure never stops the relay
            failed[record.ask_id] = record.seq
            report(record, error)
        finally:
            shown.pop(record.ask_id, None)
            last.pop(record.ask_id, None)
            if verdict is not None and not verdict.done():
                verdict.cancel()

    async def changes() -> AsyncIterator[AskRecord]:
        """The store's changes, watched again from the last one seen after an error (Rule 3)."""
        cursor = 0
        delay = RETRY_FIRST
        while True:
            try:
                async for record in store.watch(cursor):
                    cursor = max(cursor, record.seq)
                    delay = RETRY_FIRST
                    yield record
            except Exception as error:  # noqa: BLE001 - an outage ends no relay
                _log.warning(
                    "watching the store failed (%s: %s); watching again",
                    type(error).__name__,
                    error,
                )
            else:
                return  # the store was closed
            await asyncio.sleep(_pause(delay))
            delay = min(delay * 2, RETRY_MAX)

    with service.register_provider(provider):
        async with asyncio.TaskGroup() as group:
            async for record in changes():
                if record.pending:
                    if record.ask_id in shown or failed.get(record.ask_id) == record.seq:
                        continue
                    failed.pop(record.ask_id, None)
                    controller = AbortController()
                    shown[record.ask_id] = controller
                    group.create_task(show(record, controller), name=f"dsh-relay-{record.ask_id}")
                else:
                    failed.pop(record.ask_id, None)
                    showing = shown.get(record.ask_id)
                    outcome = record.outcome
                    if showing is not None and outcome is not None:
                        reason = Withdrawn(
                            outcome, ask_id=record.ask_id, timed_out=_timed_out(record)
                        )
                        showing.abort(reason)
