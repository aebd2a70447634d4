"""The browser host: headless Chromium, driven by Playwright, in a process of its own.

Run as ``python -m dsh_user_interaction.extra.web._host SOCKET EXECUTABLE``
by :class:`~dsh_user_interaction.extra.web.testing.Chromium`. It launches
the browser once and serves the conformance driver over a Unix socket, one
connection per subject, in JSON lines: ``{"id", "op", ...}`` in, and
``{"id", "ok": value}`` or ``{"id", "error": type, "message"}`` out;
``{"op": "cancel", "id"}`` cancels a call. The operations:

- ``open`` (``url``, ``width``, ``patience``): a tab at the address, once the
  page says it is connected; its number;
- ``act`` (``tab``, ``ask``, ``questions``, ``behaviour``, ``patience``): the
  human's gestures on the ask's card (see ``_gestures.py``);
- ``count`` (``tab``, ``ask``): how many cards of the ask the tab shows;
- ``markup`` (``tab``): how many elements carry the suite's probe attribute
  (model text that became markup, ``WEB-MARKUP-1``);
- ``close`` (``tab``): the tab kept, as it is, for the next ``open`` of its width;
- ``act-on`` (as ``act``): the same, on one of several tabs of a page, where
  another tab's action may end the ask first; whether the action went through;
- ``told`` (``tab``, ``ask``, ``patience``): what the tab's "Recent" list says
  of how the ask ended, or ``None``;
- ``reload`` (``tab``, ``patience``): the tab reloaded, once it is connected again;
- ``shut`` (``tab``): the tab closed for good, as its human closing it would.

Why a process: Playwright's client is Python. In the suite's process, on a
thread, it holds the interpreter's lock while it works, and on a busy
machine the scheduler can stop it there for a third of a second, during
which the provider's event loop cannot run: the suite would fail a correct
page with ``PRV-LOOP-1``. It exits when its parent does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any, Final

from playwright.async_api import Browser, Page, async_playwright

from ._chromium import LINE_LIMIT
from ._gestures import (
    act,
    act_unless_ended,
    card_count,
    connected,
    markup_count,
    open_page,
    told_text,
)
from ._wire import decode_behaviour

__all__ = ["main"]

#: Seconds between looks at whether the parent process is still there.
PARENT_POLL: Final = 0.5


@dataclass(eq=False)
class _Tab:
    page: Page
    #: The human's one pair of hands at this tab (see ``act``).
    hands: asyncio.Lock = field(default_factory=asyncio.Lock)


class _Host:
    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.tabs: dict[int, _Tab] = {}
        self.idle: dict[int, list[Page]] = {}
        self._numbers = itertools.count(1)

    async def open(self, url: str, width: int, patience: float) -> int:
        idle = self.idle.get(width, [])
        page = idle.pop() if idle else None
        if page is None or page.is_closed():
            context = await self.browser.new_context(viewport={"width": width, "height": 800})
            page = await context.new_page()
        try:
            await open_page(page, url, patience)
        except BaseException:
            await page.context.close()
            raise
        number = next(self._numbers)
        self.tabs[number] = _Tab(page)
        return number

    def close(self, number: int) -> None:
        """Keep the tab for the next ``open`` of its width, still showing its page.

        That ``open`` navigates it, which unloads the old page and closes its
        socket. Going to ``about:blank`` first cost a renderer process each
        time: a subject's CPU time in the browser nearly doubled (0.28 s
        against 0.15 s, measured over 30 subjects).
        """
        tab = self.tabs.pop(number, None)
        if tab is not None:
            width = (tab.page.viewport_size or {"width": 0})["width"]
            self.idle.setdefault(width, []).append(tab.page)

    async def call(self, op: str, request: dict[str, Any]) -> object:
        if op == "open":
            return await self.open(request["url"], request["width"], request["patience"])
        if op == "close":
            self.close(request["tab"])
            return None
        if op == "shut":
            shut = self.tabs.pop(request["tab"], None)
            if shut is not None:
                async with shut.hands:
                    await shut.page.context.close()
            return None
        tab = self.tabs[request["tab"]]
        if op == "count":
            return await card_count(tab.page, request["ask"], tab.hands)
        if op == "markup":
            return await markup_count(tab.page, tab.hands)
        if op == "told":
            return await told_text(tab.page, request["ask"], request["patience"])
        if op == "reload":
            async with tab.hands:
                await tab.page.reload()
                await connected(tab.page, request["patience"])
            return None
        if op == "act-on":
            return await act_unless_ended(
                tab.page,
                request["ask"],
                request["questions"],
                decode_behaviour(request["behaviour"]),
                hands=tab.hands,
                patience=request["patience"],
            )
        if op == "act":
            await act(
                tab.page,
                request["ask"],
                request["questions"],
                decode_behaviour(request["behaviour"]),
                hands=tab.hands,
                patience=request["patience"],
            )
            return None
        msg = f"no operation {op!r}"
        raise ValueError(msg)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One subject's connection: its calls run at once, each in a task of its own."""
        running: dict[int, asyncio.Task[None]] = {}
        opened: set[int] = set()

        async def answer(number: int, op: str, request: dict[str, Any]) -> None:
            try:
                value = await self.call(op, request)
            except asyncio.CancelledError:
                reply: dict[str, Any] = {"id": number, "cancelled": True}
            except Exception as error:  # noqa: BLE001 - every failure goes back to the caller
                reply = {"id": number, "error": type(error).__name__, "message": str(error)}
            else:
                if op == "open" and isinstance(value, int):
                    opened.add(value)
                reply = {"id": number, "ok": value}
            finally:
                running.pop(number, None)
            writer.write(json.dumps(reply, ensure_ascii=True).encode() + b"\n")

        try:
            while line := await reader.readline():
                request = json.loads(line)
                number = request["id"]
                if request["op"] == "cancel":
                    task = running.get(number)
                    if task is not None:
                        task.cancel()
                    continue
                running[number] = asyncio.ensure_future(answer(number, request["op"], request))
        finally:
            for task in list(running.values()):
                task.cancel()
            await asyncio.gather(*running.values(), return_exceptions=True)
            for number in opened:
                self.close(number)
            writer.close()


async def _until_stopped(parent: int) -> None:
    """Until SIGTERM comes, or the parent process has gone."""
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    while os.getppid() == parent and not stopped.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(PARENT_POLL):
                await stopped.wait()


async def _main(path: str, executable: str, parent: int) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable)
        try:
            host = _Host(browser)
            server = await asyncio.start_unix_server(host.serve, path, limit=LINE_LIMIT)
            async with server:
                await _until_stopped(parent)
        finally:
            await browser.close()


def main(argv: list[str] | None = None) -> int:
    """Serve the driver on the socket ``argv[0]`` with the Chromium ``argv[1]``, until orphaned."""
    path, executable = (argv if argv is not None else sys.argv[1:])[:2]
    parent = os.getppid()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(path, executable, parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
