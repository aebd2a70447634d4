"""A web provider on Starlette and uvicorn: ``pip install 'dsh-user-interaction[web]'``.

This module only re-exports. :class:`WebProvider` serves a local page that
answers the agent's asks, from any number of browser tabs at once.
"""

try:
    import starlette as _starlette
    import uvicorn as _uvicorn
    import websockets as _websockets
except ImportError as _missing:  # tested in a subprocess, with the extra hidden
    _msg = (
        f"dsh_user_interaction.extra.web needs {_missing.name}: "
        "pip install 'dsh-user-interaction[web]'"
    )
    raise ImportError(_msg, name=_missing.name) from _missing

from ._app import Limits as Limits
from ._provider import WebProvider as WebProvider

__all__ = ["Limits", "WebProvider"]

del _starlette, _uvicorn, _websockets
