"""Checks for services: the suite supplies the providers and watches what reaches them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

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
    request_violations,
)

from .._engine import Draws, Example, Scenario, Setup, check
from .._stand_ins import Converting, Ignoring, Recording, Stubborn, Swallowing, code_of, settle
from .._subject import Service
from ..strategies import (
    INVALID_REQUEST_REQUIREMENTS,
    agents,
    invalid_answers,
    invalid_requests,
    labels,
    near_miss_answers,
    requests,
    valid_answers,
)

__all__: list[str] = []

_STAGE: Final = {
    ErrorCode.ASK_ABORTED: "SVC-ORDER-1",
    ErrorCode.EMPTY_QUESTIONS: "SVC-ORDER-2",
    ErrorCode.BAD_REQUEST: "SVC-ORDER-3",
    ErrorCode.BAD_INTENT: "SVC-ORDER-4",
    ErrorCode.NO_PROVIDER: "SVC-ORDER-5",
}
#: The stages in the order ``ask()`` applies them.
_ORDER: Final = tuple(_STAGE)
_EARLIER_THAN_INTENT: Final = _ORDER[: _ORDER.index(ErrorCode.BAD_INTENT)]
_REQUESTS: Final = requests()
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def js_quote(text: str) -> str:
    """*text* quoted as ECMAScript's ``JSON.stringify`` writes it: the oracle of SVC-ORDER-4.

    Non-ASCII characters stay raw, control characters are escaped, and lone
    surrogates become ``\\udXXX``.

    >>> print(js_quote('Approuvé "x"\\n'))
    "Approuvé \\"x\\"\\n"
    """
    quoted = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _one(question_id: str = "q") -> AskUserQuestionRequest:
    return {
        "questions": [{"id": question_id, "question": "Proceed?", "options": [{"label": "Yes"}]}]
    }


def _kept(found: object, raw: object) -> bool:
    """Whether *found* is *raw*: the very object, or for text and numbers an equal one.

    Text and numbers carry no identity a caller can rely on, and none that
    survives a process boundary (``HAR-VALUE-2``); every other object must be
    the very one.
    """
    if found is raw:
        return True
    return type(raw) in {str, int, float, bool} and type(found) is type(raw) and found == raw


async def _outcome(example: Example, service: Service, request: object, stage: str) -> object:
    """Call and await ``ask()``, judging ``SVC-ASYNC-1`` on the way; the result or the error."""
    example.judge("SVC-ASYNC-1")
    try:
        pending = service.ask(request)  # type: ignore[arg-type] # malformed on purpose
    except Exception as error:  # noqa: BLE001 - judged here
        example.fail("SVC-ASYNC-1", f"calling ask() raised {error!r} before it was awaited")
        return error
    example.stage(stage, "ask()")
    try:
        return await pending
    except asyncio.CancelledError as error:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the suite's own limit: not an outcome of ask()
        return error
    except BaseException as error:  # noqa: BLE001 - every outcome is judged by the caller
        return error


#: The cases of ``service-order``: one per requirement a malformed request can break,
#: plus valid requests without a provider, stage precedence, and BAD_INTENT wording.
_ORDER_CASES: Final = (*INVALID_REQUEST_REQUIREMENTS, "no-provider", "precedence", "intent-text")


@check(
    "service-order",
    "SVC-ORDER-1", "SVC-ORDER-2", "SVC-ORDER-3", "SVC-ORDER-4", "SVC-ORDER-5", "SVC-ASYNC-1",
    "SVC-PASS-1", "ERR-MSG-1", "ERR-CODE-1", *INVALID_REQUEST_REQUIREMENTS,
    kind="service",
    cases=_ORDER_CASES,
    case_share=0.125,
)  # fmt: skip
def service_order(draw: Draws, setup: Setup) -> Scenario:
    """Malformed requests raise the first failing stage's code; the provider never sees them."""
    if setup.case == "no-provider":
        return _no_provider(draw(_REQUESTS, "request"))
    if setup.case == "precedence":
        return _precedence(draw(st.sampled_from(_PRECEDENCE), "request and code"))
    if setup.case == "intent-text":
        return _intent_text(draw)
    case = draw(invalid_requests(requirement=setup.case), "case")
    registered = draw(st.booleans(), "provider registered")

    async def scenario(example: Example) -> None:
        service = await example.service()
        provider = Recording()
        if registered:
            service.register_provider(provider)
        stage = _STAGE[case.code]
        outcome = await _outcome(example, service, case.request, stage)
        example.verify(
            "SVC-PASS-1",
            not provider.seen,
            "the provider was called for a request that failed a check",
        )
        example.judge(stage, case.requirement)
        got = code_of(outcome)
        if got != case.code:
            message = f"expected {case.code} for {case.requirement}, got {outcome!r}"
            if got in _STAGE and _ORDER.index(got) < _ORDER.index(case.code):
                # An earlier stage's code: the stages are out of order, and the
                # defect may well have been seen.
                example.fail(stage, message)
            # Anything else (a later stage's code, another error, an answer) means
            # the defect went unnoticed: it breaks its own rule and the stage.
            example.fail(case.requirement, message, stage)
            return
        example.verify(
            "ERR-CODE-1",
            isinstance(outcome, Exception),
            lambda: f"{outcome!r} carries a spec code but is no exception",
        )
        fixed = MESSAGES.get(case.code)
        if fixed is not None:
            example.verify(
                "ERR-MSG-1",
                str(outcome) == fixed,
                lambda: f"{case.code} with message {str(outcome)!r}, not {fixed!r}",
            )
        if case.code is ErrorCode.BAD_REQUEST:
            # The oracle is the spec's own rule set: the first violation, and where
            # the message must say it is (the location format of SVC-ORDER-3).
            location = request_violations(case.request)[0].location()
            example.verify(
                stage,
                str(outcome).startswith(f"{location} "),
                lambda: f"the message {str(outcome)!r} does not start with {location!r}",
            )
        for kind, variant in case.also:
            # The same defect by a near miss of each other kind: refused alike.
            again = await _outcome(example, service, variant, stage)
            example.verify(
                "SVC-PASS-1",
                not provider.seen,
                "the provider was called for a request that failed a check",
            )
            if code_of(again) != case.code:
                example.fail(
                    case.requirement,
                    f"expected {case.code} for {case.requirement} when the label differs only "
                    f"by {kind} ({_intent_of(variant)!r}), got {again!r}",
                    stage,
                )

    return scenario


