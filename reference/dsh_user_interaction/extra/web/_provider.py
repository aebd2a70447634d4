"""WebProvider: a local page, served by Starlette on uvicorn, that answers the agent's asks."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Generator
from importlib.resources.abc import Traversable
from types import TracebackType
from typing import ClassVar, Final, Self
from urllib.parse import urlsplit

import uvicorn

from dsh_user_interaction._abort import AbortSignal
from dsh_user_interaction._checks import check_request
from dsh_user_interaction._deadline import is_timeout
from dsh_user_interaction._durable._verdict import Verdict
from dsh_user_interaction._durable._withdrawn import Withdrawn
from dsh_user_interaction._errors import ErrorCode, UserInteractionError
from dsh_user_interaction._types import AskUserQuestionAnswer, AskUserQuestionRequest

from ._app import PAGE_FILES, Limits, Settings, build_app
from ._board import Board, How
from ._listen import CannotListen, port_problem
from ._protocol import bounded_protocol

__all__ = ["WebProvider"]

#: Seconds the server may take to start listening.
START_TIMEOUT: Final = 10.0
#: Seconds closing waits for the pages to be told the agent has gone.
GOODBYE_TIMEOUT: Final = 1.0
#: Connections beyond the pages allowed: one for each page's POSTs and the page loads.
SPARE_CONNECTIONS: Final = 32
_WILDCARDS: Final = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - named to be refused


class _Server(uvicorn.Server):
    """uvicorn's server, minus its signal handlers (Ctrl-C belongs to the application).

    It also stops as soon as :meth:`stop` is called, where uvicorn's own loop
    would notice only at its next tick, up to 0.1 s later, and shuts down
    without uvicorn's fixed pauses: closing a provider is then a matter of
    milliseconds, where the conformance suite gives a whole example's
    teardown (four providers in some checks) its bound of 1 s.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stopping = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield

    def stop(self) -> None:
        self.should_exit = True
        self._stopping.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Uvicorn's shutdown, without its fixed pauses (0.1 s, and polls 0.1 s apart).

        Stop accepting, ask every connection to close, and wait (for at most
        the graceful timeout) until they have and their tasks are done; past
        it, cancel the tasks. There is no lifespan to shut down.
        """
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()
        try:
            async with asyncio.timeout(self.config.timeout_graceful_shutdown):
                while state.connections or state.tasks:  # noqa: ASYNC110 - uvicorn sets no event
                    await asyncio.sleep(0.005)
        except TimeoutError:
            for task in state.tasks:
                task.cancel()
        for server in self.servers:
            await server.wait_closed()

    async def main_loop(self) -> None:
        # uvicorn's loop, ticking every 0.1 s (its Date header is updated on ticks),
        # but woken at once by stop().
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await self._stopping.wait()


def _bound(host: str, port: int) -> socket.socket:
    """A listening socket of our own: a taken port is an ``OSError`` here, not uvicorn's exit."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Named TCP, so that asyncio turns Nagle's algorithm off on each accepted
    # connection (it does only for sockets whose protocol says TCP): with it on,
    # every response on a kept-alive connection waited 40 ms for the browser's
    # delayed ACK between its head and its body.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise CannotListen(host, port, error) from error
    return sock


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _serve(server: _Server, listening: socket.socket) -> None:
    try:
        await server.serve(sockets=[listening])
    except SystemExit as stop:  # uvicorn exits the process when it cannot start
        msg = f"the web provider's server stopped at start (status {stop.code})"
        raise OSError(msg) from None
    finally:
        listening.close()


