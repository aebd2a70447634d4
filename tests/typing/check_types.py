"""Static type checks: type-checked by mypy and pyright, never run."""

from __future__ import annotations

from typing import assert_type

from dsh_user_interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    PendingAsk,
    Registration,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionProvider,
    UserInteractionService,
    ValidatingProvider,
    Violation,
    answer_selected,
    answer_violations,
)


async def typed_usage() -> None:
    service = UserInteractionService()
    provider: UserInteractionProvider = ScriptedProvider()
    assert_type(service.register_provider(provider), Registration)
    request: AskUserQuestionRequest = {"questions": [{"id": "q", "question": "Go?"}]}
    assert_type(await service.ask(request), AskUserQuestionAnswer)
    assert_type(ValidatingProvider(provider), ValidatingProvider)
    assert_type(answer_selected("q", "Yes"), AskUserQuestionAnswerItem)
    assert_type(answer_violations(request, {}), list[Violation])
    assert_type(UserInteractionError.of(ErrorCode.NO_PROVIDER).code, ErrorCode)
    assert_type(AbortController().signal, AbortSignal)
    assert_type(AbortSignal.any([AbortSignal.abort()]), AbortSignal)
    assert_type(await ScriptedProvider().next_ask(), PendingAsk)


class Agent:
    name: str = "planner"


class MyProvider:
    """A provider annotated with its harness's own agent type."""

    async def ask(self, request: AskUserQuestionRequest[Agent]) -> AskUserQuestionAnswer:
        agent = request.get("agent")
        assert_type(agent, Agent | None)
        return {"answers": []}


def read_any(plain: AskUserQuestionRequest) -> None:
    assert_type(plain.get("agent"), object | None)


async def agent_usage() -> None:
    # A request typed with the harness's agent is a plain request too (read-only key).
    typed: AskUserQuestionRequest[Agent] = {
        "questions": [{"id": "q", "question": "Go?"}],
        "agent": Agent(),
    }
    read_any(typed)
    service = UserInteractionService()
    service.register_provider(MyProvider())
    assert_type(await service.ask(typed), AskUserQuestionAnswer)
    # Any object is an agent.
    await service.ask({"questions": [{"id": "q", "question": "Go?"}], "agent": 42})


def rejected_usage() -> None:
    # The agent is read-only: a provider cannot swap it.
    request: AskUserQuestionRequest[Agent] = {"questions": [], "agent": Agent()}
    request["agent"] = Agent()  # type: ignore[typeddict-readonly-mutated]

    # A request needs questions; a provider must be async.
    bad: AskUserQuestionRequest = {"agent": "x"}  # type: ignore[typeddict-item]
    del bad
