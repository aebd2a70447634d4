"""The ask policies of spec section 8, in the reference's own details.

The conformance suite judges the policies on any service that declares them
(``_service/_policies.py``): the gate's stage and verdicts, deadlines, defaults
and observers. Here are the reference's own parts it does not judge:
``LiveAgents``' registry, the service's constructor and its timer, the exact
``BAD_REQUEST`` words of a broken deadline or default, the observers'
reports, a durable ask's deadline through a relay, and the words a UI shows
for a deadline and a default.
"""

from __future__ import annotations

import asyncio
import gc
import math
import pickle
import time
import weakref
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    MESSAGES,
    TIMED_OUT_MESSAGE,
    AbortController,
    AbortSignal,
    AskEvent,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    LiveAgents,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    countdown_text,
    deadline_of,
    default_answer,
    default_text,
    request_violations,
)
from dsh_user_interaction._deadline import remaining
from dsh_user_interaction._observers import outcome_of
from dsh_user_interaction.durable import (
    DurableProvider,
    Outcome,
    Withdrawn,
    serve,
    stored_request,
    with_ask_id,
)
from dsh_user_interaction_conformance._stand_ins import Ignoring, Recording, settle
from dsh_user_interaction_conformance.strategies import requests, valid_answers

from .helpers import one_question, patience, run
from .test_durable import stores, until

#: What the human picks in these tests, and what the defaults pick.
HUMAN: AskUserQuestionAnswer = {"answers": [{"id": "go", "selected": ["Now"]}]}
DEFAULTS: AskUserQuestionAnswer = {
    "answers": [{"id": "go", "selected": ["Wait"]}],
    "defaulted": True,
}


def deploy(
    deadline: float | None = None,
    *,
    defaults: bool | None = None,
    signal: AbortSignal | None = None,
) -> AskUserQuestionRequest:
    """One single-select question, with *deadline* when given.

    Its default (``Wait``) comes with a deadline unless *defaults* says otherwise.
    """
    if defaults is None:
        defaults = deadline is not None
    question: dict[str, Any] = {
        "id": "go",
        "question": "Deploy?",
        "options": [{"label": "Wait"}, {"label": "Now"}],
    }
    if defaults:
        question["default"] = {"selected": ["Wait"]}
    request: dict[str, Any] = {"questions": [question]}
    if deadline is not None:
        request["deadline"] = deadline
    if signal is not None:
        request["signal"] = signal
    return cast("AskUserQuestionRequest", request)


class Agent:
    """An agent object of a harness: weakly referenceable, compared by identity."""


class Judging:
    """A gate that records each agent it judges and gives a fixed verdict, of any kind."""

    def __init__(self, verdict: Any = None) -> None:
        self.verdict = verdict
        self.seen: list[object] = []

    def judge(self, agent: object) -> Any:
        self.seen.append(agent)
        return self.verdict

    def __repr__(self) -> str:
        return "<Judging gate>"


def _live_timers() -> int:
    """How many timers the running loop holds that are not cancelled.

    asyncio's default loop keeps them in ``_scheduled`` (see ``test_abort``).
    """
    heap: list[asyncio.TimerHandle] = vars(asyncio.get_running_loop())["_scheduled"]
    return sum(1 for handle in heap if not handle.cancelled())


def _aborted() -> AbortSignal:
    """A signal that has already aborted, with the default reason."""
    controller = AbortController()
    controller.abort()
    return controller.signal


# ---------------------------------------------------------------------------
# LiveAgents
# ---------------------------------------------------------------------------


def test_live_agents_admit_a_root_and_refuse_an_owned_child() -> None:
    """GATE-2: a live root is admitted; a live child another live agent owns is delegated."""
    agents, root, child, grandchild = LiveAgents(), Agent(), Agent(), Agent()
    agents.register(root)
    agents.register(child, owner=root)
    agents.register(grandchild, owner=child)
    assert agents.judge(root) is None
    assert agents.judge(child) is ErrorCode.DELEGATED_CALLER
    assert agents.judge(grandchild) is ErrorCode.DELEGATED_CALLER


def test_live_agents_refuse_a_forgotten_or_unknown_agent() -> None:
    """GATE-2: an agent the registry never knew, or has forgotten, is CALLER_NOT_LIVE."""
    agents, root, stranger = LiveAgents(), Agent(), Agent()
    agents.register(root)
    assert agents.judge(stranger) is ErrorCode.CALLER_NOT_LIVE
    agents.forget(stranger)  # forgetting an unknown agent does nothing
    assert agents.judge(root) is None
    agents.forget(root)
    assert agents.judge(root) is ErrorCode.CALLER_NOT_LIVE
    agents.forget(root)  # twice: still nothing
    assert agents.judge(root) is ErrorCode.CALLER_NOT_LIVE


@pytest.mark.parametrize("how", ["owner forgotten", "owner never registered"])
def test_a_childs_owner_is_fixed_when_it_enters_the_registry(how: str) -> None:
    """The successor's rule: a child still live after its owner's entry ended is still a child.

    Its owner ending gives it no human of its own, so it is refused with
    DELEGATED_CALLER, as the successor refuses it (before, ``LiveAgents``
    admitted it as a root).
    """
    agents, owner, child = LiveAgents(), Agent(), Agent()
    if how != "owner never registered":
        agents.register(owner)
    agents.register(child, owner=owner)
    if how == "owner forgotten":
        agents.forget(owner)
        assert agents.judge(owner) is ErrorCode.CALLER_NOT_LIVE
    assert agents.judge(child) is ErrorCode.DELEGATED_CALLER


def test_a_child_session_resumed_as_a_new_root_may_ask() -> None:
    """Ownership at run time, not lineage: registered again as a root, it is a root."""
    agents, owner, child = LiveAgents(), Agent(), Agent()
    agents.register(owner)
    agents.register(child, owner=owner)
    assert agents.judge(child) is ErrorCode.DELEGATED_CALLER
    agents.register(child)
    assert agents.judge(child) is None


