"""What the screen shows for a batch: prompt_toolkit fragments, built from a form's state.

Every piece of model text goes through :func:`._visible.segments`, so no
character a model wrote reaches the terminal raw; it and the agent are read
through :func:`._visible.exact` first, so no override of a str subclass runs.
The status line comes first and is plain ASCII, so a reader (a human or a
driver) always finds which ask and which question is on screen: ``ask #3 |
question 1/2 | 2 unanswered``. A request with a ``deadline`` adds the time
left on the line under it (:func:`countdown_line`), and a question with a
``default`` names it under the question; both in the core's words
(:func:`~dsh_user_interaction.countdown_text`,
:func:`~dsh_user_interaction.default_text`), so every UI says the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.styles import Style

from dsh_user_interaction import AskUserQuestionRequest, countdown_text, default_text
from dsh_user_interaction.extra._reading import exact

from ._form import Form, QuestionState
from ._visible import segments

__all__ = [
    "DETAIL_KEYS",
    "STYLE",
    "countdown_line",
    "default_line",
    "help_items",
    "help_line",
    "question_body",
    "question_parts",
    "status_line",
]

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
        "countdown": "bold",
        "default": "italic",
    }
)

_CURSOR: Final = ("[SetCursorPosition]", "")


def _text(text: object, style: str = "", *, lines: bool = False) -> StyleAndTextTuples:
    """*text* as fragments; a value that is no str at all has no characters to show."""
    return [
        (f"{style} class:escape" if escaped else style, part)
        for escaped, part in segments(exact(text) or "", lines=lines)
    ]


def status_line(number: int, form: Form, before: int, after: int) -> StyleAndTextTuples:
    """Which ask and question are shown, how many are unanswered, and how many asks wait.

    *before* and *after* count the other pending asks before and after this
    one in the queue; the hint names the key that reaches them: PgUp for
    those before, PgDn for those after.
    """
    text = (
        f"ask #{number} | question {form.current + 1}/{len(form.questions)}"
        f" | {form.unanswered} unanswered"
    )
    if before or after:
        keys = "/".join(key for key, count in (("PgUp", before), ("PgDn", after)) if count)
        text += f" | {before + after} more waiting ({keys})"
    return [("class:status", text)]


def countdown_line(request: AskUserQuestionRequest) -> StyleAndTextTuples:
    """The time left to answer, as of now, when the request has a deadline; else nothing.

    The provider shows it under the status line and redraws it as the
    seconds change (``1:15 left to answer``, ``Time is up``).
    """
    text = countdown_text(request)
    return [] if text is None else [("class:countdown", text)]


def default_line(question: Mapping[str, Any]) -> StyleAndTextTuples:
    """The question's default, named on a line of its own (``Default: Wait``); else nothing.

    The labels and the text are model text: they are read through
    :func:`exact` and drawn through :func:`_text`, as every other.
    """
    default: object = question.get("default")
    if not isinstance(default, Mapping):
        return []
    chosen = cast("Mapping[str, object]", default)
    selected = chosen.get("selected")
    labels: list[str] = []
    if isinstance(selected, (list, tuple)):
        labels = [exact(label) or "" for label in cast("Sequence[object]", selected)]
    read: dict[str, object] = {"selected": labels}
    if "custom" in chosen:
        read["custom"] = exact(chosen["custom"]) or ""
    text = default_text({"default": read})
    return [] if text is None else [*_text(text, "class:default"), ("", "\n")]


def question_body(state: QuestionState, asker: str | None = None) -> StyleAndTextTuples:
    """The question on screen: who asks, header, question, detail or plan, options, text field.

    *asker* is what ``agent_name`` (``extra._reading``) made of the request's agent. It is the
    four parts of :func:`question_parts`, one after another.
    """
    return [fragment for part in question_parts(state, asker) for fragment in part]


def question_parts(
    state: QuestionState, asker: str | None = None
) -> tuple[StyleAndTextTuples, StyleAndTextTuples, StyleAndTextTuples, StyleAndTextTuples]:
    """The question's four parts: who asks and the header; the question; the detail; the rest.

    The question part ends with the question's default, when it has one.

    The rest is the answered notice, the options, the text field and the
    notice. The screen shows each part in its own area, so that the
    question stays on screen however many options or detail lines follow.
    """
    question = state.question
    above: StyleAndTextTuples = []
    if asker is not None:
        above += [("", "asked by "), *_text(asker), ("", "\n")]
    header = exact(question.get("header"))
    if header:
        above += [*_text(header, "class:header"), ("", "\n")]
    elif state.plan_review:
        above += [("class:plan", "Plan review"), ("", "\n")]
    asked: StyleAndTextTuples = [*_text(question["question"], lines=True), ("", "\n")]
    asked += default_line(question)
    detail_part: StyleAndTextTuples = []
    detail = exact(question.get("detail"))
    if detail is not None and state.plan_review:
        detail_part += [("class:plan", "--- plan ---\n"), *_text(detail, lines=True)]
        detail_part += [("", "\n"), ("class:plan", "------------\n")]
    elif detail:
        detail_part += [*_text(detail, "class:detail", lines=True), ("", "\n")]
    out: StyleAndTextTuples = []
    if state.answer is not None:
        out += [("class:notice", _answered_notice(state) + "\n")]
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
        description = exact(question.get("options", ())[index].get("description"))
        if description:
            out += [("", "      "), *_text(description, "class:detail"), ("", "\n")]
    out += _field(state)
    if state.notice:
        out += [("class:notice", state.notice + "\n")]
    return above, asked, detail_part, out


def _field(state: QuestionState) -> StyleAndTextTuples:
    field = state.text
    if not state.editing:
        if field.text:
            return [("", "  text: "), *_text(field.text), ("", "\n")]
        return []
    label = "your answer: " if not state.labels else "other: "
    before, after = field.text[: field.caret], field.text[field.caret :]
    return [("", label), *_text(before), _CURSOR, *_text(after), ("", "\n")]


def _answered_notice(state: QuestionState) -> str:
    """What a question answered before says, and the keys that answer it again."""
    done = "skipped" if state.skipped else "answered"
    if state.multi:
        keys = "Enter"
    elif state.labels:
        keys = "Enter or 1-9"
    else:
        keys = "t"
    return f"({done}; {keys} changes it)"


#: The help item of the keys that scroll a detail (or plan) cut by the screen's height.
DETAIL_KEYS: Final = "Ctrl-F/Ctrl-B detail"


def help_items(state: QuestionState, *, detail: bool = False) -> list[str]:
    """The keys that work now, one item per key.

    With *detail* (the detail does not fit on screen), the keys that scroll
    it come before the dismissal.
    """
    scroll = [DETAIL_KEYS] if detail else []
    if state.editing:
        leave = "Tab back to the options" if state.labels else "Tab leave the field"
        return ["type or paste", "Enter submit", leave, *scroll, "Esc dismiss"]
    if state.multi:
        keys = ["Up/Down move", "Space or 1-9 tick", "Enter confirm", "t type", "s skip"]
    elif state.labels:
        keys = ["Up/Down move", "Enter or 1-9 choose", "t type", "s skip"]
    else:
        keys = ["t type", "s skip"]
    return [*keys, "Left/Right question", *scroll, "Esc dismiss"]


def help_line(
    state: QuestionState, width: int | None = None, *, detail: bool = False
) -> StyleAndTextTuples:
    """The keys that work now, broken into lines of at most *width* characters.

    Lines break between items, so no item is split; an item wider than the
    screen breaks between its words. Without *width*, it is one line.
    """
    return [("", "\n".join(_wrap(help_items(state, detail=detail), width)))]


def _wrap(items: list[str], width: int | None) -> list[str]:
    """*items* joined by `` | ``, in lines no wider than *width*, broken only at spaces."""
    lines: list[str] = []
    for item in items:
        if lines and (width is None or len(lines[-1]) + 3 + len(item) <= width):
            lines[-1] += " | " + item
        elif width is None or len(item) <= width:
            lines.append(item)
        else:
            lines += _wrap_words(item.split(" "), width)
    return lines


def _wrap_words(words: list[str], width: int) -> list[str]:
    """*words* joined by spaces, in lines no wider than *width* unless one word is wider."""
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines
