"""A provider that ignores its cancellation is left behind, and nothing it does is lost (SVC-LEAVE-1)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction._provider_call import left_behind
from dsh_user_interaction_conformance._stand_ins import Stubborn, settle

from .helpers import one_question, patience, run

ANSWER: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": []}]}

#: What a provider does once its call is cancelled, after a few steps of clean-up.
ENDINGS = ("re-raises", "answers", "raises ValueError", "stays pending")
#: How the ask is interrupted.
INTERRUPTS = ("abort", "dispose", "cancel", "timeout")


class AfterCancel:
    """Waits for the human; cancelled, takes *steps* of clean-up, then *ending*.

    A step is ``"bare"`` (``asyncio.sleep(0)``), ``"future"`` (a future resolved
    on the next loop turn), so the clean-up ends well within a grace of tenths
    of a second, or ``"gate"``, which waits until the test sets ``gate``.
    """

    def __init__(self, steps: list[str], ending: str) -> None:
        self.steps = steps
        self.ending = ending
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.release = asyncio.Event()
        self.ended: list[str] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            loop = asyncio.get_running_loop()
            for step in self.steps:
                if step == "bare":
                    await asyncio.sleep(0)
                elif step == "gate":
                    await self.gate.wait()
                else:
                    done: asyncio.Future[None] = loop.create_future()
                    loop.call_soon(done.set_result, None)
                    await done
            if self.ending == "re-raises":
                self.ended.append("re-raised")
                raise
            if self.ending == "answers":
                self.ended.append("answered")
                return ANSWER
            if self.ending == "raises ValueError":
                self.ended.append("raised")
                raise ValueError("the screen was already gone") from None
            while not self.release.is_set():
                try:
                    await self.release.wait()
                except asyncio.CancelledError:
                    continue  # ignores this one too
            self.ended.append("released")
            return ANSWER
        raise AssertionError  # pragma: no cover - the wait never ends


async def interrupted(interrupt: str, provider: Any, grace: float = 0.25) -> tuple[object, float]:
    """Ask through *provider*, interrupt it once it waits; the outcome and how long it took.

    How long it took is judged only from below (a grace is waited out); the
    wait for the ask is a bound that ends a red run (3 s on the idle machine,
    the calibrated patience on a busy one), never a speed goal.
    """
    bound = patience(0.3)
    service = UserInteractionService(cancel_grace=grace)
    registration = service.register_provider(provider)
    controller = AbortController()
    request: AskUserQuestionRequest = {**one_question(), "signal": controller.signal}

    async def caller() -> object:
        if interrupt == "timeout":
            async with asyncio.timeout(0.05):
                return await service.ask(request)
        return await service.ask(request)

    task = asyncio.ensure_future(caller())
    await provider.started.wait()
    started = time.monotonic()
    actions: dict[str, Callable[[], object]] = {
        "abort": controller.abort,
        "dispose": registration.dispose,
        "cancel": task.cancel,
        "timeout": lambda: None,
    }
    actions[interrupt]()
    done, _ = await asyncio.wait({task}, timeout=bound)
    took = time.monotonic() - started
    if not done:
        # A service that waits for it: let the provider end, so the test fails and ends.
        free = provider.release
        if isinstance(free, asyncio.Event):
            free.set()
        else:
            free()
        await asyncio.wait({task}, timeout=bound)
        return f"still pending {bound:.1f} s after the interrupt", took
    return await settle(task), took


def expected_code(interrupt: str) -> ErrorCode | None:
    return {"abort": ErrorCode.ASK_ABORTED, "dispose": ErrorCode.PROVIDER_DISPOSED}.get(interrupt)


def ends_as_interrupted(outcome: object, interrupt: str) -> bool:
    """Whether *outcome* is what *interrupt* must give when the provider's own end is no answer."""
    code = expected_code(interrupt)
    if code is not None:
        return isinstance(outcome, UserInteractionError) and outcome.code is code
    if interrupt == "timeout":
        return isinstance(outcome, TimeoutError)
    return isinstance(outcome, asyncio.CancelledError)


@settings(max_examples=60, deadline=None)
@given(
    interrupt=st.sampled_from(INTERRUPTS),
    steps=st.lists(st.sampled_from(["bare", "future"]), max_size=3),
    ending=st.sampled_from(ENDINGS),
)
def test_a_cancelled_provider_ends_its_call_or_is_left_behind(
    interrupt: str, steps: list[str], ending: str
) -> None:
    """SVC-LEAVE-1: clean-up within the grace is the provider's outcome; staying pending is not.

    A provider that re-raises, answers or raises after a few loop steps of
    clean-up ends the ask as it would without them (a late answer is kept on
    the interrupt's error, SVC-ABORT-3). One that stays pending is left behind
    after the grace, and the ask settles as the interrupt says; released
    later, its answer reaches the loop's exception handler.
    """

    async def scenario() -> None:
        reported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        provider = AfterCancel(steps, ending)
        before = left_behind()
        outcome, took = await interrupted(interrupt, provider)
        if ending == "stays pending":
            assert ends_as_interrupted(outcome, interrupt), outcome
            assert took >= 0.2, took  # the grace was waited out
            assert left_behind() == before + 1
            provider.release.set()
            for _ in range(5):
                await asyncio.sleep(0)
            assert left_behind() == before
            assert provider.ended == ["released"]
            assert [c.get("answer") for c in reported] == [ANSWER]
            return
        assert left_behind() == before
        assert not reported
        code = expected_code(interrupt)
        if ending == "answers" and code is not None:
            assert isinstance(outcome, UserInteractionError)
            assert outcome.code is code
            assert outcome.answer is ANSWER  # SVC-ABORT-3: kept on the error
        elif ending == "raises ValueError" and code is not None:
            # Rule 4 of the service: the provider turned the interrupt into its own error.
            assert isinstance(outcome, UserInteractionError)
            assert outcome.code is code
            assert isinstance(outcome.__cause__, ValueError)
        elif ending == "raises ValueError":
            # The caller's cancellation wins over whatever the provider raised instead.
            assert ends_as_interrupted(outcome, interrupt), outcome
        else:
            assert ends_as_interrupted(outcome, interrupt), outcome

    run(scenario())


