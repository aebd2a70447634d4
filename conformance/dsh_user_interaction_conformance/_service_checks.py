"""Checks for services: the suite supplies the providers and watches what reaches them."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import strategies as st

from dsh_user_interaction import (
    MESSAGES,
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
)

from ._engine import Context, Failure, check
from ._stand_ins import Ignoring, Recording, Swallowing, code_of, settle
from .strategies import (
    InvalidAnswer,
    InvalidRequest,
    invalid_answers,
    invalid_requests,
    requests,
    valid_answers,
)

__all__: list[str] = []

_STAGE = {
    ErrorCode.ASK_ABORTED: "SVC-ORDER-1",
    ErrorCode.EMPTY_QUESTIONS: "SVC-ORDER-2",
    ErrorCode.BAD_REQUEST: "SVC-ORDER-3",
    ErrorCode.BAD_INTENT: "SVC-ORDER-4",
    ErrorCode.NO_PROVIDER: "SVC-ORDER-5",
}


def _one(question_id: str = "q") -> AskUserQuestionRequest:
    return {
        "questions": [{"id": question_id, "question": "Proceed?", "options": [{"label": "Yes"}]}]
    }


@check(
    "service-order",
    "SVC-ORDER-1", "SVC-ORDER-2", "SVC-ORDER-3", "SVC-ORDER-4", "SVC-ORDER-5", "SVC-ASYNC-1",
    "SVC-PASS-1", "ERR-MSG-1", "ERR-CODE-1",
    "REQ-QUESTIONS-1", "REQ-ITEM-1", "REQ-ID-1", "REQ-ID-2", "REQ-TEXT-1", "REQ-HEADER-1",
    "REQ-DETAIL-1", "REQ-OPTIONS-1", "REQ-OPTIONS-2", "REQ-OPTIONS-3", "REQ-MULTI-1",
    "REQ-INTENT-1", "REQ-AGENT-1", "INT-APPROVE-1", "INT-DETAIL-1",
    kind="service",
)  # fmt: skip
def service_order(context: Context) -> None:
    """Malformed requests raise the first failing stage's code; the provider never sees them."""

    @context.given(invalid_requests(), st.booleans())
    def example(case: InvalidRequest, registered: bool) -> None:
        service = context.service_factory()
        provider = Recording()
        if registered:
            service.register_provider(provider)
        stage = _STAGE[case.code]
        try:
            pending = service.ask(case.request)
        except Exception as error:  # noqa: BLE001 - judged here
            raise Failure(
                "SVC-ASYNC-1", f"calling ask() raised {error!r} before it was awaited"
            ) from None
        outcome = context.run(settle(pending), requirement=stage, what="ask()")
        if code_of(outcome) != case.code:
            # A spec code from another stage is an ordering fault; anything else
            # means the defect itself went unnoticed.
            wrong_stage = code_of(outcome) in _STAGE
            broken = (
                stage if wrong_stage or case.code is not ErrorCode.BAD_REQUEST else case.requirement
            )
            raise Failure(broken, f"expected {case.code} for {case.requirement}, got {outcome!r}")
        if not isinstance(outcome, Exception) or code_of(outcome) not in set(ErrorCode):
            raise Failure("ERR-CODE-1", f"{outcome!r} carries no spec code")
        fixed = MESSAGES.get(case.code)
        if fixed is not None and str(outcome) != fixed:
            raise Failure("ERR-MSG-1", f"{case.code} with message {str(outcome)!r}, not {fixed!r}")
        if case.field is not None and case.field not in str(outcome):
            raise Failure(stage, f"the message {str(outcome)!r} does not name {case.field!r}")
        if provider.seen:
            raise Failure("SVC-PASS-1", "the provider was called for a request that failed a check")

    example()

    @context.given(requests())
    def no_provider(request: AskUserQuestionRequest) -> None:
        outcome = context.run(
            settle(context.service_factory().ask(request)), requirement="SVC-ORDER-5", what="ask()"
        )
        if (
            code_of(outcome) != ErrorCode.NO_PROVIDER
            or str(outcome) != MESSAGES[ErrorCode.NO_PROVIDER]
        ):
            raise Failure("SVC-ORDER-5", f"a good request with no provider gave {outcome!r}")

    no_provider()
    _stage_precedence(context)
    service = context.service_factory()
    service.register_provider(Recording())
    approve: Any = {
        "id": "p", "question": "?", "detail": "d", "options": [{"label": "A"}],
        "intent": {"kind": "plan-review", "approve": "B"},
    }  # fmt: skip
    detail: Any = {
        "id": "p", "question": "?", "options": [{"label": "A"}],
        "intent": {"kind": "x", "approve": "A"},
    }  # fmt: skip
    wrong_label = (
        'question p declares intent plan-review whose approve label "B" names none of its options'
    )
    for question, message in [
        (approve, wrong_label),
        (detail, "question p declares intent x without the detail it reviews"),
    ]:
        outcome = context.run(
            settle(service.ask({"questions": [question]})), requirement="SVC-ORDER-4", what="ask()"
        )
        if str(outcome) != message:
            raise Failure("SVC-ORDER-4", f"BAD_INTENT message {str(outcome)!r}, not {message!r}")


