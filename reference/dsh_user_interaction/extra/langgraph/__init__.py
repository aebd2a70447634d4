"""LangGraph and LangChain, both ways: ``pip install 'dsh-user-interaction[langgraph]'``.

This module only re-exports. :class:`InterruptProvider` makes an ``ask()``
inside a graph pause the run through LangGraph's ``interrupt()``;
:func:`answer_interrupts` and :func:`resume_command` show a paused run's
interrupts (asks of ours and ``HumanInTheLoopMiddleware`` reviews) through
any service and build the ``Command`` that resumes it;
:class:`AskUserQuestionTool` and :class:`ExitPlanModeTool` offer the
package's tools to a LangChain model.
"""

import importlib as _importlib

try:
    _importlib.import_module("langgraph.types")
    _importlib.import_module("langchain.agents")
except ImportError as _missing:  # tested with each hidden
    _msg = (
        "dsh_user_interaction.extra.langgraph needs LangGraph and LangChain:"
        " pip install 'dsh-user-interaction[langgraph]'"
    )
    raise ImportError(_msg, name=_missing.name) from _missing

from ._hitl import DECISION_LABELS as DECISION_LABELS
from ._hitl import Unanswered as Unanswered
from ._hitl import answer_hitl as answer_hitl
from ._hitl import hitl_decisions as hitl_decisions
from ._hitl import hitl_questions as hitl_questions
from ._hitl import tool_approval_review as tool_approval_review
from ._interrupt import INTERRUPT_KIND as INTERRUPT_KIND
from ._interrupt import AskInterrupt as AskInterrupt
from ._interrupt import InterruptProvider as InterruptProvider
from ._interrupt import ResumeOutcome as ResumeOutcome
from ._interrupt import ResumeValue as ResumeValue
from ._interrupt import answer_of_resume as answer_of_resume
from ._interrupt import ask_id_for as ask_id_for
from ._interrupt import resume_value as resume_value
from ._resume import InterruptNotPending as InterruptNotPending
from ._resume import PausedGraph as PausedGraph
from ._resume import answer_interrupts as answer_interrupts
from ._resume import checked_resume as checked_resume
from ._resume import resume_command as resume_command
from ._tools import AskUserQuestionTool as AskUserQuestionTool
from ._tools import ExitPlanModeTool as ExitPlanModeTool

__all__ = [
    "DECISION_LABELS",
    "INTERRUPT_KIND",
    "AskInterrupt",
    "AskUserQuestionTool",
    "ExitPlanModeTool",
    "InterruptNotPending",
    "InterruptProvider",
    "PausedGraph",
    "ResumeOutcome",
    "ResumeValue",
    "Unanswered",
    "answer_hitl",
    "answer_interrupts",
    "answer_of_resume",
    "ask_id_for",
    "checked_resume",
    "hitl_decisions",
    "hitl_questions",
    "resume_command",
    "resume_value",
    "tool_approval_review",
]
