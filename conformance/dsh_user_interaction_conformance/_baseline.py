"""Baselines: the failures a run expects, coarse or recorded with how they fail.

A baseline file is ``{"expected-failures": {"REQ-ID": ENTRY, ...}}``, where
an entry is either

* a reason (``"REQ-ID": "why it fails"``): every failure of the requirement
  is expected, the coarse form; or
* a recorded entry, ``{"reason": "...", "failures": [FORM, ...]}``, with each
  way it is known to fail as ``{"check": "service-order[REQ-QUESTIONS-1]",
  "cause": "TypeError"}``: the check (and case) whose example fails it, and
  the error code or exception type the failure names (``""`` for none, such
  as a wrong value). A failure of the requirement in any other check case,
  or with another cause, is a new failure, and fails the run.

``--write-baseline FILE`` writes the recorded form of a run's failures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from ._engine import FailureRecord
from ._registry import requirements

__all__ = ["BaselineEntry", "FailureForm", "parse_baseline", "recorded_baseline"]

_SHAPE = (
    'expected {"expected-failures": {"REQ-ID": "reason" or '
    '{"reason": "...", "failures": [{"check": "...", "cause": "..."}, ...]}, ...}}'
)


#: The most of a failure's message a recorded reason quotes.
_REASON = 300


@dataclass(frozen=True)
class FailureForm:
    """One recorded way a requirement fails: where, and with what."""

    #: The check, with its case in brackets when it has cases (``service-order[REQ-ID-1]``).
    check: str
    #: The error code or exception type the failure names; ``""`` when it names none.
    cause: str = ""

    def matches(self, failure: FailureRecord) -> bool:
        """Whether *failure* is this one: the same check case, and the same cause."""
        return failure.check == self.check and failure.cause == self.cause

    def as_dict(self) -> dict[str, str]:
        """The JSON form of a baseline file."""
        return {"check": self.check, "cause": self.cause}


@dataclass(frozen=True)
class BaselineEntry:
    """Why a requirement is expected to fail, and, when recorded, how."""

    reason: str
    #: The known ways it fails; ``None`` for a coarse entry, where any failure is expected.
    failures: tuple[FailureForm, ...] | None = None

    def unexpected(self, found: Iterable[FailureRecord]) -> list[FailureRecord]:
        """The failures in *found* that this entry does not expect."""
        if self.failures is None:
            return []
        return [f for f in found if not any(form.matches(f) for form in self.failures)]


def parse_baseline(data: object) -> dict[str, BaselineEntry]:
    """Read a baseline file's JSON; raise :class:`ValueError` naming the field and the problem.

    >>> entries = parse_baseline({"expected-failures": {
    ...     "SVC-PASS-1": "copies the request",
    ...     "REQ-ID-1": {"reason": "no checks", "failures": [
    ...         {"check": "service-order[REQ-ID-1]", "cause": "TypeError"}]}}})
    >>> entries["SVC-PASS-1"].failures is None, entries["REQ-ID-1"].failures[0].cause
    (True, 'TypeError')
    """
    if not isinstance(data, dict):
        raise ValueError(_SHAPE)
    listed: object = cast("dict[str, object]", data).get("expected-failures")
    if not isinstance(listed, dict):
        raise ValueError(_SHAPE)
    known = requirements()
    found: dict[str, BaselineEntry] = {}
    for rid, value in cast("dict[object, object]", listed).items():
        if not isinstance(rid, str):
            raise ValueError(_SHAPE)
        if rid not in known:
            raise ValueError(f"the baseline names {rid!r}, which is no requirement of the spec")
        found[rid] = _entry(rid, value)
    return found


def _entry(rid: str, value: object) -> BaselineEntry:
    if isinstance(value, str):
        return BaselineEntry(value)
    if not isinstance(value, dict):
        raise ValueError(f"{rid}: expected a reason or an object, got {value!r}")
    entry = cast("dict[str, object]", value)
    unknown = sorted(set(entry) - {"reason", "failures"})
    if unknown:
        raise ValueError(f"{rid}: unknown key {unknown[0]!r}; expected reason and failures")
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(f"{rid}.reason: expected a non-empty text, got {reason!r}")
    failures = entry.get("failures")
    if not isinstance(failures, list) or not failures:
        raise ValueError(f"{rid}.failures: expected a non-empty list, got {failures!r}")
    forms: list[FailureForm] = []
    for index, raw in enumerate(cast("list[object]", failures)):
        where = f"{rid}.failures[{index}]"
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected an object, got {raw!r}")
        form = cast("dict[str, object]", raw)
        if sorted(form) not in (["check"], ["cause", "check"]):
            raise ValueError(f"{where}: expected the keys check and cause, got {sorted(form)}")
        check, cause = form.get("check"), form.get("cause", "")
        if not isinstance(check, str) or not check:
            raise ValueError(f"{where}.check: expected a check name, got {check!r}")
        if not isinstance(cause, str):
            raise ValueError(f"{where}.cause: expected a text, got {cause!r}")
        forms.append(FailureForm(check, cause))
    return BaselineEntry(reason, tuple(forms))


def recorded_baseline(
    failures: Mapping[str, Iterable[FailureRecord]],
    previous: Mapping[str, BaselineEntry] | None = None,
) -> dict[str, Any]:
    """The recorded baseline of a run's *failures*, by requirement, as a file's JSON.

    Each entry keeps its reason from *previous* when it had one; otherwise the
    reason is the first failure's message, for a person to replace with why.
    """
    entries: dict[str, Any] = {}
    for rid in sorted(failures):
        found = list(failures[rid])
        if not found:
            continue
        forms: list[FailureForm] = []
        for failure in found:
            form = FailureForm(failure.check, failure.cause)
            if form not in forms:
                forms.append(form)
        before = (previous or {}).get(rid)
        first = found[0].message
        shown = first if len(first) <= _REASON else first[: _REASON - 3] + "..."
        reason = before.reason if before is not None else f"recorded: {shown}"
        entries[rid] = {"reason": reason, "failures": [form.as_dict() for form in forms]}
    return {"expected-failures": entries}