def _stage_precedence(context: Context) -> None:
    """Every pair of stages, without a provider: the earlier stage always wins."""
    malformed: Any = {"id": "", "question": "?"}
    bad_intent: Any = {"id": "p", "question": "?", "intent": {"kind": "k", "approve": "A"}}
    cases: list[tuple[Any, ErrorCode]] = [
        ({"questions": [], "signal": AbortSignal.abort()}, ErrorCode.ASK_ABORTED),
        ({"questions": [malformed], "signal": AbortSignal.abort()}, ErrorCode.ASK_ABORTED),
        ({"questions": []}, ErrorCode.EMPTY_QUESTIONS),
        ({"questions": [bad_intent, malformed]}, ErrorCode.BAD_REQUEST),
        ({"questions": [bad_intent]}, ErrorCode.BAD_INTENT),
    ]
    for request, code in cases:
        stage = _STAGE[code]
        outcome = context.run(
            settle(context.service_factory().ask(request)), requirement=stage, what="ask()"
        )
        if code_of(outcome) != code:
            raise Failure(
                stage,
                f"{sorted(request)} with defects at several stages gave {outcome!r}, not {code}",
            )


@check("service-registration", "SVC-REG-1", "SVC-REG-2", "SVC-REG-3", kind="service")
def service_registration(context: Context) -> None:
    """One provider at a time; every disposer form works; stale disposers do nothing."""
    service = context.service_factory()
    first = Recording()
    registration = service.register_provider(first)
    for candidate in (first, Recording()):
        try:
            service.register_provider(candidate)
        except Exception as error:  # noqa: BLE001 - judged here
            if (
                code_of(error) != ErrorCode.DUPLICATE_PROVIDER
                or str(error) != MESSAGES[ErrorCode.DUPLICATE_PROVIDER]
            ):
                raise Failure("SVC-REG-2", f"a second registration raised {error!r}") from None
        else:
            raise Failure("SVC-REG-2", "a second registration was accepted")
    registration()
    second = Recording()
    try:
        with service.register_provider(second):
            registration.dispose()  # stale: must not unregister `second`
            answer = context.run(service.ask(_one()), requirement="SVC-REG-3", what="ask()")
            if second.seen != [_one()] or answer["answers"][0]["id"] != "q":
                raise Failure("SVC-REG-3", "a stale disposal unregistered the newer provider")
    except UserInteractionError as error:
        if error.code is ErrorCode.NO_PROVIDER:
            raise Failure("SVC-REG-3", "a stale disposal unregistered the newer provider") from None
        raise Failure("SVC-REG-1", f"registering after disposal failed: {error!r}") from None
    outcome = context.run(settle(service.ask(_one())), requirement="SVC-REG-1", what="ask()")
    if code_of(outcome) != ErrorCode.NO_PROVIDER:
        raise Failure(
            "SVC-REG-1", f"leaving the with block did not unregister: ask() gave {outcome!r}"
        )


