"""uvicorn's HTTP protocol with two bounds that a local flood cannot get past.

Anyone on the machine can open connections to a loopback port, secret or not.
Unbounded, 1,100 idle connections took the agent's file descriptors. So a
connection past :data:`MAX_CONNECTIONS` is closed at once, and one that has
not sent a whole request's headers within the header deadline
(:data:`HEADER_DEADLINE` seconds unless the provider's limits say otherwise)
is closed then. The deadline holds for every request of a kept-alive
connection: it starts when the connection opens and again when each response
has been sent, and it is met when h11 has the next request's headers
(the client's state leaves ``IDLE``). uvicorn's own keep-alive timeout does
not do this: any byte cancels it, so a client dribbling a second request's
headers held its connection, and a slot of ``limit_concurrency``, for as long
as it liked. A page's socket, once upgraded, is another protocol's and is
never closed by this one.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Final, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_DEADLINE", "MAX_CONNECTIONS", "BoundedH11Protocol", "bounded_protocol"]

#: Connections open at once, pages' sockets included; past it, a new one is closed.
MAX_CONNECTIONS: Final = 128
#: Seconds a connection has to send each request's headers, by default.
HEADER_DEADLINE: Final = 10.0


class BoundedH11Protocol(H11Protocol):
    """:class:`H11Protocol`, closing connections past the limit and the slow ones."""

    #: Seconds a connection has to send each request's headers.
    header_deadline: ClassVar[float] = HEADER_DEADLINE
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(cast("asyncio.Transport", transport))
        if len(self.connections) > MAX_CONNECTIONS:
            transport.close()
            return
        self._await_headers()

    def on_response_complete(self) -> None:
        # Waiting for the next request (uvicorn may already have read it, pipelined).
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.header_deadline, self._too_slow)

    def _too_slow(self) -> None:
        self._deadline = None
        transport: Any = self.transport
        # Still this protocol's (not upgraded to a socket), and no request's headers came.
        if (
            self.conn.their_state is h11.IDLE
            and transport.get_protocol() is self
            and not transport.is_closing()
        ):
            transport.close()


def bounded_protocol(header_deadline: float) -> type[BoundedH11Protocol]:
    """:class:`BoundedH11Protocol` with *header_deadline* seconds for each request's headers."""
    if header_deadline == HEADER_DEADLINE:
        return BoundedH11Protocol
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"header_deadline": header_deadline})
