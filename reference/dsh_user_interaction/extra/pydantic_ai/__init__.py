"""pydantic-ai and its harness, through the seam.

Install with ``pip install 'dsh-user-interaction[pydantic_ai]'``.

This module only re-exports. ``SeamAnswerer`` answers the harness's
``AskUser`` through any provider of ours; ``seam_toolset`` offers our
``ask_user_question`` and ``exit_plan_mode`` to an agent as native tools;
``deferred_seam_toolset`` with ``answer_deferred`` (or the harness's
``AskUser(answerer=None)`` with ``answer_deferred_ask_user``) pauses a run
with pydantic-ai's deferred tools, so a durable wait survives a restart;
``seam_deferred_handler`` and ``ask_user_deferred_handler`` answer the same
calls inside the run, through ``HandleDeferredToolCalls``.
"""

import importlib as _importlib

try:
    _importlib.import_module("pydantic_ai")
    _importlib.import_module("pydantic_ai_harness")
except ImportError as _missing:  # the extra is optional
    _msg = (
        "dsh_user_interaction.extra.pydantic_ai needs pydantic-ai and its harness:"
        " pip install 'dsh-user-interaction[pydantic_ai]'"
    )
    raise ImportError(_msg, name=_missing.name) from _missing

from ._answerer import SeamAnswerer as SeamAnswerer
from ._answerer import harness_response as harness_response
from ._answerer import seam_request as seam_request
from ._deferred import DeferredHandler as DeferredHandler
from ._deferred import answer_deferred as answer_deferred
from ._deferred import answer_deferred_ask_user as answer_deferred_ask_user
from ._deferred import ask_user_deferred_handler as ask_user_deferred_handler
from ._deferred import seam_deferred_handler as seam_deferred_handler
from ._tools import ASK_USER_QUESTION as ASK_USER_QUESTION
from ._tools import EXIT_PLAN_MODE as EXIT_PLAN_MODE
from ._tools import SEAM_TOOLS as SEAM_TOOLS
from ._tools import deferred_seam_toolset as deferred_seam_toolset
from ._tools import run_seam_tool as run_seam_tool
from ._tools import seam_toolset as seam_toolset

__all__ = [
    "ASK_USER_QUESTION",
    "EXIT_PLAN_MODE",
    "SEAM_TOOLS",
    "DeferredHandler",
    "SeamAnswerer",
    "answer_deferred",
    "answer_deferred_ask_user",
    "ask_user_deferred_handler",
    "deferred_seam_toolset",
    "harness_response",
    "run_seam_tool",
    "seam_deferred_handler",
    "seam_request",
    "seam_toolset",
]