@check("service-pass-through", "SVC-PASS-1", "SVC-STRICT-2", "REQ-EXTRA-1", kind="service")
def service_pass_through(context: Context) -> None:
    """The provider gets the very request; a valid answer comes back as the very object."""

    @context.given(st.data())
    def example(data: st.DataObject) -> None:
        request: Any = dict(data.draw(requests(), label="request"))
        request["x-trace"] = data.draw(st.text(max_size=5), label="extra key")
        answer = data.draw(valid_answers(request), label="answer")
        service = context.service_factory()
        provider = Recording(answer)
        service.register_provider(provider)
        outcome = context.run(settle(service.ask(request)), requirement="SVC-PASS-1", what="ask()")
        if isinstance(outcome, BaseException):
            raise Failure("REQ-EXTRA-1", f"a request with an extra key raised {outcome!r}")
        if len(provider.seen) != 1 or provider.seen[0] is not request:
            raise Failure("SVC-PASS-1", "the provider did not receive the very request object")
        if outcome is not answer:
            raise Failure("SVC-STRICT-2", "the valid answer was not returned as the same object")

    example()


@check("service-abort", "SVC-ABORT-1", "SVC-ABORT-2", "SVC-LEAK-1", kind="service")
def service_abort(context: Context) -> None:
    """An abort settles the ask promptly even if the provider ignores it; earlier answers stand."""

    async def ignored() -> None:
        service = context.service_factory()
        provider = Ignoring()
        service.register_provider(provider)
        controller = AbortController()
        request: AskUserQuestionRequest = {**_one(), "signal": controller.signal}
        tasks_before = len(asyncio.all_tasks())
        task = asyncio.ensure_future(settle(service.ask(request)))
        await provider.started.wait()
        controller.abort()
        try:
            async with asyncio.timeout(context.bound):
                outcome = await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            raise Failure(
                "SVC-ABORT-1", f"still pending {context.bound:g} s after the abort"
            ) from None
        if (
            code_of(outcome) != ErrorCode.ASK_ABORTED
            or str(outcome) != MESSAGES[ErrorCode.ASK_ABORTED]
        ):
            raise Failure("SVC-ABORT-1", f"an abort mid-wait gave {outcome!r}")
        if not provider.cancelled:
            raise Failure("SVC-ABORT-1", "the provider's pending call was not cancelled")
        if controller.signal.listener_count:
            raise Failure(
                "SVC-LEAK-1", f"{controller.signal.listener_count} listener(s) left on the signal"
            )
        await asyncio.sleep(0)
        if len(asyncio.all_tasks()) > tasks_before:
            raise Failure("SVC-LEAK-1", "a task is left running after the ask settled")

    async def answered() -> None:
        service = context.service_factory()
        provider = ScriptedProvider()
        service.register_provider(provider)
        controller = AbortController()
        request: AskUserQuestionRequest = {**_one(), "signal": controller.signal}
        answer: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": ["Yes"]}]}
        task = asyncio.ensure_future(settle(service.ask(request)))
        (await provider.next_ask()).answer(answer)
        outcome = await task
        controller.abort()
        if outcome is not answer:
            raise Failure("SVC-ABORT-2", f"an answered ask gave {outcome!r}")
        if controller.signal.listener_count:
            raise Failure("SVC-LEAK-1", "a listener is left on the signal after an answer")

    context.run(ignored(), requirement="SVC-ABORT-1", what="the aborted ask")
    context.run(answered(), requirement="SVC-ABORT-2", what="the answered ask")


@check("service-late-answer", "SVC-ABORT-3", kind="service")
def service_late_answer(context: Context) -> None:
    """A provider that answers after the abort does not win, and its answer stays on the error."""

    async def scenario() -> None:
        service = context.service_factory()
        late: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": ["Yes"]}]}
        provider = Swallowing(late)
        service.register_provider(provider)
        controller = AbortController()
        task = asyncio.ensure_future(settle(service.ask({**_one(), "signal": controller.signal})))
        await provider.started.wait()
        controller.abort()
        outcome = await task
        if code_of(outcome) != ErrorCode.ASK_ABORTED:
            raise Failure("SVC-ABORT-3", f"a late answer after the abort gave {outcome!r}")
        if getattr(outcome, "answer", None) is not late:
            raise Failure("SVC-ABORT-3", "the late answer was dropped instead of kept on the error")

    context.run(scenario(), requirement="SVC-ABORT-3", what="the late ask")


