"""What a page is sent of a request: plain JSON, model text as exact strings.

The request may hold anything a caller put in it (a signal, an agent object,
extra keys, str subclasses). The page gets only what it shows, read through
:func:`~dsh_user_interaction.extra._reading.exact`, so no code of the
caller's runs and the message always encodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from dsh_user_interaction.extra._reading import agent_name, exact

__all__ = ["ask_view"]

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


def ask_view(ask_id: str, request: Mapping[str, object]) -> dict[str, Any]:
    """The ``ASK`` a page is sent for *request* under *ask_id* (the web page's contract).

    >>> question = {"id": "q", "question": "Go?", "options": [{"label": "Yes"}]}
    >>> ask_view("a1", {"questions": [question], "agent": "planner"})["questions"]
    [{'id': 'q', 'question': 'Go?', 'multiSelect': False, 'options': [{'label': 'Yes'}]}]
    """
    listed = request.get("questions")
    questions = cast("list[object]", listed) if isinstance(listed, list | tuple) else []
    return {
        "askId": ask_id,
        "agent": agent_name(request.get("agent")),
        "questions": [
            _question(cast("Mapping[str, object]", q)) for q in questions if isinstance(q, Mapping)
        ],
    }
