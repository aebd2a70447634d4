"""The AG-UI interrupt provider as a conformance-suite subject.

Needs the conformance suite too: ``pip install
'dsh-user-interaction[ag_ui,conformance]'``. Run the suite's provider
checks on it, a client of the protocol playing the human, with::

    python -m dsh_user_interaction_conformance \\
        --provider dsh_user_interaction.extra.ag_ui.testing:ag_ui_subject
"""

import importlib as _importlib

try:
    _importlib.import_module("hypothesis")
except ImportError as _missing:
    _msg = (
        "dsh_user_interaction.extra.ag_ui.testing needs the conformance suite: "
        "pip install 'dsh-user-interaction[ag_ui,conformance]'"
    )
    raise ImportError(_msg, name="hypothesis") from _missing

from ._subject import CAPABILITIES as CAPABILITIES
from ._subject import AgUiClient as AgUiClient
from ._subject import InterruptServer as InterruptServer
from ._subject import ToolCallAsks as ToolCallAsks
from ._subject import ag_ui_subject as ag_ui_subject
from ._subject import client_answer as client_answer
from ._subject import make_ag_ui_subject as make_ag_ui_subject

__all__ = [
    "CAPABILITIES",
    "AgUiClient",
    "InterruptServer",
    "ToolCallAsks",
    "ag_ui_subject",
    "client_answer",
    "make_ag_ui_subject",
]
