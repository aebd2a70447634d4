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

__all__ = ["Segment", "segments", "visible"]

#: One run of text: whether it is an escape standing for a hidden character, and its text.
Segment = tuple[bool, str]

_NAMED: Final = {"\t": "\\t", "\r": "\\r", "\n": "\\n"}
#: Categories whose characters a terminal could act on, or that hide or reorder text.
_HIDDEN: Final = frozenset({"Cf", "Zl", "Zp", "Co", "Cn", "Cs"})


def _escape(char: str) -> str | None:
    """The escape for *char*, or ``None`` when it is shown as itself."""
    category = unicodedata.category(char)
    if category == "Cc":
        return _NAMED.get(char) or f"\\x{ord(char):02x}"
    if category in _HIDDEN:
        return f"<U+{ord(char):04X}>"
    return None


@functools.lru_cache(maxsize=256)
def segments(text: str, *, lines: bool = False) -> tuple[Segment, ...]:
    """Split *text* into plain runs and escapes; with *lines*, ``\\n`` stays a line break.

    Cached: the screen redraws the same texts on every key.
    """
    if text.isprintable():  # no control, format, separator or unassigned character
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
