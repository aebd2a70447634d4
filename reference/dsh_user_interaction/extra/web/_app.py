"""The web provider's HTTP and WebSocket surface: a door into an agent, shut to all but its page.

The page itself (HTML, script, style) is static and holds nothing; everything
that reads or settles an ask needs the server's secret. The agent prints it
in the address's fragment, which no request carries; the page keeps it in
its tab's ``sessionStorage`` (scoped to the origin, port included) and sends
it with each POST as the header ``X-Dsh-Secret`` and with the socket as the
subprotocol ``dsh-secret.<secret>``. Not a cookie: cookies ignore ports, so
every other server on ``127.0.0.1`` would receive it, and could overwrite it.
The ``Host`` header must name the server as it was started (no DNS
rebinding), and every POST and the socket must come from its own ``Origin``
(no cross-site use; a POST must also be ``application/json``). Every
response forbids inline script, remote content and framing. Bodies, pages,
connections and the rate of POSTs are limited.

An ask served through a relay has a verdict (``DUR-ACK-1``): its answer or
dismissal is sent to the relay, and the POST that sent it is answered once
the store's verdict is in: 200 when it was saved, 409 with how the ask ended
(and by whom, where) when another outcome won, 503 when it was not saved.
Past :data:`VERDICT_WAIT` seconds, it is answered 202 (still saving), and
the page hears the verdict over its socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import json
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from typing import Any, Final, cast

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from dsh_user_interaction._checks import must_violations
from dsh_user_interaction._errors import ErrorCode

from ._board import Ask, Board

__all__ = ["Limits", "Settings", "build_app"]

#: What every response says about where content may come from.
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS: Final = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
_STATIC: Final = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
#: The socket's subprotocol that carries the secret; the server answers with ``dsh-ui``.
_CARRIER: Final = "dsh-secret."
#: The close code of a page's socket whose secret is wrong (or stale): retrying cannot help.
CLOSED_SECRET: Final = 4403
#: The close code of a page's socket past :attr:`Limits.max_pages` ("try again later").
CLOSED_FULL: Final = 1013
#: Seconds a POST waits for the store's verdict before it is answered 202 (still saving).
VERDICT_WAIT: Final = 20.0


@dataclass(frozen=True)
class Limits:
    """What the pages may send, and how much of it."""

    #: The largest POST body, in bytes (an answer to hundreds of questions fits).
    max_body: int = 64 << 10
    #: Pages connected at once; one more is refused until another leaves.
    max_pages: int = 32
    #: POSTs per second each page may keep up, after a burst of :attr:`burst`.
    rate: float = 20.0
    burst: int = 50
    #: Seconds a connection has to send each request's headers (every request of a
    #: kept-alive connection too); past it, the connection is closed.
    header_deadline: float = 10.0

    def __post_init__(self) -> None:
        deadline = cast("object", self.header_deadline)  # whatever the caller passed
        if (
            isinstance(deadline, bool)
            or not isinstance(deadline, int | float)
            or not 0 < deadline < math.inf
        ):
            msg = f"Limits(header_deadline={deadline!r}) is not a number of seconds above 0"
            raise ValueError(msg)


@dataclass
class Settings:
    """Who may come in: filled in once the server knows its port (until then, nobody)."""

    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    limits: Limits = field(default_factory=Limits)
    #: ``Host`` values that name this server, such as ``127.0.0.1:8123``.
    hosts: frozenset[str] = frozenset()
    #: Origins of its own pages, such as ``http://127.0.0.1:8123``.
    origins: frozenset[str] = frozenset()
    #: The agent's name, for the pages' greeting.
    agent: str | None = None

    def admit(self, host: str, port: int, public: tuple[str, str] | None = None) -> None:
        """Answer to *host* at *port*, and to the *public* (scheme, host) a proxy names."""
        names = {host, "localhost", "127.0.0.1"} if host in {"127.0.0.1", "localhost"} else {host}
        authorities = {f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names}
        origins = {f"http://{a}" for a in authorities}
        if public is not None:
            scheme, netloc = public
            authorities.add(netloc)
            origins.add(f"{scheme}://{netloc}")
        self.hosts = frozenset(authorities)
        self.origins = frozenset(origins)


class _Json(JSONResponse):
    """JSON in ASCII: a reason may quote model text, and a lone surrogate has no UTF-8."""

    def render(self, content: object) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _error(status: int, message: str, question: str | None = None, **extra: object) -> Response:
    return _Json({"error": message, "question": question, **extra}, status_code=status)


def _oversized(request: Mapping[str, object], body: object) -> tuple[str | None, str] | None:
    """More answers than questions, or more labels than options: refused before the rules.

    The rules word every unknown label, so a body of 100,000 of them would hold
    the loop; these counts say what is wrong at once.
    """
    listed = request.get("questions")
    asked = cast("list[object]", listed) if isinstance(listed, list) else []
    if not isinstance(body, dict):
        return None
    answers = cast("dict[str, object]", body).get("answers")
    if not isinstance(answers, list):
        return None
    items = cast("list[object]", answers)
    if len(items) > len(asked):
        return None, f"answers has {len(items)} items for {len(asked)} question(s)"
    for n, (item, question) in enumerate(zip(items, asked, strict=False)):
        picked = cast("dict[str, object]", item).get("selected") if isinstance(item, dict) else None
        selected = cast("list[object]", picked) if isinstance(picked, list) else []
        options = cast("Mapping[str, object]", question).get("options")
        offered = len(cast("list[object]", options)) if isinstance(options, list) else 0
        if len(selected) > offered:
            where = cast("Mapping[str, object]", question).get("id")
            return (
                where if isinstance(where, str) else None,
                f"answers[{n}].selected has {len(selected)} labels; the question offers {offered}",
            )
    return None


class _Buckets:
    """A token bucket per client, for the POSTs."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, client: str) -> bool:
        now = time.monotonic()
        tokens, then = self._buckets.get(client, (float(self._limits.burst), now))
        tokens = min(float(self._limits.burst), tokens + (now - then) * self._limits.rate)
        if tokens < 1:
            self._buckets[client] = (tokens, now)
            return False
        self._buckets[client] = (tokens - 1, now)
        if len(self._buckets) > 1024:  # clients come and go: keep the table small
            self._buckets = {client: self._buckets[client]}
        return True


