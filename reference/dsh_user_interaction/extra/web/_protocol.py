"""uvicorn's HTTP protocol with two bounds that a local flood cannot get past.

Anyone on the machine can open connections to a loopback port, secret or not.
Unbounded, 1,100 idle connections took the agent's file descriptors. So a
connection past :data:`MAX_CONNECTIONS` is closed at once, and one that has
not sent a whole request's headers within :data:`HEADER_DEADLINE` seconds is
closed then. A page's socket, once upgraded, is another protocol's and is
never closed by this one.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, cast

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_DEADLINE", "MAX_CONNECTIONS", "BoundedH11Protocol"]

#: Connections open at once, pages' sockets included; past it, a new one is closed.
MAX_CONNECTIONS: Final = 128
#: Seconds a new connection has to send its request's headers.
HEADER_DEADLINE: Final = 10.0


class BoundedH11Protocol(H11Protocol):
    """:class:`H11Protocol`, closing connections past the limit and the slow ones."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(cast("asyncio.Transport", transport))
        if len(self.connections) > MAX_CONNECTIONS:
            transport.close()
            return
        self._deadline = self.loop.call_later(HEADER_DEADLINE, self._too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        deadline: asyncio.TimerHandle | None = getattr(self, "_deadline", None)
        if deadline is not None:
            deadline.cancel()
        super().connection_lost(exc)

    def _too_slow(self) -> None:
        transport: Any = self.transport
        cycle: object = getattr(self, "cycle", None)  # set when a request's headers arrived
        # Still this protocol's (not upgraded to a socket), and no request began.
        if cycle is None and transport.get_protocol() is self and not transport.is_closing():
            transport.close()