def _intent_of(request: dict[str, list[dict[str, object]]]) -> object:
    """The intent of the question that has one, for a failure's message."""
    return next((q["intent"] for q in request["questions"] if "intent" in q), None)


def _no_provider(request: AskUserQuestionRequest) -> Scenario:
    async def scenario(example: Example) -> None:
        service = await example.service()
        outcome = await _outcome(example, service, request, "SVC-ORDER-5")
        example.verify(
            "SVC-ORDER-5",
            code_of(outcome) == ErrorCode.NO_PROVIDER,
            lambda: f"a good request with no provider gave {outcome!r}",
        )
        example.verify(
            "ERR-MSG-1",
            str(outcome) == MESSAGES[ErrorCode.NO_PROVIDER],
            lambda: f"NO_PROVIDER with message {str(outcome)!r}",
        )

    return scenario


_MALFORMED: Final[Any] = {"id": "", "question": "?"}
_BAD_INTENT: Final[Any] = {"id": "p", "question": "?", "intent": {"kind": "k", "approve": "A"}}
#: Defects at several stages at once, without a provider: the earlier stage always wins.
_PRECEDENCE: Final[tuple[tuple[str, ErrorCode], ...]] = (
    ("aborted, empty", ErrorCode.ASK_ABORTED),
    ("aborted, malformed", ErrorCode.ASK_ABORTED),
    ("empty, no provider", ErrorCode.EMPTY_QUESTIONS),
    ("bad intent before malformed", ErrorCode.BAD_REQUEST),
    ("bad intent, no provider", ErrorCode.BAD_INTENT),
)