class _SecurityHeaders:
    """Adds the same protective headers to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.decode() not in _HEADERS
                ]
                headers += [(k.encode(), v.encode()) for k, v in _HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, send_with_headers)


#: The page's files, as the package ships them.
PAGE_FILES: Final = importlib.resources.files("dsh_user_interaction.extra.web") / "static"


def build_app(board: Board, settings: Settings, static: Traversable = PAGE_FILES) -> ASGIApp:
    """The ASGI application of one web provider, serving the page's files from *static*."""
    buckets = _Buckets(settings.limits)

    def host_ok(headers: Any) -> bool:  # noqa: ANN401 - Starlette's Headers
        return headers.get("host", "") in settings.hosts

    def secret_ok(given: str) -> bool:
        return secrets.compare_digest(given.encode(), settings.secret.encode())

    def refused(request: Request) -> Response | None:
        """Why a POST may not come in, as JSON the page shows."""
        if not host_ok(request.headers):
            return _error(421, "this server does not answer to that host name")
        if request.headers.get("origin") not in settings.origins:
            return _error(403, "this page's origin may not use this server")
        if request.headers.get("sec-fetch-site", "same-origin") != "same-origin":
            return _error(403, "cross-site requests are refused")
        if not secret_ok(request.headers.get("x-dsh-secret", "")):
            return _error(403, "This page needs the link, with its secret, that the agent printed.")
        return None

    def static_file(request: Request, name: str, media_type: str) -> Response:
        # The page holds no secret, so a link followed from anywhere may load it;
        # only the host name is checked (DNS rebinding).
        if not host_ok(request.headers):
            return PlainTextResponse("this server does not answer to that host name", 421)
        return Response((static / name).read_bytes(), media_type=media_type)

    async def index(request: Request) -> Response:
        return static_file(request, "index.html", "text/html; charset=utf-8")

    async def icon(request: Request) -> Response:
        # Browsers ask for one on every load; there is none, and saying so costs nothing.
        if not host_ok(request.headers):
            return PlainTextResponse("this server does not answer to that host name", 421)
        return Response(status_code=204)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return PlainTextResponse("not found", status_code=404)
        return static_file(request, name, _STATIC[name])

    async def body_of(request: Request) -> Any | Response:  # noqa: ANN401 - JSON
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _error(415, "the body must be application/json")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > settings.limits.max_body:
                return _error(413, f"the body is larger than {settings.limits.max_body} bytes")
            chunks.append(chunk)
        try:
            return json.loads(b"".join(chunks))
        except (ValueError, RecursionError):
            return _error(400, "the body is not JSON")

    def too_late(ask_id: str) -> Response:
        ended = board.settled.get(ask_id)
        if ended is not None:
            how, by = ended
            told = board.details.get(ask_id, {})
            return _error(409, "this ask is no longer pending", how=how, by=by, **told)
        sending = board.asks.get(ask_id)
        if sending is not None and sending.sending is not None:
            return _error(
                409, "an answer to this ask is being saved", how="sending", by=sending.sending[1]
            )
        if board.issued(ask_id):  # settled long ago: how is forgotten
            return _error(409, "this ask is no longer pending", how=None, by=None)
        return _error(404, f"no ask {ask_id!r} was ever pending here")

    async def settling(request: Request) -> tuple[str, str | None, Any] | Response:
        """The ask, the page and the body of a POST that may settle an ask; or the refusal."""
        problem = refused(request)
        if problem is not None:
            return problem
        # A bucket per connected page, so that a page stuck in a loop slows only
        # itself; page ids no connected page has (a client may name a new one with
        # each POST) share one bucket per address.
        client = request.client.host if request.client is not None else "?"
        page = request.headers.get("x-dsh-page", "")
        if not buckets.take(f"{client} {page if page in board.pages else '-'}"):
            return _error(429, "too many requests: wait a moment and send again")
        ask_id = request.path_params["ask_id"]
        if ask_id not in board.asks:
            return too_late(ask_id)
        body = await body_of(request)
        if isinstance(body, Response):
            return body
        # The page it came through, as the others are told: only a page connected now.
        return ask_id, page if page in board.pages else None, body

    async def answer(request: Request) -> Response:
        checked = await settling(request)
        if isinstance(checked, Response):
            return checked
        ask_id, page, body = checked
        ask = board.asks.get(ask_id)
        if ask is None or ask.sending is not None:  # settled (or sent) while the body was read
            return too_late(ask_id)
        oversized = _oversized(ask.request, body)
        if oversized is not None:
            return _error(422, oversized[1], oversized[0])
        violations = must_violations(ask.request, body)
        if violations:
            first = violations[0]
            return _error(422, first.message, first.question, requirement=first.requirement)
        if ask.verdict is not None:
            board.send(ask_id, "answered", page, answer=body)
            return await verdict_of(ask)
        board.settle(ask_id, "answered", page, answer=body)
        return _Json({"ok": True})

    async def dismiss(request: Request) -> Response:
        checked = await settling(request)
        if isinstance(checked, Response):
            return checked
        ask_id, page, _ = checked
        ask = board.asks.get(ask_id)
        if ask is not None and ask.verdict is not None:
            if not board.send(ask_id, "dismissed", page, error=ErrorCode.ASK_CANCELLED):
                return too_late(ask_id)
            return await verdict_of(ask)
        if not board.settle(ask_id, "dismissed", page, error=ErrorCode.ASK_CANCELLED):
            return too_late(ask_id)
        return _Json({"ok": True})

    async def verdict_of(ask: Ask) -> Response:
        """The reply to the POST that sent *ask*'s outcome: once the store's verdict is in."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(VERDICT_WAIT):
                await ask.ended.wait()
        ended = board.settled.get(ask.id)
        if ended is None and ask.id in board.asks:
            return _Json({"ok": False, "saving": True}, status_code=202)
        if ask.saved:
            return _Json({"ok": True})
        if ended is not None and ended[0] == "unsaved":
            note = board.details.get(ask.id, {}).get("note", "")
            return _error(503, f"Not saved: {note}.", how="unsaved", note=note)
        return too_late(ask.id)

    async def socket(websocket: WebSocket) -> None:
        headers = websocket.headers
        offered: list[str] = websocket.scope.get("subprotocols", [])
        given = next((p for p in offered if p.startswith(_CARRIER)), "")
        if (
            not host_ok(headers)
            or headers.get("origin") not in settings.origins
            or "dsh-ui" not in offered
        ):
            await websocket.close(code=1008)  # the handshake refused (403), no reason given
            return
        # The server's own page is told why it is refused, in a close code its script
        # can read (a refused handshake reaches it only as "closed", 1006).
        refusal: tuple[int, str] | None = None
        if not secret_ok(given.removeprefix(_CARRIER)):
            refusal = (CLOSED_SECRET, "wrong secret")
        elif board.sockets >= settings.limits.max_pages:
            refusal = (CLOSED_FULL, "too many pages")
        if refusal is not None:
            await websocket.accept(subprotocol="dsh-ui")
            await websocket.close(code=refusal[0], reason=refusal[1])
            return
        await websocket.accept(subprotocol="dsh-ui")
        board.sockets += 1
        page = board.join(settings.agent)
        writer = asyncio.ensure_future(_write(websocket, page.queue.get))
        board.writers.add(writer)
        writer.add_done_callback(board.writers.discard)
        page.stop = writer.cancel
        try:
            reading = asyncio.ensure_future(websocket.receive())
            done, _ = await asyncio.wait({reading, writer}, return_when=asyncio.FIRST_COMPLETED)
            if reading in done and not reading.cancelled() and reading.exception() is None:
                message = reading.result()
                if message["type"] == "websocket.receive":
                    # The page sends answers by POST; anything on the socket ends it.
                    await websocket.close(code=1008)
            else:
                reading.cancel()
        except WebSocketDisconnect:
            pass
        finally:
            board.sockets -= 1
            board.leave(page)
            writer.cancel()
            with contextlib.suppress(BaseException):
                await writer

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/static/{name}", asset, methods=["GET"]),
        Route("/favicon.ico", icon, methods=["GET"]),
        Route("/asks/{ask_id}/answer", answer, methods=["POST"]),
        Route("/asks/{ask_id}/dismiss", dismiss, methods=["POST"]),
        WebSocketRoute("/ws", socket),
    ]
    return _SecurityHeaders(Starlette(routes=routes))


async def _write(websocket: WebSocket, get: Callable[[], Awaitable[str | None]]) -> None:
    """Send a page its messages in order; ``None`` ends the page (gone, or too slow)."""
    while True:
        text = await get()
        if text is None:
            with contextlib.suppress(Exception):
                await websocket.close(code=1000)
            return
        await websocket.send_text(text)
