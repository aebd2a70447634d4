"""How the screen's rows are shared, so that the question is always on screen.

The screen is, top to bottom: the status line (and the countdown under it,
when the request has a deadline), who asks and the header, the question (and
its default, if any), its detail (or plan), the options and the text field,
and the help line. The status and help lines get all their rows; what is
left (the body) is shared by :func:`share`, which gives rows in this order of
priority:

1. the question's first row;
2. the highlighted option, or the detail when the human is reading it
   (Ctrl-F or Ctrl-B pressed since the last other key);
3. the other of those two;
4. a few rows of options around the highlight;
5. who asks and the header, when they fit whole;
6. the rest of the question;
7. the rest, between the detail and the options (the detail takes at most
   half of it while the options want more).

The question, the header and the detail are drawn from rows wrapped here
(:func:`rows`), so the detail scrolls by rows, a long paragraph included;
the options window scrolls itself to keep the highlight (or the caret) in
view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.utils import get_cwidth

__all__ = ["Shares", "rows", "share"]

#: How many rows of options the highlight gets before the header and the rest of the question.
OPTIONS_FIRST: Final = 3


def rows(fragments: StyleAndTextTuples, width: int) -> list[StyleAndTextTuples]:
    """*fragments* in screen rows of at most *width* cells, broken at line feeds and between words.

    A row that is full breaks after its last space, and the word it was in
    starts the next row; a space that falls where a row breaks is the break
    itself (a row never starts with it). A word longer than the whole row is
    broken where the row is full, and a character wider than the whole row
    gets a row of its own. A final line feed ends the last row without
    starting another.
    """
    width = max(1, width)
    out: list[list[tuple[str, str]]] = [[]]
    used = 0
    for fragment in fragments:
        style, text = fragment[0], fragment[1]
        for char in text:
            if char == "\n":
                out.append([])
                used = 0
                continue
            cells = get_cwidth(char)
            if used and used + cells > width:
                if char == " ":
                    out.append([])
                    used = 0
                    continue
                word = _word_at_end(out[-1])
                carried = sum(get_cwidth(c) for _, c in out[-1][len(out[-1]) - word :])
                if word and carried + cells <= width:
                    # The word moves to the next row whole.
                    out.append(out[-1][len(out[-1]) - word :])
                    del out[-2][len(out[-2]) - word :]
                    used = carried
                else:  # no space in the row, or a word longer than a row: break where full
                    out.append([])
                    used = 0
            out[-1].append((style, char))
            used += cells
    if not out[-1]:
        out.pop()
    return [_fragments(row) for row in out]


def _word_at_end(row: list[tuple[str, str]]) -> int:
    """How many characters follow the last space of *row*; 0 when it has no space."""
    for index in range(len(row) - 1, -1, -1):
        if row[index][1] == " ":
            return len(row) - index - 1
    return 0


def _fragments(row: list[tuple[str, str]]) -> StyleAndTextTuples:
    """One row's characters as fragments, a fragment per run of one style."""
    found: StyleAndTextTuples = []
    for style, char in row:
        if found and found[-1][0] == style:
            found[-1] = (style, found[-1][1] + char)
        else:
            found.append((style, char))
    return found


@dataclass(frozen=True)
class Shares:
    """The rows each part of the body gets."""

    above: int = 0
    question: int = 0
    detail: int = 0
    options: int = 0


def share(
    body: int, above: int, question: int, detail: int, options: int, *, reading: bool = False
) -> Shares:
    """Share *body* rows between the parts, which want *above*, *question*... rows in full.

    See the module's docstring for the order. The options get every row
    left over, so the help line stays at the bottom of the screen.
    """
    left = max(0, body)

    def take(want: int) -> int:
        nonlocal left
        got = max(0, min(want, left))
        left -= got
        return got

    got_question = take(min(question, 1))
    if reading:
        got_detail = take(min(detail, 1))
        got_options = take(min(options, 1))
    else:
        got_options = take(min(options, 1))
        got_detail = take(min(detail, 1))
    got_options += take(min(options, OPTIONS_FIRST) - got_options)
    got_above = take(above) if above <= left else 0
    got_question += take(question - got_question)
    wanted_by_options = max(0, options - got_options)
    got_detail += take(min(detail - got_detail, max(left // 2, left - wanted_by_options)))
    got_options += left
    return Shares(got_above, got_question, got_detail, got_options)
