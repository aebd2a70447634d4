"""What the simulated human does, and the answer the spec requires for it.

A behaviour is either a per-question list of :data:`Action` values, or one of
the batch-level outcomes :class:`Dismiss` and :class:`Nothing`. An action and
a dismissal may name the *way* the human does it, one of the ways the driver
declares for it (:attr:`Capabilities.ways <dsh_user_interaction_conformance.Capabilities.ways>`):
Esc or Ctrl-C, say. ``None`` is the UI's usual way.
:func:`expected_answer` is the oracle: it maps actions to the one answer the
spec requires (``PRV-ANSWER-1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Literal, TypeAlias

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
)

__all__ = [
    "WAYS_FOR",
    "Action",
    "Behaviour",
    "Dismiss",
    "Nothing",
    "Pick",
    "Revise",
    "Skip",
    "Step",
    "TypeText",
    "expected_answer",
    "held_after",
    "revised",
]


#: The actions a driver may declare several ways of doing (``Capabilities.ways``).
WAYS_FOR = ("dismiss", "skip", "pick", "type")


def _shown(self: object) -> str:
    """The dataclass's repr, without ``way`` when it is the usual one (``None``)."""
    shown = [
        f"{f.name}={getattr(self, f.name)!r}"
        for f in fields(self)  # type: ignore[arg-type] # only the dataclasses below
        if not (f.name == "way" and getattr(self, f.name) is None)
    ]
    return f"{type(self).__name__}({', '.join(shown)})"


@dataclass(frozen=True, slots=True)
class Pick:
    """Pick these option labels, in this order (one label on a single-select)."""

    labels: tuple[str, ...]
    #: One of the driver's declared ways to pick, or ``None`` for the usual one.
    way: str | None = None

    __repr__ = _shown


@dataclass(frozen=True, slots=True)
class TypeText:
    """Type custom *text*; on a multi-select, also pick *labels* ("pick and type").

    Named ``Type`` before 0.3.0; that name still works for one release, with a
    ``DeprecationWarning``, since it shadowed :class:`typing.Type`.
    """

    text: str
    labels: tuple[str, ...] = ()
    #: One of the driver's declared ways to type, or ``None`` for the usual one.
    way: str | None = None

    __repr__ = _shown


@dataclass(frozen=True, slots=True)
class Skip:
    """Skip the question: nothing picked, nothing typed."""

    #: One of the driver's declared ways to skip, or ``None`` for the usual one.
    way: str | None = None

    __repr__ = _shown


#: One step of :class:`Revise`: pick or unpick an option's label, type text
#: (replacing what the text field held), clear the text field (``""``), skip
#: the question or take the skip back (``""`` both).
Step: TypeAlias = tuple[Literal["pick", "unpick", "type", "clear", "skip", "unskip"], str]


@dataclass(frozen=True, slots=True)
class Revise:
    """Change one's mind on one question: take these *steps* in order, then submit it.

    The answer is what the question holds at the end (:func:`revised`): on a
    single-select a pick replaces the earlier one and typed text overrides
    the choice; on a multi-select a pick adds a label, an unpick removes it
    (and leaves a label that is not picked as it is), and the text
    supplements the picks. Text is typed over what the field held. A
    question left skipped answers nothing (``selected: []``, no text),
    whatever it held when the human skipped it; an ``unskip`` takes the skip
    back, and the question answers again with what it holds.

    The suite draws these only for a driver that declares ``revises``, and
    only where UIs agree on the outcome:

    * on a single-select it never picks while text is typed, but clears the
      text first;
    * it skips and takes a skip back only for a driver that declares
      ``can_skip``, and while the question is skipped it does nothing but
      take the skip back (a page may lock the question's controls; another
      UI may take the skip back at a pick): "skip, then pick" is
      ``skip, unskip, pick``;
    * whether taking a skip back gives the draft back (the web page's
      design) or leaves the question empty (the Node example's screen) is
      the UI's design, so after an ``unskip`` the suite first unpicks each
      label and clears the text the question held when it was skipped, and
      on a single-select picks (or types) afresh before it submits: the
      outcome is the same either way (see :func:`held_after`).
    """

    steps: tuple[Step, ...]

    __repr__ = _shown


@dataclass(frozen=True, slots=True)
class Dismiss:
    """Dismiss the whole batch, as closing the dialog does."""

    #: One of the driver's declared ways to dismiss (Esc or Ctrl-C, say), or
    #: ``None`` for the usual one.
    way: str | None = None

    __repr__ = _shown


@dataclass(frozen=True, slots=True)
class Nothing:
    """Do nothing: leave the questions on screen."""


#: What the human does with one question.
Action: TypeAlias = Pick | TypeText | Skip | Revise
#: What the human does with a whole request.
Behaviour: TypeAlias = tuple[Action, ...] | Dismiss | Nothing