def test_no_agent_is_admitted_unless_an_agent_is_required() -> None:
    """GATE-1: a request without an agent is judged as ``None``; ``require_agent`` refuses it."""
    assert LiveAgents().judge(None) is None
    assert LiveAgents(require_agent=True).judge(None) is ErrorCode.CALLER_NOT_LIVE
    strict = LiveAgents(require_agent=True)
    root = Agent()
    strict.register(root)
    assert strict.judge(root) is None


def test_registering_none_is_refused() -> None:
    """``None`` means "no agent" to a gate, so it can never be registered as one."""
    with pytest.raises(ValueError, match="must not be None"):
        LiveAgents().register(None)


@pytest.mark.parametrize("make", [lambda: "-".join(["agent", "7"]), lambda: 10**20 + 7, tuple])
def test_agents_that_cannot_be_weakly_referenced_are_kept(make: Any) -> None:
    """REQ-AGENT-2: any object may be the agent; one without weak references is held strongly."""
    agent, owned = make(), Agent()
    with pytest.raises(TypeError):
        weakref.ref(agent)
    agents = LiveAgents()
    agents.register(agent)
    agents.register(owned, owner=agent)
    assert agents.judge(agent) is None
    assert agents.judge(owned) is ErrorCode.DELEGATED_CALLER
    agents.forget(agent)
    assert agents.judge(agent) is ErrorCode.CALLER_NOT_LIVE
    assert agents.judge(owned) is ErrorCode.DELEGATED_CALLER  # its owner was fixed


def test_a_garbage_collected_agent_is_not_live_and_never_kept_alive() -> None:
    """LiveAgents holds agents weakly: an agent that ended without ``forget`` is not live.

    The registry does not keep it alive, and the child it owned is still a
    child (its owner was fixed when it entered the registry).
    """
    agents, owner, child = LiveAgents(), Agent(), Agent()
    agents.register(owner)
    agents.register(child, owner=owner)
    assert agents.judge(child) is ErrorCode.DELEGATED_CALLER
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    assert gone() is None
    assert agents.judge(child) is ErrorCode.DELEGATED_CALLER


# ---------------------------------------------------------------------------
# The service with a gate
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ({"questions": [{"id": "q", "question": "Go?"}], "signal": _aborted()}, "ASK_ABORTED"),
        ({"questions": []}, "EMPTY_QUESTIONS"),
        ({"questions": [], "signal": _aborted()}, "ASK_ABORTED"),
    ],
    ids=["aborted", "empty", "aborted-and-empty"],
)
def test_the_gate_is_never_asked_about_a_request_stage_1_or_2_refuses(
    request_: dict[str, Any], code: str
) -> None:
    """GATE-1: stages 1 and 2 come first; a refusing gate would otherwise have won."""
    gate = Judging(ErrorCode.CALLER_NOT_LIVE)
    service = UserInteractionService(gate=gate)
    provider = Recording()
    service.register_provider(provider)
    outcome = run(settle(service.ask(cast("AskUserQuestionRequest", {**request_, "agent": 1}))))
    assert isinstance(outcome, UserInteractionError)
    assert outcome.code is ErrorCode(code)
    assert gate.seen == []
    assert provider.seen == []


@pytest.mark.parametrize(
    ("request_", "agent"),
    [
        ({"questions": [{"id": "", "question": "Go?"}], "agent": "ana"}, "ana"),
        ({"questions": 5, "agent": "ana"}, "ana"),
        ({"questions": [{"id": "q", "question": "Go?"}], "signal": "stop"}, None),
        ("not a request", None),
    ],
    ids=["bad-id", "questions-not-a-list", "bad-signal", "not-a-mapping"],
)
def test_the_gate_is_asked_before_bad_request(request_: object, agent: object) -> None:
    """GATE-1: the gate judges a malformed request's agent once, before BAD_REQUEST.

    A refusal wins over the malformed request; an admission leaves it to
    ``BAD_REQUEST``. A request that is not a mapping has no agent: ``None``.
    """
    for verdict, code in ((ErrorCode.DELEGATED_CALLER, ErrorCode.DELEGATED_CALLER), (None, None)):
        gate = Judging(verdict)
        service = UserInteractionService(gate=gate)
        outcome = run(settle(service.ask(cast("AskUserQuestionRequest", request_))))
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is (code or ErrorCode.BAD_REQUEST)
        assert gate.seen == [agent]


def test_live_agents_gate_a_service() -> None:
    """GATE-2: LiveAgents as a service's gate: a root is answered, a child gets the words."""
    agents, root, child = LiveAgents(), Agent(), Agent()
    agents.register(root)
    agents.register(child, owner=root)
    service = UserInteractionService(gate=agents)
    assert service.gate is agents
    service.register_provider(Recording(HUMAN))
    asked_by_root = cast("AskUserQuestionRequest", {**deploy(), "agent": root})
    assert run(service.ask(asked_by_root)) is HUMAN
    asked_by_child = cast("AskUserQuestionRequest", {**deploy(), "agent": child})
    outcome = run(settle(service.ask(asked_by_child)))
    assert isinstance(outcome, UserInteractionError)
    assert outcome.code is ErrorCode.DELEGATED_CALLER
    assert str(outcome) == MESSAGES[ErrorCode.DELEGATED_CALLER]
    assert str(outcome).endswith(
        "include the unresolved question or decision in the child agent's final result"
    )


@pytest.mark.parametrize("gate", [object(), 42, type("Judge", (), {"judge": 5})()])
def test_a_gate_without_a_judge_method_is_refused_at_construction(gate: object) -> None:
    """A gate is an object with a ``judge(agent)`` method; anything else is a TypeError at once."""
    with pytest.raises(TypeError, match=r"gate must have a judge\(agent\) method"):
        UserInteractionService(gate=gate)  # type: ignore[arg-type] # deliberately no gate


