"""The terminal provider on small screens and long questions: the question always stays on screen.

Whatever the screen's size, the question (its first row at least) is on
screen, the header too when it fits and the highlight is on the first
option; a detail taller than its area is paged with the keys the help line
names (Ctrl-F, Ctrl-B); and the ask can still be answered.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh_user_interaction import AskUserQuestionRequest
from dsh_user_interaction.extra.terminal._layout import rows, share

from .test_terminal import Session, session

UP, DOWN, ENTER, CTRL_F, CTRL_B = "\x1b[A", "\x1b[B", "\r", "\x06", "\x02"
SIZES = [(100, 30), (40, 12), (20, 10)]
QUESTION = "Which one?"
HEADER = "Pick"
DETAIL_START, DETAIL_END = "Detail starts here.", "Detail ends here."
#: 2,000 characters of detail, one paragraph, with a recognisable start and end.
DETAIL = DETAIL_START + " " + "lorem ipsum " * 163 + DETAIL_END


def _request(*, detail: str | None = None) -> AskUserQuestionRequest:
    question: Any = {
        "id": "q",
        "header": HEADER,
        "question": QUESTION,
        "options": [{"label": f"option {n}"} for n in range(1, 31)],
    }
    if detail is not None:
        question["detail"] = detail
    return {"questions": [question]}


async def _drawn(s: Session) -> str:
    """The screen once the status line is drawn (its start; it may wrap at 20 columns).

    The driver finds an ask by its whole status line, so at 20 columns the
    test waits for the screen itself.
    """
    for _ in range(500):
        if s.screen().startswith("ask #1"):
            break
        await asyncio.sleep(0.005)
    await s.driver.settled()
    return s.screen()


def _run(main: Any) -> None:
    asyncio.run(asyncio.wait_for(main(), 20))


@pytest.mark.parametrize(("columns", "rows_"), SIZES)
def test_the_question_stays_on_screen_after_the_highlight_wraps(columns: int, rows_: int) -> None:
    """Up (to the last of 30 options) then Down (back to the first) leaves the question on screen.

    The header shows too when the highlight is back on the first option and
    the screen has room for it (at 100x30); the ask is then answered.
    """

    async def main() -> None:
        async with session(columns=columns, rows=rows_) as s:
            task = s.ask(_request())
            assert QUESTION in await _drawn(s)
            screen = await s.keys(UP)
            assert "> 30. option 30" in screen
            assert QUESTION in screen
            screen = await s.keys(DOWN)
            assert "> 1. option 1" in screen
            assert QUESTION in screen
            if rows_ >= 30:
                assert f"{HEADER}\n{QUESTION}\n> 1. option 1" in screen
            await s.keys(DOWN, ENTER)
            assert await task == {"answers": [{"id": "q", "selected": ["option 2"]}]}

    _run(main)


@pytest.mark.parametrize(("columns", "rows_"), SIZES)
def test_a_long_detail_is_paged_by_the_keys_the_help_line_names(columns: int, rows_: int) -> None:
    """With a 2,000-character detail and 30 options, the question is always on screen.

    The help line names Ctrl-F/Ctrl-B; the detail's start is on screen or
    one Ctrl-F away, its end is reached by Ctrl-F and its start again by
    Ctrl-B; the options come back with Up/Down and the ask is answered.
    """

    async def main() -> None:
        async with session(columns=columns, rows=rows_) as s:
            task = s.ask(_request(detail=DETAIL))
            screen = await _drawn(s)
            assert QUESTION in screen
            assert "Ctrl-F/Ctrl-B detail" in screen
            if DETAIL_START not in screen:
                screen = await s.keys(CTRL_F)
            assert DETAIL_START in screen
            assert QUESTION in screen
            # Page down until the detail's last row is shown (rows wrapped between
            # words repeat the same words, so two pages may look alike).
            for _ in range(len(DETAIL) // 10):
                if DETAIL_END[-5:] in screen:
                    break
                screen = await s.keys(CTRL_F)
                assert QUESTION in screen
            assert DETAIL_END[-5:] in screen
            for _ in range(len(DETAIL) // 10):
                if DETAIL_START in screen:
                    break
                screen = await s.keys(CTRL_B)
                assert QUESTION in screen
            assert DETAIL_START in screen
            screen = await s.keys(UP, DOWN, DOWN)
            assert QUESTION in screen
            assert "> 2. option 2" in screen
            await s.keys(ENTER)
            assert await task == {"answers": [{"id": "q", "selected": ["option 2"]}]}

    _run(main)


def test_rows_break_at_line_feeds_and_where_the_row_is_full() -> None:
    """A row holds at most *width* cells; a wide character never straddles two rows."""
    assert rows([("", "abcdef\ngh\n")], 4) == [[("", "abcd")], [("", "ef")], [("", "gh")]]
    assert rows([("", "a\u4e00\u4e00")], 2) == [[("", "a")], [("", "\u4e00")], [("", "\u4e00")]]


#: A question whose word "host" straddles column 40: a row broken where full shows "hos|t".
HOST_QUESTION = "Before the release goes live, pick a host to deploy to first: staging or prod?"


def test_rows_break_between_words_and_inside_a_word_only_when_it_is_longer_than_the_row() -> None:
    """A full row breaks after its last space; only a word wider than a row is broken."""
    assert HOST_QUESTION[37:41] == "host"  # "hos|t" when broken where the row is full
    wrapped = ["".join(part[1] for part in row) for row in rows([("", HOST_QUESTION)], 40)]
    assert wrapped == [
        "Before the release goes live, pick a ",
        "host to deploy to first: staging or ",
        "prod?",
    ]
    # A space where the row breaks is the break itself; styles are kept, run by run.
    assert rows([("b", "hello "), ("", "world")], 5) == [[("b", "hello")], [("", "world")]]
    assert rows([("b", "one "), ("", "two three")], 8) == [
        [("b", "one "), ("", "two ")],
        [("", "three")],
    ]
    # A word longer than the row is broken where the row is full.
    assert rows([("", "a " + "x" * 12)], 5) == [
        [("", "a ")],
        [("", "xxxxx")],
        [("", "xxxxx")],
        [("", "xx")],
    ]


def test_the_question_wraps_between_words_on_a_40_column_screen() -> None:
    """At 40 columns the question's rows end between words: "host" is whole on the screen."""

    async def main() -> None:
        async with session(columns=40, rows=12) as s:
            request: Any = {"questions": [{"id": "q", "question": HOST_QUESTION}]}
            task = s.ask(request)
            screen = await _drawn(s)
            lines = screen.splitlines()
            assert "Before the release goes live, pick a" in lines
            assert any(line.startswith("host to deploy to first: staging or") for line in lines)
            assert not any(line.endswith("hos") for line in lines)
            await s.keys("\x1b")
            await asyncio.wait({task})

    _run(main)


def test_the_question_and_the_highlight_come_first_then_the_header() -> None:
    """Three rows go to the question, the highlight and the detail; the header only when it fits."""
    shares = share(3, above=1, question=1, detail=50, options=30)
    assert (shares.above, shares.question, shares.detail, shares.options) == (0, 1, 1, 1)
    reading = share(2, above=1, question=1, detail=50, options=30, reading=True)
    assert (reading.question, reading.detail, reading.options) == (1, 1, 0)
    roomy = share(30, above=1, question=1, detail=2, options=3)
    assert (roomy.above, roomy.question, roomy.detail, roomy.options) == (1, 1, 2, 26)
