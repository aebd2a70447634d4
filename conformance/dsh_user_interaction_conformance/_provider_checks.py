"""Checks for providers: a simulated human drives the UI, and the answer is compared."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any, cast

from hypothesis import strategies as st

from dsh_user_interaction import (
    MESSAGES,
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    answer_violations,
)

from ._behaviour import Action, Dismiss, Nothing, expected_answer
from ._engine import Context, Failure, check
from ._stand_ins import code_of
from ._subject import Subject
from .strategies import actions, requests

__all__: list[str] = []


def _snapshot(request: AskUserQuestionRequest) -> object:
    return copy.deepcopy({key: value for key, value in request.items() if key != "signal"})


async def _cancel(task: asyncio.Future[Any]) -> None:
    if not task.done():
        task.cancel()
    # Clean-up only; the outcome was judged already.
    with contextlib.suppress(BaseException):
        await task


async def _expect_error(
    context: Context,
    task: asyncio.Future[Any],
    code: ErrorCode,
    requirement: str,
    *,
    pending: str,
    answered: str,
) -> BaseException:
    """Wait, within the bound, for *task* to raise *code*; else fail *requirement*.

    The task is cancelled if it is still running, so nothing outlives the example.
    """
    done, _ = await asyncio.wait({task}, timeout=context.bound)
    if not done:
        await _cancel(task)
        raise Failure(requirement, pending)
    if task.cancelled():
        raise Failure(requirement, f"the call was cancelled instead of raising {code}")
    error = task.exception()
    if error is None:
        raise Failure(requirement, f"{answered}: {task.result()!r}")
    if code_of(error) != code:
        raise Failure(requirement, f"raised {error!r}, not {code}")
    return error


def compare(
    context: Context,
    request: AskUserQuestionRequest,
    expected: AskUserQuestionAnswer,
    answer: object,
    *,
    requirement: str = "PRV-ANSWER-1",
) -> None:
    """Fail unless *answer* keeps the rules and says what the human did."""
    for violation in answer_violations(request, answer):
        if violation.level == "SHOULD":
            context.warn(violation.requirement, violation.describe())
        else:
            raise Failure(violation.requirement, violation.describe())
    got_items: list[dict[str, Any]] = cast("Any", answer)["answers"]
    for question, want, got in zip(
        request["questions"], expected["answers"], got_items, strict=True
    ):
        where = f"question {question['id']!r}"
        if set(got["selected"]) != set(want["selected"]):
            if "intent" in question:
                context.warn("PRV-INTENT-1", f"{where}: intent question answered {got!r}")
            raise Failure(
                requirement,
                f"{where}: the human picked {want['selected']!r}; answered {got['selected']!r}",
            )
        if "custom" in want and "custom" in got and want["custom"] != got["custom"]:
            raise Failure(
                "PRV-TEXT-1",
                f"{where}: the human typed {want['custom']!r}, the answer says {got['custom']!r}",
            )
        if ("custom" in want) != ("custom" in got):
            said = "typed text" if "custom" in want else "typed nothing"
            raise Failure(requirement, f"{where}: the human {said}, but the answer has {got!r}")


async def _ask_and_act(
    context: Context,
    subject: Subject,
    request: AskUserQuestionRequest,
    behaviour: tuple[Action, ...],
) -> object:
    task = asyncio.ensure_future(subject.provider.ask(request))
    try:
        await subject.driver.perform(request, behaviour)
        try:
            async with asyncio.timeout(context.bound):
                return await asyncio.shield(task)
        except TimeoutError:
            raise Failure(
                "PRV-ANSWER-1",
                f"the provider did not return within {context.bound:g} s of the answer",
            ) from None
    finally:
        await _cancel(task)


@check(
    "provider-answers",
    "PRV-ANSWER-1",
    "PRV-TEXT-1",
    "PRV-MUTATE-1",
    "PRV-INTENT-1",
    "ANS-SHAPE-1",
    "ANS-KEYS-1",
    "ANS-COUNT-1",
    "ANS-ORDER-1",
    "ANS-SEL-1",
    "ANS-SEL-2",
    "ANS-SEL-3",
    "ANS-SINGLE-1",
    "ANS-SINGLE-2",
    "ANS-MULTI-2",
    "ANS-CUSTOM-1",
    kind="provider",
)
def provider_answers(context: Context) -> None:
    """The provider returns exactly what the simulated human did, hostile text included."""

    @context.given(st.data())
    def example(data: st.DataObject) -> None:
        request = data.draw(requests(), label="request")
        behaviour = data.draw(actions(request, context.capabilities), label="actions")
        subject = context.subject_factory()
        before = _snapshot(request)
        answer = context.run(
            _ask_and_act(context, subject, request, behaviour),
            requirement="PRV-ANSWER-1",
            what="the ask",
        )
        if _snapshot(request) != before:
            raise Failure("PRV-MUTATE-1", "the provider changed the request it was given")
        compare(context, request, expected_answer(request, behaviour), answer)

    example()


@check("provider-pre-aborted", "PRV-ABORT-1", kind="provider")
def provider_pre_aborted(context: Context) -> None:
    """A request whose signal already aborted raises ASK_ABORTED and shows nothing."""

    @context.given(requests())
    def example(request: AskUserQuestionRequest) -> None:
        subject = context.subject_factory()
        aborted: AskUserQuestionRequest = {**request, "signal": AbortSignal.abort()}

        async def scenario() -> None:
            task = asyncio.ensure_future(subject.provider.ask(aborted))
            await _expect_error(
                context,
                task,
                ErrorCode.ASK_ABORTED,
                "PRV-ABORT-1",
                pending="the provider waited instead of raising ASK_ABORTED",
                answered="answered an aborted request",
            )
            if context.capabilities.observes_screen and await subject.driver.is_shown(aborted):
                raise Failure("PRV-ABORT-1", "the aborted request is on screen")

        context.run(scenario(), requirement="PRV-ABORT-1", what="the pre-aborted ask")

    example()


async def _start_and_show(
    subject: Subject, request: AskUserQuestionRequest
) -> asyncio.Future[AskUserQuestionAnswer]:
    task = asyncio.ensure_future(subject.provider.ask(request))
    await subject.driver.perform(request, Nothing())
    return task


@check("provider-abort", "PRV-ABORT-2", kind="provider")
def provider_abort(context: Context) -> None:
    """An abort while the request is shown raises ASK_ABORTED promptly and clears the screen."""

    @context.given(requests())
    def example(request: AskUserQuestionRequest) -> None:
        subject = context.subject_factory()
        controller = AbortController()
        live: AskUserQuestionRequest = {**request, "signal": controller.signal}

        async def scenario() -> None:
            task = await _start_and_show(subject, live)
            controller.abort()
            await _expect_error(
                context,
                task,
                ErrorCode.ASK_ABORTED,
                "PRV-ABORT-2",
                pending=f"still pending {context.bound:g} s after the abort",
                answered="returned a late answer after the abort",
            )
            if context.capabilities.observes_screen and await subject.driver.is_shown(live):
                raise Failure("PRV-ABORT-2", "the aborted request is still on screen")

        context.run(scenario(), requirement="PRV-ABORT-2", what="the aborted ask")

    example()


@check("provider-cancel", "PRV-CANCEL-1", kind="provider")
def provider_cancel(context: Context) -> None:
    """Cancelling the provider's call propagates CancelledError and clears the screen."""

    @context.given(requests())
    def example(request: AskUserQuestionRequest) -> None:
        subject = context.subject_factory()

        async def scenario() -> None:
            task = await _start_and_show(subject, request)
            task.cancel()
            try:
                async with asyncio.timeout(context.bound):
                    outcome = await asyncio.gather(task, return_exceptions=True)
            except TimeoutError:
                raise Failure("PRV-CANCEL-1", "the cancelled call did not finish") from None
            if not task.cancelled():
                raise Failure("PRV-CANCEL-1", f"the cancelled call ended with {outcome[0]!r}")
            if context.capabilities.observes_screen and await subject.driver.is_shown(request):
                raise Failure("PRV-CANCEL-1", "the cancelled request is still on screen")

        context.run(scenario(), requirement="PRV-CANCEL-1", what="the cancelled ask")

    example()


