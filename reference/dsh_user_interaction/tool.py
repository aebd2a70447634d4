"""The model-facing tool ``ask_user_question``: definition, adapters and runner."""

from ._tool import ASK_USER_QUESTION_TOOL as ASK_USER_QUESTION_TOOL
from ._tool import DEFAULT_MAX_ARGUMENT_BYTES as DEFAULT_MAX_ARGUMENT_BYTES
from ._tool import AskingService as AskingService
from ._tool import ToolDefinition as ToolDefinition
from ._tool import ToolResult as ToolResult
from ._tool import anthropic_tool as anthropic_tool
from ._tool import ask_user_question as ask_user_question
from ._tool import openai_tool as openai_tool

__all__ = [
    "ASK_USER_QUESTION_TOOL",
    "DEFAULT_MAX_ARGUMENT_BYTES",
    "AskingService",
    "ToolDefinition",
    "ToolResult",
    "anthropic_tool",
    "ask_user_question",
    "openai_tool",
]
