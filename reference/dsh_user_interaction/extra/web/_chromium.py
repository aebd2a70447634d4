"""Headless Chromium, driven by Playwright on a thread and an event loop of its own.

The conformance suite runs every example in a fresh event loop, and a
Playwright browser belongs to the loop that launched it. So the browser lives
on a thread of its own, launched once per process and shared by every
subject, and each call into it is a coroutine run on that thread's loop and
awaited from the example's (:meth:`Chromium.run`). The example's loop never
blocks on the browser: a slow page costs it nothing, and the suite's stall
rule (``PRV-LOOP-1``) judges only the provider.

Playwright cannot download a browser on every machine, and a downloaded one
is not the system's: the browser is Debian's ``chromium`` (or whichever
executable ``DSH_CHROMIUM`` names), found by :func:`chromium_executable`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import shutil
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

from playwright.async_api import Browser, Error, Page, Playwright, async_playwright

__all__ = ["Chromium", "chromium_executable", "shared_chromium"]

T = TypeVar("T")

#: The environment variable naming the browser's executable, when it is not ``chromium``.
EXECUTABLE_VARIABLE: Final = "DSH_CHROMIUM"
#: Seconds closing waits for the browser and Playwright's driver to stop.
CLOSE_TIMEOUT: Final = 10.0
_NAMES: Final = ("chromium", "chromium-browser")


def chromium_executable() -> str | None:
    """The Chromium to drive: ``$DSH_CHROMIUM``, else ``chromium`` on the ``PATH``, else None."""
    named = os.environ.get(EXECUTABLE_VARIABLE)
    if named:
        return named if os.path.exists(named) else None
    for name in _NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


class Chromium:
    """One headless Chromium, on a thread of its own, callable from any event loop.

    It starts on the first :meth:`run`, and stops at :meth:`close` (which
    :func:`shared_chromium` arranges at exit).
    """

    def __init__(self, executable: str | None = None) -> None:
        self._executable = executable
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._launched: concurrent.futures.Future[tuple[Playwright, Browser]] | None = None
        self._closed = False
        #: Blank tabs given back, by width, for the next :meth:`tab`; used on the browser's loop.
        self._idle: dict[int, list[Page]] = {}

    def _start(self) -> tuple[asyncio.AbstractEventLoop, concurrent.futures.Future[Any]]:
        with self._lock:
            if self._closed:
                msg = "this Chromium was closed"
                raise RuntimeError(msg)
            if self._loop is None or self._launched is None:
                executable = self._executable or chromium_executable()
                if executable is None:
                    msg = (
                        "no Chromium to drive: install Debian's chromium "
                        f"(apt-get install chromium), or name one in ${EXECUTABLE_VARIABLE}"
                    )
                    raise FileNotFoundError(msg)
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="dsh-chromium", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
                self._launched = asyncio.run_coroutine_threadsafe(_launch(executable), loop)
            return self._loop, self._launched

    async def browser(self) -> Browser:
        """The browser, launched on first use; call it only inside :meth:`run`."""
        _, launched = self._start()
        browser: Browser = (await asyncio.wrap_future(launched))[1]
        return browser

    async def tab(self, width: int, height: int = 800) -> Page:
        """A blank tab of its own (its own browser context), *width* CSS pixels wide.

        A tab given back is reused: opening one costs more than blanking one.
        Call it only inside :meth:`run`.
        """
        idle = self._idle.get(width)
        while idle:
            page = idle.pop()
            if not page.is_closed():
                return page
        context = await (await self.browser()).new_context(
            viewport={"width": width, "height": height}
        )
        return await context.new_page()

    async def give_back(self, page: Page) -> None:
        """Blank *page* and keep it for the next :meth:`tab`; close it if it will not blank."""
        width = (page.viewport_size or {"width": 0})["width"]
        try:
            await page.goto("about:blank")
        except Error:
            await page.context.close()
            return
        self._idle.setdefault(width, []).append(page)

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """Await ``call()`` run on the browser's loop, from any other loop.

        Cancelling the wait cancels the call.
        """
        loop, launched = self._start()
        await asyncio.wrap_future(launched)  # a failed launch raises here

        async def called() -> T:
            return await call()

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(called(), loop))

    def close(self) -> None:
        """Stop the browser and its thread; from any thread but the browser's. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread, launched = self._loop, self._thread, self._launched
        if loop is None or thread is None or launched is None:
            return
        stopping = asyncio.run_coroutine_threadsafe(_stop(launched), loop)
        try:
            stopping.result(CLOSE_TIMEOUT)
        except (concurrent.futures.TimeoutError, Exception):  # noqa: BLE001 - closing anyway
            stopping.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CLOSE_TIMEOUT)
        if not thread.is_alive():
            loop.close()


async def _launch(executable: str) -> tuple[Playwright, Browser]:
    playwright = await async_playwright().start()
    try:
        browser = await playwright.chromium.launch(executable_path=executable)
    except BaseException:
        await playwright.stop()
        raise
    return playwright, browser


async def _stop(launched: concurrent.futures.Future[tuple[Playwright, Browser]]) -> None:
    if not launched.done() or launched.exception() is not None:
        return
    playwright, browser = launched.result()
    try:
        await browser.close()
    finally:
        await playwright.stop()


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
