"""The service: registration (SVC-REG-*), passing (SVC-PASS-1), waiting, and answers."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    Registration,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_of,
    answer_selected,
)
from dsh_user_interaction_conformance import run_suite
from dsh_user_interaction_conformance._stand_ins import Ignoring, Recording, StandInFailed, settle
from dsh_user_interaction_conformance.strategies import (
    InvalidAnswer,
    InvalidRequest,
    invalid_answers,
    invalid_requests,
    requests,
    valid_answers,
)

from .helpers import one_question, run


def current(service: UserInteractionService) -> object:
    """The registered provider, read through a call so type checkers do not narrow it."""
    return service.provider


def test_register_returns_a_disposer_and_duplicates_raise_at_once() -> None:
    """SVC-REG-1, SVC-REG-2: registration, disposal in every form, DUPLICATE_PROVIDER at once."""
    service = UserInteractionService()
    provider = Recording()
    registration = service.register_provider(provider)
    assert current(service) is provider
    with pytest.raises(UserInteractionError) as raised:
        service.register_provider(provider)  # the same object too
    assert raised.value.code is ErrorCode.DUPLICATE_PROVIDER
    assert str(raised.value) == "a user-interaction provider is already registered"
    registration()
    assert current(service) is None
    assert registration.active is False
    with service.register_provider(provider) as second:
        assert current(service) is provider
    assert not second.active
    assert current(service) is None
    third = service.register_provider(provider)
    third.dispose()
    third.dispose()
    assert current(service) is None


def test_stale_registration_never_unregisters_a_newer_provider() -> None:
    """SVC-REG-3: disposing twice is harmless, and an old handle cannot remove a new provider."""
    service = UserInteractionService()
    old = service.register_provider(Recording())
    old.dispose()
    newer_provider = Recording()
    service.register_provider(newer_provider)
    old.dispose()
    old()
    assert current(service) is newer_provider


@given(invalid_requests(), st.booleans())
def test_failed_checks_never_reach_the_provider(case: InvalidRequest, registered: bool) -> None:
    """SVC-PASS-1, SVC-ORDER-*: a failing check raises its code and never calls the provider."""
    service = UserInteractionService()
    provider = Recording()
    if registered:
        service.register_provider(provider)
    outcome = run(settle(service.ask(case.request)))
    assert isinstance(outcome, UserInteractionError)
    assert outcome.code is case.code
    assert provider.seen == []


def test_ask_raises_nothing_until_awaited() -> None:
    """SVC-ASYNC-1: even a hopeless request only fails when awaited."""
    service = UserInteractionService()
    coroutine = service.ask({"questions": []})
    with pytest.raises(UserInteractionError, match="at least one question"):
        run(coroutine)


@given(requests())
def test_the_provider_receives_the_very_same_request(request: AskUserQuestionRequest) -> None:
    """SVC-PASS-1 and SVC-STRICT-2: same request object in, same answer object out."""
    service = UserInteractionService()
    provider = Recording()
    service.register_provider(provider)
    answer = run(service.ask(request))
    assert provider.seen == [request]
    assert provider.seen[0] is request
    assert answer_of(*answer["answers"]) == answer


@given(st.data())
def test_valid_answers_are_returned_as_the_same_object(data: st.DataObject) -> None:
    """SVC-STRICT-2: a valid answer is passed through untouched."""
    request = data.draw(requests())
    answer = data.draw(valid_answers(request))
    service = UserInteractionService()
    service.register_provider(Recording(answer))
    assert run(service.ask(request)) is answer


@given(st.data())
def test_strict_service_rejects_bad_answers_and_keeps_them(data: st.DataObject) -> None:
    """SVC-STRICT-1: BAD_ANSWER names the requirement and the question; the raw answer stays."""
    request = data.draw(requests())
    case: InvalidAnswer = data.draw(invalid_answers(request))
    service = UserInteractionService()
    service.register_provider(Recording(case.answer))
    outcome = run(settle(service.ask(request)))
    assert isinstance(outcome, UserInteractionError)
    assert outcome.code is ErrorCode.BAD_ANSWER
    assert outcome.answer is case.answer
    assert case.requirement in {v.requirement for v in outcome.violations}
    assert outcome.violations[0].requirement in str(outcome)


@given(st.data())
def test_lenient_service_returns_any_answer(data: st.DataObject) -> None:
    """SVC-STRICT-2: with strict=False the answer is returned as it is."""
    request = data.draw(requests())
    case: InvalidAnswer = data.draw(invalid_answers(request))
    service = UserInteractionService(strict=False)
    service.register_provider(Recording(case.answer))
    assert run(service.ask(request)) is case.answer


def test_provider_errors_propagate_unchanged() -> None:
    """SVC-ERR-1: the very exception object the provider raised reaches the caller."""
    error = UserInteractionError.of(ErrorCode.ASK_CANCELLED)

    class Dismissing:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            raise error

    service = UserInteractionService()
    service.register_provider(Dismissing())
    assert run(settle(service.ask(one_question()))) is error


@settings(max_examples=25)
@given(st.integers(0, 3))
def test_abort_while_waiting_settles_promptly_even_when_ignored(delay_steps: int) -> None:
    """SVC-ABORT-1: ASK_ABORTED within one loop step of the abort; the provider is cancelled."""

    async def main() -> None:
        service = UserInteractionService()
        provider = Ignoring()
        service.register_provider(provider)
        controller = AbortController()
        request = one_question(signal=controller.signal)
        task = asyncio.ensure_future(settle(service.ask(request)))
        for _ in range(delay_steps + 1):
            await asyncio.sleep(0)
        controller.abort()
        await asyncio.sleep(0)
        assert task.done()
        outcome = task.result()
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert str(outcome) == "ask_user_question was aborted before the user answered"
        assert provider.cancelled == 1
        assert controller.signal.listener_count == 0
        assert service.pending_count == 0
        current = asyncio.current_task()
        assert current is not None
        assert current.cancelling() == 0

    run(main())


def test_an_answer_already_returned_stands() -> None:
    """SVC-ABORT-2: aborting after the provider answered changes nothing."""

    async def main() -> None:
        service = UserInteractionService()
        provider = ScriptedProvider()
        service.register_provider(provider)
        controller = AbortController()
        request = one_question(signal=controller.signal)
        answer = answer_of(answer_selected("q"))
        task = asyncio.ensure_future(service.ask(request))
        (await provider.next_ask()).answer(answer)
        assert await task is answer
        controller.abort()
        assert controller.signal.listener_count == 0

    run(main())


def test_an_abort_from_inside_the_provider_after_its_answer_does_not_win() -> None:
    """Rule 3 of the service: an abort in the provider's last step lands late; the answer stands."""

    class AbortsThenAnswers:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            controller.abort()
            return {"answers": [{"id": "q", "selected": []}]}

    controller = AbortController()

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(AbortsThenAnswers())
        request = one_question(signal=controller.signal)
        answer = await service.ask(request)
        assert answer == {"answers": [{"id": "q", "selected": []}]}
        await asyncio.sleep(0)  # a leftover cancellation would strike here
        await asyncio.sleep(0)

    run(main())