def _precedence_request(name: str) -> object:
    requests: dict[str, object] = {
        "aborted, empty": {"questions": [], "signal": AbortSignal.abort()},
        "aborted, malformed": {"questions": [_MALFORMED], "signal": AbortSignal.abort()},
        "empty, no provider": {"questions": []},
        "bad intent before malformed": {"questions": [_BAD_INTENT, _MALFORMED]},
        "bad intent, no provider": {"questions": [_BAD_INTENT]},
    }
    return requests[name]


#: Precedence cases whose one defect is a rule of its own: a later stage's
#: outcome means that rule went unnoticed too.
_UNNOTICED: Final = {"bad intent, no provider": "INT-APPROVE-1"}


def _precedence(case: tuple[str, ErrorCode]) -> Scenario:
    name, code = case
    stage = _STAGE[code]

    async def scenario(example: Example) -> None:
        service = await example.service()
        outcome = await _outcome(example, service, _precedence_request(name), stage)
        got = code_of(outcome)
        if got == code:
            example.judge(stage)
            return
        message = f"a request with defects at several stages ({name}) gave {outcome!r}"
        rule = _UNNOTICED.get(name)
        if rule is not None and not (got in _STAGE and _ORDER.index(got) < _ORDER.index(code)):
            example.fail(rule, message, stage)
        example.fail(stage, message)

    return scenario


def _intent_text(draw: Draws) -> Scenario:
    label = draw(labels(), "offered label")
    approve = draw(labels(), "approve label")
    if approve == label:
        approve += "\u00e9"
    kind = draw(st.sampled_from(["plan-review", "deploy \u00e9tape"]), "intent kind")
    missing_detail = draw(st.booleans(), "detail missing (else approve label unknown)")
    question: dict[str, Any] = {
        "id": "p",
        "question": "?",
        "options": [{"label": label}],
        "intent": {"kind": kind, "approve": label if missing_detail else approve},
    }
    if missing_detail:
        message = f"question p declares intent {kind} without the detail it reviews"
    else:
        question["detail"] = "the plan"
        message = (
            f"question p declares intent {kind} whose approve label {js_quote(approve)} "
            "names none of its options"
        )

    rule = "INT-DETAIL-1" if missing_detail else "INT-APPROVE-1"

    async def scenario(example: Example) -> None:
        service = await example.service()
        service.register_provider(Recording())
        outcome = await _outcome(example, service, {"questions": [question]}, "SVC-ORDER-4")
        got = code_of(outcome)
        example.judge(rule)
        if got != ErrorCode.BAD_INTENT and got not in _EARLIER_THAN_INTENT:
            # The defect went unnoticed: its own rule is broken as well as the stage.
            example.fail(rule, f"expected BAD_INTENT for {rule}, got {outcome!r}", "SVC-ORDER-4")
        example.verify(
            "SVC-ORDER-4",
            got == ErrorCode.BAD_INTENT and str(outcome) == message,
            lambda: f"BAD_INTENT message {str(outcome)!r}, not {message!r}",
        )

    return scenario


