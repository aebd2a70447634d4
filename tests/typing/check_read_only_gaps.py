# mypy: disable-error-code="misc, typeddict-readonly-mutated"
"""The two read-only mutations pyright does not flag; type-checked, never run.

mypy flags both, so its two codes are off for this file alone (the other
typing checks keep them). A pyright release that starts flagging them fails
here, and the consumer guide's table must then change.
"""

from __future__ import annotations

from dsh_user_interaction import question_of


def missed_by_pyright() -> None:
    question = question_of("q", "Go?")
    question.pop("header")
    other = question_of("q", "Go?")
    other |= {"header": "z"}  # pyright rebinds the name to a dict