def test_a_provider_that_swallows_the_abort_keeps_its_answer_on_the_error() -> None:
    """SVC-ABORT-3: the late answer does not win, and it is not lost."""
    late = answer_of(answer_selected("q"))

    class Stubborn:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                return late
            raise AssertionError

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(Stubborn())
        controller = AbortController()
        request = one_question(signal=controller.signal)
        task = asyncio.ensure_future(settle(service.ask(request)))
        await asyncio.sleep(0)
        controller.abort()
        outcome = await task
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert outcome.answer is late

    run(main())


def test_a_provider_that_converts_the_interrupt_still_yields_the_service_code() -> None:
    """SVC-DISPOSE-1: a provider that converts the cancellation still yields PROVIDER_DISPOSED."""

    class Converting:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise RuntimeError("ui torn down") from None
            raise AssertionError

    async def main() -> None:
        service = UserInteractionService()
        registration = service.register_provider(Converting())
        task = asyncio.ensure_future(settle(service.ask(one_question())))
        await asyncio.sleep(0)
        registration.dispose()
        outcome = await task
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.PROVIDER_DISPOSED
        assert isinstance(outcome.__cause__, RuntimeError)

    run(main())


@given(st.sampled_from(["cancel", "cancel-then-abort", "abort-then-cancel", "cancel-then-dispose"]))
def test_caller_cancellation_propagates_unchanged(order: str) -> None:
    """SVC-CANCEL-1: the caller's cancellation wins, even alongside an abort or a disposal."""

    async def main() -> None:
        service = UserInteractionService()
        provider = Ignoring()
        registration = service.register_provider(provider)
        controller = AbortController()
        request = one_question(signal=controller.signal)
        task = asyncio.ensure_future(service.ask(request))
        await asyncio.sleep(0)
        for step in order.split("-then-"):
            if step == "cancel":
                task.cancel("caller")
            elif step == "abort":
                controller.abort()
            else:
                registration.dispose()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
        assert provider.cancelled == 1
        assert controller.signal.listener_count == 0
        assert service.pending_count == 0

    run(main())