class WebProvider:
    """A :class:`~dsh_user_interaction.UserInteractionProvider` whose UI is a web page.

    Starting it (``async with``, or :meth:`start`) serves the page on
    ``127.0.0.1`` and a free port; :attr:`url` is the address to open, with
    the server's secret in it (print it for the human; anyone with it can
    answer). Every page connected sees every pending ask; the first valid
    answer or dismissal wins, and the others see how it ended.

    An ask ends with the human's answer (a skipped question is
    ``{"id", "selected": []}``), ``ASK_CANCELLED`` when they dismiss it,
    ``ASK_ABORTED`` when its signal aborts (the pages show it withdrawn),
    and ``PROVIDER_DISPOSED`` when the provider closes (the pages show that
    the agent has gone). An answer that breaks the seam's rules is refused at
    the door, with a reason naming the field, and the page keeps the draft.

    Served through a relay (:func:`~dsh_user_interaction.durable.serve`) it is
    :class:`~dsh_user_interaction.durable.VerdictAware`: a page's answer shows
    as sending, and the page is told "answered" only once the store has it
    (``DUR-ACK-1``); an ask that ended elsewhere is shown as it ended, by whom
    and where (``DUR-TELL-1``).

    *host* other than loopback needs *allow_remote*: the page is then open
    to every machine that can reach the port and knows the secret, over
    plain HTTP. Behind a TLS proxy, *public_url* (with *allow_remote*) is the
    address the human opens, such as ``https://agent.example``: the server
    also answers to its host name and origin, and :attr:`url` is built on it.
    """

    #: The state of the asks and pages; a variant's hook (the test gallery's broken ones).
    _board_type: ClassVar[type[Board]] = Board
    #: Where the page's files are served from; a variant's hook, like :attr:`_board_type`.
    _page_files: ClassVar[Traversable] = PAGE_FILES

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        allow_remote: bool = False,
        agent: str | None = None,
        limits: Limits | None = None,
        public_url: str | None = None,
    ) -> None:
        public = urlsplit(public_url) if public_url is not None else None
        if public is not None and (public.scheme not in {"http", "https"} or not public.netloc):
            msg = f"public_url={public_url!r} is no http:// or https:// address"
            raise ValueError(msg)
        if public is not None and not allow_remote:
            msg = "public_url names an address beyond this machine: pass allow_remote=True too"
            raise ValueError(msg)
        problem = port_problem(port)
        if problem is not None:
            msg = f"WebProvider(port={port!r}) {problem}"
            raise ValueError(msg)
        if host in _WILDCARDS:
            msg = (
                f"WebProvider(host={host!r}) would answer to no one: the page checks the host "
                "name it is reached by, so name the address to listen on"
            )
            raise ValueError(msg)
        if not _loopback(host) and not allow_remote:
            msg = (
                f"WebProvider(host={host!r}) would open the page beyond this machine; "
                "pass allow_remote=True if that is meant"
            )
            raise ValueError(msg)
        self._host = host
        self._port = port
        self._board = self._board_type()
        self._settings = Settings(limits=limits or Limits(), agent=agent)
        self._server: _Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._starting: asyncio.Future[None] | None = None
        self._closed = False
        self._url = ""
        self._public = (public.scheme, public.netloc) if public is not None else None
        #: The verdicts a relay promised, by the request's identity, until it is asked.
        self._verdicts: dict[int, tuple[AskUserQuestionRequest, asyncio.Future[Verdict]]] = {}

    @property
    def url(self) -> str:
        """The page's address, secret included; empty until started."""
        return self._url

    @property
    def pending_count(self) -> int:
        """How many asks are pending."""
        return len(self._board.asks)

    def ask_id_of(self, request: AskUserQuestionRequest) -> str | None:
        """The ask id the pages show *request* under, while it is pending (else ``None``).

        A card on the page carries it as ``data-ask-id``: a conformance driver
        finds the card of a request by it when several asks look alike.
        """
        return self._board.ask_id_of(request)

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        """A relay's promise of the store's verdict on *request*'s outcome (``DUR-ACK-1``).

        The pages then show the ask's answer as sending until the verdict
        comes, and the POST that sent it waits for it.
        """
        key = id(request)
        self._verdicts[key] = (request, verdict)

        def forget(_done: asyncio.Future[Verdict]) -> None:
            kept = self._verdicts.get(key)
            if kept is not None and kept[1] is verdict:
                del self._verdicts[key]

        verdict.add_done_callback(forget)

    async def start(self) -> Self:
        """Serve the page, if not yet serving."""
        if self._closed:
            raise UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED)
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._serve())
        await asyncio.shield(self._starting)
        return self

    async def _serve(self) -> None:
        listening = _bound(self._host, self._port)
        config = uvicorn.Config(
            build_app(self._board, self._settings, self._page_files),
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="websockets-sansio",
            http=bounded_protocol(self._settings.limits.header_deadline),
            timeout_graceful_shutdown=1,
            # Past this many requests and sockets at once, uvicorn answers 503; the
            # protocol bounds the connections themselves (see _protocol.py).
            limit_concurrency=self._settings.limits.max_pages + SPARE_CONNECTIONS,
        )
        server = _Server(config)
        self._server = server
        self._serving = asyncio.ensure_future(_serve(server, listening))
        async with asyncio.timeout(START_TIMEOUT):
            while not server.started:
                if self._serving.done():
                    self._serving.result()  # its error, if it failed
                    msg = f"the web provider could not listen on {self._host}:{self._port}"
                    raise OSError(msg)
                await asyncio.sleep(0.005)
        port = int(listening.getsockname()[1])
        self._settings.admit(self._host, port, self._public)
        shown = f"[{self._host}]" if ":" in self._host else self._host
        base = "{}://{}".format(*self._public) if self._public else f"http://{shown}:{port}"
        # In the fragment: no request carries it, so no log, proxy or Referer sees it.
        self._url = f"{base}/#secret={self._settings.secret}"

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Show *request* on every page; the first valid answer or dismissal settles it."""
        if self._closed:
            raise UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED)
        check_request(request)
        await self.start()
        # Both may have happened while the server started.
        if self._closed:
            raise UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED)
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        promised = self._verdicts.pop(id(request), None)
        verdict = promised[1] if promised is not None and promised[0] is request else None
        ask = self._board.open(request, verdict)

        def withdraw(aborted: AbortSignal) -> None:
            reason = aborted.reason
            if isinstance(reason, Withdrawn):
                # Ended elsewhere: the pages say how, by whom and where (DUR-TELL-1).
                outcome = reason.outcome
                self._board.tell(ask.id, principal=outcome.principal, via=outcome.via)
                how: How = reason.how
            else:
                how = ask.withdrawn(timed_out=is_timeout(reason))
            self._board.settle(ask.id, how, None, error=ErrorCode.ASK_ABORTED)

        remove = signal.add_listener(withdraw) if signal is not None else None
        try:
            return await ask.future
        except asyncio.CancelledError:
            # The service's interrupt at the deadline reaches here as a cancellation.
            self._board.settle(ask.id, ask.withdrawn(), None)
            raise
        finally:
            if remove is not None:
                remove()

    async def aclose(self) -> None:
        """Tell every page the agent has gone, end the pending asks, stop serving. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._starting is not None and not self._starting.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._starting)
        self._board.goodbye()
        server, serving = self._server, self._serving
        if server is None or serving is None:
            return
        # Let every page hear "gone" before the server closes its socket.
        if self._board.writers:
            await asyncio.wait(set(self._board.writers), timeout=GOODBYE_TIMEOUT)
        server.stop()
        with contextlib.suppress(Exception):
            await serving

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
