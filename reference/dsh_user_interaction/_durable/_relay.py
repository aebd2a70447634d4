"""The UI's side of a durable ask: show a store's pending asks through any provider.

:func:`serve` watches a store. Each pending ask is shown through the given
provider, by a service of its own (so every answer is checked by the answer
rules before it is written); the provider's outcome is written back, and the
first outcome written wins (``DUR-RELAY-1``). When an ask is settled
elsewhere, the provider's request signal aborts with a
:class:`~dsh_user_interaction.durable.Withdrawn` reason saying how and where.

What is written, and what is not:

* an answer: ``answered``, with the principal and ``via``;
* ``ASK_CANCELLED`` (the human dismissed the batch): ``cancelled``;
* anything else (the provider was disposed, crashed, or gave an answer that
  breaks the rules): nothing. The ask stays pending for other UIs and is not
  shown again by this relay; the error goes to *on_error*.

An answer that loses to an earlier outcome goes to *on_error* as a
:class:`~dsh_user_interaction.durable.LostAnswer`, never dropped silently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final, TypeAlias, cast

from .._abort import AbortController
from .._errors import ErrorCode, UserInteractionError
from .._service import UserInteractionService
from .._types import AskUserQuestionRequest, UserInteractionProvider
from ._store import AskRecord, AskStore, Outcome
from ._withdrawn import LostAnswer, Withdrawn

__all__ = ["ErrorHandler", "Principal", "serve"]

_log: Final = logging.getLogger("dsh_user_interaction.durable")

#: Who answers through a relay: a fixed name, or one read off each record.
Principal: TypeAlias = "str | Callable[[AskRecord], str | None] | None"
#: Told of every error the relay does not write to the store.
ErrorHandler: TypeAlias = Callable[[AskRecord, BaseException], object]


def _log_error(record: AskRecord, error: BaseException) -> None:
    _log.warning("ask %r: %s: %s", record.ask_id, type(error).__name__, error)


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
    withdrawn from the provider (left pending in the store), and nothing is
    left running.
    """
    # The agent's side keeps each ask's deadline (DUR-DEADLINE-1); the UI only shows it.
    service = UserInteractionService(enforce_deadlines=False)
    shown: dict[str, AbortController] = {}
    finished: set[str] = set()

    def report(record: AskRecord, error: BaseException) -> None:
        try:
            on_error(record, error)
        except Exception:  # noqa: BLE001 - a handler that raises never stops the relay
            _log.exception("ask %r: on_error raised", record.ask_id)

    def name_of(record: AskRecord) -> str | None:
        return principal(record) if callable(principal) else principal

    async def show(record: AskRecord, controller: AbortController) -> None:
        request = cast("AskUserQuestionRequest", {**record.request, "signal": controller.signal})
        try:
            try:
                answer = await service.ask(request)
            except UserInteractionError as error:
                if error.code is ErrorCode.ASK_CANCELLED:
                    outcome = Outcome.cancelled(principal=name_of(record), via=via)
                    await store.settle(record.ask_id, outcome, settled_at=clock())
                elif not (
                    error.code is ErrorCode.ASK_ABORTED
                    and isinstance(controller.signal.reason, Withdrawn)
                ):
                    finished.add(record.ask_id)
                    report(record, error)
                    if error.answer is not None:
                        _log.warning("ask %r: the rejected answer: %r", record.ask_id, error.answer)
                return
            outcome = Outcome.answered(answer, principal=name_of(record), via=via)
            settlement = await store.settle(record.ask_id, outcome, settled_at=clock())
            if not settlement.won:
                winner = settlement.record.outcome
                if winner is not None and winner != outcome:
                    report(record, LostAnswer(answer, winner, ask_id=record.ask_id))
        except Exception as error:  # noqa: BLE001 - one ask's failure never stops the relay
            finished.add(record.ask_id)
            report(record, error)
        finally:
            shown.pop(record.ask_id, None)

    with service.register_provider(provider):
        async with asyncio.TaskGroup() as group:
            async for record in store.watch(0):
                if record.pending:
                    if record.ask_id in shown or record.ask_id in finished:
                        continue
                    controller = AbortController()
                    shown[record.ask_id] = controller
                    group.create_task(show(record, controller), name=f"dsh-relay-{record.ask_id}")
                else:
                    showing = shown.get(record.ask_id)
                    outcome = record.outcome
                    if showing is not None and outcome is not None:
                        showing.abort(Withdrawn(outcome, ask_id=record.ask_id))
