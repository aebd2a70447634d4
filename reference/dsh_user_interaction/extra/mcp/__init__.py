"""An MCP elicitation bridge, both ways: ``pip install 'dsh-user-interaction[mcp]'``.

This module only re-exports. :class:`McpElicitationProvider` is a provider
that asks through an MCP client (the server side: any client becomes a UI);
:func:`elicitation_callback` answers an MCP client's elicitation requests
through any provider (the client side). :mod:`dsh_user_interaction.extra.mcp.testing`
holds the conformance driver, which also needs the conformance suite.
"""

import importlib as _importlib

try:
    _importlib.import_module("mcp")
except ImportError as _missing:  # tested in a subprocess, with mcp hidden
    _msg = (
        "dsh_user_interaction.extra.mcp needs the mcp SDK: pip install 'dsh-user-interaction[mcp]'"
    )
    raise ImportError(_msg, name="mcp") from _missing

from ._callback import DEFAULT_KEY as DEFAULT_KEY
from ._callback import ElicitationCallback as ElicitationCallback
from ._callback import Unsupported as Unsupported
from ._callback import elicitation_callback as elicitation_callback
from ._errors import ElicitationCancelled as ElicitationCancelled
from ._errors import ElicitationUnsupported as ElicitationUnsupported
from ._form import Form as Form
from ._form import FormField as FormField
from ._form import answer_of_content as answer_of_content
from ._form import form_of as form_of
from ._ledger import ProcessLedger as ProcessLedger
from ._ledger import SQLiteLedger as SQLiteLedger
from ._ledger import StateLedger as StateLedger
from ._provider import ASK_META_KEY as ASK_META_KEY
from ._provider import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._provider import REASON_META_KEY as REASON_META_KEY
from ._provider import McpElicitationProvider as McpElicitationProvider
from ._provider import ToolCallContext as ToolCallContext
from ._provider import tool_call as tool_call
from ._rounds import DEFAULT_MAX_ANSWERS as DEFAULT_MAX_ANSWERS
from ._rounds import DEFAULT_MAX_STATE_BYTES as DEFAULT_MAX_STATE_BYTES
from ._rounds import DEFAULT_STATE_TTL as DEFAULT_STATE_TTL
from ._rounds import ROUND_TRIP_VERSION as ROUND_TRIP_VERSION
from ._run_tool import run_tool as run_tool

__all__ = [
    "ASK_META_KEY",
    "DEFAULT_KEY",
    "DEFAULT_MAX_ANSWERS",
    "DEFAULT_MAX_STATE_BYTES",
    "DEFAULT_STATE_TTL",
    "PROTOCOL_VERSION",
    "REASON_META_KEY",
    "ROUND_TRIP_VERSION",
    "ElicitationCallback",
    "ElicitationCancelled",
    "ElicitationUnsupported",
    "Form",
    "FormField",
    "McpElicitationProvider",
    "ProcessLedger",
    "SQLiteLedger",
    "StateLedger",
    "ToolCallContext",
    "Unsupported",
    "answer_of_content",
    "elicitation_callback",
    "form_of",
    "run_tool",
    "tool_call",
]
