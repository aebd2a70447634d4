"""Keeping a store in shape: expiry of abandoned asks, retention, and the audit export.

An agent that dies leaves its asks pending: a UI can still answer them, and
the agent that asks again with the same ask id takes the answer. An ask that
no agent will ever come back for would stay on every UI for ever, so
:func:`expire` settles pending asks older than a limit as ``expired``
(``DUR-EXPIRE-1``): UIs withdraw them, and an agent that asks again gets
``ASK_ABORTED``. Retention deletes settled records older than a limit
(:meth:`AskStore.purge`). :func:`maintain` runs both on a schedule.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import IO

from .._errors import ErrorCode, UserInteractionError
from ._store import AskRecord, AskStore, Outcome, checked_time, encode_json

__all__ = ["expire", "export_jsonl", "maintain"]


async def expire(
    store: AskStore,
    *,
    asked_before: float,
    via: str = "expiry",
    clock: Callable[[], float] = time.time,
) -> list[AskRecord]:
    """Settle every ask still pending that was asked before *asked_before* as ``expired``.

    Returns the records this call settled (an ask answered meanwhile keeps its answer).
    """
    limit = checked_time(asked_before, "asked_before")
    expired: list[AskRecord] = []
    for record in await store.pending():
        if record.asked_at < limit:
            settlement = await store.settle(
                record.ask_id, Outcome.expired(via=via), settled_at=clock()
            )
            if settlement.won:
                expired.append(settlement.record)
    return expired


async def export_jsonl(
    store: AskStore, file: IO[str], *, settled_after: float | None = None
) -> int:
    """Write the audit record, one settled ask per line of JSON, to *file*; return the count.

    Each line is :meth:`AskRecord.to_json`: the ask id, its outcome, who
    settled it (``principal``) and through which UI (``via``), when it was
    asked and settled, the answer and the request. The text is ASCII, with
    every other character escaped, so any text survives any file encoding.
    """
    records = await store.records(settled_after=settled_after)
    for record in records:
        file.write(encode_json(record.to_json()))
        file.write("\n")
    return len(records)


async def maintain(
    store: AskStore,
    *,
    expire_after: float | None = None,
    keep_for: float | None = None,
    every: float = 60.0,
    clock: Callable[[], float] = time.time,
) -> None:
    """Until cancelled, every *every* seconds: expire and purge.

    Asks pending for more than *expire_after* seconds are expired; settled
    records older than *keep_for* seconds are deleted. ``None`` turns either
    off. Run it in one process per store (running it in several is safe,
    only wasteful). A round the store fails (``STORE_FAILED``: a database out
    of reach, locked, or out of disk) is told to the loop's exception handler
    (by default, asyncio logs it) and tried again at the next round: an
    outage never ends the upkeep.
    """
    interval = checked_time(every, "every")
    if interval <= 0:
        msg = f"every must be positive, got {every!r}"
        raise ValueError(msg)
    for name, value in (("expire_after", expire_after), ("keep_for", keep_for)):
        if value is not None and checked_time(value, name) < 0:
            msg = f"{name} must not be negative, got {value!r}"
            raise ValueError(msg)
    while True:
        now = clock()
        try:
            if expire_after is not None:
                await expire(store, asked_before=now - expire_after, clock=clock)
            if keep_for is not None:
                await store.purge(settled_before=now - keep_for)
        except UserInteractionError as error:
            if error.code is not ErrorCode.STORE_FAILED:
                raise
            asyncio.get_running_loop().call_exception_handler(
                {
                    "message": (
                        f"maintain(): the store failed; trying again in {interval:g} s: {error}"
                    ),
                    "exception": error,
                }
            )
        await asyncio.sleep(interval)
