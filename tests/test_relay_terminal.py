"""The terminal served through a relay: how asks ended, and "saved" only once the store has it.

``DUR-TELL-1``: an ask that ended elsewhere is worded in a line that stays
on the terminal. ``DUR-ACK-1``: an answer given here says "sending", then
"saved" only once the store took it, or that it was not saved. On an
emulated screen (``pyte``), driven by its keyboard pipe.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from dsh_user_interaction import ScriptedProvider, answer_of, answer_selected
from dsh_user_interaction.durable import Outcome, SQLiteStore, Verdict, serve, stored_request
from dsh_user_interaction.extra.terminal import TerminalProvider
from dsh_user_interaction.extra.terminal._ended import ended_line, verdict_line
from dsh_user_interaction.extra.terminal.testing import TerminalDriver, make_subject

from .helpers import run
from .test_relay_keeps import Flaky, stopped

QUESTION: Any = {
    "questions": [
        {"id": "q", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
    ]
}


@asynccontextmanager
async def relayed(path: Path) -> AsyncGenerator[tuple[TerminalDriver, Flaky]]:
    subject = make_subject(columns=80, rows=12)
    driver = subject.driver
    assert isinstance(driver, TerminalDriver)
    assert isinstance(subject.provider, TerminalProvider)
    store = Flaky(SQLiteStore(path, poll_interval=0.005))
    relay = asyncio.ensure_future(
        serve(store, subject.provider, via="tty", principal="ana", on_error=lambda _r, _e: None)
    )
    try:
        yield driver, store
    finally:
        await stopped(relay)
        assert subject.aclose is not None
        await subject.aclose()
        await store.close()


async def put(path: Path) -> None:
    async with SQLiteStore(path) as store:
        await store.put("call-1", stored_request(QUESTION), asked_at=1.0)


async def on_screen(driver: TerminalDriver, text: str) -> None:
    while text not in driver.terminal.text():  # noqa: ASYNC110 - the emulated screen
        await asyncio.sleep(0.005)


async def state_of(path: Path) -> str | None:
    async with SQLiteStore(path) as store:
        record = await store.get("call-1")
    return None if record is None else record.state


@pytest.mark.parametrize(
    ("how", "line"),
    [
        ("answered", "[ask #4] answered elsewhere by bo on phone"),
        ("dismissed", "[ask #4] dismissed elsewhere by bo on phone"),
        ("withdrawn", "[ask #4] withdrawn by the agent"),
        ("timed_out", "[ask #4] time ran out"),
        ("defaulted", "[ask #4] time ran out; the defaults were used"),
        ("expired", "[ask #4] expired: no agent came back for it"),
    ],
)
def test_each_ending_has_its_words(how: str, line: str) -> None:
    """DUR-TELL-1: the terminal's words for each way an ask ends; who and where when given."""
    assert ended_line(4, how, principal="bo", via="phone") == line


def test_who_and_where_are_shown_visibly() -> None:
    """DUR-TELL-1: a principal's hidden characters are escaped, as model text is."""
    assert ended_line(1, "answered", principal="\u202eob", via="x") == (
        "[ask #1] answered elsewhere by <U+202E>ob on x"
    )


def test_the_verdicts_have_their_words() -> None:
    """DUR-ACK-1: saved, lost to another outcome, not saved."""
    mine = Outcome.answered(answer_of(answer_selected("q", "Yes")), principal="ana", via="tty")
    theirs = Outcome.cancelled(principal="bo", via="phone")
    assert verdict_line(2, Verdict("a", "saved", mine), dismissed=False) == (
        "[ask #2] answered here; saved"
    )
    assert verdict_line(2, Verdict("a", "lost", theirs), dismissed=False) == (
        "[ask #2] dismissed elsewhere by bo on phone, first: yours was NOT saved"
    )
    assert verdict_line(2, Verdict("a", "unsaved", reason="the relay stopped"), dismissed=True) == (
        "[ask #2] NOT saved: the relay stopped; the question stays pending"
    )


def test_an_ask_answered_on_another_ui_is_worded_on_the_terminal(tmp_path: Path) -> None:
    """DUR-TELL-1: another relay's human answered; the terminal says by whom and where."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path)
        async with relayed(path) as (driver, _store):
            await on_screen(driver, "Deploy?")
            other = ScriptedProvider(respond=lambda _r: answer_of(answer_selected("q", "No")))
            async with SQLiteStore(path, poll_interval=0.005) as store:
                phone = asyncio.ensure_future(serve(store, other, via="phone", principal="bo"))
                await on_screen(driver, "[ask #1] answered elsewhere by bo on phone")
                await stopped(phone)
            assert "Deploy?" not in driver.terminal.text()

    run(main(), bound=30)


def test_an_answer_given_here_is_saved_only_once_the_store_has_it(tmp_path: Path) -> None:
    """DUR-ACK-1: "sending" while the write is held; "answered here; saved" after it."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path)
        async with relayed(path) as (driver, store):
            await on_screen(driver, "Deploy?")
            store.gate.clear()
            driver.keyboard.send_text("1")  # choose Yes: the only question, so the answer
            await on_screen(driver, "[ask #1] sending your answer; not saved yet")
            await store.attempted.wait()
            assert "saved;" not in driver.terminal.text()
            assert "here; saved" not in driver.terminal.text()
            store.gate.set()
            await on_screen(driver, "[ask #1] answered here; saved")
            assert await state_of(path) == "answered"

    run(main(), bound=30)


def test_an_answer_that_lost_the_race_says_it_was_not_saved(tmp_path: Path) -> None:
    """DUR-ACK-1, DUR-TELL-1: another UI's answer was written first; the terminal says so."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path)
        async with relayed(path) as (driver, store):
            await on_screen(driver, "Deploy?")
            store.gate.clear()
            driver.keyboard.send_text("1")
            await store.attempted.wait()
            phone = Outcome.answered(
                answer_of(answer_selected("q", "No")), principal="bo", via="phone"
            )
            await store.inner.settle("call-1", phone, settled_at=2.0)
            store.gate.set()
            await on_screen(
                driver, "[ask #1] answered elsewhere by bo on phone, first: yours was NOT saved"
            )
            assert "answered here" not in driver.terminal.text()

    run(main(), bound=30)
