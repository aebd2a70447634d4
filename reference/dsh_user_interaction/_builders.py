"""Small builders for questions and answers, for callers, provider authors and tests.

They build the typed dicts, so code that builds a question or an option apart
from the request literal needs no annotation (a dict literal assigned to a
plain variable is inferred as ``dict[str, str]``, which no TypedDict accepts).
They do not check the rules (use :func:`~dsh_user_interaction.check_request`
and :func:`~dsh_user_interaction.answer_violations` for that).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from ._types import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
)

__all__ = [
    "answer_custom",
    "answer_of",
    "answer_selected",
    "answer_skipped",
    "option_of",
    "question_of",
]


def option_of(label: str, description: str | None = None) -> AskUserQuestionOption:
    """One option, with its *description* if given.

    >>> option_of("Safe", "Slower, but reversible")
    {'label': 'Safe', 'description': 'Slower, but reversible'}
    """
    if description is None:
        return {"label": label}
    return {"label": label, "description": description}


def question_of(
    question_id: str,
    question: str,
    options: Iterable[str | AskUserQuestionOption] = (),
    *,
    header: str | None = None,
    detail: str | None = None,
    multi_select: bool | None = None,
) -> AskUserQuestionItem:
    """One question; each option is a label or an :func:`option_of`.

    >>> question_of("mode", "Which mode?", ["Fast", option_of("Safe", "Reversible")])
    {'id': 'mode', 'question': 'Which mode?', 'options': [{'label': 'Fast'}, \
{'label': 'Safe', 'description': 'Reversible'}]}
    """
    item: dict[str, object] = {"id": question_id, "question": question}
    built = [option_of(o) if isinstance(o, str) else o for o in options]
    if built:
        item["options"] = built
    for key, value in (("header", header), ("detail", detail), ("multiSelect", multi_select)):
        if value is not None:
            item[key] = value
    return cast("AskUserQuestionItem", item)  # built key by key from typed arguments


def answer_selected(question_id: str, *labels: str) -> AskUserQuestionAnswerItem:
    """The human picked *labels* (in option order, for a multi-select).

    >>> answer_selected("targets", "tests", "docs")
    {'id': 'targets', 'selected': ['tests', 'docs']}
    """
    return {"id": question_id, "selected": list(labels)}


def answer_custom(question_id: str, text: str, *labels: str) -> AskUserQuestionAnswerItem:
    """The human typed *text*; on a multi-select, alongside picked *labels*.

    >>> answer_custom("notes", "ship today")
    {'id': 'notes', 'selected': [], 'custom': 'ship today'}
    """
    return {"id": question_id, "selected": list(labels), "custom": text}


def answer_skipped(question_id: str) -> AskUserQuestionAnswerItem:
    """The human skipped the question: nothing picked, nothing typed.

    >>> answer_skipped("notes")
    {'id': 'notes', 'selected': []}
    """
    return {"id": question_id, "selected": []}


def answer_of(*items: AskUserQuestionAnswerItem) -> AskUserQuestionAnswer:
    """The answer made of *items*, which must follow question order.

    >>> answer_of(answer_selected("go", "Yes"), answer_skipped("why"))
    {'answers': [{'id': 'go', 'selected': ['Yes']}, {'id': 'why', 'selected': []}]}
    """
    return {"answers": list(items)}
