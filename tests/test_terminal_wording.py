"""What the terminal provider's screen and demo command say: the help line, notices, hints."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.extra.terminal import TerminalProvider
from dsh_user_interaction.extra.terminal._demo import DEMO_REQUEST
from dsh_user_interaction.extra.terminal._form import Form
from dsh_user_interaction.extra.terminal._view import help_items
from dsh_user_interaction.extra.terminal.testing import TerminalDriver, make_subject
from dsh_user_interaction_conformance import Nothing

ENTER, TAB, PAGE_DOWN = "\r", "\t", "\x1b[6~"

_SINGLE: AskUserQuestionRequest = {
    "questions": [
        {"id": "mode", "question": "Which mode?", "options": [{"label": "Fast"}, {"label": "Safe"}]}
    ]
}
_MULTI: AskUserQuestionRequest = {
    "questions": [
        {
            "id": "targets",
            "question": "Which targets?",
            "multiSelect": True,
            "options": [{"label": "tests"}, {"label": "docs"}],
        }
    ]
}
_FREE: AskUserQuestionRequest = {"questions": [{"id": "name", "question": "Branch name?"}]}
_TWO: AskUserQuestionRequest = {
    "questions": [
        *_SINGLE["questions"],
        {"id": "size", "question": "Which size?", "options": [{"label": "S"}, {"label": "L"}]},
    ]
}


class _Screen:
    """A provider on an emulated screen, with its driver's keyboard."""

    def __init__(self, columns: int, rows: int) -> None:
        self.subject = make_subject(columns=columns, rows=rows)
        driver, provider = self.subject.driver, self.subject.provider
        assert isinstance(driver, TerminalDriver)
        assert isinstance(provider, TerminalProvider)
        self.driver, self.provider = driver, provider
        self.tasks: list[asyncio.Future[Any]] = []

    def ask(self, request: AskUserQuestionRequest) -> None:
        self.tasks.append(asyncio.ensure_future(self.provider.ask(request)))

    async def shown(self, request: AskUserQuestionRequest) -> str:
        await asyncio.wait_for(self.driver.perform(request, Nothing()), 5)
        await self.driver.settled()
        return self.driver.terminal.text()

    async def keys(self, *keys: str) -> str:
        for key in keys:
            self.driver.keyboard.send_text(key)
            await self.driver.settled()
        return self.driver.terminal.text()

    async def close(self) -> None:
        assert self.subject.aclose is not None
        await self.subject.aclose()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _on_screen(test: Callable[[_Screen], Any], columns: int = 100, rows: int = 40) -> None:
    async def main() -> None:
        screen = _Screen(columns, rows)
        try:
            await test(screen)
        finally:
            await screen.close()

    asyncio.run(asyncio.wait_for(main(), 20))


def _help_lines(text: str, items: list[str]) -> list[str]:
    """The lines at the bottom of *text* that hold the help line, whose first item is *items[0]*."""
    lines = text.rstrip("\n").splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith(items[0]))
    return lines[start:]


# -- the help line wraps between its items ----------------------------------------


@pytest.mark.parametrize("columns", [40, 100])
@pytest.mark.parametrize("request_", [DEMO_REQUEST, _MULTI, _FREE], ids=["demo", "multi", "free"])
def test_the_help_line_wraps_between_items_never_inside_a_word(
    columns: int, request_: AskUserQuestionRequest
) -> None:
    """At 40 and 100 columns every help item sits whole on one line, and no line splits a word."""

    async def test(s: _Screen) -> None:
        s.ask(request_)
        text = await s.shown(request_)
        items = help_items(Form(request_).state)
        shown = _help_lines(text, items)
        assert all(len(line) <= columns for line in shown)
        for item in items:
            assert any(item in line for line in shown), (item, shown)
        # Each line is a run of whole items, and nothing else.
        for line in shown:
            assert set(line.split(" | ")) <= set(items), line

    _on_screen(test, columns=columns)


