"""An AG-UI adapter, both ways: ``pip install 'dsh-user-interaction[ag_ui]'``.

This module only re-exports. :class:`AgUiInterruptProvider` is a provider
for an AG-UI server: an ask ends the run with an interrupt, and a later run's
``resume`` answers it. :func:`interrupt_of`, :func:`answer_schema` and
:func:`answer_of_payload` map one ask to an interrupt and a payload back;
:func:`run_tool_call` runs our tools for an AG-UI tool call;
:func:`answer_interrupts` answers another agent's interrupts through any
service of ours.
"""

import importlib as _importlib

try:
    _importlib.import_module("ag_ui.core")
except ImportError as _missing:
    _msg = (
        "dsh_user_interaction.extra.ag_ui needs the AG-UI SDK:"
        " pip install 'dsh-user-interaction[ag_ui]'"
    )
    raise ImportError(_msg, name="ag_ui") from _missing

from ._answer import answer_of_payload as answer_of_payload
from ._answer import answer_schema as answer_schema
from ._errors import ResumeError as ResumeError
from ._errors import ResumeErrorCode as ResumeErrorCode
from ._errors import run_error_of as run_error_of
from ._foreign import UnsupportedInterrupt as UnsupportedInterrupt
from ._foreign import answer_interrupt as answer_interrupt
from ._foreign import answer_interrupts as answer_interrupts
from ._foreign import request_of_interrupt as request_of_interrupt
from ._foreign import resume_entry_of as resume_entry_of
from ._interrupt import METADATA_KEY as METADATA_KEY
from ._interrupt import TOOL_CALL_ID_KEY as TOOL_CALL_ID_KEY
from ._interrupt import expires_at_of as expires_at_of
from ._interrupt import interrupt_of as interrupt_of
from ._interrupt import moment_of as moment_of
from ._interrupt import run_finished_interrupt as run_finished_interrupt
from ._provider import AgUiInterruptProvider as AgUiInterruptProvider
from ._provider import EndedHow as EndedHow
from ._provider import Resumed as Resumed
from ._tools import TOOL_NAMES as TOOL_NAMES
from ._tools import ag_ui_tool as ag_ui_tool
from ._tools import ag_ui_tools as ag_ui_tools
from ._tools import run_tool_call as run_tool_call

__all__ = [
    "METADATA_KEY",
    "TOOL_CALL_ID_KEY",
    "TOOL_NAMES",
    "AgUiInterruptProvider",
    "EndedHow",
    "ResumeError",
    "ResumeErrorCode",
    "Resumed",
    "UnsupportedInterrupt",
    "ag_ui_tool",
    "ag_ui_tools",
    "answer_interrupt",
    "answer_interrupts",
    "answer_of_payload",
    "answer_schema",
    "expires_at_of",
    "interrupt_of",
    "moment_of",
    "request_of_interrupt",
    "resume_entry_of",
    "run_error_of",
    "run_finished_interrupt",
    "run_tool_call",
]
