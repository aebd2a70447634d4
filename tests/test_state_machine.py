"""A state machine over register, dispose, stale dispose, ask, answer, abort, cancel and dismiss."""

from __future__ import annotations

import asyncio
import unittest
from dataclasses import dataclass, field
from typing import Any, cast

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    ErrorCode,
    Registration,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    answer_of,
    answer_selected,
)
from dsh_user_interaction_conformance._stand_ins import settle


@dataclass
class Ask:
    """One ask in flight, and what the model says it must end with."""

    number: int
    task: asyncio.Task[object]
    controller: AbortController
    provider: ScriptedProvider | None
    expected: object = None  # None while pending; then an ErrorCode, "cancelled" or an answer
    answer: AskUserQuestionAnswer | None = field(default=None)


@settings(max_examples=60, stateful_step_count=25, deadline=None)
class ServiceMachine(RuleBasedStateMachine):
    """Every interleaving of the service's operations keeps the spec's outcomes."""

    registrations = Bundle("registrations")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.service = UserInteractionService()
        self.active: tuple[Registration, ScriptedProvider] | None = None
        self.asks: list[Ask] = []
        self.numbers = 0

    def step(self) -> None:
        for _ in range(3):
            self.loop.run_until_complete(asyncio.sleep(0))

    def pending(self) -> list[Ask]:
        return [ask for ask in self.asks if ask.expected is None]

    @rule(target=registrations)
    def register(self) -> Registration | None:
        provider = ScriptedProvider()
        try:
            registration = self.service.register_provider(provider)
        except UserInteractionError as error:
            assert self.active is not None
            assert error.code is ErrorCode.DUPLICATE_PROVIDER
            return None
        assert self.active is None
        self.active = (registration, provider)
        return registration

    @rule(registration=registrations)
    def dispose(self, registration: Registration | None) -> None:
        if registration is None:
            return
        if self.active is not None and self.active[0] is registration:
            for ask in self.pending():
                if ask.provider is self.active[1]:
                    ask.expected = ErrorCode.PROVIDER_DISPOSED
            self.active = None
        registration.dispose()  # stale or repeated disposals must change nothing
        self.step()

    @rule()
    def ask(self) -> None:
        self.numbers += 1
        controller = AbortController()
        request = {
            "questions": [
                {"id": f"q{self.numbers}", "question": "?", "options": [{"label": "ok"}]}
            ],
            "signal": controller.signal,
        }
        task = self.loop.create_task(settle(self.service.ask(request)))  # type: ignore[arg-type]
        provider = self.active[1] if self.active else None
        ask = Ask(self.numbers, task, controller, provider)
        if provider is None:
            ask.expected = ErrorCode.NO_PROVIDER
        self.asks.append(ask)
        self.step()

    @precondition(lambda self: any(a.provider for a in self.pending()))
    @rule(data=st.data(), how=st.sampled_from(["answer", "dismiss"]))
    def human(self, data: st.DataObject, how: str) -> None:
        ask = data.draw(st.sampled_from([a for a in self.pending() if a.provider]))
        assert ask.provider is not None
        (pending,) = [
            p for p in ask.provider.pending if p.request["questions"][0]["id"] == f"q{ask.number}"
        ]
        if how == "answer":
            ask.answer = answer_of(answer_selected(f"q{ask.number}", "ok"))
            pending.answer(ask.answer)
            ask.expected = ask.answer
        else:
            pending.dismiss()
            ask.expected = ErrorCode.ASK_CANCELLED
        self.step()

    @precondition(lambda self: bool(self.asks))
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        ask = data.draw(st.sampled_from(self.asks))
        if ask.expected is None:
            ask.expected = ErrorCode.ASK_ABORTED
        ask.controller.abort()
        self.step()

    @precondition(lambda self: bool(self.asks))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        ask = data.draw(st.sampled_from(self.asks))
        if ask.expected is None:
            ask.expected = "cancelled"
        ask.task.cancel()
        self.step()

    @invariant()
    def outcomes_match_the_model(self) -> None:
        for ask in self.asks:
            if ask.expected is None:
                assert not ask.task.done()
                continue
            assert ask.task.done()
            outcome = ask.task.result()
            if isinstance(ask.expected, ErrorCode):
                assert isinstance(outcome, UserInteractionError), (ask, outcome)
                assert outcome.code is ask.expected
            elif ask.expected == "cancelled":
                assert isinstance(outcome, asyncio.CancelledError), (ask, outcome)
            else:
                assert outcome is ask.expected
            assert ask.controller.signal.listener_count == 0

    @invariant()
    def nothing_leaks(self) -> None:
        assert self.service.pending_count == len(self.pending())
        if self.active is not None:
            assert len(self.active[1].pending) == len(
                [a for a in self.pending() if a.provider is self.active[1]]
            )

    def teardown(self) -> None:
        for ask in self.asks:
            ask.task.cancel()
        self.step()
        self.loop.close()


# Hypothesis types the generated TestCase class loosely.
TestServiceMachine: type[unittest.TestCase] = cast("Any", ServiceMachine).TestCase
