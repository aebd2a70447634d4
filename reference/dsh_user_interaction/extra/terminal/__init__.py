"""A terminal provider on prompt_toolkit: ``pip install 'dsh-user-interaction[terminal]'``.

This module only re-exports. :class:`TerminalProvider` is the provider;
:mod:`dsh_user_interaction.extra.terminal.testing` holds its conformance
driver, which also needs ``pyte`` (the ``terminal-testing`` extra).
"""

try:
    import prompt_toolkit as _prompt_toolkit  # noqa: F401 - only to name the missing extra
except ImportError as _missing:  # pragma: no cover - exercised in a subprocess test
    _msg = (
        "dsh_user_interaction.extra.terminal needs prompt_toolkit: "
        "pip install 'dsh-user-interaction[terminal]'"
    )
    raise ImportError(_msg, name="prompt_toolkit") from _missing

from ._provider import TerminalProvider as TerminalProvider
from ._visible import visible as visible

__all__ = ["TerminalProvider", "visible"]
