"""The web page in a real browser: what it shows of hidden characters, and of a server that refuses it.

Debian's Chromium headless shell, driven by Playwright, as
``tests/test_web_browser.py`` does: the page is looked at as a person sees
it (its rendered pixels and text), and used by role and accessible name.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from dsh_user_interaction import ScriptedProvider, answer_custom, answer_of
from dsh_user_interaction.durable import SQLiteStore, serve, stored_request
from dsh_user_interaction.extra.terminal._visible import visible
from dsh_user_interaction.extra.web import Limits, WebProvider
from dsh_user_interaction.extra.web._provider import SPARE_CONNECTIONS as SPARE

from .test_web_browser import browser, opened, run, until

pytestmark = pytest.mark.slow

#: Three labels a page that draws text as it is shows alike ("abc"), and one that
#: spells an escape out literally: the page shows the escape apart from it.
LOOK_ALIKE = ["abc", "\u202ecba", "a\u200bbc", "<U+202E>cba"]
#: Characters a page must never draw as they are: they hide or reorder text.
HIDDEN = "\u202e\u202d\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f\ufeff\x1b\t"
#: Seconds a page that did not retry is watched for a retry: it would retry within 0.25 s.
WATCH = 2.0

QUESTION: Any = {
    "id": "which",
    "header": "Which\u200b one",
    "question": "Pick \u202eeno\u202c.\nThen send.",
    "detail": "Line one\nline\u2028\u2029two\x1b[31m",
    "options": [
        {"label": label, "description": f"Option {n}\u200f"} for n, label in enumerate(LOOK_ALIKE)
    ],
}


async def _texts(locator: Any) -> list[str]:
    return [await locator.nth(n).inner_text() for n in range(await locator.count())]


def test_hidden_characters_are_drawn_as_escapes_and_the_exact_label_is_sent() -> None:
    """``abc``, ``\\u202ecba`` and ``a\\u200bbc`` look different; picking one sends it exactly."""

    async def main() -> None:
        async with WebProvider(agent="web-demo\u202eevil") as provider, browser() as chromium:
            request: Any = {"questions": [QUESTION], "agent": "helper\u202eevil"}
            asked = asyncio.ensure_future(provider.ask(request))
            async with opened(provider, chromium) as page:
                card = page.get_by_role("article").first
                await card.wait_for()
                labels = card.locator(".option label")
                shown = await _texts(labels)
                assert shown == ["abc", "<U+202E>cba", "a<U+200B>bc", "<U+202E>cba"]
                # Drawn differently: no two labels give the same pixels, the literal
                # "<U+202E>" included (an escape is drawn in reverse video).
                pictures = [await labels.nth(n).screenshot() for n in range(len(LOOK_ALIKE))]
                assert len(set(pictures)) == len(LOOK_ALIKE)
                escapes = card.locator(".option label .escape")
                assert await _texts(escapes) == ["<U+202E>", "<U+200B>"]
                # Nothing hidden reaches the screen, wherever model text is shown.
                everything = await page.locator("body").inner_text()
                assert not set(HIDDEN) & set(everything), repr(everything)
                assert await page.locator("#agent-name").inner_text() == "web-demo<U+202E>evil"
                assert "From helper<U+202E>evil" in await card.inner_text()
                assert await card.get_by_role("heading").inner_text() == "Which<U+200B> one"
                legend = await card.locator("legend").inner_text()
                assert legend == "Pick <U+202E>eno<U+202C>.\nThen send."  # a line break stays
                details = card.get_by_role("region", name="Details")
                assert await details.inner_text() == "Line one\nline<U+2028><U+2029>two\\x1b[31m"
                # One escape for each run of hidden characters.
                assert await _texts(details.locator(".escape")) == ["<U+2028><U+2029>", "\\x1b"]
                descriptions = await _texts(card.locator(".description"))
                assert descriptions == [f"Option {n}<U+200F>" for n in range(4)]
                # The second option, as a person sees the list, sends its exact label.
                await card.get_by_role("radio").nth(1).check()
                await card.get_by_role("button", name="Send").click()
                assert await asked == {"answers": [{"id": "which", "selected": ["\u202ecba"]}]}
                recent = await page.get_by_role("log").inner_text()
                assert "Which<U+200B> one" in recent

    run(main)


def test_a_plan_cards_buttons_show_hidden_characters_and_send_the_exact_label() -> None:
    plan: Any = {
        "id": "plan",
        "question": "Approve?",
        "detail": "1. Build\n2. Ship",
        "options": [{"label": "Approve"}, {"label": "Keep\u200b planning"}],
        "intent": {"kind": "plan-review", "approve": "Approve"},
    }

    async def main() -> None:
        async with WebProvider() as provider, browser() as chromium:
            asked = asyncio.ensure_future(provider.ask({"questions": [plan]}))
            async with opened(provider, chromium) as page:
                keep = page.get_by_role("button", name="Keep<U+200B> planning")
                await keep.click()
                assert await asked == {
                    "answers": [{"id": "plan", "selected": ["Keep\u200b planning"]}]
                }

    run(main)


async def _status(page: Any, *words: str) -> str:
    """The status line, once it holds every one of *words*."""
    status = page.get_by_role("status")
    while True:
        text: str = await status.inner_text()
        if all(word in text for word in words):
            return text
        await asyncio.sleep(0.02)


def test_a_wrong_secret_is_refused_in_words_and_not_retried() -> None:
    async def main() -> None:
        async with WebProvider() as provider, browser() as chromium:
            where = urlsplit(provider.url)
            context = await chromium.new_context()
            try:
                page = await context.new_page()
                sockets: list[object] = []

                def opened_socket(socket: object) -> None:
                    sockets.append(socket)

                page.on("websocket", opened_socket)
                await page.goto(f"http://{where.netloc}/#secret=not-the-secret")
                text = await _status(page, "refused", "secret")
                assert "Reconnecting" not in text
                # Retrying cannot help: the page opens no other socket.
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(WATCH):
                        await page.wait_for_event("websocket", timeout=0)
                assert len(sockets) == 1
                assert await _status(page, "refused") == text
            finally:
                await context.close()

    run(main)


def test_a_stale_secret_after_the_server_restarted_is_refused_in_words() -> None:
    """The page keeps its tab's secret; a new server on the same port has another."""

    async def main() -> None:
        async with browser() as chromium:
            first = WebProvider()
            await first.start()
            port = urlsplit(first.url).port or 0
            async with opened(first, chromium) as page:
                await _status(page, "Connected")
                await first.aclose()
                await _status(page, "gone")
                async with WebProvider(port=port) as second:
                    assert second.url != first.url
                    await page.reload()
                    text = await _status(page, "refused", "secret")
                    assert "Reconnecting" not in text

    run(main)


