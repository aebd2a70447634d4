"""Claude Agent SDK adapter, both ways: ``pip install 'dsh-user-interaction[claude]'``.

This module only re-exports. ``can_use_tool_for`` answers Claude's
``AskUserQuestion`` and ``ExitPlanMode`` through any provider of the seam;
``question_server`` offers the seam's own tools to Claude as native
tools; ``defer_hooks`` and ``answer_deferred`` stop a run at a
question and resume it once a durable ask is answered.
``dsh_user_interaction.extra.claude.testing`` plays Claude Code offline.
"""

import importlib as _importlib

try:
    _importlib.import_module("claude_agent_sdk")
    _importlib.import_module("mcp.server")
except ImportError as _missing:  # tested in a subprocess, with the SDK hidden
    _msg = (
        "dsh_user_interaction.extra.claude needs the Claude Agent SDK:"
        " pip install 'dsh-user-interaction[claude]'"
    )
    raise ImportError(_msg, name=_missing.name) from _missing

from ._defer import DEFER_REASON as DEFER_REASON
from ._defer import answer_deferred as answer_deferred
from ._defer import answer_hooks as answer_hooks
from ._defer import defer_hooks as defer_hooks
from ._defer import defer_questions as defer_questions
from ._defer import hook_output_of as hook_output_of
from ._permission import DEFAULTED_NOTE as DEFAULTED_NOTE
from ._permission import EXIT_PLAN_MODE as EXIT_PLAN_MODE
from ._permission import answer_question as answer_question
from ._permission import can_use_tool_for as can_use_tool_for
from ._permission import deny_of as deny_of
from ._permission import review_exit_plan as review_exit_plan
from ._questions import ASK_USER_QUESTION as ASK_USER_QUESTION
from ._questions import HEADER_MAX as HEADER_MAX
from ._questions import JOIN as JOIN
from ._questions import OPTIONS_MAX as OPTIONS_MAX
from ._questions import OPTIONS_MIN as OPTIONS_MIN
from ._questions import QUESTIONS_MAX as QUESTIONS_MAX
from ._questions import ClaudeAnswers as ClaudeAnswers
from ._questions import ClaudeOption as ClaudeOption
from ._questions import ClaudeQuestion as ClaudeQuestion
from ._questions import answers_of as answers_of
from ._questions import question_id as question_id
from ._questions import request_of as request_of
from ._server import TOOL_USE_ID_META as TOOL_USE_ID_META
from ._server import question_server as question_server
from ._server import question_tools as question_tools
from ._server import tool_name as tool_name

__all__ = [
    "ASK_USER_QUESTION",
    "DEFAULTED_NOTE",
    "DEFER_REASON",
    "EXIT_PLAN_MODE",
    "HEADER_MAX",
    "JOIN",
    "OPTIONS_MAX",
    "OPTIONS_MIN",
    "QUESTIONS_MAX",
    "TOOL_USE_ID_META",
    "ClaudeAnswers",
    "ClaudeOption",
    "ClaudeQuestion",
    "answer_deferred",
    "answer_hooks",
    "answer_question",
    "answers_of",
    "can_use_tool_for",
    "defer_hooks",
    "defer_questions",
    "deny_of",
    "hook_output_of",
    "question_id",
    "question_server",
    "question_tools",
    "request_of",
    "review_exit_plan",
    "tool_name",
]