@pytest.mark.parametrize(
    "verdict", ["CALLER_NOT_LIVE", "DELEGATED_CALLER", ErrorCode.BAD_REQUEST, False, 0]
)
def test_a_verdict_must_be_the_error_code_member_itself(verdict: object) -> None:
    """GATE-3: a plain string equal to a code is no verdict: TypeError naming gate and verdict.

    ``ErrorCode`` is a ``StrEnum``, so ``"CALLER_NOT_LIVE"`` compares equal
    to the member; the service still refuses it, and the provider is never called.
    """
    gate = Judging(verdict)
    service = UserInteractionService(gate=gate)
    provider = Recording()
    service.register_provider(provider)
    outcome = run(settle(service.ask(one_question())))
    assert isinstance(outcome, TypeError)
    assert str(outcome) == (
        f"caller gate <Judging gate> returned {verdict!r}; expected None,"
        " ErrorCode.CALLER_NOT_LIVE or ErrorCode.DELEGATED_CALLER"
    )
    assert provider.seen == []


# ---------------------------------------------------------------------------
# Deadlines
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [None, HUMAN])
def test_the_timed_out_error_survives_pickling(answer: AskUserQuestionAnswer | None) -> None:
    """ERR-PICKLE-1, POL-TIMEOUT-1: message, code, answer and ``timed_out`` come back."""
    error = UserInteractionError.timed_out_error(answer=answer)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is UserInteractionError
    assert (str(back), back.code, back.answer, back.timed_out) == (
        TIMED_OUT_MESSAGE,
        ErrorCode.ASK_ABORTED,
        answer,
        True,
    )
    plain = pickle.loads(pickle.dumps(UserInteractionError.of(ErrorCode.ASK_ABORTED)))
    assert plain.timed_out is False


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("empty", [False, True])
def test_a_signal_already_timed_out_reads_as_a_timeout_at_stage_1(gated: bool, empty: bool) -> None:
    """POL-TIMEOUT-1, SVC-ORDER-1: a TimeoutError reason gives the timed-out words at once.

    With or without a gate (which runs stages 1 and 2 on their own), and
    before the empty-batch check; the provider is never asked.
    """
    signal = AbortSignal.abort(TimeoutError("the tool's budget ran out"))
    request: AskUserQuestionRequest = one_question(signal=signal)
    if empty:
        request = {"questions": [], "signal": signal}
    service = UserInteractionService(gate=LiveAgents() if gated else None)
    provider = Recording()
    service.register_provider(provider)
    outcome = run(settle(service.ask(request)))
    assert isinstance(outcome, UserInteractionError)
    assert (outcome.code, str(outcome), outcome.timed_out) == (
        ErrorCode.ASK_ABORTED,
        TIMED_OUT_MESSAGE,
        True,
    )
    assert provider.seen == []


class _NamedLikeATimeout(Exception):
    """Not a TimeoutError, whatever its name says."""


@pytest.mark.parametrize("when", ["before", "during"])
@pytest.mark.parametrize(
    "reason", [None, ValueError("stop"), "TimeoutError", _NamedLikeATimeout("TimeoutError")]
)
def test_any_other_abort_keeps_the_abort_message(when: str, reason: object) -> None:
    """POL-TIMEOUT-1, SVC-ORDER-1: only a TimeoutError reason is a timeout, not its name."""

    async def main() -> object:
        service = UserInteractionService()
        service.register_provider(Ignoring())
        controller = AbortController()
        if when == "before":
            controller.abort(reason)
        task = asyncio.ensure_future(settle(service.ask(deploy(signal=controller.signal))))
        await asyncio.sleep(0)
        controller.abort(reason)
        return await task

    outcome = run(main())
    assert isinstance(outcome, UserInteractionError)
    assert (outcome.code, str(outcome), outcome.timed_out) == (
        ErrorCode.ASK_ABORTED,
        MESSAGES[ErrorCode.ASK_ABORTED],
        False,
    )


def test_a_service_that_does_not_enforce_deadlines_waits_past_them() -> None:
    """POL-DEADLINE-1: ``enforce_deadlines=False`` (a relay's service) schedules nothing.

    The provider answers after the deadline passed, and that answer, not the
    defaults nor a timeout, is what the ask returns.
    """

    async def main() -> None:
        service = UserInteractionService(enforce_deadlines=False)
        provider = ScriptedProvider()
        service.register_provider(provider)
        timers = _live_timers()
        asking = asyncio.ensure_future(service.ask(deploy(time.time() + 0.01)))
        shown = await provider.next_ask()
        assert _live_timers() == timers
        await asyncio.sleep(0.03)
        assert not asking.done()
        shown.answer(HUMAN)
        assert await asking is HUMAN

    run(main())


@pytest.mark.parametrize("defaults", [True, False])
def test_a_deadline_already_past_still_asks_and_an_answer_without_suspending_wins(
    defaults: bool,
) -> None:
    """POL-DEADLINE-1: the provider is asked; an answer it gives at once is returned.

    What a durable provider holding the human's answer does after a restart:
    the answer stands, not the defaults nor a timeout.
    """
    service = UserInteractionService()
    provider = Recording(HUMAN)
    service.register_provider(provider)
    request = deploy(time.time() - 60, defaults=defaults)
    assert run(service.ask(request)) is HUMAN
    assert provider.seen == [request]
    assert service.pending_count == 0