@check("service-registration", "SVC-REG-1", "SVC-REG-2", "SVC-REG-3", kind="service")
def service_registration(draw: Draws, setup: Setup) -> Scenario:
    """One provider at a time; every disposer form works; stale disposers do nothing."""
    form = draw(st.sampled_from(["call", "dispose", "with"]), "how the first is disposed")

    async def scenario(example: Example) -> None:
        service = await example.service()
        first = Recording()
        registration = service.register_provider(first)
        for candidate in (first, Recording()):
            try:
                extra = service.register_provider(candidate)
            except Exception as error:  # noqa: BLE001 - judged here
                example.verify(
                    "SVC-REG-2",
                    code_of(error) == ErrorCode.DUPLICATE_PROVIDER
                    and str(error) == MESSAGES[ErrorCode.DUPLICATE_PROVIDER],
                    f"a second registration raised {error!r}",
                )
            else:
                # Undo it, so that the other requirements are judged on their own.
                dispose = getattr(extra, "dispose", None)
                if callable(dispose):
                    dispose()
                example.fail("SVC-REG-2", "a second registration was accepted")
        if form == "call":
            registration()
        elif form == "dispose":
            registration.dispose()
        else:
            with registration:
                pass
        outcome = await _outcome(example, service, _one(), "SVC-REG-1")
        example.verify(
            "SVC-REG-1",
            code_of(outcome) == ErrorCode.NO_PROVIDER,
            lambda: f"after the registration's {form}, ask() gave {outcome!r}",
        )
        second = Recording()
        try:
            with service.register_provider(second):
                registration.dispose()  # stale: must not unregister `second`
                registration()
                outcome = await _outcome(example, service, _one(), "SVC-REG-3")
                example.verify(
                    "SVC-REG-3",
                    len(second.seen) == 1 and not isinstance(outcome, BaseException),
                    lambda: f"after a stale disposal, ask() gave {outcome!r}",
                )
        except UserInteractionError as error:
            example.fail("SVC-REG-1", f"registering after disposal raised {error!r}")
        outcome = await _outcome(example, service, _one(), "SVC-REG-1")
        example.verify(
            "SVC-REG-1",
            code_of(outcome) == ErrorCode.NO_PROVIDER,
            lambda: f"leaving the with block did not unregister: ask() gave {outcome!r}",
        )

    return scenario


@check(
    "service-pass-through",
    "SVC-PASS-1", "SVC-STRICT-2", "REQ-EXTRA-1", "REQ-AGENT-2",
    kind="service",
)  # fmt: skip
def service_pass_through(draw: Draws, setup: Setup) -> Scenario:
    """The provider gets the very request, agent and all; a valid answer comes back as is."""
    request: Any = dict(draw(_REQUESTS, "request"))
    request["x-trace"] = draw(st.text(max_size=5), "extra key")
    agent = draw(agents(), "agent")
    request["agent"] = agent
    answer = draw(valid_answers(request), "answer")

    async def scenario(example: Example) -> None:
        service = await example.service()
        provider = Recording(answer)
        service.register_provider(provider)
        outcome = await _outcome(example, service, request, "SVC-PASS-1")
        example.verify(
            "REQ-AGENT-2",
            not isinstance(outcome, BaseException) or code_of(outcome) != ErrorCode.BAD_REQUEST,
            lambda: f"a request whose agent is a {type(agent).__name__} raised {outcome!r}",
        )
        if code_of(outcome) == ErrorCode.BAD_ANSWER:
            # The request went through; the answer, which keeps every rule, was refused.
            example.judge("SVC-STRICT-2")
            example.fail("SVC-STRICT-2", f"a valid answer was refused: {outcome!r}")
        example.verify(
            "REQ-EXTRA-1",
            not isinstance(outcome, BaseException),
            lambda: f"a request with an extra key raised {outcome!r}",
        )
        example.verify(
            "SVC-PASS-1",
            len(provider.seen) == 1 and provider.seen[0] is request,
            lambda: _passed_on(provider.seen, request, outcome),
        )
        example.verify(
            "REQ-AGENT-2",
            all(_kept(seen.get("agent"), agent) for seen in provider.seen),
            "the provider's request does not hold the very agent object the caller passed",
        )
        if not isinstance(outcome, BaseException):
            example.verify(
                "SVC-STRICT-2",
                outcome is answer,
                "the valid answer was not returned as the same object",
            )

    return scenario


def _passed_on(seen: Sequence[object], request: object, outcome: object) -> str:
    """What went wrong with the one request the provider should have received, in plain words."""
    if not seen:
        return f"the provider was never called: ask() ended with {outcome!r} without asking it"
    if len(seen) > 1:
        return f"the provider was called {len(seen)} times for one ask()"
    if seen[0] == request:
        return "the provider received an equal copy of the request, not the caller's very object"
    return f"the provider received another request: {seen[0]!r}"


