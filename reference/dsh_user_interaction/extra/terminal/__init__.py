"""A terminal provider on prompt_toolkit: ``pip install 'dsh-user-interaction[terminal]'``.

This module only re-exports. :class:`TerminalProvider` is the provider;
:mod:`dsh_user_interaction.extra.terminal.testing` holds its conformance
driver, which also needs ``pyte`` (the ``terminal-testing`` extra).
"""

import importlib as _importlib

try:
    _importlib.import_module("prompt_toolkit")
except ImportError as _missing:  # tested in a subprocess, with prompt_toolkit hidden
    _msg = (
        "dsh_user_interaction.extra.terminal needs prompt_toolkit: "
        "pip install 'dsh-user-interaction[terminal]'"
    )
    raise ImportError(_msg, name="prompt_toolkit") from _missing

from ._provider import TerminalProvider as TerminalProvider
from ._visible import visible as visible

__all__ = ["TerminalProvider", "visible"]
