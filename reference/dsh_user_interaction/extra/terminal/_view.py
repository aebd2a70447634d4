"""What the screen shows for a batch: prompt_toolkit fragments, built from a form's state.

Every piece of model text goes through :func:`._visible.segments`, so no
character a model wrote reaches the terminal raw. The status line comes
first and is plain ASCII, so a reader (a human or a driver) always finds
which ask and which question is on screen: ``ask #3 | question 1/2 | 2
unanswered``.
"""

from __future__ import annotations

from typing import Final

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.styles import Style

from ._form import Form, QuestionState
from ._visible import segments

__all__ = ["STYLE", "help_line", "question_body", "status_line"]

#: The look of the screen; escapes are reversed so they stand out from literal text.
STYLE: Final = Style.from_dict(
    {
        "status": "reverse",
        "header": "bold",
        "escape": "reverse",
        "detail": "italic",
        "plan": "bold",
        "cursor": "bold",
        "ticked": "bold",
        "notice": "bold",
    }
)

_CURSOR: Final = ("[SetCursorPosition]", "")


def _text(text: str, style: str = "", *, lines: bool = False) -> StyleAndTextTuples:
    return [
        (f"{style} class:escape" if escaped else style, part)
        for escaped, part in segments(text, lines=lines)
    ]


def status_line(number: int, form: Form, waiting: int) -> StyleAndTextTuples:
    """Which ask and question are shown, how many are unanswered, and how many asks wait."""
    text = (
        f"ask #{number} | question {form.current + 1}/{len(form.questions)}"
        f" | {form.unanswered} unanswered"
    )
    if waiting:
        text += f" | {waiting} more waiting (PgDn)"
    return [("class:status", text)]


def _agent_name(agent: object) -> str | None:
    """Who is asking, read defensively: the agent may be any object (``REQ-AGENT-2``)."""
    if agent is None:
        return None
    try:
        name = getattr(agent, "name", None)
        return name if isinstance(name, str) and name else str(agent)
    except Exception:  # noqa: BLE001 - a hostile agent object must not break the screen
        return type(agent).__name__


def question_body(state: QuestionState, agent: object = None) -> StyleAndTextTuples:
    """The question on screen: who asks, header, question, detail or plan, options, text field."""
    question = state.question
    out: StyleAndTextTuples = []
    name = _agent_name(agent)
    if name is not None:
        out += [("", "asked by "), *_text(name), ("", "\n")]
    header = question.get("header")
    if header:
        out += [*_text(header, "class:header"), ("", "\n")]
    elif state.plan_review:
        out += [("class:plan", "Plan review"), ("", "\n")]
    out += [*_text(question["question"], lines=True), ("", "\n")]
    detail = question.get("detail")
    if detail is not None and state.plan_review:
        out += [("class:plan", "--- plan ---\n"), *_text(detail, lines=True)]
        out += [("", "\n"), ("class:plan", "------------\n")]
    elif detail:
        out += [*_text(detail, "class:detail", lines=True), ("", "\n")]
    if state.answer is not None:
        out += [("class:notice", "(answered; Enter or a pick changes it)\n")]
    for index, label in enumerate(state.labels):
        here = index == state.cursor and not state.editing
        mark = "> " if here else "  "
        box = ""
        if state.multi:
            box = "[x] " if index in state.ticked else "[ ] "
        line: StyleAndTextTuples = [("class:cursor" if here else "", f"{mark}{index + 1}. {box}")]
        if here:
            line.insert(0, _CURSOR)
        line += _text(label, "class:ticked" if index in state.ticked else "")
        out += [*line, ("", "\n")]
        description = question.get("options", ())[index].get("description")
        if description:
            out += [("", "      "), *_text(description, "class:detail"), ("", "\n")]
    out += _field(state)
    if state.notice:
        out += [("class:notice", state.notice + "\n")]
    return out


def _field(state: QuestionState) -> StyleAndTextTuples:
    field = state.text
    if not state.editing:
        if field.text:
            return [("", "  text: "), *_text(field.text), ("", "\n")]
        return []
    label = "your answer: " if not state.labels else "other: "
    before, after = field.text[: field.caret], field.text[field.caret :]
    return [("", label), *_text(before), _CURSOR, *_text(after), ("", "\n")]


def help_line(state: QuestionState) -> StyleAndTextTuples:
    """The keys that work now."""
    if state.editing:
        return [("", "type or paste | Enter submit | Tab back to the options | Esc dismiss")]
    if state.multi:
        keys = "Up/Down move | Space or 1-9 tick | Enter confirm | t type | s skip | "
    elif state.labels:
        keys = "Up/Down move | Enter or 1-9 choose | t type | s skip | "
    else:
        keys = "t type | s skip | "
    return [("", keys + "Left/Right question | Esc dismiss")]
