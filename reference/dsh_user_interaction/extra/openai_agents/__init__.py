"""The OpenAI Agents SDK adapter: ``pip install 'dsh-user-interaction[openai_agents]'``.

This module only re-exports. :func:`ask_user_question_tool` and
:func:`exit_plan_mode_tool` are our tools as the SDK's ``FunctionTool``,
asking through any service while the run waits; :class:`ApprovalQuestions`
puts them behind the SDK's approval, so that a run pauses, survives a
restart in its ``RunState``, and resumes with the human's answer; its
``review`` shows the SDK's approval of any other tool as one of our
questions, through any provider.
"""

import importlib as _importlib

try:
    _importlib.import_module("agents")
except ImportError as _missing:
    _msg = (
        "dsh_user_interaction.extra.openai_agents needs the OpenAI Agents SDK:"
        " pip install 'dsh-user-interaction[openai_agents]'"
    )
    raise ImportError(_msg, name="agents") from _missing

from ._approval import UNDECIDED_CODES as UNDECIDED_CODES
from ._approval import ApprovalQuestions as ApprovalQuestions
from ._approval import Decision as Decision
from ._approval import InterruptionError as InterruptionError
from ._approval import PendingQuestion as PendingQuestion
from ._review import APPROVE as APPROVE
from ._review import REJECT as REJECT
from ._review import REVIEW_ABORTED as REVIEW_ABORTED
from ._review import REVIEW_DISMISSED as REVIEW_DISMISSED
from ._review import REVIEW_ID as REVIEW_ID
from ._review import REVIEW_REJECTED as REVIEW_REJECTED
from ._review import REVIEW_TIMED_OUT as REVIEW_TIMED_OUT
from ._review import Verdict as Verdict
from ._review import review_outcome as review_outcome
from ._review import review_question as review_question
from ._tools import ASK_USER_QUESTION as ASK_USER_QUESTION
from ._tools import EXIT_PLAN_MODE as EXIT_PLAN_MODE
from ._tools import ask_user_question_tool as ask_user_question_tool
from ._tools import exit_plan_mode_tool as exit_plan_mode_tool

__all__ = [
    "APPROVE",
    "ASK_USER_QUESTION",
    "EXIT_PLAN_MODE",
    "REJECT",
    "REVIEW_ABORTED",
    "REVIEW_DISMISSED",
    "REVIEW_ID",
    "REVIEW_REJECTED",
    "REVIEW_TIMED_OUT",
    "UNDECIDED_CODES",
    "ApprovalQuestions",
    "Decision",
    "InterruptionError",
    "PendingQuestion",
    "Verdict",
    "ask_user_question_tool",
    "exit_plan_mode_tool",
    "review_outcome",
    "review_question",
]
