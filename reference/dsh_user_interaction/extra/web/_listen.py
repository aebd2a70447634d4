"""Where the page cannot be served: a port out of range, or an address that cannot be bound.

Both are the caller's to fix (another ``--port``, another host), so they are
said in one sentence that names the address: the command line prints it as
its one line, and exits 2.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PORTS", "CannotListen", "port_problem"]

#: The TCP ports one may name; 0 asks for a free one.
PORTS: Final = range(65536)


class CannotListen(OSError):
    """The web provider could not listen where it was told; the message says where and why."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        shown = f"[{host}]" if ":" in host else host
        why = cause.strerror or str(cause) or type(cause).__name__
        super().__init__(f"cannot listen on {shown}:{port}: {why[:1].lower()}{why[1:]}")
        self.errno = cause.errno
        self.host = host
        self.port = port


def port_problem(port: object) -> str | None:
    """What is wrong with *port* as the page's port (``is not ...``), or ``None``."""
    if isinstance(port, bool) or not isinstance(port, int):
        return "is not a whole number"
    if port not in PORTS:
        return "is not a TCP port: 1 to 65535, or 0 for a free one"
    return None