@pytest.mark.parametrize("ending", ["answer", "dismiss", "abort", "dispose", "cancel", "fail"])
def test_an_ask_with_a_deadline_leaves_no_timer_behind(ending: str) -> None:
    """SVC-LEAK-1, POL-DEADLINE-1: the deadline's timer lives exactly as long as the ask.

    One timer more on the loop while the provider waits; none once the ask
    settled, however it did, and no record or signal listener either.
    """

    async def main() -> None:
        service = UserInteractionService()
        provider = ScriptedProvider()
        registration = service.register_provider(provider)
        controller = AbortController()
        timers = _live_timers()
        asking = asyncio.ensure_future(
            settle(service.ask(deploy(time.time() + 3600, signal=controller.signal)))
        )
        shown = await provider.next_ask()
        assert _live_timers() == timers + 1
        assert service.pending_count == 1
        if ending == "answer":
            shown.answer(HUMAN)
        elif ending == "dismiss":
            shown.dismiss()
        elif ending == "abort":
            controller.abort()
        elif ending == "dispose":
            registration.dispose()
        elif ending == "cancel":
            asking.cancel()
        else:
            shown.reject(RuntimeError("the UI crashed"))
        await asyncio.gather(asking, return_exceptions=True)
        assert _live_timers() == timers
        assert service.pending_count == 0
        assert controller.signal.listener_count == 0

    run(main())


# ---------------------------------------------------------------------------
# The words of a broken deadline or default
# ---------------------------------------------------------------------------

_OFFERED = [{"label": "Wait"}, {"label": "Now"}]


def _question(**fields: object) -> dict[str, object]:
    return {"id": "go", "question": "Deploy?", "options": _OFFERED, **fields}


_BROKEN: dict[str, tuple[dict[str, object], str]] = {
    "deadline-text": (
        {"questions": [_question()], "deadline": "in an hour"},
        "request.deadline must be a finite number (seconds since the epoch), got str",
    ),
    "deadline-bool": (
        {"questions": [_question()], "deadline": True},
        "request.deadline must be a finite number (seconds since the epoch), got bool",
    ),
    "deadline-nan": (
        {"questions": [_question()], "deadline": math.nan},
        "request.deadline must be a finite number (seconds since the epoch), got float",
    ),
    "deadline-infinite": (
        {"questions": [_question()], "deadline": -math.inf},
        "request.deadline must be a finite number (seconds since the epoch), got float",
    ),
    "label-not-offered": (
        {"questions": [_question(default={"selected": ["Later"]})], "deadline": 1.0},
        'question "go" (questions[0]): default is not an answer the question accepts:'
        ' default.selected label "Later" is not one of the question\'s options',
    ),
    "default-with-id": (
        {"questions": [_question(default={"id": "go", "selected": ["Wait"]})], "deadline": 1.0},
        'question "go" (questions[0]): default is not an answer the question accepts:'
        " default has unknown keys: id (a default has no id of its own)",
    ),
    "default-not-a-mapping": (
        {"questions": [_question(default=["Wait"])], "deadline": 1.0},
        'question "go" (questions[0]): default must be a mapping, got list',
    ),
    "two-on-single-select": (
        {"questions": [_question(default={"selected": ["Wait", "Now"]})], "deadline": 1.0},
        'question "go" (questions[0]): default is not an answer the question accepts:'
        " default.selected has 2 labels on a single-select question",
    ),
    "partial-defaults": (
        {
            "questions": [
                _question(default={"selected": ["Wait"]}),
                {"id": "why", "question": "Why?"},
                {"id": "who", "question": "Who?", "default": {"selected": [], "custom": "me"}},
            ],
            "deadline": 1.0,
        },
        'question "why" (questions[1]): default is required when any question has a default',
    ),
    "defaults-without-deadline": (
        {"questions": [_question(default={"selected": ["Wait"]})]},
        "request.deadline is required when any question has a default",
    ),
}


@pytest.mark.parametrize("case", list(_BROKEN))
def test_a_broken_deadline_or_default_is_worded_exactly(case: str) -> None:
    """REQ-DEADLINE-1, REQ-DEFAULT-1, REQ-DEFAULT-2: the BAD_REQUEST names the field and the rule.

    The words are the service's and ``request_violations``'s alike.
    """
    request, message = _BROKEN[case]
    service = UserInteractionService()
    service.register_provider(Recording())
    outcome = run(settle(service.ask(cast("AskUserQuestionRequest", request))))
    assert isinstance(outcome, UserInteractionError)
    assert (outcome.code, str(outcome)) == (ErrorCode.BAD_REQUEST, message)
    assert request_violations(request)[0].describe() == message


@given(
    st.data(),
    st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53), 2**53),
)
def test_defaults_made_of_valid_answers_are_well_formed(
    data: st.DataObject, deadline: float
) -> None:
    """REQ-DEFAULT-1, REQ-DEFAULT-2, POL-DEFAULT-2: any valid answer, without ids, is a default.

    With a finite deadline the request keeps every rule, and its defaults
    answer is those items, in question order, marked ``defaulted``.
    """
    request = data.draw(requests())
    answer = data.draw(valid_answers(request))
    questions = [
        {**question, "default": {key: value for key, value in item.items() if key != "id"}}
        for question, item in zip(request["questions"], answer["answers"], strict=True)
    ]
    with_defaults = cast(
        "AskUserQuestionRequest", {**request, "questions": questions, "deadline": deadline}
    )
    assert request_violations(with_defaults) == []
    assert deadline_of(with_defaults) == float(deadline)
    assert default_answer(with_defaults) == {
        "answers": [dict(item) for item in answer["answers"]],
        "defaulted": True,
    }


# ---------------------------------------------------------------------------
# Observers
# ---------------------------------------------------------------------------


class Loud:
    """A callable observer object: reported by its class's name."""

    def __call__(self, event: AskEvent) -> None:
        raise LookupError(event.kind)


