"""Small builders for answers, for provider authors and tests.

They build well-formed items; they do not check labels against a request (use
:func:`~dsh_user_interaction.answer_violations` for that).
"""

from __future__ import annotations

from ._types import AskUserQuestionAnswer, AskUserQuestionAnswerItem

__all__ = ["answer_custom", "answer_of", "answer_selected", "answer_skipped"]


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
