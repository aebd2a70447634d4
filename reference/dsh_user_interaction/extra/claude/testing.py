"""A scripted Claude Code for offline runs of the SDK: the CLI's side of its control protocol.

This module only re-exports; see ``ScriptedCli``.
"""

from ._scripted_cli import McpCall as McpCall
from ._scripted_cli import PermissionCall as PermissionCall
from ._scripted_cli import Reply as Reply
from ._scripted_cli import ScriptedCli as ScriptedCli

__all__ = ["McpCall", "PermissionCall", "Reply", "ScriptedCli"]