def test_an_observer_that_raises_is_reported_and_skipped() -> None:
    """OBS-SAFE-1: the loop's exception handler hears of it, by name; the ask is unchanged.

    The observers after it still hear every event.
    """
    reports: list[dict[str, Any]] = []
    heard: list[str] = []

    def noisy(event: AskEvent) -> None:
        raise RuntimeError(f"noisy on {event.kind}")

    async def main() -> AskUserQuestionAnswer:
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: reports.append(context)
        )
        loud = Loud()
        service = UserInteractionService(observers=[noisy, loud])
        service.observe(lambda event: heard.append(event.kind))
        service.register_provider(Recording(HUMAN))
        return await service.ask(deploy())

    assert run(main()) is HUMAN
    assert heard == ["pending", "settled"]
    assert [report["message"] for report in reports] == [
        f"ask observer {noisy.__qualname__} raised on a pending event; it was skipped",
        "ask observer Loud raised on a pending event; it was skipped",
        f"ask observer {noisy.__qualname__} raised on a settled event; it was skipped",
        "ask observer Loud raised on a settled event; it was skipped",
    ]
    first = reports[0]
    assert first["observer"] is noisy
    assert isinstance(first["exception"], RuntimeError)
    assert str(first["exception"]) == "noisy on pending"
    assert first["event"].kind == "pending"
    assert reports[2]["event"].answer is HUMAN


def test_a_slow_async_observer_is_reported_and_cancelled_without_holding_the_ask() -> None:
    """OBS-SAFE-1: still running after ``observer_timeout``, it is reported and cancelled.

    The ask returns at once; an async observer that raises is reported too.
    The observers' timeout is a tenth of a second's patience (half a second on
    the idle machine), so that the ask, a few loop iterations, ends well before
    it even on a busy machine.
    """
    timeout = patience(0.05)
    reports: list[dict[str, Any]] = []
    cancelled: list[str] = []

    async def slow(event: AskEvent) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(event.kind)
            raise

    async def broken(event: AskEvent) -> None:
        await asyncio.sleep(0)
        raise KeyError(event.kind)

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: reports.append(context)
        )
        service = UserInteractionService(observers=[slow, broken], observer_timeout=timeout)
        service.register_provider(Recording(HUMAN))
        assert await service.ask(deploy()) is HUMAN
        assert (reports, cancelled) == ([], [])  # the ask did not wait for them
        while len(reports) < 4:  # noqa: ASYNC110 - the bound of run() catches a hang
            await asyncio.sleep(0.01)

    run(main())
    assert sorted(cancelled) == ["pending", "settled"]
    messages = sorted(report["message"] for report in reports)
    assert messages == sorted(
        [
            f"ask observer {broken.__qualname__} raised on a pending event; it was skipped",
            f"ask observer {broken.__qualname__} raised on a settled event; it was skipped",
            f"ask observer {slow.__qualname__} was still running after {timeout:g} s on a "
            "pending event; it was skipped",
            f"ask observer {slow.__qualname__} was still running after {timeout:g} s on a "
            "settled event; it was skipped",
        ]
    )
    slow_ones = [report for report in reports if report["observer"] is slow]
    assert all(isinstance(report["exception"], TimeoutError) for report in slow_ones)


def test_an_observer_removed_hears_nothing_more() -> None:
    """OBS-EVENT-1: the function ``observe()`` returns removes that observer, once or twice."""
    heard: list[tuple[str, str]] = []
    service = UserInteractionService()
    service.register_provider(Recording(HUMAN))
    remove = service.observe(lambda event: heard.append(("removed", event.kind)))
    service.observe(lambda event: heard.append(("kept", event.kind)))
    run(service.ask(deploy()))
    assert heard == [
        ("removed", "pending"),
        ("kept", "pending"),
        ("removed", "settled"),
        ("kept", "settled"),
    ]
    heard.clear()
    remove()
    remove()
    run(service.ask(deploy()))
    assert heard == [("kept", "pending"), ("kept", "settled")]


def test_an_observer_must_be_callable() -> None:
    """``observe()`` and ``observers=`` refuse what cannot be called, naming its type."""
    with pytest.raises(TypeError, match="an observer must be callable, got int"):
        UserInteractionService().observe(42)  # type: ignore[arg-type] # deliberately not callable
    with pytest.raises(TypeError, match="an observer must be callable, got str"):
        UserInteractionService(observers=["print"])  # type: ignore[list-item] # deliberately


@pytest.mark.parametrize("seconds", [0, -1, 0.0, math.nan, True, "10"])
def test_observer_timeout_must_be_a_positive_number(seconds: object) -> None:
    """OBS-SAFE-1: the bound of an async observer is a positive number of seconds."""
    with pytest.raises(ValueError, match="observer_timeout must be a positive number of seconds"):
        UserInteractionService(observer_timeout=seconds)  # type: ignore[arg-type] # deliberately


@pytest.mark.parametrize(
    "case", ["aborted", "empty", "gate", "bad-request", "bad-intent", "no-provider"]
)
def test_an_ask_refused_by_a_check_is_never_reported(case: str) -> None:
    """OBS-EVENT-1: an ask a check refused never became pending: no event at all."""
    heard: list[AskEvent] = []
    service = UserInteractionService(
        gate=Judging(ErrorCode.CALLER_NOT_LIVE if case == "gate" else None),
        observers=[heard.append],
    )
    if case != "no-provider":
        service.register_provider(Recording())
    request: dict[str, Any] = {"questions": [{"id": "q", "question": "Go?"}]}
    if case == "aborted":
        request["signal"] = _aborted()
    elif case == "empty":
        request["questions"] = []
    elif case == "bad-request":
        request["questions"] = [{"id": "q", "question": ""}]
    elif case == "bad-intent":
        request["questions"] = [
            {**_question(), "intent": {"kind": "plan-review", "approve": "Go"}, "detail": "plan"}
        ]
    outcome = run(settle(service.ask(cast("AskUserQuestionRequest", request))))
    assert isinstance(outcome, UserInteractionError)
    assert heard == []


