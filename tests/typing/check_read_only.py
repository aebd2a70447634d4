"""Which mutations of a read-only request each checker flags; type-checked, never run.

Each line marked with an ignore is an error in both checkers (an unused ignore
fails both). The two gaps pyright leaves are in ``check_read_only_gaps.py``.
"""

from __future__ import annotations

from dsh_user_interaction import AskUserQuestionItem, AskUserQuestionRequest


def flagged_by_both(question: AskUserQuestionItem, request: AskUserQuestionRequest) -> None:
    question["id"] = "x"  # type: ignore[typeddict-readonly-mutated]
    question.setdefault("header", "h")  # type: ignore[typeddict-readonly-mutated]
    question.update({"header": "y"})  # type: ignore[typeddict-readonly-mutated]
    del question["header"]  # type: ignore[misc]
    question.clear()  # type: ignore[attr-defined]
    request["questions"] = []  # type: ignore[typeddict-readonly-mutated]
