"""The terminal provider's conformance driver and subject factory.

Needs ``pyte`` and the conformance suite: ``pip install
'dsh-user-interaction[terminal-testing]'``. Run the suite on the terminal
provider with::

    python -m dsh_user_interaction_conformance \\
        --provider dsh_user_interaction.extra.terminal.testing:terminal_subject
"""

import importlib as _importlib

try:
    _importlib.import_module("pyte")
except ImportError as _missing:  # tested in a subprocess, with pyte hidden
    _msg = (
        "dsh_user_interaction.extra.terminal.testing needs pyte: "
        "pip install 'dsh-user-interaction[terminal-testing]'"
    )
    raise ImportError(_msg, name="pyte") from _missing

from ._driver import CAPABILITIES as CAPABILITIES
from ._driver import TerminalDriver as TerminalDriver
from ._driver import VirtualTerminal as VirtualTerminal
from ._driver import make_subject as make_subject
from ._driver import paste as paste
from ._driver import terminal_subject as terminal_subject

__all__ = [
    "CAPABILITIES",
    "TerminalDriver",
    "VirtualTerminal",
    "make_subject",
    "paste",
    "terminal_subject",
]