def test_the_stand_in_that_ignores_its_cancellation_is_left_behind_and_released() -> None:
    """The suite's Stubborn stand-in: an abort settles the ask; released, its call re-raises."""

    async def scenario() -> None:
        provider = Stubborn()
        outcome, _ = await interrupted("abort", provider, grace=0.05)
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert provider.cancelled == 1
        assert not provider.ended.is_set()
        provider.release()
        await provider.ended.wait()
        await asyncio.sleep(0)
        assert left_behind() == 0

    run(scenario())


def test_a_left_behind_call_that_raises_is_reported_with_its_error() -> None:
    """Rule 3: an error a left-behind call raises later reaches the loop's exception handler."""

    class RaisesLate(AfterCancel):
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            await super().ask(request)
            raise ValueError("late")

    async def scenario() -> None:
        reported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        provider = RaisesLate([], "stays pending")
        outcome, _ = await interrupted("dispose", provider, grace=0)
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.PROVIDER_DISPOSED
        provider.release.set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert [type(c.get("exception")) for c in reported] == [ValueError]
        assert "ignored its cancellation" in reported[0]["message"]

    run(scenario())


def test_a_grace_of_zero_leaves_behind_any_provider_that_waits_after_its_cancellation() -> None:
    """With ``cancel_grace=0`` a provider that awaits anything after its cancellation is left.

    Its clean-up still runs to the end, in the task it is left in, and a
    cancellation it re-raises at last is not reported.
    """

    async def scenario() -> None:
        reported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        provider = AfterCancel(["gate"], "re-raises")
        outcome, _ = await interrupted("abort", provider, grace=0)
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert provider.ended == []
        assert left_behind() == 1
        provider.gate.set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert provider.ended == ["re-raised"]
        assert left_behind() == 0
        assert not reported

    run(scenario())


def test_an_answer_without_suspending_costs_no_grace() -> None:
    """Rule 1: a provider that answers at once is awaited exactly as ``await`` would."""

    class AtOnce:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            return ANSWER

    async def scenario() -> None:
        service = UserInteractionService()
        service.register_provider(AtOnce())
        assert await service.ask(one_question()) is ANSWER

    run(scenario())


@pytest.mark.parametrize(
    ("grace", "error"),
    [
        (-0.1, ValueError),
        (1.5, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        ("0.1", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_the_grace_is_checked(grace: object, error: type[Exception]) -> None:
    """``cancel_grace`` is a number of seconds from 0 to 1, the most SVC-LEAVE-1 allows."""
    with pytest.raises(error, match="cancel_grace"):
        UserInteractionService(cancel_grace=grace)  # type: ignore[arg-type] # deliberately wrong


def test_the_grace_is_kept() -> None:
    """The service says which grace it gives; the default is a quarter of a second."""
    assert UserInteractionService().cancel_grace == 0.25
    assert UserInteractionService(cancel_grace=0).cancel_grace == 0.0
    assert UserInteractionService(cancel_grace=1).cancel_grace == 1.0


class BusyAfterCancel:
    """Cancelled, keeps working in short waits of *step* seconds, *steps* of them, then answers.

    With ``steps=None`` it works on for ever.
    """

    def __init__(self, step: float, steps: int | None) -> None:
        self.step = step
        self.steps = steps
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            done = 0
            while (self.steps is None or done < self.steps) and not self.release.is_set():
                await asyncio.sleep(self.step)
                done += 1
            return ANSWER
        raise AssertionError  # pragma: no cover - the wait never ends


def test_a_provider_making_progress_keeps_the_grace_up_to_a_second() -> None:
    """Rule 2: each resumption starts the grace again, so slow but busy clean-up is waited for.

    Eight waits of 0.05 s (0.4 s in all, more than the 0.25 s grace) end the
    call, and its late answer stays on the error; work that never ends is
    left behind a second after the cancellation.
    """

    async def scenario() -> None:
        reported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        busy = BusyAfterCancel(0.05, 8)
        outcome, took = await interrupted("abort", busy)
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert outcome.answer is ANSWER
        assert took >= 0.4
        assert left_behind() == 0
        forever = BusyAfterCancel(0.05, None)
        outcome, took = await interrupted("abort", forever)
        assert isinstance(outcome, UserInteractionError)
        assert outcome.answer is None
        assert took >= 1.0, took
        assert left_behind() == 1
        forever.release.set()
        while left_behind():  # noqa: ASYNC110 - it ends within a few loop iterations; run() bounds it
            await asyncio.sleep(0.01)
        assert [context.get("answer") for context in reported] == [ANSWER]

    run(scenario())
