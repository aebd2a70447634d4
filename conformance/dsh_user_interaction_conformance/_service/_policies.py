"""Checks for the policies of spec section 8, on a service that declares them.

A service declares its policies with :func:`with_policies`; a check of a
policy the service does not declare is skipped, never failed. The suite
supplies the gate, the providers and the observers, and watches what reaches
each of them.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast

from hypothesis import strategies as st

from dsh_user_interaction import (
    MESSAGES,
    TIMED_OUT_MESSAGE,
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    request_violations,
)

from .._engine import Draws, Example, Scenario, Setup, check
from .._stand_ins import Ignoring, Recording, Swallowing, code_of, settle
from .._subject import Service
from ..strategies import agents, requests, valid_answers

__all__: list[str] = []

#: The requests of the deadline's checks, whose defaults and answers come from them.
_REQUESTS: Final = requests(max_questions=2)
#: The requests of the gate's and the observers' checks, which never read the
#: questions: a few plain ones, so that their examples cost little to draw.
_PLAIN: Final[st.SearchStrategy[dict[str, Any]]] = st.sampled_from([
    {"questions": [{"id": "go", "question": "Deploy now?", "options": [
        {"label": "Wait (Recommended)"}, {"label": "Deploy"}]}]},
    {"questions": [
        {"id": "targets", "question": "Which?", "multiSelect": True,
         "options": [{"label": "tests"}, {"label": "docs"}]},
        {"id": "notes", "question": "Anything else?"}]},
])  # fmt: skip
_ABORT: Final = "ask_user_question was aborted before the user answered"


async def _ask(example: Example, service: Service, request: object, requirement: str) -> object:
    """Await ``ask()``; its answer or the error it raised (the suite's own limit propagates)."""
    example.stage(requirement, "ask()")
    try:
        return await service.ask(cast("AskUserQuestionRequest", request))
    except asyncio.CancelledError as error:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return error
    except BaseException as error:  # noqa: BLE001 - every outcome is judged by the caller
        return error


def _message(outcome: object) -> str:
    try:
        return str(outcome)
    except Exception:  # noqa: BLE001 - a hostile error: no message
        return ""


def _refused_with(outcome: object, code: ErrorCode, message: str) -> bool:
    return (
        isinstance(outcome, Exception) and code_of(outcome) == code and _message(outcome) == message
    )


# ---------------------------------------------------------------------------
# The caller gate
# ---------------------------------------------------------------------------


class _Gate:
    """The suite's gate: records each agent it judges and gives its drawn verdict."""

    def __init__(self, verdict: object) -> None:
        self.verdict = verdict
        self.seen: list[object] = []

    def judge(self, agent: object) -> Any:  # noqa: ANN401 - any verdict, bad ones too
        self.seen.append(agent)
        if isinstance(self.verdict, BaseException):
            raise self.verdict
        return self.verdict


class GateFailure(Exception):
    """What the suite's gate raises in the ``raises`` case."""


_REFUSALS: Final = (ErrorCode.CALLER_NOT_LIVE, ErrorCode.DELEGATED_CALLER)
_VERDICTS: Final = st.sampled_from([None, *_REFUSALS])
#: Verdicts of the wrong kind: a plain string equal to a code among them.
_BOGUS: Final = st.sampled_from(["CALLER_NOT_LIVE", True, 0, "admit", ErrorCode.NO_PROVIDER])
#: The cases where something else is wrong with the request: a fault of a stage
#: before the gate (aborted, empty), or after it (malformed, no provider).
_STAGES: Final = ("aborted", "empty", "malformed", "no-provider")


def _same_agent(seen: object, agent: object) -> bool:
    """The very agent; text and numbers carry no identity, so an equal one (``REQ-AGENT-2``)."""
    if isinstance(agent, str | int | float) or agent is None:
        return type(seen) is type(agent) and seen == agent
    return seen is agent


@check(
    "policy-gate",
    "GATE-1", "GATE-2", "GATE-3",
    kind="service",
    policy="gate",
    cases=(
        "admit", "not-live", "delegated", "raises", "bogus", "aborted", "empty", "malformed",
        "no-provider",
    ),
    case_share=0.05,
)  # fmt: skip
def policy_gate(draw: Draws, setup: Setup) -> Scenario:
    """A gate judges the agent once, between stages 2 and 3; its refusal or error stands."""
    request: dict[str, Any] = copy.deepcopy(dict(draw(_PLAIN, "request")))
    agent = draw(agents(), "agent")
    named = draw(st.booleans(), "the request names its agent")
    request.pop("agent", None)
    if named:
        request["agent"] = agent
    expected_agent = agent if named else None
    case = setup.case
    stage = case if case in _STAGES else ""
    verdict: object
    if case == "admit":
        verdict = None
    elif case == "not-live":
        verdict = ErrorCode.CALLER_NOT_LIVE
    elif case == "delegated":
        verdict = ErrorCode.DELEGATED_CALLER
    elif case == "raises":
        verdict = GateFailure("the gate's registry is unreachable")
    elif case == "bogus":
        verdict = draw(_BOGUS, "verdict")
    else:
        verdict = draw(_VERDICTS, "verdict")
    signal: AbortSignal | None = None
    if stage == "aborted":
        controller = AbortController()
        controller.abort()
        signal = controller.signal
        request["signal"] = signal
    elif stage == "empty":
        request["questions"] = []
    elif stage == "malformed":
        first = dict(request["questions"][0])
        first["question"] = ""
        request["questions"] = [first, *request["questions"][1:]]

    async def scenario(example: Example) -> None:
        gate = _Gate(verdict)
        service = await example.service(gate=gate)
        provider = Recording()
        if stage != "no-provider":
            service.register_provider(provider)
        outcome = await _ask(example, service, request, "GATE-1")
        asked = len(provider.seen)
        if stage in {"aborted", "empty"}:
            code = ErrorCode.ASK_ABORTED if stage == "aborted" else ErrorCode.EMPTY_QUESTIONS
            example.verify(
                "GATE-1",
                not gate.seen and code_of(outcome) == code,
                lambda: (
                    f"with the request {stage}, ask() gave {outcome!r} and the gate judged"
                    f" {len(gate.seen)} agent(s); stages 1 and 2 come before the gate"
                ),
            )
            return
        example.verify(
            "GATE-1",
            len(gate.seen) == 1 and _same_agent(gate.seen[0], expected_agent),
            lambda: (
                f"the gate judged {gate.seen!r:.200}; it must judge the request's agent"
                f" ({expected_agent!r:.100}) exactly once"
            ),
        )
        refused = verdict is not None
        if refused:
            example.verify(
                "GATE-1",
                not asked,
                f"the provider was asked although the gate gave {verdict!r}",
            )
        if isinstance(verdict, GateFailure):
            example.verify(
                "GATE-3",
                outcome is verdict,
                lambda: f"the gate raised {verdict!r}, and ask() gave {outcome!r}, not that error",
            )
        elif verdict in _REFUSALS and type(verdict) is ErrorCode:
            example.verify(
                "GATE-2",
                _refused_with(outcome, verdict, MESSAGES[verdict]),
                lambda: f"the gate gave {verdict}, and ask() gave {outcome!r}",
            )
        elif verdict is not None:
            example.verify(
                "GATE-3",
                isinstance(outcome, TypeError),
                lambda: (
                    f"the gate gave {verdict!r}, not a verdict; ask() gave {outcome!r}"
                    " instead of a TypeError"
                ),
            )
        elif stage == "malformed":
            example.verify(
                "GATE-1",
                code_of(outcome) == ErrorCode.BAD_REQUEST,
                lambda: f"an admitted malformed request gave {outcome!r}, not BAD_REQUEST",
            )
        elif stage == "no-provider":
            example.verify(
                "GATE-1",
                code_of(outcome) == ErrorCode.NO_PROVIDER,
                lambda: f"an admitted request without a provider gave {outcome!r}",
            )
        else:
            example.verify(
                "GATE-1",
                not isinstance(outcome, BaseException) and asked == 1,
                lambda: f"an admitted request gave {outcome!r}, with {asked} provider call(s)",
            )

    return scenario


# ---------------------------------------------------------------------------
# Deadlines and defaults
# ---------------------------------------------------------------------------


def _defaults_of(answer: AskUserQuestionAnswer) -> dict[str, dict[str, Any]]:
    """Each question's default, from a valid answer: the item without its id."""
    return {
        item["id"]: {key: value for key, value in item.items() if key != "id"}
        for item in answer["answers"]
    }


def _with_defaults(request: dict[str, Any], defaults: Mapping[str, dict[str, Any]]) -> None:
    request["questions"] = [
        {**question, "default": copy.deepcopy(defaults[question["id"]])}
        for question in request["questions"]
    ]


def _expected_defaults(request: Mapping[str, Any]) -> dict[str, Any]:
    """The answer ``POL-DEFAULT-2`` requires."""
    items: list[dict[str, Any]] = []
    for question in request["questions"]:
        default = question["default"]
        item: dict[str, Any] = {"id": question["id"], "selected": list(default["selected"])}
        if "custom" in default:
            item["custom"] = default["custom"]
        items.append(item)
    return {"answers": items, "defaulted": True}


_SOON: Final = st.sampled_from([0.002, 0.01, 0.025])
_BAD_DEADLINES: Final = st.sampled_from([float("nan"), float("inf"), "soon", True, None, [1]])
#: The ways each malformed case breaks a request's deadline or defaults.
_MALFORMED: Final = {
    "bad-deadline": ("deadline",),
    "bad-default": ("not-a-mapping", "unknown-label", "blank-custom", "extra-key"),
    "partial-defaults": ("partial", "no-deadline"),
}
_PLAIN_REASONS: Final = st.sampled_from([None, "stop", ValueError("stop")])


def _timed_out(outcome: object) -> bool:
    return _refused_with(outcome, ErrorCode.ASK_ABORTED, TIMED_OUT_MESSAGE)


@check(
    "policy-deadline",
    "POL-TIMEOUT-1", "POL-DEADLINE-1", "POL-DEFAULT-1", "POL-DEFAULT-2", "POL-DEFAULT-3",
    "REQ-DEADLINE-1", "REQ-DEFAULT-1", "REQ-DEFAULT-2",
    kind="service",
    policy="deadline",
    cases=(
        "defaults", "no-defaults", "signal-timeout", "plain-abort", "past", "late-human",
        "replayed", "replayed-early", "bad-deadline", "bad-default", "partial-defaults",
    ),
    case_share=0.05,
)  # fmt: skip
def policy_deadline(draw: Draws, setup: Setup) -> Scenario:
    """Time running out reads as a timeout, never as an abort or a made-up answer."""
    request: dict[str, Any] = copy.deepcopy(dict(draw(_REQUESTS, "request")))
    case = setup.case
    typed = cast("AskUserQuestionRequest", request)
    human = draw(valid_answers(typed), "the human's answer")
    defaults = _defaults_of(draw(valid_answers(typed), "the defaults, as an answer"))
    # A signal's timeout or abort must win over defaults waiting for a far deadline.
    with_defaults = case != "no-defaults"
    if with_defaults:
        _with_defaults(request, defaults)
    offset = 0.0
    if case in {"defaults", "no-defaults", "late-human"}:
        offset = draw(_SOON, "deadline, seconds from now")
    elif case in {"past", "replayed"}:
        offset = -draw(_SOON, "deadline, seconds ago")
    elif case in {"signal-timeout", "plain-abort"} and with_defaults:
        offset = 60.0  # a far deadline: the signal ends the ask first
    early = case == "replayed-early"
    if early:
        offset = 60.0
    seconds = draw(_SOON, "signal timeout, seconds") if case == "signal-timeout" else 0.0
    reason = draw(_PLAIN_REASONS, "abort reason") if case == "plain-abort" else None
    malformed = case in _MALFORMED
    if malformed:
        planted = draw(st.sampled_from(_MALFORMED[case]), "what is wrong")
        _plant(request, planted, defaults, draw)

    async def scenario(example: Example) -> None:
        if malformed:
            await _malformed(example, request)
            return
        if offset:
            request["deadline"] = time.time() + offset
        service = await example.service()
        if case == "late-human":
            provider: Any = Swallowing(human)
        elif case in {"replayed", "replayed-early"}:
            provider = Recording(_expected_defaults(request))
        else:
            provider = Ignoring()
        service.register_provider(provider)
        controller: AbortController | None = None
        if case == "signal-timeout":
            request["signal"] = AbortSignal.timeout(seconds)
        elif case == "plain-abort":
            controller = AbortController()
            request["signal"] = controller.signal
        pending = asyncio.ensure_future(_ask(example, service, request, "POL-DEADLINE-1"))
        if controller is not None:
            await provider.started.wait()
            controller.abort(reason)
        outcome = await pending
        if case in {"replayed", "replayed-early"}:
            if early:
                example.verify(
                    "POL-DEFAULT-3",
                    code_of(outcome) == ErrorCode.BAD_ANSWER,
                    lambda: (
                        "an answer marked defaulted before the deadline passed was"
                        f" accepted: ask() gave {outcome!r:.300}"
                    ),
                )
            else:
                example.verify(
                    "POL-DEFAULT-3",
                    outcome == _expected_defaults(request),
                    lambda: (
                        "the provider replayed the ask's own defaults after its deadline,"
                        f" and ask() gave {outcome!r:.300}"
                    ),
                )
            return
        if isinstance(provider, Ignoring | Swallowing):
            example.verify(
                "POL-DEADLINE-1",
                provider.cancelled >= 1,
                "the ask ended, but the provider's call was never interrupted",
            )
        if case in {"defaults", "past"}:
            example.verify(
                "POL-DEFAULT-1",
                not isinstance(outcome, BaseException),
                lambda: (
                    f"the deadline passed with a default for every question; ask() gave"
                    f" {outcome!r:.300}"
                ),
            )
            if not isinstance(outcome, BaseException):
                expected = _expected_defaults(request)
                example.verify(
                    "POL-DEFAULT-2",
                    outcome == expected,
                    lambda: f"the defaults answer was {outcome!r:.300}, not {expected!r:.300}",
                )
        elif case == "no-defaults":
            example.verify(
                "POL-TIMEOUT-1",
                _timed_out(outcome),
                lambda: f"the deadline passed, and ask() gave {outcome!r:.300}",
            )
        elif case == "signal-timeout":
            example.verify(
                "POL-TIMEOUT-1",
                _timed_out(outcome),
                lambda: f"the signal timed out, and ask() gave {outcome!r:.300}",
            )
            if with_defaults:
                example.verify(
                    "POL-DEFAULT-1",
                    isinstance(outcome, BaseException),
                    lambda: (
                        "a signal's timeout answered with the defaults, which no UI could"
                        f" count down: {outcome!r:.300}"
                    ),
                )
        elif case == "plain-abort":
            example.verify(
                "POL-TIMEOUT-1",
                _refused_with(outcome, ErrorCode.ASK_ABORTED, _ABORT),
                lambda: f"an abort with the reason {reason!r} gave {outcome!r:.300}",
            )
        else:  # late-human: the provider swallowed the interrupt and answered late
            kept = getattr(outcome, "answer", None)
            example.verify(
                "POL-DEFAULT-1",
                _timed_out(outcome) and kept is human,
                lambda: (
                    "the human answered as the deadline passed; ask() gave"
                    f" {outcome!r:.300}, keeping {kept!r:.200}, where the timed-out error must"
                    " keep the human's answer and no default may replace it"
                ),
            )

    return scenario


def _plant(request: dict[str, Any], planted: str, defaults: Mapping[str, Any], draw: Draws) -> None:
    """Break the request's deadline or defaults as *planted* says."""
    request["deadline"] = time.time() + 60.0
    if planted == "deadline":
        request["deadline"] = draw(_BAD_DEADLINES, "deadline")
        return
    _with_defaults(request, dict(defaults))
    first = request["questions"][0]
    if planted == "not-a-mapping":
        first["default"] = draw(st.sampled_from(["Yes", ["Yes"], None]), "default")
    elif planted == "unknown-label":
        first["default"] = {"selected": ["\u2063not offered"]}
    elif planted == "blank-custom":
        first["default"] = {"selected": [], "custom": " \t"}
    elif planted == "extra-key":
        first["default"] = {**first["default"], "note": "extra"}
    elif planted == "partial":
        last = request["questions"][-1]
        if len(request["questions"]) == 1:
            request["questions"].append({"id": f"{last['id']}-2", "question": "And?"})
        else:
            del last["default"]
    else:  # no-deadline
        del request["deadline"]


async def _malformed(example: Example, request: Mapping[str, Any]) -> None:
    """A broken deadline or default is a ``BAD_REQUEST`` worded as ``SVC-ORDER-3`` says."""
    found = request_violations(request)
    if not found:  # pragma: no cover - every planted fault is a violation
        return
    first = found[0]
    service = await example.service()
    service.register_provider(Recording())
    outcome = await _ask(example, service, request, first.requirement)
    example.verify(
        first.requirement,
        _refused_with(outcome, ErrorCode.BAD_REQUEST, first.describe()),
        lambda: f"ask() gave {outcome!r:.300}, not BAD_REQUEST: {first.describe()}",
    )


# ---------------------------------------------------------------------------
# Observers
# ---------------------------------------------------------------------------


class _Raising:
    """A provider that raises a given error once it is asked."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        await asyncio.sleep(0)
        raise self.error


class _Hostile:
    """An observer that breaks the rules: raises, or stays running until released."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.released = asyncio.Event()

    def __call__(self, event: object) -> object:
        if self.how == "raises":
            msg = "the observer's webhook is down"
            raise RuntimeError(msg)
        if self.how == "async-raises":
            return self._raise()
        if self.how == "async-slow":
            return self.released.wait()
        return None

    async def _raise(self) -> None:
        await asyncio.sleep(0)
        msg = "the observer's chat bot is down"
        raise RuntimeError(msg)


_OUTCOMES: Final = (
    "answered", "defaulted", "dismissed", "timed_out", "aborted", "disposed", "cancelled",
    "failed", "refused",
)  # fmt: skip


@check(
    "policy-observers",
    "OBS-EVENT-1", "OBS-SAFE-1",
    kind="service",
    policy="observers",
    cases=_OUTCOMES,
    case_share=0.05,
)  # fmt: skip
def policy_observers(draw: Draws, setup: Setup) -> Scenario:
    """Observers hear each pending ask and how it settled, and can neither block nor break it."""
    request: dict[str, Any] = copy.deepcopy(dict(draw(_PLAIN, "request")))
    case = setup.case
    hostile = [_Hostile(how) for how in ("raises", "async-raises", "async-slow")]
    if case == "defaulted":
        typed = cast("AskUserQuestionRequest", request)
        _with_defaults(request, _defaults_of(draw(valid_answers(typed), "the defaults")))
    if case in {"defaulted", "timed_out"}:
        offset = draw(_SOON, "deadline, seconds from now")
    else:
        offset = 0.0
    if case == "refused":
        request["questions"] = []

    async def scenario(example: Example) -> None:
        events: list[Any] = []
        service = await example.service()
        observe = cast("Callable[[Callable[[Any], object]], object]", getattr(service, "observe"))  # noqa: B009 - declared by the observers policy
        for each in hostile:
            observe(each)
        observe(events.append)
        if offset:
            request["deadline"] = time.time() + offset
        provider: Any = Ignoring()
        if case == "answered":
            provider = Recording()
        elif case == "dismissed":
            provider = _Raising(UserInteractionError.of(ErrorCode.ASK_CANCELLED))
        elif case == "failed":
            provider = _Raising(LookupError("the UI crashed"))
        registration = service.register_provider(provider)
        controller = AbortController()
        if case == "aborted":
            request["signal"] = controller.signal
        example.stage("OBS-SAFE-1", "ask() with observers")
        task = asyncio.ensure_future(service.ask(cast("AskUserQuestionRequest", request)))
        if case in {"aborted", "disposed", "cancelled"}:
            await provider.started.wait()
            if case == "aborted":
                controller.abort()
            elif case == "disposed":
                cast("Any", registration).dispose()
            else:
                task.cancel()
        outcome = await settle(task)
        for each in hostile:
            each.released.set()
        for _ in range(3):
            await asyncio.sleep(0)  # let a released observer's task end
        _judge_events(example, case, request, outcome, events)
        _judge_outcome(example, case, request, outcome)

    return scenario


def _judge_events(
    example: Example, case: str, request: object, outcome: object, events: Sequence[Any]
) -> None:
    seen = [(getattr(e, "kind", None), getattr(e, "outcome", None)) for e in events]
    if case == "refused":
        example.verify(
            "OBS-EVENT-1",
            not events,
            lambda: f"an ask that a check refused was reported: {seen}",
        )
        return
    expected = [("pending", None), ("settled", case)]
    ok = seen == expected and all(getattr(e, "request", None) is request for e in events)
    if ok:
        settled = events[1]
        held = settled.answer if case in {"answered", "defaulted"} else settled.error
        # A cancelled task makes a new CancelledError each time it is awaited.
        ok = isinstance(held, asyncio.CancelledError) if case == "cancelled" else held is outcome
    example.verify(
        "OBS-EVENT-1",
        ok,
        lambda: (
            f"the observer heard {seen}, expected {expected} with the very request and"
            f" the ask's {'answer' if case in {'answered', 'defaulted'} else 'error'}"
        ),
    )


_CODES: Final = {
    "dismissed": ErrorCode.ASK_CANCELLED,
    "aborted": ErrorCode.ASK_ABORTED,
    "timed_out": ErrorCode.ASK_ABORTED,
    "disposed": ErrorCode.PROVIDER_DISPOSED,
    "refused": ErrorCode.EMPTY_QUESTIONS,
}


def _judge_outcome(
    example: Example, case: str, request: Mapping[str, Any], outcome: object
) -> None:
    """The ask's outcome is what it is without observers (``OBS-SAFE-1``)."""
    if case == "answered":
        ok = isinstance(outcome, dict) and "defaulted" not in outcome
    elif case == "defaulted":
        ok = outcome == _expected_defaults(request)
    elif case == "cancelled":
        ok = isinstance(outcome, asyncio.CancelledError)
    elif case == "failed":
        ok = isinstance(outcome, LookupError)
    else:
        ok = code_of(outcome) == _CODES[case]
    example.verify(
        "OBS-SAFE-1",
        ok,
        lambda: (
            "with an observer that raises, one that raises in a task of its own and one"
            f" still running when the ask ends, the {case} ask ended with {outcome!r:.300}"
        ),
    )