def test_a_help_item_wider_than_the_screen_breaks_between_its_words() -> None:
    """At 16 columns an item too wide for a line breaks at a space, never inside a word."""

    async def test(s: _Screen) -> None:
        s.ask(_SINGLE)
        # The driver looks for the status line on one line; at 16 columns it wraps.
        await asyncio.sleep(0.3)
        text = await s.keys()
        shown = _help_lines(text, help_items(Form(_SINGLE).state))
        assert len(shown) > 1
        words = {word for item in help_items(Form(_SINGLE).state) for word in item.split()}
        for line in shown:
            assert set(re.split(r" \| | ", line)) <= words | {"|"}, line

    _on_screen(test, columns=16, rows=30)


# -- a question answered before says how ------------------------------------------


def test_a_skipped_question_revisited_says_it_was_skipped() -> None:
    """After ``s``, going back to the question shows "skipped", never "answered"."""

    async def test(s: _Screen) -> None:
        s.ask(_TWO)
        await s.shown(_TWO)
        text = await s.keys("s", "\x1b[D")
        assert "(skipped; Enter or 1-9 changes it)" in text
        assert "answered;" not in text

    _on_screen(test)


def test_an_answered_question_revisited_still_says_answered() -> None:
    """A question answered by a choice, shown again, says "answered" and the keys that change it."""

    async def test(s: _Screen) -> None:
        s.ask(_TWO)
        await s.shown(_TWO)
        text = await s.keys("1", "\x1b[D")
        assert "(answered; Enter or 1-9 changes it)" in text
        assert "skipped" not in text

    _on_screen(test)


# -- a text-only question has no options to go back to ------------------------------


def test_a_text_only_question_never_offers_the_options() -> None:
    """The text field of a question without options says Tab leaves it, not "back to the options"."""

    async def test(s: _Screen) -> None:
        s.ask(_FREE)
        text = await s.shown(_FREE)
        assert "your answer:" in text
        assert "options" not in text
        assert "Tab leave the field" in text

    _on_screen(test)


def test_the_text_field_of_a_question_with_options_offers_them() -> None:
    """With options, Tab in the text field still says it goes back to them."""

    async def test(s: _Screen) -> None:
        s.ask(_SINGLE)
        await s.shown(_SINGLE)
        text = await s.keys("t")
        assert "Tab back to the options" in text

    _on_screen(test)


# -- the paging hint names the key that reaches the other ask -------------------------


def test_the_paging_hint_names_pgdn_after_and_pgup_before() -> None:
    """The first of two asks says PgDn; paged to the second, it says PgUp; between two, both."""

    async def test(s: _Screen) -> None:
        s.ask(_SINGLE)
        s.ask(_FREE)
        first = (await s.shown(_SINGLE)).splitlines()[0]
        assert first.endswith("| 1 more waiting (PgDn)")
        second = (await s.keys(PAGE_DOWN)).splitlines()[0]
        assert second.startswith("ask #2 |")
        assert second.endswith("| 1 more waiting (PgUp)")
        s.ask(_MULTI)
        await s.driver.settled()
        await asyncio.sleep(0.1)
        middle = (await s.keys()).splitlines()[0]
        assert middle.startswith("ask #2 |")
        assert middle.endswith("| 2 more waiting (PgUp/PgDn)")

    _on_screen(test)


# -- the demo command ------------------------------------------------------------------


@pytest.mark.slow
def test_the_demo_without_a_terminal_says_so_in_one_line_and_exits_2() -> None:
    """With standard input not a terminal, the demo prints one plain line, no traceback."""
    out = subprocess.run(
        [sys.executable, "-m", "dsh_user_interaction", "demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert "needs an interactive terminal" in lines[0]
    assert out.stdout == ""


@pytest.mark.slow
def test_the_help_says_what_the_command_and_the_demo_do() -> None:
    """``--help`` describes the command and what the demo asks and prints, and exits 0."""
    out = subprocess.run(
        [sys.executable, "-m", "dsh_user_interaction", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    assert text.startswith("usage: python -m dsh_user_interaction {demo,web-demo,serve}")
    assert "terminal provider" in text
    assert "sample batch of four questions" in text
    assert "compact JSON" in text
    assert "web-demo: ask the same batch through the web page" in text
