"""The page served through a relay, in a real browser: what the human reads at each verdict.

``DUR-ACK-1``: "Sending…" while the store has not taken the answer, "Answered
here" only once it has, "Answered elsewhere by WHO on WHERE" on the page
that lost, and "Not saved" when the relay stopped first. ``DUR-TELL-1``: an
ask that ended elsewhere is worded. Chromium's headless shell through
Playwright, as in ``tests/test_web_browser.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from dsh_user_interaction import ScriptedProvider, answer_custom, answer_of
from dsh_user_interaction.durable import SQLiteStore, serve, stored_request
from dsh_user_interaction.extra.web import WebProvider

from .test_relay_keeps import Flaky, stopped
from .test_web_browser import browser, opened, run

pytestmark = pytest.mark.slow

QUESTION: Any = {"questions": [{"id": "q", "header": "Deploy", "question": "Deploy now?"}]}


@asynccontextmanager
async def relayed(
    path: Path, *, via: str, principal: str
) -> AsyncGenerator[tuple[WebProvider, Flaky, asyncio.Task[None]]]:
    store = Flaky(SQLiteStore(path, poll_interval=0.005))
    async with WebProvider() as provider:
        relay = asyncio.ensure_future(
            serve(store, provider, via=via, principal=principal, on_error=lambda _r, _e: None)
        )
        try:
            yield provider, store, relay
        finally:
            await stopped(relay)
            await store.close()


async def put(path: Path, ask_id: str) -> None:
    async with SQLiteStore(path) as store:
        await store.put(ask_id, stored_request(QUESTION), asked_at=1.0)


async def state_of(path: Path, ask_id: str) -> str | None:
    async with SQLiteStore(path) as store:
        record = await store.get(ask_id)
    return None if record is None else record.state


async def type_answer(page: Any, text: str) -> Any:
    card = page.get_by_role("article", name="Deploy")
    await card.get_by_role("textbox", name="Answer").fill(text)
    return card


def test_the_page_says_sending_then_answered_here_once_the_store_has_it(tmp_path: Path) -> None:
    """DUR-ACK-1: the card says "Sending…" while the write is held, "Answered here" after."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with (
            relayed(path, via="desk", principal="ana") as (provider, store, _relay),
            browser() as chromium,
            opened(provider, chromium) as page,
        ):
            card = await type_answer(page, "ship it")
            store.gate.clear()
            await card.get_by_role("button", name="Send").click()
            await card.get_by_role("status").get_by_text("Sending…").wait_for()
            await store.attempted.wait()
            log = page.get_by_role("log")
            assert "Answered" not in await log.inner_text()
            store.gate.set()
            await log.get_by_text("Answered here").wait_for()
            assert await state_of(path, "call-1") == "answered"

    run(main)


def test_of_two_pages_one_says_answered_here_and_the_other_answered_elsewhere(
    tmp_path: Path,
) -> None:
    """DUR-ACK-1, DUR-TELL-1: two pages on two relays of one store both press Send at once."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with (
            relayed(path, via="desk", principal="ana") as (desk, desk_store, _r1),
            relayed(path, via="phone", principal="bo") as (phone, phone_store, _r2),
            browser() as chromium,
            opened(desk, chromium) as desk_page,
            opened(phone, chromium) as phone_page,
        ):
            cards = [await type_answer(desk_page, "desk"), await type_answer(phone_page, "phone")]
            desk_store.gate.clear()
            phone_store.gate.clear()
            for card in cards:
                await card.get_by_role("button", name="Send").click()
            await desk_store.attempted.wait()
            await phone_store.attempted.wait()
            desk_store.gate.set()
            phone_store.gate.set()
            async with SQLiteStore(path, poll_interval=0.005) as store:
                while (record := await store.get("call-1")) is None or record.pending:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            winner, loser = (
                (desk_page, phone_page) if record.via == "desk" else (phone_page, desk_page)
            )
            await winner.get_by_role("log").get_by_text("Answered here").wait_for()
            who = "ana on desk" if record.via == "desk" else "bo on phone"
            await loser.get_by_role("log").get_by_text(f"Answered elsewhere by {who}").wait_for()
            assert "Answered here" not in await loser.get_by_role("log").inner_text()

    run(main)


def test_the_page_words_an_answer_given_on_another_ui(tmp_path: Path) -> None:
    """DUR-TELL-1: another relay's human answered: "Answered elsewhere by bo on phone"."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with (
            relayed(path, via="desk", principal="ana") as (provider, _store, _relay),
            browser() as chromium,
            opened(provider, chromium) as page,
        ):
            await page.get_by_role("article", name="Deploy").wait_for()
            other = ScriptedProvider(respond=lambda _r: answer_of(answer_custom("q", "no")))
            async with SQLiteStore(path, poll_interval=0.005) as store:
                phone = asyncio.ensure_future(serve(store, other, via="phone", principal="bo"))
                await (
                    page.get_by_role("log")
                    .get_by_text("Answered elsewhere by bo on phone")
                    .wait_for()
                )
                await stopped(phone)
            assert await page.get_by_role("article", name="Deploy").count() == 0

    run(main)


