"""Deadlines and default answers: the request's ``deadline`` and a question's ``default``.

Design notes:

* A deadline is a moment, not a duration: ``deadline`` is seconds since the
  Unix epoch, as :func:`time.time` gives. A UI in another process (a browser,
  a relay after a restart) shows the same time left, and an ask re-asked after
  a restart keeps its deadline instead of starting a new one.
* The application sets both keys; a model never does. The tool builds its
  questions from the model's own keys only, and sets them from its own
  ``deadline=`` and ``recommended_defaults=`` arguments.
* Defaults are all or nothing (``REQ-DEFAULT-2``): when the deadline passes,
  every question is answered by its default, or the ask times out. A batch
  half answered by defaults would put words in the human's mouth for the rest.
* The words a UI shows for either (:func:`countdown_text`, :func:`default_text`)
  live here, so that every UI says the same thing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from ._types import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest

__all__ = [
    "DEADLINE_KEY",
    "DEFAULT_KEY",
    "countdown_text",
    "deadline_of",
    "default_answer",
    "default_text",
    "is_timeout",
    "remaining",
]

#: The request key of the moment the ask's wait ends (``REQ-DEADLINE-1``).
DEADLINE_KEY: Final = "deadline"
#: The question key of the answer used when the deadline passes (``REQ-DEFAULT-1``).
DEFAULT_KEY: Final = "default"


def is_timeout(reason: object) -> bool:
    """Whether an abort *reason* says that time ran out (``POL-TIMEOUT-1``).

    :meth:`AbortSignal.timeout <dsh_user_interaction.AbortSignal.timeout>`
    aborts with a :class:`TimeoutError`, and so may an application's own
    controller.

    >>> is_timeout(TimeoutError("signal timed out")), is_timeout(None)
    (True, False)
    """
    return isinstance(reason, TimeoutError)


def deadline_of(request: object) -> float | None:
    """The request's ``deadline`` as a float, or ``None`` when it has none or a bad one.

    >>> deadline_of({"questions": [], "deadline": 1_800_000_000})
    1800000000.0
    >>> deadline_of({"questions": []}) is None
    True
    """
    if not isinstance(request, Mapping):
        return None
    value: object = cast("Mapping[object, object]", request).get(DEADLINE_KEY)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        moment = float(value)
    except OverflowError:  # an int too large for a float: no moment at all
        return None
    return moment if math.isfinite(moment) else None


def remaining(request: object, now: float | None = None) -> float | None:
    """Seconds left before the request's deadline (never below 0), or ``None`` without one."""
    deadline = deadline_of(request)
    if deadline is None:
        return None
    return max(0.0, deadline - (time.time() if now is None else now))


def default_answer(request: AskUserQuestionRequest) -> AskUserQuestionAnswer | None:
    """The answer the request's defaults give, or ``None`` when they do not apply.

    They apply when the request has a deadline and every question has a
    ``default`` (``REQ-DEFAULT-2``). The answer carries ``"defaulted": True``
    (``POL-DEFAULT-2``), so that nobody mistakes it for the human's.

    >>> default_answer({"deadline": 0, "questions": [
    ...     {"id": "go", "question": "Deploy?", "options": [{"label": "Wait"}],
    ...      "default": {"selected": ["Wait"]}}]})
    {'answers': [{'id': 'go', 'selected': ['Wait']}], 'defaulted': True}
    """
    if deadline_of(request) is None:
        return None
    items: list[AskUserQuestionAnswerItem] = []
    for question in cast("Sequence[Mapping[str, Any]]", request["questions"]):
        default = question.get(DEFAULT_KEY)
        if not isinstance(default, Mapping):
            return None
        chosen = cast("Mapping[str, Any]", default)
        item: AskUserQuestionAnswerItem = {
            "id": question["id"],
            "selected": list(chosen.get("selected", ())),
        }
        if "custom" in chosen:
            item["custom"] = chosen["custom"]
        items.append(item)
    return {"answers": items, "defaulted": True}


def default_text(question: Mapping[str, Any]) -> str | None:
    """How a UI names a question's default, or ``None`` when it has none.

    >>> default_text({"default": {"selected": ["Wait (Recommended)"]}})
    'Default: Wait (Recommended)'
    >>> default_text({"default": {"selected": ["tests", "docs"], "custom": "lint"}})
    'Default: tests, docs, and "lint"'
    >>> default_text({"default": {"selected": ["tests"], "custom": "lint"}})
    'Default: tests and "lint"'
    >>> default_text({"default": {"selected": []}})
    'Default: no answer (skipped)'
    """
    default = question.get(DEFAULT_KEY)
    if not isinstance(default, Mapping):
        return None
    chosen = cast("Mapping[str, Any]", default)
    parts = [str(label) for label in chosen.get("selected", ())]
    if "custom" in chosen:
        parts.append(f'"{chosen["custom"]}"')
    if not parts:
        return "Default: no answer (skipped)"
    if len(parts) > 2 and "custom" in chosen:
        return f"Default: {', '.join(parts[:-1])}, and {parts[-1]}"
    if len(parts) == 2 and "custom" in chosen:
        return f"Default: {parts[0]} and {parts[1]}"
    return f"Default: {', '.join(parts)}"


def _clock(seconds: float) -> str:
    whole = math.ceil(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def countdown_text(request: AskUserQuestionRequest, now: float | None = None) -> str | None:
    """The time-left line a UI shows while a deadline runs, or ``None`` without one.

    >>> request = {"deadline": 1000.0, "questions": [{"id": "q", "question": "Go?"}]}
    >>> countdown_text(request, now=925.5)
    '1:15 left to answer'
    >>> request["questions"][0]["default"] = {"selected": [], "custom": "later"}
    >>> countdown_text(request, now=925.5)
    '1:15 left to answer; then the defaults are used'
    >>> countdown_text(request, now=2000.0)
    'Time is up'
    """
    left = remaining(request, now)
    if left is None:
        return None
    if left <= 0:
        return "Time is up"
    text = f"{_clock(left)} left to answer"
    if default_answer(request) is not None:
        text += "; then the defaults are used"
    return text
