"""The durable path on a store under test: the provider, relays and expiry built on it.

The store suite's state machine judges a store's own rules (``DUR-STORE-*``).
These scenarios judge what the reference builds on it: a
:class:`~dsh_user_interaction.durable.DurableProvider` that asks, is stopped
and asks again; relays that answer, dismiss, fail and race; an abort and an
expiry that withdraw an ask. A store that breaks its own rules in a way the
state machine did not see (a watch that misses a change, say) shows up here
as an ask that never settles, within a generous bound.

Each scenario takes an opener of stores on fresh data, the request to ask
and a valid answer to it, and returns its findings as (requirement, message)
pairs; it judges the requirements it names in :data:`DURABLE_CHECKS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
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
    Verdict,
    Withdrawn,
    ask_id_of,
    expire,
    serve,
    stored_request,
    with_ask_id,
)

__all__ = ["DURABLE_CHECKS", "DurableCheck", "Finding", "Opener"]

#: Opens a new store on the scenario's data: a connection of its own.
Opener = Callable[[], Awaitable[AskStore]]
#: (requirement ID, what was wrong).
Finding = tuple[str, str]

#: How long a scenario waits for anything; generous, so only a hang fails.
PATIENCE: Final = 10.0


class _Failed(Exception):
    """A finding that ends the scenario."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(message)
        self.requirement = requirement


async def _within(what: Awaitable[Any], requirement: str, doing: str) -> Any:  # noqa: ANN401
    try:
        async with asyncio.timeout(PATIENCE):
            return await what
    except TimeoutError:
        raise _Failed(requirement, f"{doing}: nothing after {PATIENCE:g} s") from None


async def _until(check: Callable[[], Awaitable[bool]], requirement: str, doing: str) -> None:
    async def poll() -> None:
        while not await check():  # noqa: ASYNC110 - a store has no event to wait on
            await asyncio.sleep(0.005)

    await _within(poll(), requirement, doing)


async def _outcome(call: Coroutine[Any, Any, AskUserQuestionAnswer]) -> object:
    """The answer, or the error's code, or the exception's type name."""
    try:
        return await call
    except UserInteractionError as error:
        return error.code
    except Exception as error:  # noqa: BLE001 - reported as what it is
        return f"{type(error).__name__}: {error}"


@contextlib.asynccontextmanager
async def _stores(opener: Opener, count: int) -> AsyncGenerator[list[AskStore]]:
    opened: list[AskStore] = []
    try:
        for _ in range(count):
            opened.append(await opener())
        yield opened
    finally:
        for store in opened:
            with contextlib.suppress(Exception):
                await store.close()


@contextlib.asynccontextmanager
async def _relay(
    store: AskStore,
    ui: object,
    via: str,
    errors: list[tuple[AskRecord, BaseException]] | None = None,
) -> AsyncGenerator[None]:
    def on_error(record: AskRecord, error: BaseException) -> None:
        if errors is not None:
            errors.append((record, error))

    task = asyncio.ensure_future(
        serve(store, cast("Any", ui), via=via, principal=f"{via}-human", on_error=on_error)
    )
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def _pending_has(store: AskStore, ask_id: str) -> bool:
    record = await store.get(ask_id)
    return record is not None and record.pending


def _expected(outcome: Outcome) -> object:
    return {
        "answered": outcome.answer,
        "cancelled": ErrorCode.ASK_CANCELLED,
        "aborted": ErrorCode.ASK_ABORTED,
        "expired": ErrorCode.ASK_ABORTED,
    }[outcome.state]