def test_the_page_says_not_saved_when_the_relay_stops_first(tmp_path: Path) -> None:
    """DUR-KEEP-1, DUR-ACK-1: every write fails, the relay stops: the page says "Not saved"."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with (
            relayed(path, via="desk", principal="ana") as (provider, store, relay),
            browser() as chromium,
            opened(provider, chromium) as page,
        ):
            card = await type_answer(page, "ship it")
            store.failures = 10**6
            await card.get_by_role("button", name="Send").click()
            while store.attempts < 2:  # noqa: ASYNC110 - counted by the wrapper
                await asyncio.sleep(0.01)
            await stopped(relay)
            await page.get_by_role("log").get_by_text("Not saved").wait_for()
            assert "Answered" not in await page.get_by_role("log").inner_text()
        assert await state_of(path, "call-1") == "pending"

    run(main)


def test_the_page_says_still_saving_then_answered_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DUR-ACK-1: past the server's verdict wait the card says "Still saving", then "Answered here".

    The second is the socket's word, once the store has the answer.
    """
    from dsh_user_interaction.extra.web import _app

    monkeypatch.setattr(_app, "VERDICT_WAIT", 0.05)
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with (
            relayed(path, via="desk", principal="ana") as (provider, store, _relay),
            browser() as chromium,
            opened(provider, chromium) as page,
        ):
            card = await type_answer(page, "ship it")
            store.gate.clear()
            await card.get_by_role("button", name="Send").click()
            await card.get_by_text("Still saving: the store has not confirmed it yet.").wait_for()
            assert "Answered" not in await page.get_by_role("log").inner_text()
            store.gate.set()
            await page.get_by_role("log").get_by_text("Answered here").wait_for()

    run(main)


def test_a_relay_killed_mid_answer_leaves_the_card_saying_it_may_not_be_saved(
    tmp_path: Path,
) -> None:
    """DUR-ACK-1: ``serve --ui web`` SIGKILLed before it writes; the page keeps the draft.

    The card stays, with what was typed, and says that the answer may not
    have been saved; nothing says "Answered".
    """
    import signal

    from .test_relay_crash import child, line_of

    path = tmp_path / "asks.db"
    relay = child("web", "--store", f"sqlite:{path}", "--stop-at", "before-write")
    try:
        first = line_of(relay)
        assert first.startswith("url "), first

        async def main() -> None:
            await put(path, "call-1")
            async with browser() as chromium:
                context = await chromium.new_context()
                try:
                    page = await context.new_page()
                    await page.goto(first.split()[1])
                    card = await type_answer(page, "typed before the crash")
                    await card.get_by_role("button", name="Send").click()
                    loop = asyncio.get_running_loop()
                    assert await loop.run_in_executor(None, line_of, relay) == "at before-write\n"
                    relay.send_signal(signal.SIGKILL)
                    await card.get_by_text("Not confirmed: no reply from the server").wait_for()
                    assert "may not have been saved" in await card.inner_text()
                    text = card.get_by_role("textbox", name="Answer")
                    assert await text.input_value() == "typed before the crash"
                    assert "Answered" not in await page.get_by_role("log").inner_text()
                finally:
                    await context.close()

        run(main)
    finally:
        relay.kill()
        relay.wait(timeout=30)
        for stream in (relay.stdin, relay.stdout):
            if stream is not None:
                stream.close()
    assert run_state(path) == "pending"


def run_state(path: Path) -> str | None:
    return asyncio.run(state_of(path, "call-1"))
