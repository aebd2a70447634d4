"""StdioProvider: a provider that runs in another process and speaks the harness protocol."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from dsh_user_interaction._errors import ErrorCode, UserInteractionError
from dsh_user_interaction._types import AskUserQuestionAnswer, AskUserQuestionRequest
from dsh_user_interaction._version import SPEC_VERSION, __version__

from ._session import Connection, Session

__all__ = ["StdioProvider"]


class StdioProvider:
    """A :class:`~dsh_user_interaction.UserInteractionProvider` served by a subprocess.

    *command* (a string, split as a shell would, or a list of arguments)
    starts a child that speaks ``spec/harness.md`` in the ``provider`` role,
    the same child the conformance suite checks with ``--provider-cmd``. So a
    UI written in another language can serve a Python agent harness.

    The child starts on the first :meth:`ask` (or on :meth:`start`), holds one
    subject for this provider's life, and stops at :meth:`aclose`, which
    ``async with`` calls. Each ask is one ``ask`` call; the request's signal
    and its cancellation cross as the protocol says. An ask after
    :meth:`aclose` raises ``PROVIDER_DISPOSED``; a child that fails raises
    :class:`~dsh_user_interaction.extra.stdio.ChildFailed` from the asks pending
    on it, and from every later ask at once: it is not restarted, since the
    human may have seen half an ask (make a new provider to try again).

    *timeout* bounds the set-up calls (``new``, ``close``), never an ask: a
    human may take as long as they like. When an ask is cancelled (the
    service's abort or disposal, or the caller's cancellation), it waits at
    most *cancel_grace* seconds for the child to settle it, so that an answer
    the child had already accepted is kept (``HAR-CANCEL-1``).
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = 10.0,
        cancel_grace: float = 0.5,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("StdioProvider needs a command")
        self._connection = Connection(
            argv,
            role="provider",
            bound=timeout,
            suite=__version__,
            spec=SPEC_VERSION,
            cwd=cwd,
            env=env,
            # A cancelled ask waits this long for the child's last word, so an
            # abort through a service stays prompt even if the child ignores it.
            cancel_grace=cancel_grace,
        )
        self._session: Session | None = None
        self._starting: asyncio.Future[Session] | None = None
        self._closed = False

    @property
    def name(self) -> str:
        """The child's implementation name and version, once started."""
        return self._connection.name

    async def start(self) -> Self:
        """Start the child and open its subject, if not done yet."""
        await self._open()
        return self

    async def _open(self) -> Session:
        if self._closed:
            raise UserInteractionError.of(ErrorCode.PROVIDER_DISPOSED)
        if self._session is not None:
            return self._session
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._connect())
        return await asyncio.shield(self._starting)

    async def _connect(self) -> Session:
        await self._connection.aconnect()
        session = await self._connection.open(asyncio.get_running_loop(), heartbeat=False)
        self._session = session
        return session

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Show *request* through the child; its answer, or the error it raised."""
        session = await self._open()
        # Once it settles, what it carried is released on both sides (HAR-RELEASE-1),
        # so a provider that serves for days costs as much per ask as on the first.
        with session.holding() as held:
            return await session.ask("ask", request, held=held)  # type: ignore[return-value] # the service checks it

    async def aclose(self) -> None:
        """Close the subject and stop the child. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._session is not None:
                await self._session.aclose("PRV-LEAK-1")
        finally:
            self._connection.close()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