def test_dispose_mid_ask_rejects_every_pending_ask() -> None:
    """SVC-DISPOSE-1: all pending asks raise PROVIDER_DISPOSED; the provider calls are cancelled."""

    async def main() -> None:
        service = UserInteractionService()
        provider = Ignoring()
        registration = service.register_provider(provider)
        tasks = [asyncio.ensure_future(settle(service.ask(one_question(str(i))))) for i in range(5)]
        await asyncio.sleep(0)
        assert service.pending_count == 5
        registration.dispose()
        outcomes = await asyncio.gather(*tasks)
        for outcome in outcomes:
            assert isinstance(outcome, UserInteractionError)
            assert outcome.code is ErrorCode.PROVIDER_DISPOSED
            assert (
                str(outcome)
                == "the user-interaction provider was disposed before the user answered"
            )
        assert provider.cancelled == 5
        assert service.pending_count == 0

    run(main())


@pytest.mark.parametrize(
    ("done", "code"),
    [
        ("dispose", ErrorCode.PROVIDER_DISPOSED),
        ("abort", ErrorCode.ASK_ABORTED),
        ("dispose+abort", ErrorCode.ASK_ABORTED),
    ],
)
def test_an_interrupt_from_inside_the_providers_first_step_is_delivered_while_it_waits(
    done: str, code: ErrorCode
) -> None:
    """Rules 3 and 6: an interrupt the asking task made lands once the provider waits.

    The step's order is not seen, so an abort it made wins over its disposal.
    """

    class InterruptsThenWaits:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            if "dispose" in done:
                holder[0].dispose()
            if "abort" in done:
                controller.abort()
            await asyncio.Event().wait()
            raise AssertionError

    controller = AbortController()
    holder: list[Registration] = []

    async def main() -> None:
        service = UserInteractionService()
        holder.append(service.register_provider(InterruptsThenWaits()))
        outcome = await settle(service.ask(one_question(signal=controller.signal)))
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is code
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0  # the service took its own cancellation back
        assert service.pending_count == 0

    run(main())


def test_a_provider_that_answers_in_its_first_step_needs_no_event_loop() -> None:
    """Rule 6: an answer given without suspending is checked and returned, with no wiring."""
    answer: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": []}]}

    class Immediate:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            assert service.pending_count == 0
            return answer

    service = UserInteractionService()
    service.register_provider(Immediate())
    signal = AbortController().signal
    steps = service.ask(one_question(signal=signal))
    with pytest.raises(StopIteration) as stopped:
        steps.send(None)  # outside any event loop: nothing looks one up
    assert stopped.value.value is answer
    assert signal.listener_count == 0


