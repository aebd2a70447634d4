"""Where two texts part, in code points: what a report shows when they only look alike.

Two strings can print the same and differ: ``'Å'`` as one code point or as
``A`` and a combining ring, a no-break space for a space, a zero-width
character. A report that quotes both with ``repr`` shows two identical
strings, so it also says where they first differ and what each holds there,
code point by code point, with the characters' Unicode names.
"""

from __future__ import annotations

import unicodedata
from typing import Final

#: How many code points of each text are shown from where they part.
SHOWN: Final = 4


#: What a code point without a Unicode name is, by its general category.
_UNNAMED: Final = {"Cc": "(control)", "Cs": "(lone surrogate)", "Co": "(private use)"}


def _name(char: str) -> str:
    return unicodedata.name(char, "") or _UNNAMED.get(unicodedata.category(char), "(unassigned)")


def _code_points(text: str) -> str:
    return ", ".join(f"U+{ord(char):04X} {_name(char)}" for char in text)


def _from(text: str, index: int) -> str:
    part = text[index : index + SHOWN]
    if not part:
        return "nothing more"
    more = len(text) - index - len(part)
    return _code_points(part) + (f" and {more} more" if more else "")


def describe_difference(expected: str, found: str) -> str:
    """Where *found* first differs from *expected*, code point by code point.

    >>> print(describe_difference("\u00c5!", "A\u030a!"))
    they first differ at character 0 (of 2 and 3): expected U+00C5 LATIN CAPITAL
    LETTER A WITH RING ABOVE, U+0021 EXCLAMATION MARK; found U+0041 LATIN CAPITAL
    LETTER A, U+030A COMBINING RING ABOVE, U+0021 EXCLAMATION MARK
    """
    index = next(
        (n for n, (a, b) in enumerate(zip(expected, found, strict=False)) if a != b),
        min(len(expected), len(found)),
    )
    return (
        f"they first differ at character {index} (of {len(expected)} and {len(found)}): "
        f"expected {_from(expected, index)}; found {_from(found, index)}"
    )
