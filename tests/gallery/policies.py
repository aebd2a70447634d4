"""Deliberately broken services for the policies of spec section 8, each breaking one rule.

Each declares every policy (``with_policies``), so that the suite's policy
checks run on it, and each wraps the reference service, breaking one thing
plausibly.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, cast

from dsh_user_interaction import (
    AskEvent,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    CallerGate,
    ErrorCode,
    Registration,
    UserInteractionError,
    UserInteractionProvider,
    UserInteractionService,
    check_request,
    default_answer,
    request_violations,
)
from dsh_user_interaction._checks import bad_answer
from dsh_user_interaction._observers import outcome_of
from dsh_user_interaction._violations import Violation
from dsh_user_interaction_conformance import with_policies

_ALL = ("gate", "deadline", "observers")


class _Policied:
    """Delegates to a reference service with every policy; subclasses break one thing."""

    def __init__(self, *, gate: CallerGate | None = None) -> None:
        self.gate = gate
        self.inner = UserInteractionService(gate=self._inner_gate(gate))

    def _inner_gate(self, gate: CallerGate | None) -> CallerGate | None:
        return gate

    def register_provider(self, provider: UserInteractionProvider) -> Registration:
        return self.inner.register_provider(provider)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.inner.ask(request)

    def observe(self, observer: Callable[[AskEvent], object]) -> Callable[[], None]:
        return self.inner.observe(observer)


def _judge(gate: CallerGate | None, request: object) -> None:
    """The gate's stage, done right, for the services that do it at the wrong time."""
    if gate is None:
        return
    agent = cast("dict[str, object]", request).get("agent") if isinstance(request, dict) else None
    verdict: object = gate.judge(agent)
    if verdict is None:
        return
    if type(verdict) is ErrorCode and verdict in {
        ErrorCode.CALLER_NOT_LIVE,
        ErrorCode.DELEGATED_CALLER,
    }:
        raise UserInteractionError.of(verdict)
    msg = f"bad verdict {verdict!r}"
    raise TypeError(msg)


@with_policies(*_ALL)
class GateAfterBadRequest(_Policied):
    """Checks the whole request before it asks the gate, so a malformed one hides a refusal."""

    def _inner_gate(self, gate: CallerGate | None) -> None:
        return None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        check_request(request)
        _judge(self.gate, request)
        return await self.inner.ask(request)


@with_policies(*_ALL)
class GateFirst(_Policied):
    """Asks the gate before anything else, even for an aborted or empty ask."""

    def _inner_gate(self, gate: CallerGate | None) -> None:
        return None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        _judge(self.gate, request)
        return await self.inner.ask(request)


class _AdmitsDelegated:
    def __init__(self, gate: CallerGate) -> None:
        self.gate = gate

    def judge(self, agent: object) -> Any:
        verdict = self.gate.judge(agent)
        return None if verdict is ErrorCode.DELEGATED_CALLER else verdict


@with_policies(*_ALL)
class AdmitsDelegated(_Policied):
    """Lets a live child that another agent owns ask, judging by lineage, not ownership."""

    def _inner_gate(self, gate: CallerGate | None) -> CallerGate | None:
        return None if gate is None else _AdmitsDelegated(gate)


class _FailsOpen:
    def __init__(self, gate: CallerGate) -> None:
        self.gate = gate

    def judge(self, agent: object) -> Any:
        try:
            return self.gate.judge(agent)
        except Exception:  # noqa: BLE001 - the defect: a broken gate admits everyone
            return None


@with_policies(*_ALL)
class GateFailsOpen(_Policied):
    """Admits the caller when the gate itself fails."""

    def _inner_gate(self, gate: CallerGate | None) -> CallerGate | None:
        return None if gate is None else _FailsOpen(gate)


@with_policies(*_ALL)
class TimeoutReadsAsAbort(_Policied):
    """Reports a timeout with the abort's words, as the original does."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            return await self.inner.ask(request)
        except UserInteractionError as error:
            if error.timed_out:
                raise UserInteractionError.of(ErrorCode.ASK_ABORTED, answer=error.answer) from None
            raise


@with_policies(*_ALL)
class IgnoresDeadline(_Policied):
    """Waits for the human however long it takes: the deadline is only shown."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        fields = cast("dict[str, Any]", request)
        if "deadline" not in fields:
            return await self.inner.ask(request)
        plain: dict[str, Any] = {k: v for k, v in fields.items() if k != "deadline"}
        plain["questions"] = [
            {k: v for k, v in q.items() if k != "default"}
            for q in cast("list[dict[str, object]]", plain.get("questions", []))
        ]
        return await self.inner.ask(cast("AskUserQuestionRequest", plain))


@with_policies(*_ALL)
class UnmarkedDefaults(_Policied):
    """Answers with the defaults without saying that they are defaults."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        answer = await self.inner.ask(request)
        if answer.get("defaulted"):
            return {"answers": answer["answers"]}
        return answer


@with_policies(*_ALL)
class DefaultsOnSignalTimeout(_Policied):
    """Answers with the defaults when the signal's timeout ends the ask, not only the deadline."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            return await self.inner.ask(request)
        except UserInteractionError as error:
            defaults = default_answer(request) if error.timed_out else None
            if defaults is None:
                raise
            return defaults


