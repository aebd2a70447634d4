"""``ask_user_question`` and ``exit_plan_mode`` as LangChain tools, for any agent or ``ToolNode``.

Design notes:

* The schema the model sees is the package's own, byte for byte
  (``ASK_USER_QUESTION_TOOL``, ``EXIT_PLAN_MODE_TOOL``): the tool's
  ``args_schema`` is that JSON Schema, so LangChain passes the model's
  arguments through unchanged and the package's tool functions read them,
  with their exact texts.
* The tool call's id is the ask's ``askId``, so a durable service asked again
  for the same call (a node run again after a restart) shows it once.
* An error result (``Error: ...``) becomes a ``ToolMessage`` with
  ``status="error"`` and that very text.
* A LangGraph pause raised while asking (``InterruptProvider``) must reach
  the graph, not the model: the tool functions turn every failure into an
  error result, so the pause is caught on its way through the service and
  raised again once the tool function has returned.
"""

from __future__ import annotations

import asyncio
import copy
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, cast

from langchain_core.tools import BaseTool, ToolException
from langchain_core.tools.base import ToolExceptionHandlerOutput
from langgraph.errors import GraphBubbleUp
from pydantic import SkipValidation
from typing_extensions import override

from ... import AskingService, AskUserQuestionAnswer, AskUserQuestionRequest
from ...plan_review import EXIT_PLAN_MODE_TOOL, exit_plan_mode
from ...tool import ASK_USER_QUESTION_TOOL, ToolResult, ask_user_question

__all__ = ["AskUserQuestionTool", "ExitPlanModeTool"]

_ARGUMENTS: Final = "arguments"
_CALL_ID: Final = "tool_call_id"


class _Bubbling:
    """A service that remembers a LangGraph pause passing through it."""

    __slots__ = ("pause", "service")

    def __init__(self, service: AskingService) -> None:
        self.service = service
        self.pause: GraphBubbleUp | None = None

    async def ask(self, request: AskUserQuestionRequest[Any], /) -> AskUserQuestionAnswer:
        try:
            return await self.service.ask(request)
        except GraphBubbleUp as pause:
            self.pause = pause
            raise


async def _run_tool(
    service: AskingService,
    call: Callable[[AskingService], Awaitable[ToolResult]],
) -> str:
    bubbling = _Bubbling(service)
    result = await call(bubbling)
    if bubbling.pause is not None:
        raise bubbling.pause
    if result.is_error:
        raise ToolException(result.text)
    return result.text


def _in_new_loop(name: str, run: Coroutine[object, object, str]) -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run)
    run.close()
    msg = f"{name} is asynchronous; run it with ainvoke() inside a running event loop"
    raise RuntimeError(msg)


class _PackageTool(BaseTool):
    """The common part: pass the raw arguments and the call's id to ``_arun``."""

    #: The service the asks go through; any ``AskingService``.
    service: SkipValidation[AskingService]
    #: Seconds the human is given, or ``None`` for no deadline.
    answer_within: float | None = None
    #: Error results become ``status="error"`` messages with their exact text.
    handle_tool_error: bool | str | Callable[[ToolException], ToolExceptionHandlerOutput] | None = (
        True
    )

    # Note: LangChain hands a tool its call's id only through this hook (or an
    # injected argument, which a JSON Schema ``args_schema`` cannot declare), so
    # the raw arguments and the id pass through it, unparsed.
    @override
    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        return (), {_ARGUMENTS: tool_input, _CALL_ID: tool_call_id}

    @override
    def _run(self, *args: Any, **kwargs: Any) -> str:
        """Run the tool in a fresh event loop (a synchronous graph); see ``_arun``."""
        return _in_new_loop(self.name, self._arun(*args, **kwargs))

    @override
    async def _arun(self, *args: Any, **kwargs: Any) -> str:
        """Run the tool on ``arguments`` for the call ``tool_call_id``."""
        arguments: object = kwargs[_ARGUMENTS]
        call_id = cast("str | None", kwargs[_CALL_ID]) or None
        return await _run_tool(
            self.service, lambda service: self._call(service, arguments, call_id)
        )

    @abstractmethod
    async def _call(
        self, service: AskingService, arguments: object, call_id: str | None
    ) -> ToolResult:
        """Run the package's tool function through *service*."""


class AskUserQuestionTool(_PackageTool):
    """The ``ask_user_question`` tool for LangChain and LangGraph, asking through ``service``.

    Its schema is ``ASK_USER_QUESTION_TOOL``'s; its result is the text
    ``ask_user_question`` gives, as a ``ToolMessage`` (``status="error"`` for
    an ``Error:`` line). The tool call's id is the ask's ``askId``. With an
    ``InterruptProvider`` behind ``service``, the run pauses and resumes
    through LangGraph. Synchronous use runs a fresh event loop, and raises
    :class:`RuntimeError` inside a running one.

    >>> from dsh_user_interaction import UserInteractionService
    >>> tool = AskUserQuestionTool(service=UserInteractionService())
    >>> tool.name, sorted(tool.tool_call_schema["properties"])
    ('ask_user_question', ['questions'])
    """

    name: str = ASK_USER_QUESTION_TOOL["name"]
    description: str = ASK_USER_QUESTION_TOOL["description"]
    args_schema: SkipValidation[Any] = copy.deepcopy(ASK_USER_QUESTION_TOOL["input_schema"])
    #: With ``answer_within``: each question's recommended first option is its default.
    recommended_defaults: bool = False

    @override
    async def _call(
        self, service: AskingService, arguments: object, call_id: str | None
    ) -> ToolResult:
        return await ask_user_question(
            service,
            arguments,
            ask_id=call_id,
            answer_within=self.answer_within,
            recommended_defaults=self.recommended_defaults,
        )


class ExitPlanModeTool(_PackageTool):
    """The ``exit_plan_mode`` tool for LangChain and LangGraph, reviewing through ``service``.

    Its schema is ``EXIT_PLAN_MODE_TOOL``'s; only an approval is a normal
    result, every other outcome a ``status="error"`` message with the text
    ``exit_plan_mode`` gives. The tool call's id is the ask's ``askId``.

    >>> from dsh_user_interaction import UserInteractionService
    >>> ExitPlanModeTool(service=UserInteractionService()).tool_call_schema["required"]
    ['plan']
    """

    name: str = EXIT_PLAN_MODE_TOOL["name"]
    description: str = EXIT_PLAN_MODE_TOOL["description"]
    args_schema: SkipValidation[Any] = copy.deepcopy(EXIT_PLAN_MODE_TOOL["input_schema"])

    @override
    async def _call(
        self, service: AskingService, arguments: object, call_id: str | None
    ) -> ToolResult:
        return await exit_plan_mode(
            service, arguments, ask_id=call_id, answer_within=self.answer_within
        )
