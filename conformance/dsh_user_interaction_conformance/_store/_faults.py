"""``durable-faults``: a store under faults, and one outcome the agent and every UI agree on.

The agent's writes to the store under test are held (a slow store),
refused as locked, or kept with their reply lost, while a UI answers the
same ask through another handle and a third handle writes a burst of other
asks, all at the same moment. Whatever the store does then, the agent's
outcome, the stored record and every UI must agree (``DUR-AGREE-1``): the
agent receives what the store recorded, a UI whose answer was recorded
reports nothing, a UI whose answer lost is told so (``LostAnswer``), and a
UI that did not answer is withdrawn with the recorded outcome.

The faults are the scenario's, around the agent's handle: so any store can
be judged with them, and a store that mishandles what they cause (two
settlements at once from two handles, a write retried after its reply was
lost, writes contending for its lock) shows it as a disagreement.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, Final, cast

from dsh_user_interaction import (
    TIMED_OUT_MESSAGE,
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    PendingAsk,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.durable import (
    AskRecord,
    AskStore,
    DurableProvider,
    LostAnswer,
    Outcome,
    Settlement,
    StoredRequest,
    ask_id_of,
    stored_request,
    with_ask_id,
)

from ._durable import (
    PATIENCE,
    Opener,
    _Failed,
    _relay,
    _stores,
    _timed_outcome,
    _until,
    _withdrawn,
    _within,
)

__all__ = ["BURST", "FAULT_CASES", "faults"]

#: The cases: (what the agent's handle does, how the ask ends, whether a UI
#: answers at the same moment).
FAULT_CASES: Final = (
    ("slow", "deadline", True),
    ("slow", "abort", True),
    ("locked", "deadline", True),
    ("locked", "abort", False),
    ("lost-reply", "deadline", False),
    ("lost-reply", "abort", True),
)

#: How many other asks the busy handle writes while the agent's write is let go.
BURST: Final = 8


class _Faulty:
    """The agent's handle on the store under test, with one fault in its settlements.

    Every settlement waits until the scenario lets it go (``slow``); then a
    ``locked`` one is refused twice without writing, as a lock held too long
    refuses it; a ``lost-reply`` one is written and then raises once, as a
    connection lost before the reply does. Everything else is the store's.
    """

    def __init__(self, inner: AskStore, fault: str) -> None:
        self.inner = inner
        self.fault = fault
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.failures = 0

    async def put(self, ask_id: str, request: StoredRequest, *, asked_at: float) -> AskRecord:
        return await self.inner.put(ask_id, request, asked_at=asked_at)

    async def get(self, ask_id: str) -> AskRecord | None:
        return await self.inner.get(ask_id)

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        self.entered.set()
        await self.release.wait()
        if self.fault == "locked" and self.failures < 2:
            self.failures += 1
            msg = "the database is locked by another connection (a fault of the suite)"
            raise UserInteractionError(msg, ErrorCode.STORE_FAILED)
        settlement = await self.inner.settle(ask_id, outcome, settled_at=settled_at)
        if self.fault == "lost-reply" and self.failures < 1:
            self.failures += 1
            msg = "the connection was lost before the store's reply (a fault of the suite)"
            raise UserInteractionError(msg, ErrorCode.STORE_FAILED)
        return settlement

    def watch(self, after: int = 0) -> Any:  # noqa: ANN401 - the store's own iterator
        return self.inner.watch(after)


async def _burst(store: AskStore, prefix: str, request: AskUserQuestionRequest) -> None:
    """Write :data:`BURST` other asks at once through *store*: the store is busy meanwhile."""
    kept = stored_request(request)
    await asyncio.gather(
        *(store.put(f"{prefix}-{number}", kept, asked_at=1.0) for number in range(BURST))
    )


def _names(ask_id: str, pending: PendingAsk) -> bool:
    """Whether *pending* is the ask *ask_id*."""
    return ask_id_of(pending.request) == ask_id


def _agreed(record: AskRecord) -> object:
    """What the agent must have received for *record*, as ``_timed_outcome`` words it."""
    if record.state == "answered":
        return record.answer
    if record.state == "cancelled":
        return ErrorCode.ASK_CANCELLED
    if record.state == "expired":
        return TIMED_OUT_MESSAGE
    return ErrorCode.ASK_ABORTED


def _with_defaults(
    request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> AskUserQuestionRequest:
    """*request* with *answer* as every question's default."""
    defaults = {
        item["id"]: {key: value for key, value in item.items() if key != "id"}
        for item in answer["answers"]
    }
    questions = [
        {**question, "default": defaults[question["id"]]} for question in request["questions"]
    ]
    return cast("AskUserQuestionRequest", {**request, "questions": questions})