@check(
    "provider-dismiss", "PRV-DISMISS-1", "ERR-MSG-1", kind="provider", needs=lambda c: c.can_dismiss
)
def provider_dismiss(context: Context) -> None:
    """Dismissing the batch raises ASK_CANCELLED with the fixed message."""

    @context.given(requests())
    def example(request: AskUserQuestionRequest) -> None:
        subject = context.subject_factory()

        async def scenario() -> None:
            task = asyncio.ensure_future(subject.provider.ask(request))
            try:
                await subject.driver.perform(request, Dismiss())
            except BaseException:
                await _cancel(task)
                raise
            error = await _expect_error(
                context,
                task,
                ErrorCode.ASK_CANCELLED,
                "PRV-DISMISS-1",
                pending="still pending after the dismissal",
                answered="a dismissed batch returned an answer",
            )
            if str(error) != MESSAGES[ErrorCode.ASK_CANCELLED]:
                raise Failure("ERR-MSG-1", f"ASK_CANCELLED with message {str(error)!r}")

        context.run(scenario(), requirement="PRV-DISMISS-1", what="the dismissed ask")

    example()


@check("provider-concurrency", "PRV-CONC-1", kind="provider", needs=lambda c: c.concurrent)
def provider_concurrency(context: Context) -> None:
    """Several pending asks, answered in any order, each get their own answer."""

    @context.given(st.data())
    def example(data: st.DataObject) -> None:
        batch = data.draw(
            st.lists(requests(max_questions=2), min_size=2, max_size=4), label="requests"
        )
        behaviours = [data.draw(actions(r, context.capabilities), label="actions") for r in batch]
        order = data.draw(st.permutations(range(len(batch))), label="answer order")
        subject = context.subject_factory()

        async def scenario() -> list[object]:
            tasks = [asyncio.ensure_future(subject.provider.ask(r)) for r in batch]
            try:
                for index in order:
                    await subject.driver.perform(batch[index], behaviours[index])
                async with asyncio.timeout(context.bound):
                    return list(await asyncio.gather(*tasks, return_exceptions=True))
            finally:
                for task in tasks:
                    await _cancel(task)

        results = context.run(scenario(), requirement="PRV-CONC-1", what="the concurrent asks")
        for request, behaviour, result in zip(batch, behaviours, results, strict=True):
            if isinstance(result, BaseException):
                raise Failure("PRV-CONC-1", f"a concurrent ask raised {result!r}")
            compare(
                context,
                request,
                expected_answer(request, behaviour),
                result,
                requirement="PRV-CONC-1",
            )

    example()
