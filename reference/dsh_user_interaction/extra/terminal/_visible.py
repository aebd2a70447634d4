"""Model text made visible: the terminal never interprets what a model wrote.

Control characters (C0, DEL, C1; so ANSI CSI and OSC sequences lose their
ESC), format characters (bidi overrides and isolates, zero-width characters,
the byte order mark), line and paragraph separators, private-use and
unassigned code points are all shown as escapes, never written raw. Only a
line feed may stay a line break, where the text is a paragraph.

>>> visible("\\x1b[31mred\\x1b[0m \\u202eevil")
'\\\\x1b[31mred\\\\x1b[0m <U+202E>evil'
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Final

from dsh_user_interaction.extra._reading import exact

__all__ = ["Segment", "exact", "segments", "visible"]

#: One run of text: whether it is an escape standing for a hidden character, and its text.
Segment = tuple[bool, str]

_NAMED: Final = {"\t": "\\t", "\r": "\\r", "\n": "\\n"}
#: Categories whose characters a terminal could act on, or that hide or reorder text.
_HIDDEN: Final = frozenset({"Cf", "Zl", "Zp", "Co", "Cn", "Cs"})
#: Characters outside those categories that draw nothing, so two labels could look
#: alike: Unicode's default-ignorable code points that are not format characters
#: (the combining grapheme joiner, Hangul fillers, variation selectors, Mongolian
#: free variation selectors), and the blank braille pattern.
_INVISIBLE: Final = frozenset(
    chr(code)
    for first, last in (
        (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
        (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
        (0xE0100, 0xE01EF),
    )
    for code in range(first, last + 1)
)  # fmt: skip


def _escape(char: str) -> str | None:
    """The escape for *char*, or ``None`` when it is shown as itself."""
    if char in _INVISIBLE:
        return f"<U+{ord(char):04X}>"
    category = unicodedata.category(char)
    if category == "Cc":
        return _NAMED.get(char) or f"\\x{ord(char):02x}"
    if category in _HIDDEN:
        return f"<U+{ord(char):04X}>"
    return None


def segments(text: str, *, lines: bool = False) -> tuple[Segment, ...]:
    """Split *text* into plain runs and escapes; with *lines*, ``\\n`` stays a line break.

    Cached: the screen redraws the same texts on every key. The cache hashes
    and compares the text, so a str subclass is first copied to a plain
    ``str``: its own ``__hash__`` and ``__eq__`` never run.
    """
    return _segments(str.__str__(text), lines=lines)


@functools.lru_cache(maxsize=256)
def _segments(text: str, *, lines: bool) -> tuple[Segment, ...]:
    if text.isprintable() and _INVISIBLE.isdisjoint(text):  # nothing hidden or controlling
        return ((False, text),) if text else ()
    out: list[Segment] = []
    plain: list[str] = []
    for char in text:
        escaped = None if lines and char == "\n" else _escape(char)
        if escaped is None:
            plain.append(char)
            continue
        if plain:
            out.append((False, "".join(plain)))
            plain = []
        out.append((True, escaped))
    if plain:
        out.append((False, "".join(plain)))
    return tuple(out)


def visible(text: str, *, lines: bool = False) -> str:
    """*text* as the terminal shows it: every hidden or control character escaped."""
    return "".join(part for _, part in segments(text, lines=lines))