def test_events_carry_the_ask_id_and_the_outcome() -> None:
    """OBS-EVENT-1: an event names a durable ask by its text ``askId``; its outcome is named."""
    heard: list[AskEvent] = []
    service = UserInteractionService(observers=[heard.append])
    service.register_provider(Ignoring())
    request = cast("AskUserQuestionRequest", {**deploy(time.time() - 1), "askId": "call-9"})
    assert run(service.ask(request)) == DEFAULTS
    assert [(e.kind, e.ask_id, e.outcome, e.answer) for e in heard] == [
        ("pending", "call-9", None, None),
        ("settled", "call-9", "defaulted", DEFAULTS),
    ]
    assert all(event.request is request for event in heard)
    heard.clear()
    untold = cast("AskUserQuestionRequest", {**deploy(time.time() - 1, defaults=False), "askId": 9})
    outcome = run(settle(service.ask(untold)))
    assert isinstance(outcome, UserInteractionError)
    assert [(e.kind, e.ask_id, e.outcome, e.error) for e in heard] == [
        ("pending", None, None, None),
        ("settled", None, "timed_out", outcome),
    ]


@pytest.mark.parametrize(
    ("answer", "error", "outcome"),
    [
        ({"answers": [], "defaulted": True}, None, "defaulted"),
        ({"answers": [], "defaulted": "yes"}, None, "answered"),
        (None, UserInteractionError("broken", ErrorCode.BAD_ANSWER), "failed"),
        (None, UserInteractionError.of(ErrorCode.ASK_CANCELLED), "dismissed"),
        (None, UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED), "disposed"),
        (None, UserInteractionError.of(ErrorCode.ASK_ABORTED), "aborted"),
        (None, UserInteractionError.timed_out_error(answer=HUMAN), "timed_out"),
        (None, RuntimeError("crash"), "failed"),
    ],
)
def test_outcomes_are_named_from_the_answer_or_the_error(
    answer: AskUserQuestionAnswer | None, error: BaseException | None, outcome: str
) -> None:
    """OBS-EVENT-1: only ``defaulted: True`` is a defaulted answer; a timeout outranks its code."""
    assert outcome_of(answer, error) == outcome


# ---------------------------------------------------------------------------
# Durable asks with a deadline
# ---------------------------------------------------------------------------


def test_a_durable_deadline_settles_the_defaults_as_the_agents_record(tmp_path: Path) -> None:
    """DUR-DEADLINE-1, POL-DEADLINE-1: the agent's side writes the defaults; the relay never does.

    The relay shows the ask and keeps showing it past the deadline (its
    service does not enforce it); the agent's provider writes ``answered``
    with the defaults via its own ``via``, without a principal, and the relay's
    UI is withdrawn with that outcome. The deadline is a tenth of a second's
    patience away (a second on the idle machine, more on a busy one), time
    enough for the ask to be written and shown first.
    """

    async def main() -> None:
        async with stores(tmp_path, 2) as (agent_store, ui_store):
            ui = ScriptedProvider()
            errors: list[BaseException] = []
            relay = asyncio.ensure_future(
                serve(
                    ui_store,
                    ui,
                    via="desk",
                    principal="ana",
                    on_error=lambda _r, e: errors.append(e),
                )
            )
            try:
                service = UserInteractionService()
                service.register_provider(DurableProvider(agent_store, via="agent"))
                asking = asyncio.ensure_future(
                    service.ask(with_ask_id(deploy(time.time() + patience(0.1)), "late"))
                )
                shown = await ui.next_ask()
                assert shown.request.get("askId") == "late"
                assert await asking == DEFAULTS
                record = await ui_store.get("late")
                assert record is not None
                assert (record.state, record.answer, record.principal, record.via) == (
                    "answered",
                    DEFAULTS,
                    None,
                    "agent",
                )
                await until(lambda: _gone(ui), "withdrawn from the relay's UI")
                signal = shown.request.get("signal")
                assert signal is not None
                assert isinstance(signal.reason, Withdrawn)
                assert signal.reason.outcome == record.outcome
                assert errors == []
            finally:
                relay.cancel()
                await asyncio.gather(relay, return_exceptions=True)

    run(main())


def test_a_human_answer_through_the_relay_before_the_deadline_wins(tmp_path: Path) -> None:
    """DUR-DEADLINE-1, POL-DEFAULT-1: the human's answer is the ask's, and stays the record.

    Once the deadline has passed, nothing rewrites it with the defaults or
    an expiry: the agent's timer went with its ask. The deadline is a tenth
    of a second's patience away, time enough for the human to answer first.
    """

    async def main() -> None:
        async with stores(tmp_path, 2) as (agent_store, ui_store):
            ui = ScriptedProvider()
            relay = asyncio.ensure_future(serve(ui_store, ui, via="desk", principal="ana"))
            try:
                service = UserInteractionService()
                service.register_provider(DurableProvider(agent_store, via="agent"))
                deadline = time.time() + patience(0.1)
                asking = asyncio.ensure_future(service.ask(with_ask_id(deploy(deadline), "quick")))
                (await ui.next_ask()).answer(HUMAN)
                assert await asking == HUMAN
                written = await ui_store.get("quick")
                await asyncio.sleep(max(0.0, deadline - time.time()) + 0.02)
                record = await ui_store.get("quick")
                assert record is not None
                assert record == written
                assert (record.state, record.answer, record.principal, record.via) == (
                    "answered",
                    HUMAN,
                    "ana",
                    "desk",
                )
            finally:
                relay.cancel()
                await asyncio.gather(relay, return_exceptions=True)

    run(main())


