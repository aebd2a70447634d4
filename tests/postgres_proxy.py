"""A TCP proxy in front of a PostgreSQL server that drops a connection at a chosen moment.

The fault tests of ``tests/test_postgres.py`` open a store through it and
arm it: the next message a client sends that contains a given statement
(``COMMIT``, say) is either never forwarded (the server rolls the
transaction back when the connection closes), or forwarded and the server's
reply withheld (the server has committed, the client never hears so). Then
both sides of that connection are closed, as a network fault would.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Literal, Self

from psycopg.conninfo import conninfo_to_dict, make_conninfo

#: ``before``: drop the message unsent; ``after``: send it, wait for the reply, drop the reply.
Cut = Literal["before", "after"]


@dataclass
class _Arming:
    statement: bytes
    cut: Cut
    done: asyncio.Event


class CuttingProxy:
    """Forwards ``127.0.0.1:port`` to the server of *dsn*, and cuts a connection when armed."""

    def __init__(self, dsn: str) -> None:
        params = conninfo_to_dict(dsn)
        self._dsn = dsn
        self._upstream = (str(params.get("host", "127.0.0.1")), int(str(params.get("port", 5432))))
        self._server: asyncio.Server | None = None
        self._arming: _Arming | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        #: How many connections the proxy has cut.
        self.cuts = 0
        #: While true, the proxy drops every connection at once, as an unreachable server.
        self.down = False

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    @property
    def dsn(self) -> str:
        """The server's connection string, through the proxy (and without TLS)."""
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return make_conninfo(self._dsn, host="127.0.0.1", port=port, sslmode="disable")

    def sever(self) -> None:
        """Close every connection now, as a network outage does."""
        for writer in list(self._writers):
            writer.close()

    def arm(self, statement: bytes, cut: Cut) -> asyncio.Event:
        """Cut the next connection that sends *statement*; the event is set once it is cut."""
        self._arming = _Arming(statement, cut, asyncio.Event())
        return self._arming.done

    async def _serve(
        self, client_reader: asyncio.StreamReader, client: asyncio.StreamWriter
    ) -> None:
        if self.down:
            client.close()
            return
        server_reader, server = await asyncio.open_connection(*self._upstream)
        self._writers.update((client, server))
        replies = asyncio.Event()  # set when the server answers what is held
        holding = False  # whether the server's next reply is withheld from the client

        async def upward() -> None:
            nonlocal holding
            while data := await client_reader.read(65536):
                arming = self._arming
                if arming is not None and arming.statement in data:
                    self._arming = None
                    if arming.cut == "after":
                        holding = True
                        server.write(data)
                        await server.drain()
                        await replies.wait()  # the server has answered: it has committed
                    self.cuts += 1
                    arming.done.set()
                    return
                server.write(data)
                await server.drain()

        async def downward() -> None:
            while data := await server_reader.read(65536):
                if holding:
                    replies.set()
                    return
                client.write(data)
                await client.drain()

        tasks = [asyncio.ensure_future(upward()), asyncio.ensure_future(downward())]
        for task in tasks:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for writer in (client, server):
            writer.close()
            self._writers.discard(writer)