@with_policies(*_ALL)
class DefaultsOverHuman(_Policied):
    """Answers with the defaults even when the human's late answer is kept on the error."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            return await self.inner.ask(request)
        except UserInteractionError as error:
            defaults = default_answer(request) if error.timed_out and error.answer else None
            if defaults is None:
                raise
            return defaults


@with_policies(*_ALL)
class AcceptsPartialDefaults(_Policied):
    """Ignores defaults it cannot use (some questions without one, or no deadline)."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        found = request_violations(request)
        if not found or found[0].requirement != "REQ-DEFAULT-2":
            return await self.inner.ask(request)
        plain: dict[str, Any] = dict(request)
        plain["questions"] = [
            {k: v for k, v in q.items() if k != "default"} for q in plain["questions"]
        ]
        return await self.inner.ask(cast("AskUserQuestionRequest", plain))


class _RefusesMarked:
    def __init__(self, provider: UserInteractionProvider) -> None:
        self.provider = provider

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        answer = await self.provider.ask(request)
        if "defaulted" in answer:
            found = Violation("ANS-KEYS-1", "MUST", None, "answer has keys besides answers")
            raise bad_answer(answer, [found])
        return answer


@with_policies(*_ALL)
class RefusesReplayedDefaults(_Policied):
    """Refuses every marked answer, the replay of an ask's own defaults after a restart too."""

    def register_provider(self, provider: UserInteractionProvider) -> Registration:
        return self.inner.register_provider(_RefusesMarked(provider))


def _unawaited(result: object) -> None:
    """Close a coroutine an observer returned, which these services never run."""
    if inspect.iscoroutine(result):
        result.close()


class _Observing(_Policied):
    """Calls its own observers, at its own points; subclasses break how."""

    def __init__(self, *, gate: CallerGate | None = None) -> None:
        super().__init__(gate=gate)
        self.observers: list[Callable[[AskEvent], object]] = []

    def observe(self, observer: Callable[[AskEvent], object]) -> Callable[[], None]:
        self.observers.append(observer)
        return lambda: self.observers.remove(observer)

    async def tell(self, event: AskEvent) -> None:
        for observer in self.observers:
            try:
                _unawaited(observer(event))
            except Exception:  # noqa: BLE001 - skipped, as the spec says
                continue

    def outcome(self, answer: AskUserQuestionAnswer | None, error: BaseException | None) -> Any:
        return outcome_of(answer, error)

    #: Whether an ask is checked before it is reported as pending, as the spec says.
    checks_first = True

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        if self.checks_first:
            check_request(request)
        await self.tell(AskEvent("pending", request))
        try:
            answer = await self.inner.ask(request)
        except BaseException as error:
            await self.tell(
                AskEvent("settled", request, None, self.outcome(None, error), error=error)
            )
            raise
        await self.tell(AskEvent("settled", request, None, self.outcome(answer, None), answer))
        return answer


@with_policies(*_ALL)
class ObserverBreaksAsk(_Observing):
    """Lets an observer's exception end the ask."""

    async def tell(self, event: AskEvent) -> None:
        for observer in self.observers:
            _unawaited(observer(event))


@with_policies(*_ALL)
class AwaitsObservers(_Observing):
    """Awaits each asynchronous observer before it goes on with the ask."""

    async def tell(self, event: AskEvent) -> None:
        for observer in self.observers:
            try:
                result = observer(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:  # noqa: BLE001 - skipped, at least
                continue


@with_policies(*_ALL)
class ReportsRefusedAsks(_Observing):
    """Reports an ask as pending before its checks, so refused asks are reported too."""

    checks_first = False


@with_policies(*_ALL)
class TimeoutReportedAsAbort(_Observing):
    """Tells observers that a timed-out ask was aborted."""

    def outcome(self, answer: AskUserQuestionAnswer | None, error: BaseException | None) -> Any:
        found = outcome_of(answer, error)
        return "aborted" if found == "timed_out" else found


#: Each broken service, and the requirement the suite must fail it on.
BROKEN_POLICY_SERVICES: dict[str, tuple[Callable[..., Any], str]] = {
    "gate-after-bad-request": (GateAfterBadRequest, "GATE-1"),
    "gate-first": (GateFirst, "GATE-1"),
    "admits-delegated": (AdmitsDelegated, "GATE-2"),
    "gate-fails-open": (GateFailsOpen, "GATE-3"),
    "timeout-reads-as-abort": (TimeoutReadsAsAbort, "POL-TIMEOUT-1"),
    "ignores-deadline": (IgnoresDeadline, "POL-DEADLINE-1"),
    "unmarked-defaults": (UnmarkedDefaults, "POL-DEFAULT-2"),
    "defaults-on-signal-timeout": (DefaultsOnSignalTimeout, "POL-DEFAULT-1"),
    "defaults-over-human": (DefaultsOverHuman, "POL-DEFAULT-1"),
    "accepts-partial-defaults": (AcceptsPartialDefaults, "REQ-DEFAULT-2"),
    "refuses-replayed-defaults": (RefusesReplayedDefaults, "POL-DEFAULT-3"),
    "observer-breaks-ask": (ObserverBreaksAsk, "OBS-SAFE-1"),
    "awaits-observers": (AwaitsObservers, "OBS-SAFE-1"),
    "reports-refused-asks": (ReportsRefusedAsks, "OBS-EVENT-1"),
    "timeout-reported-as-abort": (TimeoutReportedAsAbort, "OBS-EVENT-1"),
}