def test_an_ask_stepped_outside_a_task_refuses_and_closes_the_providers_call() -> None:
    """Rule 6: a provider that suspends where no task can be interrupted is closed, not left."""
    closed: list[bool] = []

    class Suspends:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            try:
                await asyncio.sleep(3600)
            finally:
                closed.append(True)
            raise AssertionError

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(Suspends())
        steps = service.ask(one_question())
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[BaseException] = loop.create_future()

        def step() -> None:  # a loop callback, not a task
            try:
                steps.send(None)
            except BaseException as error:  # noqa: BLE001 - what the step raised is the outcome
                outcome.set_result(error)

        loop.call_soon(step)
        error = await asyncio.wait_for(outcome, 5)
        assert isinstance(error, RuntimeError)
        assert "must run inside an asyncio task" in str(error)
        assert closed == [True]
        assert service.pending_count == 0

    run(main())


def test_a_cancellation_the_provider_makes_in_an_answering_step_reaches_the_caller() -> None:
    """Rule 6: the provider's answer stands, and its cancellation strikes at the next await."""
    answer: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": []}]}

    class CancelsThenAnswers:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            return answer

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(CancelsThenAnswers())
        assert await service.ask(one_question()) is answer
        with pytest.raises(asyncio.CancelledError):
            await asyncio.sleep(0)

    run(main())


def test_a_cancellation_the_provider_makes_before_it_waits_is_its_own_outcome() -> None:
    """Rule 6: it is delivered to the provider; raised on, it propagates unchanged."""

    class CancelsThenWaits:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            task = asyncio.current_task()
            assert task is not None
            task.cancel("from the provider")
            await asyncio.Event().wait()
            raise AssertionError

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(CancelsThenWaits())
        with pytest.raises(asyncio.CancelledError, match="from the provider"):
            await service.ask(one_question())
        assert service.pending_count == 0

    run(main())


def test_concurrent_asks_on_the_scripted_provider_do_not_cross() -> None:
    """Several pending asks settle in any order, each with its own answer."""

    async def main() -> None:
        service = UserInteractionService()
        provider = ScriptedProvider()
        service.register_provider(provider)
        tasks = [asyncio.ensure_future(service.ask(one_question(f"q{i}"))) for i in range(4)]
        while len(provider.pending) < 4:
            await provider.next_ask()
            await asyncio.sleep(0)
        for pending in reversed(provider.pending):
            question_id = pending.request["questions"][0]["id"]
            pending.answer(answer_of(answer_selected(question_id)))
        answers = await asyncio.gather(*tasks)
        assert [a["answers"][0]["id"] for a in answers] == ["q0", "q1", "q2", "q3"]

    run(main())


@pytest.mark.skipif(sys.version_info < (3, 11), reason="needs Task.uncancel")
def test_no_task_is_created_per_ask() -> None:
    """Rule 2 of the service: the provider runs in the caller's task."""

    class Where:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            seen.append(asyncio.current_task())
            return {"answers": [{"id": "q", "selected": []}]}

    seen: list[object] = []

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(Where())
        await service.ask(one_question())
        assert seen == [asyncio.current_task()]

    run(main())


class _HandsOverGarbage:
    """A service that hands its provider something that is not a request at all."""

    def __init__(self) -> None:
        self.inner = UserInteractionService()

    def register_provider(self, provider: Any) -> Registration:
        class Garbling:
            async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
                garbage: Any = {"questions": 5}
                answer: AskUserQuestionAnswer = await provider.ask(garbage)
                return answer

        return self.inner.register_provider(Garbling())

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.inner.ask(request)


def test_when_the_suites_own_stand_in_fails_the_report_says_so() -> None:
    """A stand-in that cannot read what the service gave it names itself, and what it got.

    Not a bare ``TypeError`` that reads like a bug of the service's own code.
    """
    with pytest.raises(StandInFailed, match="the stand-in provider of the suite could not skip"):
        run(Recording().ask({"questions": 5}))  # type: ignore[typeddict-item] # deliberately broken
    report = run_suite(
        service_factory=_HandsOverGarbage,
        kinds=["service"],
        only=["service-registration"],
        seed=1,
        bound=0.3,
        shrink=False,
    )
    failed = [r for r in report.results if r.status == "failed"]
    assert failed
    assert all("the stand-in provider of the suite" in r.message for r in failed), [
        r.message for r in failed
    ]