@check("service-cancel", "SVC-CANCEL-1", "SVC-LEAK-1", kind="service")
def service_cancel(context: Context) -> None:
    """Caller cancellation propagates unchanged, even alongside an abort or a disposal."""

    @context.given(st.sampled_from(["cancel", "cancel abort", "abort cancel", "cancel dispose"]))
    def example(steps: str) -> None:
        async def scenario() -> None:
            service = context.service_factory()
            provider = Ignoring()
            registration = service.register_provider(provider)
            controller = AbortController()
            task = asyncio.ensure_future(service.ask({**_one(), "signal": controller.signal}))
            await provider.started.wait()
            for step in steps.split():
                if step == "cancel":
                    task.cancel()
                elif step == "abort":
                    controller.abort()
                else:
                    registration()
            (outcome,) = await asyncio.gather(task, return_exceptions=True)
            if not task.cancelled():
                raise Failure(
                    "SVC-CANCEL-1", f"{steps!r}: the cancelled ask ended with {outcome!r}"
                )
            if not provider.cancelled:
                raise Failure("SVC-CANCEL-1", f"{steps!r}: the provider's call was not cancelled")
            if controller.signal.listener_count:
                raise Failure("SVC-LEAK-1", "a listener is left on the signal after cancellation")

        context.run(scenario(), requirement="SVC-CANCEL-1", what="the cancelled ask")

    example()


@check("service-dispose", "SVC-DISPOSE-1", "ERR-MSG-1", kind="service")
def service_dispose(context: Context) -> None:
    """Disposal mid-ask cancels every pending provider call and raises PROVIDER_DISPOSED."""

    @context.given(st.integers(1, 4))
    def example(count: int) -> None:
        async def scenario() -> None:
            service = context.service_factory()
            provider = Ignoring()
            registration = service.register_provider(provider)
            tasks = [
                asyncio.ensure_future(settle(service.ask(_one(f"q{i}")))) for i in range(count)
            ]
            await provider.started.wait()
            await asyncio.sleep(0)
            registration.dispose()
            async with asyncio.timeout(context.bound):
                outcomes = await asyncio.gather(*tasks)
            for outcome in outcomes:
                if code_of(outcome) != ErrorCode.PROVIDER_DISPOSED:
                    raise Failure(
                        "SVC-DISPOSE-1", f"a pending ask ended with {outcome!r} after disposal"
                    )
                if str(outcome) != MESSAGES[ErrorCode.PROVIDER_DISPOSED]:
                    raise Failure("ERR-MSG-1", f"PROVIDER_DISPOSED with message {str(outcome)!r}")
            if not provider.cancelled:
                raise Failure("SVC-DISPOSE-1", "the provider's pending calls were not cancelled")

        context.run(scenario(), requirement="SVC-DISPOSE-1", what="the disposed asks")

    example()


@check("service-provider-errors", "SVC-ERR-1", kind="service")
def service_provider_errors(context: Context) -> None:
    """Whatever the provider raises reaches the caller as the same object."""

    @context.given(st.sampled_from(["cancelled", "value", "lookup"]))
    def example(kind: str) -> None:
        error: Exception = {
            "cancelled": UserInteractionError.of(ErrorCode.ASK_CANCELLED),
            "value": ValueError("ui crashed"),
            "lookup": LookupError("no such widget"),
        }[kind]

        class Raising:
            async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
                raise error

        service = context.service_factory()
        service.register_provider(Raising())
        outcome = context.run(settle(service.ask(_one())), requirement="SVC-ERR-1", what="ask()")
        if outcome is not error:
            raise Failure(
                "SVC-ERR-1", f"the provider raised {error!r} but the caller got {outcome!r}"
            )

    example()


@check("service-strict", "SVC-STRICT-1", kind="service")
def service_strict(context: Context) -> None:
    """A strict service rejects a broken answer with BAD_ANSWER and keeps the answer."""

    @context.given(st.data())
    def example(data: st.DataObject) -> None:
        request = data.draw(requests(), label="request")
        case: InvalidAnswer = data.draw(invalid_answers(request), label="answer")
        service = context.service_factory()
        service.register_provider(Recording(case.answer))
        outcome = context.run(
            settle(service.ask(request)), requirement="SVC-STRICT-1", what="ask()"
        )
        if code_of(outcome) != ErrorCode.BAD_ANSWER:
            raise Failure("SVC-STRICT-1", f"an answer breaking {case.requirement} gave {outcome!r}")
        if getattr(outcome, "answer", None) is not case.answer:
            raise Failure("SVC-STRICT-1", "BAD_ANSWER does not keep the raw answer")
        if "ANS-" not in str(outcome):
            raise Failure(
                "SVC-STRICT-1", f"BAD_ANSWER message names no requirement: {str(outcome)!r}"
            )

    example()
