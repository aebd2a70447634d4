"""The scripted reference provider and the validating wrapper."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    ValidatingProvider,
    answer_of,
    answer_skipped,
)
from dsh_user_interaction_conformance._stand_ins import settle
from dsh_user_interaction_conformance.strategies import (
    InvalidAnswer,
    invalid_answers,
    requests,
    valid_answers,
)

from .helpers import one_question, run


def test_scripted_abort_clears_the_queue_and_the_listener() -> None:
    """PRV-ABORT-2: the ask raises ASK_ABORTED and leaves the screen."""

    async def main() -> None:
        provider = ScriptedProvider()
        controller = AbortController()
        request = one_question(signal=controller.signal)
        task = asyncio.ensure_future(settle(provider.ask(request)))
        pending = await provider.next_ask()
        assert pending.request is request
        controller.abort()
        outcome = await task
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert provider.pending == ()
        assert controller.signal.listener_count == 0
        with pytest.raises(asyncio.InvalidStateError):
            pending.answer(answer_of(answer_skipped("q")))

    run(main())


def test_scripted_pre_aborted_shows_nothing() -> None:
    """PRV-ABORT-1: an aborted signal raises at once and queues nothing."""

    async def main() -> None:
        provider = ScriptedProvider()
        controller = AbortController()
        controller.abort()
        request = one_question(signal=controller.signal)
        outcome = await settle(provider.ask(request))
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert provider.pending == ()

    run(main())


def test_scripted_dismiss_and_dispose() -> None:
    """PRV-DISMISS-1 and disposal: ASK_CANCELLED and PROVIDER_DISPOSED with the fixed messages."""

    async def main() -> None:
        provider = ScriptedProvider()
        first = asyncio.ensure_future(settle(provider.ask(one_question("a"))))
        second = asyncio.ensure_future(settle(provider.ask(one_question("b"))))
        await provider.wait_for(lambda p: p.request["questions"][0]["id"] == "b")
        provider.pending[0].dismiss()
        dismissed = await first
        assert isinstance(dismissed, UserInteractionError)
        assert str(dismissed) == "the user cancelled ask_user_question"
        provider.dispose()
        disposed = await second
        assert isinstance(disposed, UserInteractionError)
        assert disposed.code is ErrorCode.PROVIDER_DISPOSED
        assert provider.asked == 2

    run(main())


def test_scripted_cancel_cleans_up() -> None:
    """PRV-CANCEL-1: cancellation propagates and the ask leaves the queue."""

    async def main() -> None:
        provider = ScriptedProvider()
        task = asyncio.ensure_future(provider.ask(one_question()))
        await provider.next_ask()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert provider.pending == ()

    run(main())


def test_scripted_responder_may_be_async() -> None:
    """``respond`` may return the answer or an awaitable of it."""

    async def respond(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        await asyncio.sleep(0)
        return answer_of(answer_skipped(request["questions"][0]["id"]))

    answer = run(ScriptedProvider(respond=respond).ask(one_question("z")))
    assert answer == {"answers": [{"id": "z", "selected": []}]}


@given(st.data())
def test_validating_provider_passes_good_answers_through(data: st.DataObject) -> None:
    """A valid answer comes back as the same object."""
    request = data.draw(requests())
    answer = data.draw(valid_answers(request))
    wrapped = ValidatingProvider(ScriptedProvider(respond=lambda _r: answer))
    assert run(wrapped.ask(request)) is answer


@given(st.data())
def test_validating_provider_rejects_bad_answers(data: st.DataObject) -> None:
    """A broken answer raises BAD_ANSWER, keeping the answer and naming the rule."""
    request = data.draw(requests())
    case: InvalidAnswer = data.draw(invalid_answers(request))
    wrapped = ValidatingProvider(ScriptedProvider(respond=lambda _r: case.answer))
    outcome = run(settle(wrapped.ask(request)))
    assert isinstance(outcome, UserInteractionError)
    assert outcome.code is ErrorCode.BAD_ANSWER
    assert outcome.answer is case.answer
    assert case.requirement in {v.requirement for v in outcome.violations}


def test_validating_provider_catches_mutation() -> None:
    """PRV-MUTATE-1: a provider that edits the request is caught."""

    def mutate(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        question: Any = request["questions"][0]
        question["question"] = "edited"
        return answer_of(answer_skipped("q"))

    outcome = run(settle(ValidatingProvider(ScriptedProvider(respond=mutate)).ask(one_question())))
    assert isinstance(outcome, UserInteractionError)
    assert "PRV-MUTATE-1" in str(outcome)


def test_validating_provider_checks_the_request_side() -> None:
    """A malformed request never reaches the wrapped provider."""
    inner = ScriptedProvider()
    outcome = run(
        settle(ValidatingProvider(inner).ask({"questions": [{"id": "", "question": "?"}]}))
    )
    assert isinstance(outcome, UserInteractionError)
    assert outcome.code is ErrorCode.BAD_REQUEST
    assert inner.asked == 0