async def reask(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """Ask, stop, answer while no agent waits, ask again: each outcome, one record."""
    outcomes = (
        Outcome.answered(answer, principal="p", via="ui"),
        Outcome.cancelled(principal="p", via="ui"),
        Outcome.aborted(via="ui"),
        Outcome.expired(via="ui"),
    )
    async with _stores(opener, 3) as (first_agent, ui_store, restarted):
        for index, outcome in enumerate(outcomes):
            ask_id = f"call-{index}"
            asked = with_ask_id(request, ask_id)
            service = UserInteractionService()
            service.register_provider(DurableProvider(first_agent))
            waiting = asyncio.ensure_future(service.ask(asked))
            await _until(
                functools.partial(_pending_has, ui_store, ask_id), "DUR-ID-1", "the ask kept"
            )
            kept = await ui_store.get(ask_id)
            if kept is None or kept.request != stored_request(asked):
                raise _Failed("DUR-ID-1", f"the store keeps {kept!r} for {ask_id!r}")
            # A pending re-ask waits (DUR-REASK-1); the first call is then stopped.
            again = asyncio.ensure_future(_outcome(service.ask(asked)))
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, UserInteractionError):
                await waiting
            if not await _pending_has(ui_store, ask_id):
                raise _Failed("DUR-ABORT-2", "a cancelled call did not leave its ask pending")
            await ui_store.settle(ask_id, outcome, settled_at=1.0)
            got = await _within(again, "DUR-REASK-1", "a re-ask while pending")
            if got != _expected(outcome):
                raise _Failed("DUR-REASK-1", f"a re-ask of a {outcome.state} ask gave {got!r}")
            # A new agent, as after a restart: the outcome at once, nothing added.
            fresh = UserInteractionService()
            fresh.register_provider(DurableProvider(restarted))
            got = await _within(
                _outcome(fresh.ask(asked)), "DUR-RESTART-1", "asking after a restart"
            )
            if got != _expected(outcome):
                raise _Failed(
                    "DUR-RESTART-1", f"after a restart, a {outcome.state} ask gave {got!r}"
                )
        ids = [record.ask_id for record in await ui_store.changes(0)]
        if sorted(ids) != [f"call-{index}" for index in range(len(outcomes))]:
            raise _Failed("DUR-REASK-1", f"asking again added asks: the store holds {ids!r}")


