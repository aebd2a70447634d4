"""The MCP bridge's conformance driver and subject factories.

Needs the conformance suite too: ``pip install
'dsh-user-interaction[mcp,conformance]'``. Run the suite on the server-side
provider, through a real MCP client and server over the SDK's in-memory
streams, with::

    python -m dsh_user_interaction_conformance \\
        --provider dsh_user_interaction.extra.mcp.testing:mcp_subject

and on protocol revision 2026-07-28, each ask in input-required rounds, with
``--provider dsh_user_interaction.extra.mcp.testing:mcp_round_trip_subject``.
What that path's rounds carry is judged by :func:`check_round_trips`
(``MCP-ROUND-*`` of ``spec/mcp.md``), a drawn client against ``run_tool``
or a bridge's own.
"""

import importlib as _importlib

try:
    _importlib.import_module("hypothesis")
except ImportError as _missing:  # tested in a subprocess, with hypothesis hidden
    _msg = (
        "dsh_user_interaction.extra.mcp.testing needs the conformance suite: "
        "pip install 'dsh-user-interaction[mcp,conformance]'"
    )
    raise ImportError(_msg, name="hypothesis") from _missing

from ._connection import HOLD_TOOL as HOLD_TOOL
from ._connection import Connection as Connection
from ._driver import CAPABILITIES as CAPABILITIES
from ._driver import CAPABILITIES_WITHOUT_CUSTOM_TEXT as CAPABILITIES_WITHOUT_CUSTOM_TEXT
from ._driver import ElicitationDriver as ElicitationDriver
from ._driver import Human as Human
from ._driver import Numbered as Numbered
from ._driver import OutstandingElicitation as OutstandingElicitation
from ._driver import fill as fill
from ._driver import make_subject as make_subject
from ._driver import mcp_subject as mcp_subject
from ._driver import mcp_subject_without_custom_text as mcp_subject_without_custom_text
from ._round_checks import RoundTripFailure as RoundTripFailure
from ._round_checks import RunTool as RunTool
from ._round_checks import check_round_trips as check_round_trips
from ._round_trip import ROUND_TRIP_TOOL as ROUND_TRIP_TOOL
from ._round_trip import RoundTripProvider as RoundTripProvider
from ._round_trip import make_round_trip_subject as make_round_trip_subject
from ._round_trip import mcp_round_trip_subject as mcp_round_trip_subject

__all__ = [
    "CAPABILITIES",
    "CAPABILITIES_WITHOUT_CUSTOM_TEXT",
    "HOLD_TOOL",
    "ROUND_TRIP_TOOL",
    "Connection",
    "ElicitationDriver",
    "Human",
    "Numbered",
    "OutstandingElicitation",
    "RoundTripFailure",
    "RoundTripProvider",
    "RunTool",
    "check_round_trips",
    "fill",
    "make_round_trip_subject",
    "make_subject",
    "mcp_round_trip_subject",
    "mcp_subject",
    "mcp_subject_without_custom_text",
]