async def _leaks(example: Example, signal: AbortSignal, tasks_before: int) -> None:
    example.verify(
        "SVC-LEAK-1",
        not signal.listener_count,
        lambda: f"{signal.listener_count} listener(s) left on the signal",
    )
    await asyncio.sleep(0)
    example.verify(
        "SVC-LEAK-1",
        len(asyncio.all_tasks()) <= tasks_before,
        "a task is left running after the ask settled",
    )


@check("service-abort", "SVC-ABORT-1", "SVC-ABORT-2", "SVC-ABORT-3", "SVC-LEAK-1", kind="service")
def service_abort(draw: Draws, setup: Setup) -> Scenario:
    """An abort settles the ask promptly even if the provider ignores it; earlier answers stand.

    A provider that swallows the interrupt and answers late does not win, and
    its late answer stays on the error.
    """
    provider_kind = draw(st.sampled_from(["ignores", "answered", "swallows"]), "provider")

    async def scenario(example: Example) -> None:
        service = await example.service()
        controller = AbortController()
        request: AskUserQuestionRequest = {**_one(), "signal": controller.signal}
        answer: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": ["Yes"]}]}
        tasks_before = len(asyncio.all_tasks())
        if provider_kind == "answered":
            scripted = ScriptedProvider()
            service.register_provider(scripted)
            task = asyncio.ensure_future(settle(service.ask(request)))
            example.stage("SVC-ABORT-2", "the scripted provider's pending ask")
            (await scripted.next_ask()).answer(answer)
            example.stage("SVC-ABORT-2", "ask() after its provider answered")
            outcome = await task
            controller.abort()
            example.verify(
                "SVC-ABORT-2", outcome is answer, lambda: f"an answered ask gave {outcome!r}"
            )
            await _leaks(example, controller.signal, tasks_before)
            return
        provider = Ignoring() if provider_kind == "ignores" else Swallowing(answer)
        service.register_provider(provider)
        task = asyncio.ensure_future(settle(service.ask(request)))
        example.stage("SVC-ABORT-1", "the provider's call to start")
        await provider.started.wait()
        controller.abort()
        requirement = "SVC-ABORT-1" if provider_kind == "ignores" else "SVC-ABORT-3"
        example.stage(requirement, "ask() after the abort")
        done, _ = await asyncio.wait({task}, timeout=example.bound)
        if not done:
            example.fail(requirement, f"still pending {example.bound:g} s after the abort")
            return
        outcome = task.result()
        example.verify(
            requirement,
            code_of(outcome) == ErrorCode.ASK_ABORTED
            and str(outcome) == MESSAGES[ErrorCode.ASK_ABORTED],
            lambda: f"an abort mid-wait gave {outcome!r}",
        )
        if provider_kind == "ignores":
            example.verify(
                "SVC-ABORT-1", provider.cancelled > 0, "the provider's call was not cancelled"
            )
        else:
            example.verify(
                "SVC-ABORT-3",
                getattr(outcome, "answer", None) is answer,
                "the late answer was dropped instead of kept on the error",
            )
        await _leaks(example, controller.signal, tasks_before)

    return scenario


#: What happens in one tick while the provider is pending: the caller's own
#: cancellation or outer timeout, alone or together with an abort or a disposal.
_RACES: Final = (
    "cancel", "cancel abort", "abort cancel", "cancel dispose", "dispose cancel",
    "timeout", "timeout abort", "abort timeout", "timeout dispose",
)  # fmt: skip


_PROVIDER_KINDS: Final = ("ignores", "swallows", "converts")


