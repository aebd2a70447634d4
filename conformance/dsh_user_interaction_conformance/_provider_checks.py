"""Checks for providers: a simulated human drives the UI, and the answer is compared."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Coroutine, Sequence
from typing import Any, Final, cast

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

from ._behaviour import Action, Behaviour, Dismiss, Nothing, expected_answer
from ._engine import Draws, Example, Scenario, Setup, check
from ._stand_ins import code_of
from ._subject import Subject
from .strategies import actions, requests

__all__: list[str] = []

#: The answer rules every compared answer is judged against.
ANSWER_RULES: Final = (
    "ANS-SHAPE-1", "ANS-KEYS-1", "ANS-COUNT-1", "ANS-ORDER-1", "ANS-SEL-1", "ANS-SEL-2",
    "ANS-SEL-3", "ANS-SINGLE-1", "ANS-SINGLE-2", "ANS-CUSTOM-1",
)  # fmt: skip
#: Rules without which the items cannot be compared with what the human did.
_STRUCTURE: Final = frozenset({"ANS-SHAPE-1", "ANS-COUNT-1", "ANS-ORDER-1", "ANS-SEL-1"})

_REQUESTS: Final = requests()
_SMALL_REQUESTS: Final = requests(max_questions=2)


def _snapshot(request: AskUserQuestionRequest) -> object:
    return copy.deepcopy({key: value for key, value in request.items() if key != "signal"})


async def stop(example: Example, task: asyncio.Future[Any]) -> None:
    """Cancel the provider's call if it still runs; fail ``PRV-CANCEL-1`` if it will not end.

    The call is never awaited directly, so a provider that swallows
    cancellation cannot hold the scenario.
    """
    if task.done():
        if not task.cancelled():
            task.exception()  # retrieved; whatever it was has been judged
        return
    task.cancel()
    example.stage("PRV-CANCEL-1", "the provider's call after it was cancelled")
    done, _ = await asyncio.wait({task}, timeout=example.bound)
    if not done:
        example.fail(
            "PRV-CANCEL-1",
            f"the provider's call was still running {example.bound:g} s after it was "
            "cancelled: it swallows cancellation",
        )


async def outcome_of(
    example: Example, task: asyncio.Future[Any], requirement: str, pending: str
) -> tuple[bool, object]:
    """Wait at most the bound for *task*; ``(False, None)`` after failing *requirement*.

    Otherwise ``(True, result)``, where the result may be the exception it raised.
    """
    example.stage(requirement, pending)
    done, _ = await asyncio.wait({task}, timeout=example.bound)
    if not done:
        example.fail(requirement, f"{pending}: still pending after {example.bound:g} s")
        await stop(example, task)
        return False, None
    if task.cancelled():
        return True, asyncio.CancelledError()
    error = task.exception()
    return True, error if error is not None else task.result()


async def expect_error(
    example: Example,
    task: asyncio.Future[Any],
    code: ErrorCode,
    requirement: str,
    *,
    pending: str,
    answered: str,
) -> BaseException | None:
    """Judge *requirement*: *task* raises *code* within the bound. The error, or ``None``."""
    settled, outcome = await outcome_of(example, task, requirement, pending)
    if not settled:
        return None
    if isinstance(outcome, asyncio.CancelledError):
        example.fail(requirement, f"the call was cancelled instead of raising {code}")
        return None
    if not isinstance(outcome, BaseException):
        example.fail(requirement, f"{answered}: {outcome!r}")
        return None
    example.verify(requirement, code_of(outcome) == code, lambda: f"raised {outcome!r}, not {code}")
    return outcome if code_of(outcome) == code else None


def _where(question: object) -> str:
    return f"question {question!r}: " if question is not None else ""


def compare(
    example: Example,
    request: AskUserQuestionRequest,
    expected: AskUserQuestionAnswer,
    answer: object,
    *,
    requirement: str = "PRV-ANSWER-1",
) -> None:
    """Judge *answer*: it keeps the answer rules and says exactly what the human did."""
    example.judge(*ANSWER_RULES, "PRV-TEXT-1", requirement)
    violations = answer_violations(request, answer)
    for violation in violations:
        example.fail(violation.requirement, _where(violation.question) + violation.message)
    if any(v.requirement in _STRUCTURE for v in violations):
        return
    got_items: list[dict[str, Any]] = cast("Any", answer)["answers"]
    for question, want, got in zip(
        request["questions"], expected["answers"], got_items, strict=True
    ):
        where = f"question {question['id']!r}"
        if question.get("multiSelect") is True and len(want["selected"]) >= 2:
            example.judge("ANS-MULTI-2")
        intent = "intent" in question
        if intent:
            example.judge("PRV-INTENT-1")
        if set(got["selected"]) != set(want["selected"]):
            example.fail(
                requirement,
                f"{where}: the human picked {want['selected']!r}; answered {got['selected']!r}",
            )
            if intent:
                example.fail("PRV-INTENT-1", f"{where}: an intent question answered {got!r}")
        if "custom" in want and "custom" in got and want["custom"] != got["custom"]:
            example.fail(
                "PRV-TEXT-1",
                f"{where}: the human typed {want['custom']!r}, the answer says {got['custom']!r}",
            )
        if ("custom" in want) != ("custom" in got):
            said = "typed text" if "custom" in want else "typed nothing"
            example.fail(requirement, f"{where}: the human {said}, but the answer has {got!r}")


async def _perform(
    example: Example,
    subject: Subject,
    request: AskUserQuestionRequest,
    behaviour: Behaviour,
    requirement: str = "PRV-ANSWER-1",
) -> None:
    example.stage(requirement, "the driver, showing and acting on the request")
    await subject.driver.perform(request, behaviour)


@check(
    "provider-answers",
    "PRV-ANSWER-1", "PRV-TEXT-1", "PRV-MUTATE-1", "PRV-INTENT-1", "ANS-SHAPE-1", "ANS-KEYS-1",
    "ANS-COUNT-1", "ANS-ORDER-1", "ANS-SEL-1", "ANS-SEL-2", "ANS-SEL-3", "ANS-SINGLE-1",
    "ANS-SINGLE-2", "ANS-MULTI-2", "ANS-CUSTOM-1",
    kind="provider",
)  # fmt: skip
def provider_answers(draw: Draws, setup: Setup) -> Scenario:
    """The provider returns exactly what the simulated human did, hostile text included."""
    request = draw(_REQUESTS, "request")
    behaviour = draw(actions(request, setup.capabilities), "actions")

    async def scenario(example: Example) -> None:
        subject = await example.subject()
        before = _snapshot(request)
        task = asyncio.ensure_future(subject.provider.ask(request))
        try:
            await _perform(example, subject, request, behaviour)
            settled, answer = await outcome_of(
                example, task, "PRV-ANSWER-1", "the provider's answer once the human acted"
            )
            if not settled:
                return
            example.verify(
                "PRV-MUTATE-1",
                _snapshot(request) == before,
                "the provider changed the request it was given",
            )
            if isinstance(answer, BaseException):
                example.fail("PRV-ANSWER-1", f"the provider raised {answer!r} instead of answering")
                return
            compare(example, request, expected_answer(request, behaviour), answer)
        finally:
            await stop(example, task)

    return scenario


@check(
    "provider-lifecycle",
    "PRV-ABORT-1", "PRV-ABORT-2", "PRV-CANCEL-1", "PRV-DISMISS-1", "ERR-MSG-1",
    kind="provider",
    gates={"PRV-DISMISS-1": lambda c: c.can_dismiss, "ERR-MSG-1": lambda c: c.can_dismiss},
)  # fmt: skip
def provider_lifecycle(draw: Draws, setup: Setup) -> Scenario:
    """Pre-aborted, aborted, dismissed and cancelled asks end as specified, off the screen.

    One drawn request goes through all four, each with a fresh subject.
    """
    request = draw(_REQUESTS, "request")
    observes = setup.capabilities.observes_screen

    async def off_screen(
        example: Example, subject: Subject, shown: AskUserQuestionRequest, requirement: str
    ) -> None:
        if observes:
            example.stage(requirement, "the driver's is_shown()")
            still = await subject.driver.is_shown(shown)
            example.verify(requirement, not still, "the request is still on screen")

    async def pre_aborted(example: Example) -> None:
        subject = await example.subject()
        aborted: AskUserQuestionRequest = {**request, "signal": AbortSignal.abort()}
        task = asyncio.ensure_future(subject.provider.ask(aborted))
        error = await expect_error(
            example,
            task,
            ErrorCode.ASK_ABORTED,
            "PRV-ABORT-1",
            pending="the ask of a request whose signal already aborted",
            answered="answered an aborted request",
        )
        if error is not None:
            await off_screen(example, subject, aborted, "PRV-ABORT-1")

    async def aborted(example: Example) -> None:
        subject = await example.subject()
        controller = AbortController()
        live: AskUserQuestionRequest = {**request, "signal": controller.signal}
        task = asyncio.ensure_future(subject.provider.ask(live))
        await _perform(example, subject, live, Nothing())
        controller.abort()
        error = await expect_error(
            example,
            task,
            ErrorCode.ASK_ABORTED,
            "PRV-ABORT-2",
            pending="the ask after its signal aborted",
            answered="returned a late answer after the abort",
        )
        if error is not None:
            await off_screen(example, subject, live, "PRV-ABORT-2")

    async def dismissed(example: Example) -> None:
        subject = await example.subject()
        task = asyncio.ensure_future(subject.provider.ask(request))
        try:
            await _perform(example, subject, request, Dismiss())
            error = await expect_error(
                example,
                task,
                ErrorCode.ASK_CANCELLED,
                "PRV-DISMISS-1",
                pending="the ask after the human dismissed it",
                answered="a dismissed batch returned an answer",
            )
            if error is not None:
                example.verify(
                    "ERR-MSG-1",
                    str(error) == MESSAGES[ErrorCode.ASK_CANCELLED],
                    lambda: f"ASK_CANCELLED with message {str(error)!r}",
                )
        finally:
            await stop(example, task)

    async def cancelled(example: Example) -> None:
        subject = await example.subject()
        task = asyncio.ensure_future(subject.provider.ask(request))
        await _perform(example, subject, request, Nothing())
        task.cancel()
        example.stage("PRV-CANCEL-1", "the provider's call after it was cancelled")
        done, _ = await asyncio.wait({task}, timeout=example.bound)
        example.judge("PRV-CANCEL-1")
        if not done:
            example.fail(
                "PRV-CANCEL-1",
                f"the cancelled call was still running {example.bound:g} s later: "
                "it swallows cancellation",
            )
            return
        if not task.cancelled():
            ended = task.exception() or task.result()
            example.fail("PRV-CANCEL-1", f"the cancelled call ended with {ended!r}")
        await off_screen(example, subject, request, "PRV-CANCEL-1")

    async def scenario(example: Example) -> None:
        # A part whose requirements all failed already is skipped: it would only wait again.
        if not example.done_with("PRV-ABORT-1"):
            await pre_aborted(example)
        if not example.done_with("PRV-ABORT-2"):
            await aborted(example)
        if setup.capabilities.can_dismiss and not example.done_with("PRV-DISMISS-1", "ERR-MSG-1"):
            await dismissed(example)
        if not example.done_with("PRV-CANCEL-1"):
            await cancelled(example)

    return scenario


def _pieces(batch: Sequence[AskUserQuestionRequest]) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(1, len(batch)), min_size=1, max_size=len(batch))


@check("provider-concurrency", "PRV-CONC-1", kind="provider", needs=lambda c: c.concurrent)
def provider_concurrency(draw: Draws, setup: Setup) -> Scenario:
    """Several pending asks, answered in any interleaving, each get their own answer.

    The human answers in a drawn order (the newest first as often as any
    other), several in the same tick, and one ask may be aborted while the
    others wait.
    """
    count = draw(st.integers(2, 4), "pending asks")
    batch = [draw(_SMALL_REQUESTS, f"request {n}") for n in range(count)]
    behaviours: list[tuple[Action, ...]] = [
        draw(actions(r, setup.capabilities), f"actions {n}") for n, r in enumerate(batch)
    ]
    order = draw(st.permutations(range(count)), "answer order")
    groups = draw(_pieces(batch), "answered together (sizes of consecutive groups)")
    aborted = draw(st.none() | st.integers(0, count - 1), "aborted ask")

    async def scenario(example: Example) -> None:
        subject = await example.subject()
        controllers = [AbortController() for _ in batch]
        live: list[AskUserQuestionRequest] = [
            {**r, "signal": c.signal} for r, c in zip(batch, controllers, strict=True)
        ]
        tasks = [asyncio.ensure_future(subject.provider.ask(r)) for r in live]
        try:
            await asyncio.gather(
                *(_perform(example, subject, r, Nothing(), "PRV-CONC-1") for r in live)
            )
            remaining = list(order)
            for size in groups:
                group, remaining = remaining[:size], remaining[size:]
                steps: list[Coroutine[Any, Any, None]] = []
                for index in group:
                    if index == aborted:
                        controllers[index].abort()
                    else:
                        steps.append(
                            _perform(example, subject, live[index], behaviours[index], "PRV-CONC-1")
                        )
                await asyncio.gather(*steps)
            for index in remaining:
                if index == aborted:
                    controllers[index].abort()
                else:
                    await _perform(example, subject, live[index], behaviours[index], "PRV-CONC-1")
            example.stage("PRV-CONC-1", "the concurrent asks, once every human had acted")
            done, _ = await asyncio.wait(tasks, timeout=example.bound)
            example.judge("PRV-CONC-1")
            for index, (request, behaviour, task) in enumerate(
                zip(live, behaviours, tasks, strict=True)
            ):
                if task not in done:
                    example.fail("PRV-CONC-1", f"ask {index} is still pending after its answer")
                    continue
                error = None if task.cancelled() else task.exception()
                if index == aborted:
                    ok = error is not None and code_of(error) == ErrorCode.ASK_ABORTED
                    example.verify(
                        "PRV-CONC-1",
                        ok,
                        f"ask {index} was aborted but ended with {error or task!r}",
                    )
                    continue
                if task.cancelled() or error is not None:
                    example.fail("PRV-CONC-1", f"ask {index} raised {error or 'cancellation'!r}")
                    continue
                compare(
                    example,
                    request,
                    expected_answer(request, behaviour),
                    task.result(),
                    requirement="PRV-CONC-1",
                )
        finally:
            for task in tasks:
                await stop(example, task)

    return scenario