def test_a_page_past_the_limit_is_refused_in_words_and_comes_in_when_one_leaves() -> None:
    async def main() -> None:
        async with WebProvider(limits=Limits(max_pages=1)) as provider, browser() as chromium:
            asked = asyncio.ensure_future(provider.ask({"questions": [QUESTION]}))
            await until(lambda: provider.pending_count == 1)
            first = await chromium.new_context()
            second = await chromium.new_context()
            try:
                one = await first.new_page()
                await one.goto(provider.url)
                await one.get_by_role("article").wait_for()
                two = await second.new_page()
                await two.goto(provider.url)
                text = await _status(two, "refused", "pages")
                assert "Reconnecting" not in text
                assert await two.get_by_role("article").count() == 0
                # The first page leaves: the second tries again, and comes in.
                await first.close()
                await _status(two, "Connected")
                await two.get_by_role("article").wait_for()
            finally:
                await first.close()
                await second.close()
            asked.cancel()
            await asyncio.gather(asked, return_exceptions=True)

    run(main)


def test_who_answered_elsewhere_is_shown_with_its_hidden_characters_visible(
    tmp_path: Path,
) -> None:
    """Through a relay, the Recent line names the store's principal and via, made visible."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        async with SQLiteStore(path) as store:
            await store.put("call-1", stored_request({"questions": [QUESTION]}), asked_at=1.0)
        async with (
            SQLiteStore(path, poll_interval=0.005) as store,
            WebProvider() as provider,
            browser() as chromium,
        ):
            relay = asyncio.ensure_future(serve(store, provider, via="desk", principal="ana"))
            try:
                async with opened(provider, chromium) as page:
                    card = page.get_by_role("article")
                    await card.wait_for()
                    other = ScriptedProvider(
                        respond=lambda _r: answer_of(answer_custom("which", "no"))
                    )
                    async with SQLiteStore(path, poll_interval=0.005) as elsewhere:
                        phone = asyncio.ensure_future(
                            serve(elsewhere, other, via="phone\u200b", principal="bo\u202eevil")
                        )
                        try:
                            await card.wait_for(state="detached")
                        finally:
                            phone.cancel()
                            await asyncio.gather(phone, return_exceptions=True)
                    recent = await page.get_by_role("log").inner_text()
                    assert "by bo<U+202E>evil on phone<U+200B>" in recent, recent
                    assert not set(HIDDEN) & set(recent), repr(recent)
            finally:
                relay.cancel()
                await asyncio.gather(relay, return_exceptions=True)

    run(main)


#: One of each kind of character the terminal's visible() escapes, among ones it
#: shows as they are (an accented letter, an emoji, a Hebrew letter), all assigned
#: in the Unicode of Python 3.11 and of the browser alike.
EVERY_KIND = (
    "a\x00\x1f\x7f\x85\u00ad\u034f\u061c\u115f\u180e\u200b\u200e\u2028\u2029\u202a\u202e"
    "\u2060\u2066\u2069\u3164\ufe0f\ufeff\uffa0\ue000\U000e0001\U000e0100\U000f0000\ud800"
    "\t\r\n\u00e9\U0001f600\u05d1\u0378"
)


def test_the_page_escapes_what_the_terminal_escapes_in_the_same_words() -> None:
    """The page and the terminal agree, escape for escape; a line feed stays in a question."""
    question: Any = {
        "id": "kinds",
        "question": f"Q {EVERY_KIND}",
        "options": [{"label": EVERY_KIND}, {"label": "plain"}],
    }

    async def main() -> None:
        async with WebProvider() as provider, browser() as chromium:
            asked = asyncio.ensure_future(provider.ask({"questions": [question]}))
            async with opened(provider, chromium) as page:
                card = page.get_by_role("article")
                await card.wait_for()
                label = await card.locator(".option label").first.inner_text()
                assert label == visible(EVERY_KIND)
                legend = await card.locator("legend").inner_text()
                assert legend == visible(f"Q {EVERY_KIND}", lines=True)
                await card.get_by_role("radio").first.check()
                await card.get_by_role("button", name="Send").click()
                assert await asked == {"answers": [{"id": "kinds", "selected": [EVERY_KIND]}]}

    run(main)


async def _hold_connections(url: str, count: int) -> list[asyncio.StreamWriter]:
    """*count* connections to the page's server, each holding its slot.

    Each sends the first line of a request and waits there: the server
    counts it (its limit turns requests away once it holds as many
    connections as it serves), and no idle timeout of its closes it (the
    test's header deadline is long).
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    held: list[asyncio.StreamWriter] = []
    for _ in range(count):
        _, writer = await asyncio.open_connection(host, port)
        writer.write(f"GET /favicon.ico HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
        await writer.drain()
        held.append(writer)
    return held


def test_a_server_holding_every_connection_is_said_to_be_busy_not_lost() -> None:
    """A socket turned away with 503 closes as a lost one does; the page tells them apart.

    The server holds as many connections as it serves (a page's script
    cannot read the handshake's status): the page asks once, plainly, and
    says the server is busy, keeping its card; once a connection is free it
    comes back. Before, it said "Connection lost" however long it lasted.
    """

    async def main() -> None:
        limits = Limits(max_pages=1, header_deadline=600.0)
        async with WebProvider(limits=limits) as provider, browser() as chromium:
            asked = asyncio.ensure_future(provider.ask({"questions": [QUESTION]}))
            await until(lambda: provider.pending_count == 1)
            try:
                async with opened(provider, chromium) as page:
                    await page.get_by_role("article").wait_for()
                    await _status(page, "Connected")
                    # As many connections as it serves, besides the page's own: every new
                    # request and socket is turned away (HTTP 503) until they close.
                    held = await _hold_connections(provider.url, limits.max_pages + SPARE)
                    try:
                        board = provider._board  # ends the page's socket, server-side
                        for connected in list(board.pages.values()):
                            board.end(connected)
                        text = await _status(page, "busy")
                        assert "Connection lost" not in text
                        assert await page.get_by_role("article").count() == 1
                    finally:
                        for writer in held:
                            writer.close()
                    await _status(page, "Connected")
                    assert await page.get_by_role("article").count() == 1
            finally:
                asked.cancel()
                await asyncio.gather(asked, return_exceptions=True)

    run(main)