def test_an_expired_deadline_is_a_timeout_again_when_asked_again(tmp_path: Path) -> None:
    """DUR-DEADLINE-1: without defaults the ask is ``expired``; a re-ask is the timed-out error.

    The re-ask is the provider's own answer from the record (asked directly,
    and through a service with a later deadline, so that no timer of the
    service's makes the error). An ask expired without a deadline, by an
    expiry policy, stays a plain abort.
    """

    def timed_out(outcome: object) -> bool:
        assert isinstance(outcome, UserInteractionError)
        return (outcome.code, str(outcome), outcome.timed_out) == (
            ErrorCode.ASK_ABORTED,
            TIMED_OUT_MESSAGE,
            True,
        )

    async def main() -> None:
        async with stores(tmp_path, 2) as (agent_store, ui_store):
            provider = DurableProvider(agent_store, via="agent")
            service = UserInteractionService()
            service.register_provider(provider)
            request = with_ask_id(deploy(time.time() + 0.1, defaults=False), "gone")
            assert timed_out(await settle(service.ask(request)))
            record = await ui_store.get("gone")
            assert record is not None
            assert (record.state, record.via, record.answer) == ("expired", "agent", None)
            assert timed_out(await settle(provider.ask(request)))
            later = with_ask_id(deploy(time.time() + 60, defaults=False), "gone")
            assert timed_out(await settle(service.ask(later)))
            assert await ui_store.get("gone") == record
            # The contrast: an expiry policy's expired ask, which had no deadline.
            plain = with_ask_id(deploy(), "old")
            waiting = asyncio.ensure_future(settle(service.ask(plain)))
            await until(lambda: _has("old", ui_store), "the ask is kept")
            await ui_store.settle("old", Outcome.expired(via="janitor"), settled_at=time.time())
            for outcome in (await waiting, await settle(service.ask(plain))):
                assert isinstance(outcome, UserInteractionError)
                assert (str(outcome), outcome.timed_out) == (MESSAGES[ErrorCode.ASK_ABORTED], False)

    run(main())


@pytest.mark.parametrize("with_defaults", [True, False])
def test_a_deadline_past_before_the_ask_is_written_still_ends_it_in_the_store(
    tmp_path: Path, with_defaults: bool
) -> None:
    """DUR-DEADLINE-1: a deadline that lands while the ask is being written still ends it there.

    The service interrupts at once (the deadline has passed), while the store
    is writing the ask in its worker thread: the write finishes, and the ask
    is settled as its deadline says, never left pending for UIs to show.
    """

    async def main() -> None:
        async with stores(tmp_path, 1) as (store,):
            service = UserInteractionService()
            service.register_provider(DurableProvider(store, via="agent"))
            request = with_ask_id(deploy(time.time() - 1, defaults=with_defaults), "late")
            outcome = await settle(service.ask(request))
            record = await store.get("late")
            assert record is not None
            if with_defaults:
                assert outcome == DEFAULTS
                assert (record.state, record.answer, record.via) == ("answered", DEFAULTS, "agent")
            else:
                assert isinstance(outcome, UserInteractionError)
                assert outcome.timed_out
                assert record.state == "expired"

    run(main())


def test_a_human_answer_kept_in_the_store_is_the_agents_on_a_re_ask_after_the_deadline(
    tmp_path: Path,
) -> None:
    """POL-DEFAULT-1, DUR-AGREE-1: the human's stored answer is the agent's, never a default.

    The human answered in time while the agent was away; the agent asks
    again after the deadline. The durable provider keeps its own time
    (DUR-AGREE-2), so the service does not interrupt it: the agent receives
    the human's answer, the outcome the store holds. Before, the service
    interrupted it at once and the ask timed out, the answer only on the
    error, contradicting the store.
    """

    async def main() -> None:
        async with stores(tmp_path, 1) as (store,):
            request = with_ask_id(deploy(time.time() - 1), "h")
            await store.put("h", stored_request(request), asked_at=time.time() - 5)
            await store.settle("h", Outcome.answered(HUMAN, via="desk"), settled_at=time.time() - 2)
            service = UserInteractionService()
            service.register_provider(DurableProvider(store, via="agent"))
            outcome = await settle(service.ask(request))
            assert outcome == HUMAN
            record = await store.get("h")
            assert record is not None
            assert (record.state, record.answer, record.via) == ("answered", HUMAN, "desk")

    run(main())


def test_a_gate_never_reads_a_request_that_cannot_be_read() -> None:
    """GATE-1: a request whose agent cannot be read is a BAD_REQUEST; the gate is not asked."""

    class Unreadable(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            if key == "agent":
                raise RuntimeError("unreadable")
            return super().get(key, default)

    gate = Judging(ErrorCode.CALLER_NOT_LIVE)
    service = UserInteractionService(gate=gate)
    service.register_provider(Recording())
    request = Unreadable(questions=[{"id": "q", "question": "Go?"}])
    outcome = run(settle(service.ask(cast("AskUserQuestionRequest", request))))
    assert isinstance(outcome, UserInteractionError)
    assert outcome.code is ErrorCode.BAD_REQUEST
    assert not gate.seen


def test_a_deadline_too_large_for_a_float_is_worded_as_any_bad_deadline() -> None:
    """REQ-DEADLINE-1: an integer no float can hold is not a finite number, and says so."""
    request = {"questions": [{"id": "q", "question": "Go?"}], "deadline": 10**400}
    assert deadline_of(request) is None
    found = request_violations(request)
    assert [v.requirement for v in found] == ["REQ-DEADLINE-1"]
    assert found[0].describe() == (
        "request.deadline must be a finite number (seconds since the epoch), got int"
    )


def test_live_agents_know_text_and_numbers_by_value_and_forget_the_collected() -> None:
    """REQ-AGENT-2: an equal name built elsewhere is the same agent; a collected agent is forgotten."""
    agents = LiveAgents()
    agents.register("lead")
    agents.register("helper", owner="".join(["le", "ad"]))
    assert agents.judge("".join(["le", "ad"])) is None
    assert agents.judge("helper") is ErrorCode.DELEGATED_CALLER
    assert agents.judge(1) is ErrorCode.CALLER_NOT_LIVE  # another type, not the same agent
    short_lived = Agent()
    agents.register(short_lived)
    assert repr(agents) == "<LiveAgents 3 live>"
    del short_lived
    gc.collect()
    assert repr(agents) == "<LiveAgents 2 live>"


async def _gone(ui: ScriptedProvider) -> bool:
    return not ui.pending


async def _has(ask_id: str, store: Any) -> bool:
    return await store.get(ask_id) is not None


# ---------------------------------------------------------------------------
# The words a UI shows
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "line"),
    [
        (3725, "1:02:05 left to answer"),
        (3724.01, "1:02:05 left to answer"),
        (36000, "10:00:00 left to answer"),
        (3600, "1:00:00 left to answer"),
        (3599.5, "1:00:00 left to answer"),
        (3599, "59:59 left to answer"),
        (60, "1:00 left to answer"),
        (59.001, "1:00 left to answer"),
        (0.001, "0:01 left to answer"),
        (0, "Time is up"),
        (-0.5, "Time is up"),
        (-86400, "Time is up"),
    ],
)
def test_the_countdown_rounds_up_and_shows_hours(left: float, line: str) -> None:
    """POL-DEADLINE-1: the time left, rounded up to the second; ``Time is up`` at and past zero."""
    request = deploy(1_000_000.0, defaults=False)
    assert countdown_text(request, now=1_000_000.0 - left) == line
    with_defaults = deploy(1_000_000.0)
    expected = line if line == "Time is up" else f"{line}; then the defaults are used"
    assert countdown_text(with_defaults, now=1_000_000.0 - left) == expected


