"""Headless Chromium for the conformance driver, in a browser host process of its own.

The suite runs every example in a fresh event loop, and judges that loop:
nothing but the provider may hold it up. So the browser and Playwright run
in another process (``_host.py``), started once and shared by every subject;
each subject talks to it over a Unix socket connection of its own, opened in
its example's loop (:meth:`Chromium.connect`). No thread of this process
drives the browser.

The browser is Debian's (or whichever executable ``DSH_CHROMIUM`` names),
found by :func:`chromium_executable`: Playwright cannot download a browser on
every machine, and a downloaded one is not the system's. Its headless shell
(Debian's ``chromium-headless-shell``, the build Playwright itself runs for
headless pages) comes first, then the full ``chromium``: the same engine
without the desktop browser around it, it took 114 CPU seconds for the
project's browser tests where the full browser took 189 (its browser process
7 s where the full one's took 17, for the whole suite through the page), and
it installs without GTK.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Final

__all__ = ["Chromium", "HostConnection", "chromium_executable", "shared_chromium"]

#: The environment variable naming the browser's executable, when it is not ``chromium``.
EXECUTABLE_VARIABLE: Final = "DSH_CHROMIUM"
#: Seconds the host may take to launch the browser and listen.
START_TIMEOUT: Final = 60.0
#: Seconds closing waits for the host to close the browser.
CLOSE_TIMEOUT: Final = 10.0
_NAMES: Final = ("chromium-headless-shell", "chromium", "chromium-browser")
#: The errors the host reports that are raised here as themselves.
_ERRORS: Final[dict[str, type[Exception]]] = {
    "AssertionError": AssertionError,
    "TimeoutError": TimeoutError,
    "ValueError": ValueError,
}

#: The longest line either end reads: a call carries a request's questions, and
#: the suite's hostile text, escaped to ASCII, can take several bytes a
#: character (asyncio's default, 64 KiB, closed the connection on one).
LINE_LIMIT: Final = 64 * 1024 * 1024


def chromium_executable() -> str | None:
    """The Chromium to drive: ``$DSH_CHROMIUM``, else the first of ``_NAMES`` on the ``PATH``.

    None when there is none: ``chromium-headless-shell``, ``chromium`` and
    ``chromium-browser`` are looked for, in that order.
    """
    named = os.environ.get(EXECUTABLE_VARIABLE)
    if named:
        return named if os.path.exists(named) else None
    for name in _NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


class HostConnection:
    """One subject's connection to the browser host, in its example's event loop."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._calls: dict[int, asyncio.Future[object]] = {}
        self._numbers = itertools.count(1)
        self._reading = asyncio.ensure_future(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                reply: dict[str, Any] = json.loads(line)
                waiting = self._calls.pop(reply["id"], None)
                if waiting is None or waiting.done():
                    continue
                if "error" in reply:
                    kind = _ERRORS.get(reply["error"])
                    message = reply["message"]
                    waiting.set_exception(
                        kind(message) if kind else RuntimeError(f"{reply['error']}: {message}")
                    )
                elif "ok" in reply:
                    waiting.set_result(reply["ok"])
                else:
                    waiting.cancel()
        finally:
            for waiting in self._calls.values():
                if not waiting.done():
                    waiting.set_exception(ConnectionError("the browser host went away"))
            self._calls.clear()

    def _send(self, message: dict[str, Any]) -> None:
        self._writer.write(json.dumps(message, ensure_ascii=True).encode() + b"\n")

    async def call(self, op: str, **params: object) -> Any:  # noqa: ANN401 - JSON
        """Run *op* in the host; cancelling the wait cancels it there too."""
        if self._reading.done():
            msg = "the browser host went away"
            raise ConnectionError(msg)
        number = next(self._numbers)
        waiting: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._calls[number] = waiting
        self._send({"id": number, "op": op, **params})
        try:
            return await waiting
        except asyncio.CancelledError:
            self._calls.pop(number, None)
            with contextlib.suppress(OSError):
                self._send({"id": number, "op": "cancel"})
            raise

    async def aclose(self) -> None:
        """Close the connection: the host closes this subject's tabs and stops its calls."""
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()
        self._reading.cancel()
        await asyncio.gather(self._reading, return_exceptions=True)


class Chromium:
    """One headless Chromium, in a browser host process, usable from any event loop.

    The host starts at the first :meth:`connect`, and stops at :meth:`close`
    (which :func:`shared_chromium` arranges at exit) or when this process ends.
    """

    def __init__(self, executable: str | None = None) -> None:
        self._executable = executable
        self._lock = threading.Lock()
        self._host: subprocess.Popen[bytes] | None = None
        self._folder: Path | None = None
        self._closed = False

    def _start(self) -> tuple[subprocess.Popen[bytes], Path]:
        with self._lock:
            if self._closed:
                msg = "this Chromium was closed"
                raise RuntimeError(msg)
            if self._host is None or self._folder is None:
                executable = self._executable or chromium_executable()
                if executable is None:
                    msg = (
                        "no Chromium to drive: install Debian's headless shell "
                        "(apt-get install chromium-headless-shell) or chromium, "
                        f"or name one in ${EXECUTABLE_VARIABLE}"
                    )
                    raise FileNotFoundError(msg)
                folder = Path(tempfile.mkdtemp(prefix="dsh-chromium-"))
                with (folder / "host.log").open("wb") as log:
                    self._host = subprocess.Popen(  # noqa: S603 - this interpreter, our module
                        [
                            sys.executable, "-m", "dsh_user_interaction.extra.web._host",
                            str(folder / "host.sock"), executable,
                        ],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=log,
                    )  # fmt: skip
                self._folder = folder
            return self._host, self._folder

    async def connect(self) -> HostConnection:
        """A connection of its own to the host, which is started on first use."""
        host, folder = self._start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(
                    str(folder / "host.sock"), limit=LINE_LIMIT
                )
            except OSError:
                if host.poll() is not None:
                    said = (folder / "host.log").read_text(errors="replace")[-2000:]
                    msg = f"the browser host stopped (status {host.returncode}):\n{said}"
                    raise RuntimeError(msg) from None
                if loop.time() > deadline:
                    msg = f"the browser host did not listen within {START_TIMEOUT:g} s"
                    raise TimeoutError(msg) from None
                await asyncio.sleep(0.02)
            else:
                return HostConnection(reader, writer)

    def close(self) -> None:
        """Stop the host, and the browser with it. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            host, folder = self._host, self._folder
        if host is not None:
            host.terminate()
            try:
                host.wait(CLOSE_TIMEOUT)
            except subprocess.TimeoutExpired:
                host.kill()
                host.wait()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


_shared: Chromium | None = None
_shared_lock = threading.Lock()


def shared_chromium() -> Chromium:
    """The process's Chromium, made on first use and closed at exit."""
    global _shared  # noqa: PLW0603 - one browser per process, made lazily
    with _shared_lock:
        if _shared is None:
            _shared = Chromium()
            atexit.register(_shared.close)
        return _shared