async def faults(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """A slow, locked or reply-losing store: the agent, the record and every UI agree."""
    with_defaults = _with_defaults(request, answer)
    async with _stores(opener, 3) as (agent_store, ui_store, busy):
        for index, (fault, ending, racing) in enumerate(FAULT_CASES):
            ask_id = f"fault-{index}"
            case = f"{fault} store, {ending}" + (", a UI answering at once" if racing else "")
            faulty = _Faulty(agent_store, fault)
            # DUR-AGREE-2: an agent's service leaves aborts and deadlines to its provider.
            service = UserInteractionService(enforce_deadlines=False, enforce_aborts=False)
            service.register_provider(
                DurableProvider(cast("Any", faulty), via="agent", store_patience=PATIENCE)
            )
            controller = AbortController()
            asked: dict[str, object] = dict(with_defaults if ending == "deadline" else request)
            asked["signal"] = controller.signal
            if ending == "deadline":
                asked["deadline"] = time.time() + 0.2
            timed = with_ask_id(cast("AskUserQuestionRequest", asked), ask_id)
            ui = ScriptedProvider()
            errors: list[tuple[AskRecord, BaseException]] = []
            async with _relay(ui_store, ui, "desk", errors):
                asking = asyncio.ensure_future(_timed_outcome(service.ask(timed)))
                shown = await _within(
                    ui.wait_for(functools.partial(_names, ask_id)),
                    "DUR-AGREE-1",
                    f"{case}: the relay showing the ask",
                )
                if ending == "abort":
                    controller.abort()
                await _within(
                    faulty.entered.wait(), "DUR-AGREE-1", f"{case}: the agent ending the ask"
                )
                busy_writes = asyncio.ensure_future(_burst(busy, f"busy-{index}", request))
                if racing:
                    shown.answer(answer)
                faulty.release.set()
                got = await _within(asking, "DUR-AGREE-1", f"{case}: the agent's outcome")
                await _within(busy_writes, "DUR-AGREE-1", f"{case}: the busy handle's writes")
                record = await ui_store.get(ask_id)
                if record is None or record.pending:
                    raise _Failed(
                        "DUR-AGREE-1",
                        f"{case}: the agent received {got!r} while the store holds {record!r}",
                    )
                if got != _agreed(record):
                    raise _Failed(
                        "DUR-AGREE-1",
                        f"{case}: the agent received {got!r}; the store recorded"
                        f" {record.state} {record.answer!r} via {record.via!r}",
                    )
                if racing:
                    mine = [(kept, error) for kept, error in errors if kept.ask_id == ask_id]
                    await _ui_told(record, mine, case)
                else:
                    await _withdrawn(shown.request, record.state, "DUR-AGREE-1")


async def _ui_told(
    record: AskRecord, errors: list[tuple[AskRecord, BaseException]], case: str
) -> None:
    """The UI that answered: its answer is the record, or it was told that it lost."""
    if record.via == "desk":
        if errors:
            raise _Failed("DUR-AGREE-1", f"{case}: the UI whose answer won reported {errors!r}")
        return

    async def reported() -> bool:
        return any(isinstance(error, LostAnswer) for _, error in errors)

    await _until(reported, "DUR-AGREE-1", f"{case}: the losing UI told that it lost")
