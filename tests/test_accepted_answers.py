"""An answer the scripted provider accepted is never dropped, whatever lands in the same step.

``PendingAsk.answer()`` resolves the ask, and the provider's call resumes one
loop step later. These tests put an abort, a disposal or a cancellation into
that gap, through a service and with the provider alone, and the other way
round (the interrupt first, then the answer, which ``answer()`` refuses).
"""

from __future__ import annotations

import asyncio

import pytest

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    PendingAsk,
    Registration,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_of,
    answer_selected,
)

from .helpers import run


class Scene:
    """One registered scripted provider, one ask on a signal, and the caller's task."""

    def __init__(self, *, through_service: bool) -> None:
        self.service = UserInteractionService()
        self.provider = ScriptedProvider()
        self.registration: Registration = self.service.register_provider(self.provider)
        self.controller = AbortController()
        self.request: AskUserQuestionRequest = {
            "questions": [{"id": "q", "question": "Go?", "options": [{"label": "Yes"}]}],
            "signal": self.controller.signal,
        }
        self.answer: AskUserQuestionAnswer = answer_of(answer_selected("q", "Yes"))
        asking = self.service.ask if through_service else self.provider.ask
        self.task: asyncio.Task[AskUserQuestionAnswer] = asyncio.ensure_future(asking(self.request))

    async def shown(self) -> PendingAsk:
        async with asyncio.timeout(1):
            return await self.provider.next_ask()

    def interrupt(self, how: str) -> None:
        for step in how.split("+"):
            if step == "abort":
                self.controller.abort()
            elif step == "dispose":
                self.registration.dispose()
            elif step == "provider-dispose":
                self.provider.dispose()
            else:
                assert step == "cancel"
                self.task.cancel()

    async def outcome(self) -> object:
        try:
            return await self.task
        except BaseException as error:  # noqa: BLE001 - judged by the test
            return error

    def assert_nothing_left(self) -> None:
        assert self.provider.pending == ()
        assert self.service.pending_count == 0
        assert self.controller.signal.listener_count == 0


@pytest.mark.parametrize(
    ("how", "code"),
    [
        ("abort", ErrorCode.ASK_ABORTED),
        ("dispose", ErrorCode.PROVIDER_DISPOSED),
        ("abort+dispose", ErrorCode.ASK_ABORTED),
        ("dispose+abort", ErrorCode.PROVIDER_DISPOSED),
    ],
)
def test_an_interrupt_right_after_the_answer_keeps_it_on_the_error(
    how: str, code: ErrorCode
) -> None:
    """SVC-ABORT-3: an abort or disposal in the answer's own step wins, and keeps the answer."""

    async def main() -> None:
        scene = Scene(through_service=True)
        (await scene.shown()).answer(scene.answer)
        scene.interrupt(how)
        outcome = await scene.outcome()
        assert isinstance(outcome, UserInteractionError), outcome
        assert outcome.code is code
        assert outcome.answer is scene.answer
        assert scene.task.cancelling() == 0  # the service took its own cancellation back
        scene.assert_nothing_left()

    run(main())


@pytest.mark.parametrize("how", ["cancel", "cancel+abort", "abort+cancel", "dispose+cancel"])
def test_a_caller_cancellation_right_after_the_answer_still_propagates(how: str) -> None:
    """SVC-CANCEL-1: the caller asked to stop; CancelledError wins over the accepted answer."""

    async def main() -> None:
        scene = Scene(through_service=True)
        (await scene.shown()).answer(scene.answer)
        scene.interrupt(how)
        outcome = await scene.outcome()
        assert isinstance(outcome, asyncio.CancelledError), outcome
        assert scene.task.cancelled()
        assert scene.task.cancelling() == 1  # exactly the caller's own request
        scene.assert_nothing_left()

    run(main())


@pytest.mark.parametrize("how", ["abort", "provider-dispose", "cancel", "abort+cancel"])
def test_the_provider_alone_returns_an_answer_it_accepted(how: str) -> None:
    """The accepted answer is the call's result; a cancellation stays counted on the task."""

    async def main() -> None:
        scene = Scene(through_service=False)
        (await scene.shown()).answer(scene.answer)
        scene.interrupt(how)
        assert await scene.outcome() is scene.answer
        assert scene.task.cancelling() == how.count("cancel")
        scene.assert_nothing_left()

    run(main())


@pytest.mark.parametrize(
    ("how", "through_service"),
    [
        ("abort", True),
        ("dispose", True),
        ("cancel", True),
        ("abort", False),
        ("provider-dispose", False),
        ("cancel", False),
    ],
)
def test_an_answer_after_the_interrupt_is_refused(how: str, through_service: bool) -> None:
    """Answering an ask that an interrupt has already ended raises InvalidStateError."""

    async def main() -> None:
        scene = Scene(through_service=through_service)
        pending = await scene.shown()
        scene.interrupt(how)
        assert pending.done
        with pytest.raises(asyncio.InvalidStateError):
            pending.answer(scene.answer)
        outcome = await scene.outcome()
        assert outcome is not scene.answer
        assert getattr(outcome, "answer", None) is None
        scene.assert_nothing_left()

    run(main())


@pytest.mark.parametrize(
    ("how", "through_service", "expected"),
    [
        ("cancel", False, asyncio.CancelledError),
        ("cancel", True, asyncio.CancelledError),
        ("abort", True, ErrorCode.ASK_ABORTED),
        ("dispose", True, ErrorCode.PROVIDER_DISPOSED),
    ],
)
def test_a_dismissal_overtaken_by_a_cancellation_gives_way(
    how: str, through_service: bool, expected: object
) -> None:
    """Only an accepted answer outlives a cancellation; a dismissal yields to the interrupt."""

    async def main() -> None:
        scene = Scene(through_service=through_service)
        (await scene.shown()).dismiss()
        scene.interrupt(how)
        outcome = await scene.outcome()
        if isinstance(expected, ErrorCode):
            assert isinstance(outcome, UserInteractionError), outcome
            assert outcome.code is expected
            assert outcome.answer is None
        else:
            assert isinstance(outcome, asyncio.CancelledError), outcome
        scene.assert_nothing_left()

    run(main())
