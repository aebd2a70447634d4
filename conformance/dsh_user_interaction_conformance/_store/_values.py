"""What a store returned: tests on its values, and their text in a report's line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeGuard, cast

from dsh_user_interaction.durable import AskRecord, Outcome, Settlement

from ._model import differences

__all__ = [
    "awkward_text",
    "brief",
    "diff_text",
    "is_record",
    "is_settlement",
    "later",
    "record_text",
]


def awkward_text(value: object) -> bool:
    """Whether *value* holds text with NUL or a lone surrogate, anywhere."""
    if isinstance(value, str):
        return "\x00" in value or any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        items = cast("dict[object, object]", value).items()
        return any(awkward_text(k) or awkward_text(v) for k, v in items)
    if isinstance(value, (list, tuple)):
        return any(awkward_text(v) for v in cast("Iterable[object]", value))
    if isinstance(value, Outcome):
        return awkward_text([value.answer, value.principal, value.via])
    return False


def is_record(value: object) -> TypeGuard[AskRecord]:
    """Whether *value* is an :class:`AskRecord` (a store may return anything)."""
    return isinstance(value, AskRecord)


def is_settlement(value: object) -> TypeGuard[Settlement]:
    """Whether *value* is a :class:`Settlement` of an :class:`AskRecord`."""
    return isinstance(value, Settlement) and is_record(value.record)


def later(seq: object, high: int) -> bool:
    """Whether *seq* is a change number (an ``int``) larger than *high*."""
    return isinstance(seq, int) and not isinstance(seq, bool) and seq > high


def brief(value: object, limit: int = 160) -> str:
    """``repr(value)``, cut to *limit* characters (its last one kept) for a report's line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]} ...{text[-1]}"


def record_text(record: object) -> str:
    """*record* as a report's line shows it: its id, change and state, and who settled it."""
    if not isinstance(record, AskRecord):
        return brief(record)
    shown = [f"{record.ask_id!r}", f"seq={record.seq!r}", f"state={record.state!r}"]
    if record.settled_at is not None or not record.pending:
        shown += [
            f"principal={record.principal!r}",
            f"via={record.via!r}",
            f"settled_at={record.settled_at!r}",
        ]
    return f"AskRecord({', '.join(shown)}, ...)"


def diff_text(expected: AskRecord, got: AskRecord) -> str:
    """How *got* differs from *expected*, field by field, for a report's line."""
    found = differences(expected, got)
    return "; ".join(
        f"{name} {brief(getattr(got, name))} where it must be {brief(getattr(expected, name))}"
        for name in found
    )
