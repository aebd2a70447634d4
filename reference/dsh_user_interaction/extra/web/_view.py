"""What a page is sent of a request: plain JSON, model text as exact strings.

The request may hold anything a caller put in it (a signal, an agent object,
extra keys, str subclasses). The page gets only what it shows, read through
:func:`~dsh_user_interaction.extra._reading.exact`, so no code of the
caller's runs and the message always encodes.

A deadline and the defaults are sent as the core's own words
(:func:`~dsh_user_interaction.countdown_text`,
:func:`~dsh_user_interaction.default_text`): the page only fills in the
clock, counting down from the seconds left when the message was made, on its
own monotonic clock. The browser may run on another machine, whose clock
need not agree with the server's; a duration survives that, an epoch time
does not.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final, cast

from dsh_user_interaction._deadline import DEFAULT_KEY, countdown_text, deadline_of, default_text
from dsh_user_interaction.extra._reading import agent_name, exact

__all__ = ["CLOCK", "ask_view", "time_left"]

#: What the page's countdown template holds where the clock goes (``1:15``, ``1:00:05``).
CLOCK: Final = "{clock}"
#: The clock :func:`~dsh_user_interaction.countdown_text` writes for half a second left.
_ONE_SECOND: Final = "0:01"

_TEXT_KEYS = ("header", "detail")


def _text(value: object) -> str:
    return exact(value) or ""


def _question(question: Mapping[str, object]) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": _text(question.get("id")),
        "question": _text(question.get("question")),
    }
    for key in _TEXT_KEYS:
        if key in question:
            view[key] = _text(question.get(key))
    view["multiSelect"] = question.get("multiSelect") is True
    shown_default = _default(question)
    if shown_default is not None:
        view["defaultText"] = shown_default
    options: list[dict[str, str]] = []
    listed = question.get("options")
    for item in cast("list[object]", listed) if isinstance(listed, list | tuple) else ():
        if isinstance(item, Mapping):
            option = cast("Mapping[str, object]", item)
            shown = {"label": _text(option.get("label"))}
            if "description" in option:
                shown["description"] = _text(option.get("description"))
            options.append(shown)
    view["options"] = options
    intent = question.get("intent")
    if isinstance(intent, Mapping):
        held = cast("Mapping[str, object]", intent)
        view["intent"] = {"kind": _text(held.get("kind")), "approve": _text(held.get("approve"))}
    return view


def _default(question: Mapping[str, object]) -> str | None:
    """The question's default line, worded by the core from an exact copy of the default."""
    given = question.get(DEFAULT_KEY)
    if not isinstance(given, Mapping):
        return None
    default = cast("Mapping[str, object]", given)
    picked = default.get("selected")
    labels = cast("list[object]", picked) if isinstance(picked, list | tuple) else []
    copy: dict[str, object] = {"selected": [_text(label) for label in labels]}
    if "custom" in default:
        copy["custom"] = _text(default.get("custom"))
    return default_text({DEFAULT_KEY: copy})


def _countdown(request: Mapping[str, object], deadline: float) -> dict[str, Any]:
    """The countdown's words: a template holding :data:`CLOCK`, and the line at zero."""
    wording = cast("Any", request)  # a checked request: countdown_text reads its defaults
    running = countdown_text(wording, now=deadline - 0.5) or ""
    template = running.replace(_ONE_SECOND, CLOCK, 1)
    return {"template": template, "timeUp": countdown_text(wording, now=deadline) or ""}


def ask_view(ask_id: str, request: Mapping[str, object]) -> dict[str, Any]:
    """The ``ASK`` a page is sent for *request* under *ask_id* (the web page's contract).

    With a deadline it has a ``countdown``, whose ``secondsLeft``
    :func:`time_left` fills in each time the view is sent; without one it has
    none, and the page shows none.

    >>> question = {"id": "q", "question": "Go?", "options": [{"label": "Yes"}]}
    >>> ask_view("a1", {"questions": [question], "agent": "planner"})["questions"]
    [{'id': 'q', 'question': 'Go?', 'multiSelect': False, 'options': [{'label': 'Yes'}]}]
    >>> question["default"] = {"selected": ["Yes"]}
    >>> view = ask_view("a1", {"questions": [question], "deadline": 1000.0})
    >>> view["questions"][0]["defaultText"]
    'Default: Yes'
    >>> view["countdown"]
    {'template': '{clock} left to answer; then the defaults are used', 'timeUp': 'Time is up'}
    """
    listed = request.get("questions")
    questions = cast("list[object]", listed) if isinstance(listed, list | tuple) else []
    view: dict[str, Any] = {
        "askId": ask_id,
        "agent": agent_name(request.get("agent")),
        "questions": [
            _question(cast("Mapping[str, object]", q)) for q in questions if isinstance(q, Mapping)
        ],
    }
    deadline = deadline_of(request)
    if deadline is not None:
        view["countdown"] = _countdown(request, deadline)
    return view


def time_left(
    view: dict[str, Any], deadline: float | None, now: float | None = None
) -> dict[str, Any]:
    """*view* as sent at *now* (by default, now): its countdown's ``secondsLeft`` filled in.

    The page is sent the seconds left before *deadline*, never the deadline
    itself: an epoch time, which the page's clock need not agree with. A view
    without a deadline is sent as it is.

    >>> view = ask_view("a1", {"questions": [{"id": "q", "question": "Go?"}], "deadline": 100.0})
    >>> time_left(view, 100.0, now=25.5)["countdown"]
    {'template': '{clock} left to answer', 'timeUp': 'Time is up', 'secondsLeft': 74.5}
    >>> time_left(view, 100.0, now=200.0)["countdown"]["secondsLeft"]
    0.0
    """
    countdown: dict[str, Any] | None = view.get("countdown")
    if countdown is None or deadline is None:
        return view
    left = max(0.0, deadline - (time.time() if now is None else now))
    return {**view, "countdown": {**countdown, "secondsLeft": left}}