@given(st.floats(min_value=1e-9, max_value=10_000_000, allow_nan=False))
def test_the_countdown_clock_reads_back_as_the_seconds_left_rounded_up(left: float) -> None:
    """The clock of ``countdown_text`` is ``[h:]mm:ss`` of the seconds left, rounded up."""
    line = countdown_text(deploy(0.0, defaults=False), now=-left)
    assert line is not None
    clock, _, rest = line.partition(" ")
    assert rest == "left to answer"
    parts = [int(part) for part in clock.split(":")]
    assert all(0 <= part < 60 for part in parts[1:])
    assert all(len(part) == 2 for part in clock.split(":")[1:])
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + part
    assert seconds == math.ceil(left)
    assert (len(parts) == 3) == (seconds >= 3600)


@pytest.mark.parametrize("deadline", [None, True, "soon", math.nan, math.inf])
def test_without_a_usable_deadline_there_is_no_countdown(deadline: object) -> None:
    """A request without a deadline, or with a broken one, has no time left to show."""
    request: dict[str, Any] = {"questions": [{"id": "q", "question": "Go?"}]}
    if deadline is not None:
        request["deadline"] = deadline
    typed = cast("AskUserQuestionRequest", request)
    assert deadline_of(typed) is None
    assert remaining(typed, now=0.0) is None
    assert countdown_text(typed, now=0.0) is None
    assert default_answer(typed) is None


def test_remaining_never_goes_below_zero() -> None:
    """The seconds left are counted from *now* and stop at zero."""
    request = deploy(100)
    assert remaining(request, now=40.5) == 59.5
    assert remaining(request, now=100) == 0.0
    assert remaining(request, now=1e9) == 0.0


@pytest.mark.parametrize(
    ("default", "text"),
    [
        ({"selected": ["Wait"]}, "Default: Wait"),
        ({"selected": ["tests", "docs"]}, "Default: tests, docs"),
        ({"selected": ["a", "b", "c"]}, "Default: a, b, c"),
        ({"selected": [], "custom": "later"}, 'Default: "later"'),
        ({"selected": ["tests"], "custom": "lint"}, 'Default: tests and "lint"'),
        ({"selected": ["a", "b", "c"], "custom": "d"}, 'Default: a, b, c, and "d"'),
        ({"selected": []}, "Default: no answer (skipped)"),
    ],
)
def test_default_text_names_labels_and_quotes_custom_text(
    default: dict[str, object], text: str
) -> None:
    """How every UI names a question's default: labels, then the custom text quoted."""
    assert default_text({"id": "q", "question": "Go?", "default": default}) == text


@pytest.mark.parametrize("question", [{}, {"default": None}, {"default": ["Wait"]}])
def test_a_question_without_a_default_mapping_has_no_default_text(
    question: dict[str, object],
) -> None:
    """No default (or one that is not a mapping): no line to show."""
    assert default_text(question) is None


class _SaysTheDeadlinePassed:
    """A provider that keeps the ask's time itself and says its deadline passed (a round)."""

    def __init__(self, *, late: object | None = None, deadline_passed: bool = True) -> None:
        self.late = late
        self.deadline_passed = deadline_passed

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise UserInteractionError.timed_out_error(
            answer=self.late, deadline_passed=self.deadline_passed
        )


@pytest.mark.parametrize("has_defaults", [True, False])
@pytest.mark.parametrize("deadline_passed", [True, False])
@pytest.mark.parametrize("late", [None, {"answers": [{"id": "q", "selected": ["B"]}]}])
def test_a_providers_word_that_the_deadline_passed_answers_with_the_defaults(
    has_defaults: bool, deadline_passed: bool, late: object | None
) -> None:
    """POL-DEFAULT-1 by the provider's clock: its ``deadline_passed`` is the service's deadline.

    The request's own deadline is still ahead (a round computed it afresh):
    the defaults answer only when the provider says the deadline passed, no
    late answer is kept on its error, and every question has a default;
    otherwise its timed-out error stands, with the late answer on it.
    """
    question: dict[str, Any] = {
        "id": "q",
        "question": "Which?",
        "options": [{"label": "A"}, {"label": "B"}],
    }
    if has_defaults:
        question["default"] = {"selected": ["A"]}
    request: Any = {"questions": [question], "deadline": time.time() + 600}
    service = UserInteractionService()
    service.register_provider(_SaysTheDeadlinePassed(late=late, deadline_passed=deadline_passed))
    if has_defaults and deadline_passed and late is None:
        answer = run(service.ask(request))
        assert answer == {"answers": [{"id": "q", "selected": ["A"]}], "defaulted": True}
        return
    with pytest.raises(UserInteractionError) as raised:
        run(service.ask(request))
    assert raised.value.timed_out
    assert raised.value.answer == late
    assert raised.value.deadline_passed == deadline_passed  # the provider's own error
    assert pickle.loads(pickle.dumps(raised.value)).deadline_passed == deadline_passed
