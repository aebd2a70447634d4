"""One ``assert_type`` check per public entry point: type-checked by mypy and pyright, never run.

The third-party service and provider at the end are typed only by the
package's protocols, as an implementer outside this project would write them.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal, Self, assert_type

from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortSignal,
    AskingService,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    ProviderRegistration,
    Registration,
    RequestViolation,
    UserInteractionError,
    UserInteractionProvider,
    UserInteractionSeam,
    UserInteractionService,
    Violation,
    answer_custom,
    answer_of,
    answer_selected,
    answer_skipped,
    answer_violations,
    check_request,
    is_blank,
    option_of,
    question_of,
    request_violations,
)
from dsh_user_interaction.plan_review import (
    EXIT_PLAN_MODE_TOOL,
    PlanReviewVerdict,
    exit_plan_mode,
    has_plan_heading,
    plan_review_question,
    plan_review_verdict,
    review_plan,
)
from dsh_user_interaction.tool import (
    ToolDefinition,
    ToolResult,
    anthropic_tool,
    ask_user_question,
    openai_tool,
)
from dsh_user_interaction_conformance import (
    Action,
    Capabilities,
    Report,
    Requirement,
    RequirementResult,
    Subject,
    TypeText,
    expected_answer,
    reference_service,
    reference_subject,
    requirements,
    run_suite,
    with_capabilities,
)
from dsh_user_interaction_conformance.strategies import (
    InvalidAnswer,
    InvalidRequest,
    actions,
    agents,
    custom_texts,
    hostile_text,
    invalid_answers,
    invalid_requests,
    labels,
    options,
    questions,
    requests,
    valid_answers,
)

REQUEST: AskUserQuestionRequest = {"questions": [{"id": "q", "question": "Go?"}]}


async def service_and_errors() -> None:
    service = UserInteractionService()
    registration = service.register_provider(ThirdPartyProvider())
    assert_type(registration, Registration)
    assert_type(registration.active, bool)
    assert_type(await service.ask(REQUEST), AskUserQuestionAnswer)
    error = UserInteractionError.of(ErrorCode.ASK_ABORTED, answer={"answers": []})
    assert_type(error.code, ErrorCode)
    assert_type(error.answer, object | None)
    assert_type(request_violations(REQUEST), list[RequestViolation])
    assert_type(request_violations(REQUEST)[0].describe_for_model(), str)


async def builders() -> None:
    assert_type(option_of("A", "d"), AskUserQuestionOption)
    built = question_of("q", "Go?", ["Yes", option_of("No")])
    assert_type(built, AskUserQuestionItem)
    # Built apart from the request literal, and still no annotation needed.
    request: AskUserQuestionRequest = {"questions": [built]}
    del request


async def tools(service: AskingService) -> None:
    result = await ask_user_question(service, '{"questions": []}', agent=object())
    assert_type(result, ToolResult)
    assert_type(result.text, str)
    assert_type(result.is_error, bool)
    assert_type(await exit_plan_mode(service, {"plan": "# P"}), ToolResult)
    assert_type(await review_plan(service, "# P", signal=AbortSignal.abort()), ToolResult)
    assert_type(EXIT_PLAN_MODE_TOOL, ToolDefinition)
    verdict = plan_review_verdict({"answers": []})
    assert_type(verdict, PlanReviewVerdict)
    assert_type(verdict.approved, bool)
    assert_type(verdict.feedback, str | None)
    assert_type(verdict.result(), ToolResult)


def the_rest() -> None:
    assert_type(openai_tool(EXIT_PLAN_MODE_TOOL), dict[str, Any])
    assert_type(anthropic_tool(), dict[str, Any])
    assert_type(has_plan_heading("# P"), bool)
    assert_type(plan_review_question("# P"), AskUserQuestionItem)
    assert_type(check_request(REQUEST), None)
    assert_type(answer_violations(REQUEST, {}), list[Violation])
    assert_type(answer_of(answer_selected("q", "A"), answer_skipped("r")), AskUserQuestionAnswer)
    assert_type(answer_custom("q", "text"), AskUserQuestionAnswerItem)
    assert_type(is_blank(" "), bool)
    assert_type(AbortSignal.any([AbortSignal.abort()]), AbortSignal)
    assert_type(expected_answer(REQUEST, [TypeText("x")]), AskUserQuestionAnswer)
    assert_type(requirements(), dict[str, Requirement])
    assert_type(reference_service(), UserInteractionService)
    assert_type(reference_subject(), Subject)
    assert_type(
        with_capabilities(Capabilities(can_skip=False))(reference_subject), Callable[[], Subject]
    )


def strategies() -> None:
    assert_type(requests(), st.SearchStrategy[AskUserQuestionRequest])
    assert_type(questions(), st.SearchStrategy[AskUserQuestionItem])
    assert_type(options(), st.SearchStrategy[list[AskUserQuestionOption]])
    assert_type(labels(), st.SearchStrategy[str])
    assert_type(hostile_text(), st.SearchStrategy[str])
    assert_type(custom_texts(), st.SearchStrategy[str])
    assert_type(agents(), st.SearchStrategy[object])
    assert_type(invalid_requests(), st.SearchStrategy[InvalidRequest])
    assert_type(valid_answers(REQUEST), st.SearchStrategy[AskUserQuestionAnswer])
    assert_type(invalid_answers(REQUEST), st.SearchStrategy[InvalidAnswer])
    assert_type(actions(REQUEST), st.SearchStrategy[tuple[Action, ...]])
    assert_type(TypeText("notes"), TypeText)


# A third-party service and provider, typed only by the package's protocols.


class ThirdPartyRegistration:
    def __call__(self) -> None:
        self.dispose()

    def dispose(self) -> None:
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.dispose()


class ThirdPartyService:
    def __init__(self) -> None:
        self.provider: UserInteractionProvider | None = None

    def register_provider(self, provider: UserInteractionProvider) -> ThirdPartyRegistration:
        self.provider = provider
        return ThirdPartyRegistration()

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        assert self.provider is not None
        return await self.provider.ask(request)


class ThirdPartyProvider:
    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}


def third_party_subject() -> Subject:
    return Subject(provider=ThirdPartyProvider(), driver=reference_subject().driver)


def protocols() -> None:
    seam: UserInteractionSeam = ThirdPartyService()
    registration: ProviderRegistration = seam.register_provider(ThirdPartyProvider())
    provider: UserInteractionProvider = ThirdPartyProvider()
    asking: AskingService = UserInteractionService()
    del registration, provider, asking
    report = run_suite(
        service_factory=ThirdPartyService,
        subject_factory=third_party_subject,
        capabilities=Capabilities(),
    )
    assert_type(report, Report)
    assert_type(report.ok, bool)
    assert_type(report.results, list[RequirementResult])


def rejected() -> None:
    # A provider may not mutate what it receives (PRV-MUTATE-1), in the types too.
    question = question_of("q", "Go?")
    question["question"] = "Changed?"  # type: ignore[typeddict-readonly-mutated]
    question.setdefault("header", "x")  # type: ignore[typeddict-readonly-mutated]


async def terminal() -> None:
    # The terminal provider is a provider; its subject factory is a suite factory.
    from dsh_user_interaction.extra.terminal import TerminalProvider, visible
    from dsh_user_interaction.extra.terminal.testing import TerminalDriver, terminal_subject

    provider: UserInteractionProvider = TerminalProvider()
    assert_type(await provider.ask({"questions": []}), AskUserQuestionAnswer)
    assert_type(visible("\x1b"), str)
    subject = terminal_subject()
    assert_type(subject, Subject)
    assert_type(run_suite(subject_factory=terminal_subject).ok, bool)
    driver: TerminalDriver = TerminalDriver.__new__(TerminalDriver)
    assert_type(await driver.is_shown({"questions": []}), bool)


async def mcp_bridge() -> None:
    # The MCP provider is a provider; the callback fits the SDK's client session;
    # the subject factories are suite factories.
    from mcp.client.session import ClientSession, ElicitationFnT
    from mcp.server.mcpserver import Context

    from dsh_user_interaction.extra.mcp import (
        ElicitationCancelled,
        Form,
        McpElicitationProvider,
        elicitation_callback,
        form_of,
        tool_call,
    )
    from dsh_user_interaction.extra.mcp.testing import (
        ElicitationDriver,
        make_subject,
        mcp_subject,
    )

    provider: UserInteractionProvider = McpElicitationProvider()
    assert_type(await provider.ask({"questions": []}), AskUserQuestionAnswer)
    callback: ElicitationFnT = elicitation_callback(provider)
    assert_type(ClientSession(dispatcher=None, elicitation_callback=callback), ClientSession)
    assert_type(form_of({"questions": []}), Form)
    with tool_call(Context()):
        pass
    error = ElicitationCancelled.of_action("decline")
    assert_type(error.action, Literal["decline", "cancel"])
    caught: UserInteractionError = error
    assert_type(caught.code, ErrorCode)
    assert_type(await make_subject(), Subject)
    assert_type(run_suite(subject_factory=mcp_subject).ok, bool)
    driver: ElicitationDriver = ElicitationDriver.__new__(ElicitationDriver)
    assert_type(await driver.is_shown({"questions": []}), bool)
