"""``python -m dsh_user_interaction serve STORE``: a store's pending asks, on a UI of this machine.

The relay (:func:`~dsh_user_interaction.durable.serve`) runs until Ctrl-C
or SIGTERM, showing every pending ask of *STORE* through the web page or
this terminal and writing each outcome back. *STORE* is a SQLite file, or a
``postgresql://`` address (the ``postgres`` extra). The UI's extra is
imported only here.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import signal
import socket
import sys
from collections.abc import AsyncGenerator

from .._errors import ErrorCode, UserInteractionError
from .._types import UserInteractionProvider
from ._sqlite_store import SQLiteStore
from ._store import AskStore

__all__ = ["run_serve"]


async def _open_store(where: str, schema: str | None) -> AskStore:
    if where.startswith(("postgresql://", "postgres://")):
        from ..extra.postgres import PostgresStore  # noqa: PLC0415 - the extra is optional

        if schema is None:
            return await PostgresStore.connect(where)
        return await PostgresStore.connect(where, schema=schema)
    if schema is not None:
        msg = "--schema is for a PostgreSQL store only"
        raise ValueError(msg)
    return SQLiteStore(where)


class _WrongPort(Exception):
    """The page's port cannot be listened on: the command line's mistake (exit status 2)."""


@contextlib.asynccontextmanager
async def _ui(kind: str, port: int) -> AsyncGenerator[UserInteractionProvider]:
    if kind == "web":
        from ..extra.web import WebProvider  # noqa: PLC0415 - the extra is optional
        from ..extra.web._listen import CannotListen  # noqa: PLC0415 - the extra is optional

        try:
            started = await WebProvider(port=port).start()
        except CannotListen as error:
            msg = f"{error}; pass another --port, or 0 for a free one"
            raise _WrongPort(msg) from error
        async with started as page:
            print(f"Open {page.url} to answer.", file=sys.stderr, flush=True)
            yield page
        return
    from ..extra.terminal import TerminalProvider  # noqa: PLC0415 - the extra is optional

    terminal = TerminalProvider()
    try:
        yield terminal
    finally:
        await terminal.aclose()


async def _serve(
    where: str, schema: str | None, kind: str, port: int, *, via: str, who: str
) -> None:
    from ..durable import serve  # noqa: PLC0415 - the front module, imported when used

    store = await _open_store(where, schema)
    try:
        async with _ui(kind, port) as provider:
            relay = asyncio.ensure_future(serve(store, provider, via=via, principal=who))
            loop = asyncio.get_running_loop()
            for stop in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(stop, relay.cancel)
            print(f"Serving the pending asks of {where} as {who!r} via {via!r}.", file=sys.stderr)
            with contextlib.suppress(asyncio.CancelledError):
                await relay
    finally:
        await store.close()


def run_serve(
    where: str,
    *,
    ui: str = "web",
    port: int = 0,
    schema: str | None = None,
    via: str | None = None,
    principal: str | None = None,
) -> int:
    """Relay *where*'s pending asks to the *ui* (``web`` or ``terminal``) until stopped.

    *via* names this UI in the audit record (``web@HOST`` by default) and
    *principal* who answers here (the login name by default). Exit status 0
    when stopped, 1 when the UI cannot start, 2 when the page's *port*
    cannot be listened on (taken, or not allowed) or the store cannot be
    used (``STORE_FAILED``: a corrupt file, a missing directory, a read-only
    file or file system, a full disk, a layout too new, a server out of
    reach), said on one line (``DUR-SERVE-1``).
    """
    via = via or f"{ui}@{socket.gethostname()}"
    who = principal or getpass.getuser()
    try:
        asyncio.run(_serve(where, schema, ui, port, via=via, who=who))
    except _WrongPort as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except UserInteractionError as error:
        if error.code is not ErrorCode.STORE_FAILED:
            raise
        # DUR-SERVE-1: a store that cannot be used is named on one line, without a traceback.
        print(f"error: {_one_line(str(error))}", file=sys.stderr)
        return 2
    except (ImportError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _one_line(text: str) -> str:
    """*text* on one line: a database's message may hold line breaks."""
    return " ".join(text.split())
