"""The web provider's server against clients that hold its connections, over raw loopback sockets.

Each test starts a real uvicorn server on 127.0.0.1 and talks to it byte by
byte, as a local process that wants to keep the pages out would.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import pytest

from dsh_user_interaction.extra.web import Limits, WebProvider
from dsh_user_interaction.extra.web._protocol import HEADER_DEADLINE
from dsh_user_interaction.extra.web._provider import SPARE_CONNECTIONS

from .helpers import patience

T = TypeVar("T")

#: Every test's own bound: nothing here may hang (60 s on the idle machine, the
#: calibrated patience on a busy one: it ends a red run).
BOUND = patience(6.0)
#: The pages the test's server allows.
PAGES = 2
#: Connections that dribble: one fewer than the requests and sockets the server serves
#: at once (the pages and 32 more), so that each one's first request is served, and,
#: held, they would turn a page's POST into a 503.
DRIBBLERS = PAGES + SPARE_CONNECTIONS - 1
#: Seconds the test waits for the server to close them all (the deadline is 0.5 s).
CLOSED_WITHIN = 30.0


def run(test: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(BOUND):
            return await test()

    return asyncio.run(bounded())


async def _response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One response's head and body, read to its end: the connection stays open."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head, await reader.readexactly(length)


async def _dribble_headers(
    host: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> bytes:
    """A request's headers a few bytes at a time, never ended, until the server closes.

    Returns what the server sent meanwhile: nothing, when it closed the
    connection (a reset counts as closed too).
    """
    closed = asyncio.ensure_future(reader.read())
    head = f"GET /favicon.ico HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
    n = 0
    while not closed.done():
        # A header line that never ends the headers, a few bytes at a time.
        part = head[n : n + 4] if n < len(head) else b"X-A: b\r\n"
        n += len(part)
        try:
            writer.write(part)
            await writer.drain()
        except ConnectionError:
            break
        await asyncio.wait({closed}, timeout=0.1)
    try:
        return await closed
    except ConnectionError:
        return b""


async def _dribble(host: str, port: int) -> bytes:
    """One kept-alive request answered, then the next one's headers dribbled until closed."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"GET /favicon.ico HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head, _ = await _response(reader)
        assert head.startswith(b"HTTP/1.1 204"), head
        return await _dribble_headers(host, port, reader, writer)
    finally:
        writer.close()


def test_every_request_of_a_kept_alive_connection_has_the_header_deadline() -> None:
    """Dribbling a second request's headers holds no connection past the deadline.

    Before, the deadline held only for a connection's first request, and any
    byte cancelled uvicorn's keep-alive timeout: such connections were held
    for as long as their client liked, and a page's POST got 503.
    """

    async def main() -> None:
        limits = Limits(max_pages=PAGES, header_deadline=0.5)
        async with WebProvider(limits=limits) as provider:
            where = urlsplit(provider.url)
            host, port = where.hostname or "", where.port or 0
            dribblers = [asyncio.ensure_future(_dribble(host, port)) for _ in range(DRIBBLERS)]
            try:
                # Each ends when the server closes it; the wait is only a generous bound.
                _, held = await asyncio.wait(dribblers, timeout=CLOSED_WITHIN)
                assert not held, f"{len(held)} of {DRIBBLERS} connections still held"
            finally:
                for dribbler in dribblers:
                    dribbler.cancel()
                await asyncio.gather(*dribblers, return_exceptions=True)
            assert [dribbler.result() for dribbler in dribblers] == [b""] * DRIBBLERS
            asked = asyncio.ensure_future(
                provider.ask({"questions": [{"id": "q", "question": "Go?"}]})
            )
            while provider.pending_count == 0:  # noqa: ASYNC110 - the provider's own state
                await asyncio.sleep(0.005)
            nothing: list[str] = []
            answer: Any = {"answers": [{"id": "q", "selected": nothing, "custom": "yes"}]}
            headers = {
                "x-dsh-secret": where.fragment.removeprefix("secret="),
                "origin": f"http://{where.netloc}",
                "content-type": "application/json",
            }
            async with httpx.AsyncClient(base_url=f"http://{where.netloc}") as client:
                sent = await client.post(
                    "/asks/a1/answer", content=json.dumps(answer), headers=headers
                )
            assert sent.status_code == 200, sent.text
            assert await asked == answer

    run(main)


def test_the_header_deadline_starts_again_after_each_response() -> None:
    """A request that outlasts the connection's first deadline does not spend the next one's.

    The connection sends a whole request, then one whose body comes slowly
    until a connection opened after it has been closed for sending nothing
    (so the deadline the first response started has passed, during a request
    the server was still reading), then dribbles a third request's headers:
    the server closes it, on the deadline the second response started.
    """

    async def main() -> None:
        async with WebProvider(limits=Limits(header_deadline=0.5)) as provider:
            where = urlsplit(provider.url)
            host, port = where.hostname or "", where.port or 0
            asked = asyncio.ensure_future(
                provider.ask({"questions": [{"id": "q", "question": "Go?"}]})
            )
            while provider.pending_count == 0:  # noqa: ASYNC110 - the provider's own state
                await asyncio.sleep(0.005)
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(f"GET /favicon.ico HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
                head, _ = await _response(reader)
                assert head.startswith(b"HTTP/1.1 204"), head
                body = b'{"answers": []}'
                writer.write(
                    f"POST /asks/a1/answer HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    f"Origin: http://{where.netloc}\r\nContent-Type: application/json\r\n"
                    f"X-Dsh-Secret: {where.fragment.removeprefix('secret=')}\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode()
                )
                idle_reader, idle_writer = await asyncio.open_connection(host, port)
                try:
                    idle = asyncio.ensure_future(idle_reader.read())
                    sent = 0
                    while not idle.done():  # the body but its last byte, slowly, until then
                        if sent < len(body) - 1:
                            writer.write(body[sent : sent + 1])
                            sent += 1
                        await asyncio.wait({idle}, timeout=0.05)
                    assert await idle == b""
                finally:
                    idle_writer.close()
                writer.write(body[sent:])
                head, _ = await _response(reader)
                assert head.startswith(b"HTTP/1.1 422"), head
                assert await _dribble_headers(host, port, reader, writer) == b""
            finally:
                writer.close()
            assert not asked.done()
            asked.cancel()
            await asyncio.gather(asked, return_exceptions=True)

    run(main)


def test_the_header_deadline_is_ten_seconds_unless_the_limits_say_otherwise() -> None:
    assert Limits().header_deadline == HEADER_DEADLINE == 10.0


@pytest.mark.parametrize("deadline", [0, -1.0, math.inf, math.nan, True, "10"])
def test_a_header_deadline_that_is_no_positive_number_of_seconds_is_refused(deadline: Any) -> None:
    with pytest.raises(
        ValueError, match=r"^Limits\(header_deadline=.*\) is not a number of seconds"
    ):
        Limits(header_deadline=deadline)