async def reask_conflict(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """The same ask id with other questions: BAD_REQUEST naming askId, the kept ask untouched."""
    del answer
    async with _stores(opener, 1) as (store,):
        provider = DurableProvider(store)
        first = asyncio.ensure_future(provider.ask(with_ask_id(request, "same")))
        try:
            await _until(lambda: _pending_has(store, "same"), "DUR-REASK-2", "the ask kept")
            other = with_ask_id({"questions": [{"id": "another", "question": "?"}]}, "same")
            try:
                await _within(provider.ask(other), "DUR-REASK-2", "a conflicting re-ask")
            except UserInteractionError as error:
                if error.code is not ErrorCode.BAD_REQUEST or "askId" not in str(error):
                    raise _Failed("DUR-REASK-2", f"a conflicting re-ask raised {error!r}") from None
            else:
                raise _Failed("DUR-REASK-2", "a re-ask with other questions was accepted")
            kept = await store.get("same")
            if kept is None or kept.request != stored_request(with_ask_id(request, "same")):
                raise _Failed("DUR-REASK-2", f"the conflicting re-ask changed the ask: {kept!r}")
        finally:
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first


async def abort_and_expiry(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """An abort and an expiry each end the ask in the store and withdraw it from a relay's UI."""
    del answer
    async with _stores(opener, 2) as (agent_store, ui_store):
        ui = ScriptedProvider()
        async with _relay(ui_store, ui, "desk"):
            controller = AbortController()
            signalled = cast("AskUserQuestionRequest", {**request, "signal": controller.signal})
            service = UserInteractionService()
            service.register_provider(DurableProvider(agent_store, via="agent"))
            asking = asyncio.ensure_future(_outcome(service.ask(with_ask_id(signalled, "a"))))
            shown = await _within(ui.next_ask(), "DUR-ABORT-1", "the relay showing the ask")
            controller.abort()
            got = await _within(asking, "DUR-ABORT-1", "the aborted ask")
            record = await ui_store.get("a")
            if got != ErrorCode.ASK_ABORTED or record is None or record.state != "aborted":
                raise _Failed("DUR-ABORT-1", f"an abort gave {got!r} and kept {record!r}")
            await _withdrawn(shown.request, "aborted", "DUR-ABORT-1")
            # An ask nobody comes back for: expiry ends it.
            await agent_store.put("b", stored_request(with_ask_id(request, "b")), asked_at=5.0)
            shown = await _within(ui.next_ask(), "DUR-EXPIRE-1", "the relay showing an old ask")
            expired = await expire(ui_store, asked_before=10.0)
            if [item.ask_id for item in expired] != ["b"]:
                raise _Failed("DUR-EXPIRE-1", f"expiry settled {expired!r}")
            await _withdrawn(shown.request, "expired", "DUR-EXPIRE-1")
            got = await _within(
                _outcome(service.ask(with_ask_id(request, "b"))), "DUR-EXPIRE-1", "re-asking"
            )
            if got != ErrorCode.ASK_ABORTED:
                raise _Failed("DUR-EXPIRE-1", f"asking again for an expired ask gave {got!r}")


async def _withdrawn(shown: AskUserQuestionRequest, state: str, requirement: str) -> None:
    signal = shown.get("signal")
    if signal is None:
        raise _Failed(requirement, "the relay gave its UI no signal")

    async def aborted() -> bool:
        return signal.aborted

    await _until(aborted, requirement, f"withdrawing the {state} ask from the UI")
    reason = signal.reason
    if not isinstance(reason, Withdrawn) or reason.outcome.state != state:
        raise _Failed(requirement, f"the UI was withdrawn with {reason!r}, not a {state} Withdrawn")


class _Failing:
    """A UI that is gone: every ask raises PROVIDER_DISPOSED."""

    def __init__(self) -> None:
        self.calls = 0

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.calls += 1
        raise UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED)


async def relays(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """Answers and dismissals written with who and where; a failing UI writes nothing."""
    async with _stores(opener, 3) as (agent_store, store_a, store_b):
        provider = DurableProvider(agent_store)
        failing, errors = _Failing(), list[tuple[AskRecord, BaseException]]()
        ui = ScriptedProvider()
        async with _relay(store_b, failing, "gone", errors):
            asking = asyncio.ensure_future(_outcome(provider.ask(with_ask_id(request, "r"))))
            await _until(lambda: _has_errors(errors), "DUR-RELAY-1", "a failing UI reported")
            if not await _pending_has(store_a, "r") or failing.calls != 1:
                raise _Failed("DUR-RELAY-1", "a failing UI settled the ask, or was asked again")
            async with _relay(store_a, ui, "desk"):
                shown = await _within(ui.next_ask(), "DUR-RELAY-1", "the relay showing the ask")
                shown.answer(answer)
                got = await _within(asking, "DUR-RELAY-1", "the answered ask")
                dismissed = asyncio.ensure_future(_outcome(provider.ask(with_ask_id(request, "d"))))
                (await _within(ui.next_ask(), "DUR-RELAY-1", "the second ask")).dismiss()
                gone = await _within(dismissed, "DUR-RELAY-1", "the dismissed ask")
        record, other = await store_b.get("r"), await store_b.get("d")
        if got != answer or record is None or (record.state, record.via) != ("answered", "desk"):
            raise _Failed("DUR-RELAY-1", f"an answer through a relay gave {got!r}, kept {record!r}")
        if record.principal != "desk-human" or record.answer != answer:
            raise _Failed("DUR-RELAY-1", f"the answer's record is {record!r}")
        if gone != ErrorCode.ASK_CANCELLED or other is None or other.state != "cancelled":
            raise _Failed(
                "DUR-RELAY-1", f"a dismissal through a relay gave {gone!r}, kept {other!r}"
            )


async def _has_errors(errors: list[tuple[AskRecord, BaseException]]) -> bool:
    return bool(errors)


async def race(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """Two relays answer one ask at once: one wins, the other's answer is reported."""
    async with _stores(opener, 3) as (agent_store, store_a, store_b):
        gate = asyncio.Event()

        async def respond(_request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            await gate.wait()
            return answer

        errors: list[tuple[AskRecord, BaseException]] = []
        uis = [ScriptedProvider(respond=respond), ScriptedProvider(respond=respond)]
        async with _relay(store_a, uis[0], "a", errors), _relay(store_b, uis[1], "b", errors):
            asking = asyncio.ensure_future(
                _outcome(DurableProvider(agent_store).ask(with_ask_id(request, "race")))
            )

            async def both_shown() -> bool:
                return all(ui.asked for ui in uis)

            await _until(both_shown, "DUR-FAN-1", "both relays showing the ask")
            gate.set()
            got = await _within(asking, "DUR-FAN-1", "the raced ask")
            await _until(lambda: _has_errors(errors), "DUR-LOST-1", "the losing answer reported")
        record = await agent_store.get("race")
        if got != answer or record is None or record.via not in {"a", "b"}:
            raise _Failed("DUR-FAN-1", f"the race gave {got!r} and kept {record!r}")
        lost = [error for _, error in errors if isinstance(error, LostAnswer)]
        if len(errors) != 1 or len(lost) != 1 or lost[0].answer != answer:
            raise _Failed("DUR-LOST-1", f"the losing relay reported {errors!r}")


#: How far away each attempt of the deadline scenario puts the deadline, in
#: seconds: the next is tried only when the relay had not shown the ask before
#: the deadline ended it (a busy machine, a slow relay), so an attempt proves
#: the withdrawal too. A store whose relay shows nothing in the last fails.
DEADLINES: Final = (0.05, 0.2, 0.8, 3.2)


async def deadline(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """A deadline ends a durable ask in the store: with its defaults, or as expired.

    The deadline is 50 ms away, so that the scenario is quick; when it ended
    the ask before the relay had shown it, which on a busy machine it may,
    the ask proves nothing about withdrawing it from the UI, and the next
    attempt, under another ask id, puts the deadline four times as far.
    """
    defaults = {
        item["id"]: {key: value for key, value in item.items() if key != "id"}
        for item in answer["answers"]
    }
    with_defaults = cast(
        "AskUserQuestionRequest",
        {
            **request,
            "questions": [
                {**question, "default": defaults[question["id"]]}
                for question in request["questions"]
            ],
        },
    )
    expected = {"answers": [dict(item) for item in answer["answers"]], "defaulted": True}
    async with _stores(opener, 2) as (agent_store, ui_store):
        ui = ScriptedProvider()
        async with _relay(ui_store, ui, "desk"):
            service = UserInteractionService()
            service.register_provider(DurableProvider(agent_store, via="agent"))
            for name, asked in (("late", request), ("defaulted", with_defaults)):
                state = "expired" if asked is request else "answered"
                want = TIMED_OUT_MESSAGE if asked is request else expected
                for attempt, seconds in enumerate(DEADLINES):
                    due = {**asked, "deadline": time.time() + seconds}
                    timed = with_ask_id(cast("AskUserQuestionRequest", due), f"{name}-{attempt}")
                    shown = await _deadline_attempt(
                        service, ui, ui_store, timed, state=state, want=want, expected=expected
                    )
                    if shown is not None:
                        break
                else:
                    raise _Failed(
                        "DUR-DEADLINE-1",
                        f"the relay never showed an ask {DEADLINES[-1]:g} s before its deadline",
                    )
                await _withdrawn(shown.request, state, "DUR-DEADLINE-1")
                again = await _within(
                    _timed_outcome(service.ask(timed)), "DUR-DEADLINE-1", "asking again"
                )
                if again != want:
                    raise _Failed("DUR-DEADLINE-1", f"asking again gave {again!r}, not {want!r}")


async def _deadline_attempt(
    service: UserInteractionService,
    ui: ScriptedProvider,
    ui_store: AskStore,
    timed: AskUserQuestionRequest,
    *,
    state: str,
    want: object,
    expected: object,
) -> PendingAsk | None:
    """Ask *timed*, named and with a deadline; how its deadline ended it is judged.

    Returns the relay's showing of it, or None when the deadline ended the
    ask before the relay showed it.
    """
    ask_id = ask_id_of(timed)
    asking = asyncio.ensure_future(_timed_outcome(service.ask(timed)))
    showing = asyncio.ensure_future(
        ui.wait_for(lambda pending: ask_id_of(pending.request) == ask_id)
    )
    try:
        got = await _within(asking, "DUR-DEADLINE-1", "the ask with a deadline")
    finally:
        shown = showing.result() if showing.done() else None
        showing.cancel()
    record = await ui_store.get(ask_id or "")
    if got != want or record is None or record.state != state:
        raise _Failed(
            "DUR-DEADLINE-1",
            f"the deadline passed; the ask gave {got!r} and the store kept {record!r}",
        )
    if state == "answered" and record.answer != expected:
        raise _Failed("DUR-DEADLINE-1", f"the store kept {record.answer!r}")
    return shown


async def _timed_outcome(call: Coroutine[Any, Any, AskUserQuestionAnswer]) -> object:
    """The answer, or a timed-out error's message, or the error's code or type name."""
    try:
        return await call
    except UserInteractionError as error:
        return str(error) if error.timed_out else error.code
    except Exception as error:  # noqa: BLE001 - reported as what it is
        return f"{type(error).__name__}: {error}"


class _Faulty:
    """A store under test whose next *failures* settlements raise, and wait while *held*."""

    def __init__(self, store: AskStore) -> None:
        self._store = store
        self.failures = 0
        self.attempts = 0
        self.open = asyncio.Event()
        self.open.set()
        self.tried = asyncio.Event()

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - the store's own methods
        return getattr(self._store, name)

    async def settle(self, ask_id: str, outcome: Outcome, *, settled_at: float) -> Settlement:
        self.attempts += 1
        self.tried.set()
        await self.open.wait()
        if self.failures:
            self.failures -= 1
            msg = "a store error the relay must outlast"
            raise OSError(msg)
        return await self._store.settle(ask_id, outcome, settled_at=settled_at)


class _Hearing:
    """A UI that answers when told, and asks for the store's verdicts (``VerdictAware``)."""

    def __init__(self) -> None:
        self.scripted = ScriptedProvider()
        self.verdicts: dict[str, asyncio.Future[Verdict]] = {}

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        ask_id = ask_id_of(request)
        if ask_id is not None:
            self.verdicts[ask_id] = verdict

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.scripted.ask(request)


async def verdicts(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """A relay outlasts store errors, tells its UI the store's verdict, and how asks ended."""
    async with _stores(opener, 2) as (agent_store, relay_store):
        faulty = _Faulty(relay_store)
        ui = _Hearing()
        async with _relay(cast("AskStore", faulty), ui, "desk"):
            # DUR-KEEP-1: two failed writes, then the answer is written; DUR-ACK-1: saved.
            asked = stored_request(with_ask_id(request, "keep"))
            await agent_store.put("keep", asked, asked_at=1.0)
            shown = await _within(ui.scripted.next_ask(), "DUR-KEEP-1", "the relay showing an ask")
            faulty.failures = 2
            shown.answer(answer)
            await _until(
                functools.partial(_answered, agent_store, "keep", answer),
                "DUR-KEEP-1",
                "writing an answer through two store errors",
            )
            told = await _within(
                _verdict(ui, "keep"), "DUR-ACK-1", "the verdict on a written answer"
            )
            if not told.saved:
                raise _Failed("DUR-ACK-1", f"a written answer's verdict was {told!r}")
            # DUR-ACK-1: a write that another outcome beat is told lost, with the winner.
            await agent_store.put(
                "lose", stored_request(with_ask_id(request, "lose")), asked_at=2.0
            )
            shown = await _within(ui.scripted.next_ask(), "DUR-ACK-1", "the relay showing an ask")
            faulty.open.clear()
            faulty.tried.clear()
            shown.answer(answer)
            await _within(faulty.tried.wait(), "DUR-ACK-1", "the relay writing the answer")
            if ui.verdicts["lose"].done():
                raise _Failed("DUR-ACK-1", "a verdict came before the store had answered")
            winner = Outcome.cancelled(principal="bo", via="phone")
            await agent_store.settle("lose", winner, settled_at=3.0)
            faulty.open.set()
            told = await _within(_verdict(ui, "lose"), "DUR-ACK-1", "the verdict on a lost write")
            if told.state != "lost" or told.outcome != winner:
                raise _Failed("DUR-ACK-1", f"an answer beaten by {winner!r} was told {told!r}")
            # DUR-TELL-1: an ask answered elsewhere withdraws the UI, saying how and by whom.
            await agent_store.put(
                "tell", stored_request(with_ask_id(request, "tell")), asked_at=4.0
            )
            shown = await _within(ui.scripted.next_ask(), "DUR-TELL-1", "the relay showing an ask")
            elsewhere = Outcome.answered(answer, principal="bo", via="phone")
            await agent_store.settle("tell", elsewhere, settled_at=5.0)
            await _withdrawn(shown.request, "answered", "DUR-TELL-1")
            signal = shown.request.get("signal")
            reason = signal.reason if signal is not None else None
            if not isinstance(reason, Withdrawn):
                raise _Failed("DUR-TELL-1", f"the UI was withdrawn with {reason!r}")
            if reason.how != "answered" or reason.outcome != elsewhere:
                raise _Failed("DUR-TELL-1", f"the UI was told {reason.how!r}, {reason.outcome!r}")


async def _answered(store: AskStore, ask_id: str, answer: AskUserQuestionAnswer) -> bool:
    record = await store.get(ask_id)
    return record is not None and record.state == "answered" and record.answer == answer


async def _verdict(ui: _Hearing, ask_id: str) -> Verdict:
    while ask_id not in ui.verdicts:  # noqa: ASYNC110 - set when the relay shows the ask
        await asyncio.sleep(0.005)
    return await ui.verdicts[ask_id]


async def _faults(
    opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> None:
    """``durable-faults``, in a module of its own (it builds on this module's helpers)."""
    from ._faults import faults  # noqa: PLC0415 - it imports this module

    await faults(opener, request, answer)


@dataclass(frozen=True)
class DurableCheck:
    """One scenario of the durable path and the requirements it judges."""

    name: str
    requirements: tuple[str, ...]
    run: Callable[[Opener, AskUserQuestionRequest, AskUserQuestionAnswer], Awaitable[None]]

    async def findings(
        self, opener: Opener, request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
    ) -> list[Finding]:
        """Run the scenario; what it found wrong (nothing when it passed)."""
        try:
            await self.run(opener, request, answer)
        except _Failed as failed:
            return [(failed.requirement, str(failed))]
        return []


#: The scenarios, in the order a run takes them.
DURABLE_CHECKS: Final = (
    DurableCheck(
        "durable-reask",
        ("DUR-ID-1", "DUR-REASK-1", "DUR-RESTART-1", "DUR-ABORT-2"),
        reask,
    ),
    DurableCheck("durable-reask-conflict", ("DUR-REASK-2",), reask_conflict),
    DurableCheck("durable-abort-expiry", ("DUR-ABORT-1", "DUR-EXPIRE-1"), abort_and_expiry),
    DurableCheck("durable-relays", ("DUR-RELAY-1",), relays),
    DurableCheck("durable-race", ("DUR-FAN-1", "DUR-LOST-1"), race),
    DurableCheck("durable-deadline", ("DUR-DEADLINE-1",), deadline),
    DurableCheck("durable-faults", ("DUR-AGREE-1", "DUR-DEADLINE-2", "DUR-FAIL-2"), _faults),
    DurableCheck("durable-verdicts", ("DUR-KEEP-1", "DUR-ACK-1", "DUR-TELL-1"), verdicts),
)
