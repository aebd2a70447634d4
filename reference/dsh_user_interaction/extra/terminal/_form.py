"""What the human has done so far with one batch: the form's state, without any terminal.

Each key the terminal reads becomes one method call here, so the rules are
plain Python and testable without a screen. Invariants:

* A question is *open* (shown, not yet answered) or *answered*; the batch is
  complete when every question is answered, and only then has an answer.
* Labels are echoed exactly as offered, and multi-select labels come in
  option order, whatever order they were ticked in (``ANS-MULTI-2``).
* Custom text is kept exactly as typed or pasted; it is submitted only when
  it is not blank (JavaScript's ``trim``, ``ANS-CUSTOM-1``). On a
  single-select question it overrides the choice; on a multi-select it
  supplements the ticked labels.
* A question without options starts in the text field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    is_blank,
)

from ._visible import exact

__all__ = ["Field", "Form", "QuestionState"]


@dataclass
class Field:
    """The custom-text field of one question: its text and where the caret is."""

    text: str = ""
    caret: int = 0

    def insert(self, text: str) -> None:
        """Insert *text* at the caret, exactly as given."""
        self.text = self.text[: self.caret] + text + self.text[self.caret :]
        self.caret += len(text)

    def backspace(self) -> None:
        """Delete the character before the caret."""
        if self.caret:
            self.text = self.text[: self.caret - 1] + self.text[self.caret :]
            self.caret -= 1

    def delete(self) -> None:
        """Delete the character under the caret."""
        self.text = self.text[: self.caret] + self.text[self.caret + 1 :]

    def move(self, delta: int) -> None:
        """Move the caret by *delta* characters, within the text."""
        self.caret = max(0, min(len(self.text), self.caret + delta))

    def clear(self) -> None:
        """Empty the field."""
        self.text, self.caret = "", 0


@dataclass
class QuestionState:
    """One question of the batch, as the human has left it."""

    question: AskUserQuestionItem
    #: The option labels, in option order.
    labels: list[str]
    multi: bool
    #: The highlighted option.
    cursor: int = 0
    #: The ticked options of a multi-select question, by index.
    ticked: set[int] = field(default_factory=set[int])
    text: Field = field(default_factory=Field)
    #: Whether keys go to the text field.
    editing: bool = False
    #: The answer item, once the question is answered.
    answer: AskUserQuestionAnswerItem | None = None
    #: Whether that answer came from a skip (``s``), not from a choice or text.
    skipped: bool = False
    #: A one-line hint for the human, shown until the next key.
    notice: str = ""
    #: The first row of the detail (or plan) on screen, when it does not fit whole.
    detail_top: int = 0
    #: Whether the human is reading the detail: Ctrl-F or Ctrl-B was the last key.
    reading: bool = False

    @property
    def plan_review(self) -> bool:
        """Whether this question is shown as a plan card."""
        intent = self.question.get("intent")
        return (
            intent is not None
            # Read as plain text: a str subclass's own __eq__ never runs.
            and exact(intent.get("kind")) == "plan-review"
            and not self.multi
            and 0 < len(self.labels) <= 2
        )

    def item(self, selected: list[str], custom: str | None = None) -> AskUserQuestionAnswerItem:
        """An answer item for this question; *selected* is a fresh list."""
        item: AskUserQuestionAnswerItem = {"id": self.question["id"], "selected": selected}
        if custom is not None:
            item["custom"] = custom
        return item

    def ticked_labels(self) -> list[str]:
        """The ticked labels, in option order."""
        return [label for index, label in enumerate(self.labels) if index in self.ticked]


class Form:
    """One batch on screen: a question at a time, answered with the keys of the terminal."""

    def __init__(self, request: AskUserQuestionRequest) -> None:
        self.questions = [
            QuestionState(
                question=question,
                labels=[option["label"] for option in question.get("options", ())],
                multi=question.get("multiSelect") is True,
            )
            for question in request["questions"]
        ]
        for state in self.questions:
            state.editing = not state.labels
        #: The index of the question on screen.
        self.current = 0

    @property
    def state(self) -> QuestionState:
        """The question on screen."""
        return self.questions[self.current]

    @property
    def unanswered(self) -> int:
        """How many questions still have no answer."""
        return sum(1 for state in self.questions if state.answer is None)

    @property
    def complete(self) -> bool:
        """Whether every question is answered."""
        return self.unanswered == 0

    def answer(self) -> AskUserQuestionAnswer:
        """The batch's answer, in question order; only once it is complete."""
        items = [state.answer for state in self.questions]
        if any(item is None for item in items):
            msg = "the batch is not complete"
            raise RuntimeError(msg)
        return {"answers": [item for item in items if item is not None]}

    # -- keys that work everywhere ------------------------------------------------

    def go(self, delta: int) -> None:
        """Show the previous (-1) or next (+1) question, answered or not."""
        self.current = (self.current + delta) % len(self.questions)

    def _answered(self, item: AskUserQuestionAnswerItem, *, skipped: bool = False) -> None:
        state = self.state
        state.answer = item
        state.skipped = skipped
        state.editing = False
        state.notice = ""
        for step in range(1, len(self.questions) + 1):
            index = (self.current + step) % len(self.questions)
            if self.questions[index].answer is None:
                self.current = index
                return

    # -- the option list ------------------------------------------------------------

    def move(self, delta: int) -> None:
        """Move the highlight up (-1) or down (+1), wrapping around."""
        state = self.state
        if state.labels:
            state.cursor = (state.cursor + delta) % len(state.labels)

    def number(self, number: int) -> None:
        """The option with this 1-based number: chosen on a single-select, toggled on a multi."""
        state = self.state
        if not 1 <= number <= len(state.labels):
            return
        state.cursor = number - 1
        if state.multi:
            self.toggle()
        else:
            self.confirm()

    def toggle(self) -> None:
        """Tick or untick the highlighted option of a multi-select question."""
        state = self.state
        if state.multi and state.labels:
            state.ticked ^= {state.cursor}

    def confirm(self) -> None:
        """Enter on the option list: answer with the highlighted or the ticked options.

        On a multi-select question, text left in the field (not blank) comes too.
        """
        state = self.state
        if not state.labels:
            state.editing = True
            return
        if not state.multi:
            self._answered(state.item([state.labels[state.cursor]]))
            return
        text = state.text.text
        self._answered(state.item(state.ticked_labels(), None if is_blank(text) else text))

    def skip(self) -> None:
        """Skip the question: nothing picked, nothing typed."""
        self._answered(self.state.item([]), skipped=True)

    # -- the text field -------------------------------------------------------------

    def open_text(self) -> None:
        """Move the keys to the text field."""
        self.state.editing = True

    def leave_text(self) -> None:
        """Move the keys back to the option list; the text stays in the field."""
        self.state.editing = False

    def submit_text(self) -> None:
        """Enter in the text field: answer with the text, unless it is blank.

        On a single-select question the text overrides the choice; on a
        multi-select it comes with the ticked options.
        """
        state = self.state
        text = state.text.text
        if is_blank(text):
            state.notice = "type an answer first (Tab leaves the field)"
            return
        selected = state.ticked_labels() if state.multi else []
        self._answered(state.item(selected, text))