@check(
    "service-cancel",
    "SVC-CANCEL-1",
    "SVC-LEAK-1",
    kind="service",
    cases=[f"{steps}/{provider}" for steps in _RACES for provider in _PROVIDER_KINDS],
    needs=lambda c: c.cancellable,
)
def service_cancel(draw: Draws, setup: Setup) -> Scenario:
    """The caller's cancellation propagates unchanged, even in the same tick as an abort.

    The caller cancels its task, or an outer ``asyncio.timeout`` expires, in
    the same loop iteration as an abort or a disposal, against providers that
    re-raise, swallow (and answer anyway) or convert the interrupt.
    """
    steps, _, provider_kind = setup.case.partition("/")

    async def scenario(example: Example) -> None:
        loop = asyncio.get_running_loop()
        service = await example.service()
        answer: AskUserQuestionAnswer = {"answers": [{"id": "q", "selected": ["Yes"]}]}
        provider: Ignoring | Swallowing | Converting
        if provider_kind == "ignores":
            provider = Ignoring()
        elif provider_kind == "swallows":
            provider = Swallowing(answer)
        else:
            provider = Converting()
        registration = service.register_provider(provider)
        controller = AbortController()
        request: AskUserQuestionRequest = {**_one(), "signal": controller.signal}
        timed = "timeout" in steps
        timeout = asyncio.timeout_at(loop.time() + 3600)

        async def caller() -> object:
            if not timed:
                return await service.ask(request)
            async with timeout:
                return await service.ask(request)

        task = asyncio.ensure_future(caller())
        example.stage("SVC-CANCEL-1", "the provider's call to start")
        await provider.started.wait()

        def dispose() -> None:
            # Looked up late, and staged: a registration that cannot be disposed
            # breaks SVC-REG-1, not the cancellation being checked.
            example.stage("SVC-REG-1", "the registration's dispose()")
            registration.dispose()
            example.stage("SVC-CANCEL-1", f"the caller's task after {steps!r}")

        actions: dict[str, Callable[[], object]] = {
            "cancel": task.cancel,
            "abort": controller.abort,
            "dispose": dispose,
            "timeout": lambda: timeout.reschedule(loop.time()),
        }
        for step in steps.split():
            if timed and step != "timeout":
                # An expired timeout fires through call_soon; so do the others, in
                # order, all in the next iteration, before the caller's task runs.
                loop.call_soon(actions[step])
            else:
                actions[step]()
        example.stage("SVC-CANCEL-1", f"the caller's task after {steps!r}")
        done, _ = await asyncio.wait({task}, timeout=example.bound)
        example.judge("SVC-CANCEL-1")
        if not done:
            example.fail(
                "SVC-CANCEL-1",
                f"{steps!r}: the caller's task was still running {example.bound:g} s later",
            )
            return
        ended: object = "cancelled" if task.cancelled() else (task.exception() or task.result())
        if timed:
            example.verify(
                "SVC-CANCEL-1",
                isinstance(ended, TimeoutError) and task.cancelling() == 0,
                lambda: (
                    f"{steps!r} with a provider that {provider_kind}: the outer timeout "
                    f"gave {ended!r} (cancelling() {task.cancelling()}), not TimeoutError"
                ),
            )
        else:
            example.verify(
                "SVC-CANCEL-1",
                task.cancelled(),
                lambda: (
                    f"{steps!r} with a provider that {provider_kind}: the cancelled "
                    f"ask ended with {ended!r}"
                ),
            )
        example.verify(
            "SVC-CANCEL-1",
            provider.cancelled > 0,
            lambda: f"{steps!r}: the provider's call was not cancelled",
        )
        example.verify(
            "SVC-LEAK-1",
            not controller.signal.listener_count,
            "a listener is left on the signal after cancellation",
        )

    return scenario


@check("service-dispose", "SVC-DISPOSE-1", "ERR-MSG-1", kind="service")
def service_dispose(draw: Draws, setup: Setup) -> Scenario:
    """Disposal mid-ask cancels every pending provider call and raises PROVIDER_DISPOSED."""
    count = draw(st.integers(1, 4), "pending asks")

    async def scenario(example: Example) -> None:
        service = await example.service()
        provider = Ignoring()
        registration = service.register_provider(provider)
        tasks = [asyncio.ensure_future(settle(service.ask(_one(f"q{i}")))) for i in range(count)]
        example.stage("SVC-DISPOSE-1", "the provider's calls to start")
        await provider.started.wait()
        await asyncio.sleep(0)
        registration.dispose()
        example.stage("SVC-DISPOSE-1", "the asks after the disposal")
        done, _ = await asyncio.wait(tasks, timeout=example.bound)
        example.judge("SVC-DISPOSE-1")
        for task in tasks:
            if task not in done:
                example.fail("SVC-DISPOSE-1", "an ask was still pending after the disposal")
                continue
            outcome = task.result()
            example.verify(
                "SVC-DISPOSE-1",
                code_of(outcome) == ErrorCode.PROVIDER_DISPOSED,
                f"a pending ask ended with {outcome!r} after disposal",
            )
            if code_of(outcome) == ErrorCode.PROVIDER_DISPOSED:
                example.verify(
                    "ERR-MSG-1",
                    str(outcome) == MESSAGES[ErrorCode.PROVIDER_DISPOSED],
                    f"PROVIDER_DISPOSED with message {str(outcome)!r}",
                )
        example.verify(
            "SVC-DISPOSE-1",
            provider.cancelled >= count,
            lambda: f"{provider.cancelled} of {count} pending provider calls were cancelled",
        )

    return scenario


#: How long after the cancellation ``SVC-LEAVE-1`` lets an ask wait for its provider.
_LEAVE_WITHIN: Final = 1.0


@check("service-leave", "SVC-LEAVE-1", kind="service")
def service_leave(draw: Draws, setup: Setup) -> Scenario:
    """A provider that ignores its cancellation and stays pending does not hold the ask.

    After an abort, a disposal or the caller's cancellation, each on a
    service of its own and all at once, the ask settles as it would have
    anyway within a second, leaving the provider's call behind. The
    cancellation is tried only on a service that declares call cancellation
    (``HAR-CANCEL-2``).
    """
    interrupts = ["abort", "dispose", *(["cancel"] if setup.capabilities.cancellable else [])]
    expected = {"abort": ErrorCode.ASK_ABORTED, "dispose": ErrorCode.PROVIDER_DISPOSED}

    async def scenario(example: Example) -> None:
        providers: list[Stubborn] = []
        tasks: list[asyncio.Task[AskUserQuestionAnswer]] = []
        actions: list[Callable[[], object]] = []
        try:
            for interrupt in interrupts:
                service = await example.service()
                provider = Stubborn()
                registration = service.register_provider(provider)
                controller = AbortController()
                request: AskUserQuestionRequest = {**_one(), "signal": controller.signal}
                task = asyncio.ensure_future(service.ask(request))
                providers.append(provider)
                tasks.append(task)
                by_name: dict[str, Callable[[], object]] = {
                    "abort": controller.abort,
                    "dispose": registration.dispose,
                    "cancel": task.cancel,
                }
                actions.append(by_name[interrupt])
            example.stage("SVC-LEAVE-1", "the providers' calls to start")
            for provider in providers:
                await provider.started.wait()
            for action in actions:  # all in one tick: one grace for the three
                action()
            limit = _LEAVE_WITHIN + example.bound
            example.stage("SVC-LEAVE-1", "ask() after its interrupt")
            await asyncio.wait(tasks, timeout=limit)
            example.judge("SVC-LEAVE-1")
            for interrupt, provider, task in zip(interrupts, providers, tasks, strict=True):
                if not task.done():
                    example.fail(
                        "SVC-LEAVE-1",
                        f"still pending {limit:g} s after the {interrupt}: the service waits "
                        "for a provider that ignores its cancellation",
                    )
                example.verify(
                    "SVC-LEAVE-1",
                    provider.cancelled > 0,
                    f"the provider's call was not cancelled after the {interrupt}",
                )
                ended: object = (
                    "cancelled" if task.cancelled() else task.exception() or task.result()
                )
                example.verify(
                    "SVC-LEAVE-1",
                    ended == "cancelled"
                    if interrupt == "cancel"
                    else code_of(ended) == expected[interrupt],
                    f"after the {interrupt}, the ask ended with {ended!r}",
                )
        finally:
            # Let the providers' calls end, left behind or not: nothing outlives the example.
            for provider in providers:
                provider.release()
            for task in tasks:
                task.cancel()
            example.stage("SVC-LEAVE-1", "the released providers' calls to end")
            if tasks:
                await asyncio.wait(tasks, timeout=example.bound)
            for provider in providers:
                if provider.started.is_set():
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(example.bound):
                            await provider.ended.wait()

    return scenario