def ways_in(behaviour: Behaviour) -> list[tuple[str, str | None]]:
    """Each action of *behaviour* that names how it is done: ``(action, way)`` pairs.

    >>> ways_in((Skip(), Pick(("a",), "click")))
    [('skip', None), ('pick', 'click')]
    """
    if isinstance(behaviour, Dismiss):
        return [("dismiss", behaviour.way)]
    if isinstance(behaviour, Nothing):
        return []
    kinds = {Pick: "pick", TypeText: "type", Skip: "skip"}
    return [
        (kinds[type(action)], action.way) for action in behaviour if not isinstance(action, Revise)
    ]


def held_after(
    steps: Sequence[Step], *, multi: bool, restores: bool = True
) -> tuple[list[str], str]:
    """What a question holds after *steps*: the labels picked, in picking order, and the text.

    A driver whose UI is a form fills it with these (an empty text is none).
    A question left skipped holds nothing that answers, ``([], "")``: no
    other revision leaves it so, since the suite always leaves something to
    answer with. An ``unskip`` gives back what the question held when it was
    skipped, or with *restores* false leaves it empty; the suite draws only
    revisions whose outcome is the same either way (see :class:`Revise`).

    >>> held_after([("pick", "a"), ("type", "x"), ("clear", ""), ("pick", "b")], multi=False)
    (['b'], '')
    >>> held_after([("pick", "a"), ("skip", "")], multi=True)
    ([], '')
    >>> held_after([("pick", "a"), ("skip", ""), ("unskip", "")], multi=True)
    (['a'], '')
    >>> held_after([("pick", "a"), ("skip", ""), ("unskip", "")], multi=True, restores=False)
    ([], '')
    """
    picked: list[str] = []
    text = ""
    skipped: tuple[list[str], str] | None = None  # the draft while skipped
    for kind, value in steps:
        if kind == "skip":
            skipped = skipped or (picked, text)
        elif kind == "unskip":
            if skipped is not None:
                picked, text = skipped if restores else ([], "")
            skipped = None
        elif kind == "pick":
            picked = [*picked, value] if multi else [value]
        elif kind == "unpick":
            picked = [label for label in picked if label != value]
        else:
            text = value  # typed over the field, or cleared ("")
    if skipped is not None:
        return [], ""  # a skipped question answers nothing, whatever it held
    return picked, text


def revised(question: AskUserQuestionItem, steps: Sequence[Step]) -> AskUserQuestionAnswerItem:
    """The answer item for *question* after the human takes *steps* (see :class:`Revise`).

    >>> question = {"id": "q", "question": "Which?", "options": [{"label": "a"}, {"label": "b"}]}
    >>> revised(question, [("pick", "a"), ("pick", "b")])
    {'id': 'q', 'selected': ['b']}
    >>> revised(question, [("pick", "a"), ("type", "neither")])
    {'id': 'q', 'selected': [], 'custom': 'neither'}
    >>> revised({**question, "multiSelect": True}, [("pick", "b"), ("pick", "a"), ("unpick", "b")])
    {'id': 'q', 'selected': ['a']}
    >>> revised(question, [("pick", "a"), ("type", "x"), ("skip", "")])
    {'id': 'q', 'selected': []}
    >>> revised(question, [("skip", ""), ("unskip", ""), ("pick", "b")])
    {'id': 'q', 'selected': ['b']}
    """
    multi = question.get("multiSelect") is True
    picked, text = held_after(steps, multi=multi)
    order = [option["label"] for option in question.get("options", ())]
    item: AskUserQuestionAnswerItem = {"id": question["id"], "selected": []}
    if text and not multi:
        item["custom"] = text  # overrides the choice (ANS-SINGLE-2)
        return item
    item["selected"] = [label for label in order if label in picked]
    if text:
        item["custom"] = text
    return item


def expected_answer(
    request: AskUserQuestionRequest, actions: Sequence[Action]
) -> AskUserQuestionAnswer:
    """The answer the spec requires when the human performs *actions*.

    Multi-select labels come in option order (``ANS-MULTI-2``), whatever
    order the human picked them in.

    >>> request = {"questions": [{"id": "q", "question": "Which?", "multiSelect": True,
    ...            "options": [{"label": "a"}, {"label": "b"}]}]}
    >>> expected_answer(request, [TypeText("and c", ("b", "a"))])
    {'answers': [{'id': 'q', 'selected': ['a', 'b'], 'custom': 'and c'}]}
    """
    items: list[AskUserQuestionAnswerItem] = []
    for question, action in zip(request["questions"], actions, strict=True):
        if isinstance(action, Revise):
            items.append(revised(question, action.steps))
            continue
        order = {option["label"]: rank for rank, option in enumerate(question.get("options", ()))}
        labels: tuple[str, ...]
        match action:
            case Pick(labels=labels) | TypeText(labels=labels):
                selected = sorted(labels, key=lambda label: order[label])
            case Skip():
                selected = []
        item: AskUserQuestionAnswerItem = {"id": question["id"], "selected": selected}
        if isinstance(action, TypeText):
            item["custom"] = action.text
        items.append(item)
    return {"answers": items}