@check("service-provider-errors", "SVC-ERR-1", kind="service")
def service_provider_errors(draw: Draws, setup: Setup) -> Scenario:
    """Whatever the provider raises reaches the caller as the same object."""
    kind = draw(
        st.sampled_from(["cancelled", "value", "lookup", "its own cancellation"]),
        "provider error",
    )

    async def scenario(example: Example) -> None:
        # A CancelledError the provider raises on its own (its UI cancelled a
        # future; nobody cancelled the caller) is an exception like any other.
        error: BaseException = {
            "cancelled": UserInteractionError.of(ErrorCode.ASK_CANCELLED),
            "value": ValueError("ui crashed"),
            "lookup": LookupError("no such widget"),
            "its own cancellation": asyncio.CancelledError("the ui closed its dialog"),
        }[kind]

        class Raising:
            async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
                raise error

        service = await example.service()
        service.register_provider(Raising())
        outcome = await _outcome(example, service, _one(), "SVC-ERR-1")
        example.verify(
            "SVC-ERR-1",
            outcome is error,
            lambda: f"the provider raised {error!r} but the caller got {outcome!r}",
        )

    return scenario


def _offers_labels(request: AskUserQuestionRequest) -> bool:
    return any(question.get("options") for question in request["questions"])


#: Requests with a question that offers labels, whose near misses an answer can pick.
_OFFERING: Final = _REQUESTS.filter(_offers_labels)


@check("service-strict", "SVC-STRICT-1", kind="service", cases=["any", "near-miss"], case_share=0.5)
def service_strict(draw: Draws, setup: Setup) -> Scenario:
    """A strict service rejects a broken answer with BAD_ANSWER and keeps the answer.

    The ``near-miss`` case draws only answers whose id or label misses the
    request's by case, normalisation, whitespace or a look-alike: compared
    exactly, they break the rules, so a service matching them loosely fails.
    """
    if setup.case == "near-miss":
        request = draw(_OFFERING, "request")
        case = draw(near_miss_answers(request), "answer")
    else:
        request = draw(_REQUESTS, "request")
        case = draw(invalid_answers(request), "answer")

    async def scenario(example: Example) -> None:
        service = await example.service()
        provider = Recording(case.answer)
        service.register_provider(provider)
        outcome = await _outcome(example, service, request, "SVC-STRICT-1")
        if not example.verify(
            "SVC-STRICT-1",
            code_of(outcome) == ErrorCode.BAD_ANSWER,
            lambda: f"an answer breaking {case.requirement} gave {outcome!r}",
        ):
            return
        example.verify(
            "SVC-STRICT-1",
            _kept(getattr(outcome, "answer", None), case.answer),
            "BAD_ANSWER does not keep the raw answer",
        )
        example.verify(
            "SVC-STRICT-1",
            "ANS-" in str(outcome),
            lambda: f"BAD_ANSWER message names no requirement: {str(outcome)!r}",
        )
        for kind, variant, missed in case.also:
            # The same near miss by each other kind: refused alike.
            provider.answer = (missed,)
            again = await _outcome(example, service, variant, "SVC-STRICT-1")
            if code_of(again) != ErrorCode.BAD_ANSWER:
                example.fail(
                    "SVC-STRICT-1",
                    f"an answer breaking {case.requirement} by {kind} alone gave {again!r}",
                )
                return

    return scenario
