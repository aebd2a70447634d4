"""The demos' sample batch, shared by the terminal's and the web page's ``demo``."""

from __future__ import annotations

from typing import Final

from dsh_user_interaction import AskUserQuestionRequest

__all__ = ["DEMO_REQUEST"]

#: The sample batch: a single choice, a multiple choice, free text and a plan review.
#: The first question's detail holds an ANSI colour sequence and a bidi override,
#: which a UI shows as inert text.
DEMO_REQUEST: Final[AskUserQuestionRequest] = {
    "questions": [
        {
            "id": "mode",
            "header": "Choose Mode",
            "question": "Which mode should the migration run in?",
            "detail": "Model text is shown, never interpreted: \x1b[31mred?\x1b[0m \u202eabc",
            "options": [
                {"label": "Fast", "description": "Skips the dry run."},
                {"label": "Safe (Recommended)", "description": "Dry run first, then apply."},
            ],
        },
        {
            "id": "targets",
            "question": "Which targets should be rebuilt?",
            "multiSelect": True,
            "options": [{"label": "tests"}, {"label": "docs"}, {"label": "bench"}],
        },
        {"id": "branch", "question": "Name the release branch."},
        {
            "id": "plan-review",
            "header": "Plan review",
            "question": "Approve this plan and leave plan mode?",
            "detail": "# Migrate the store\n\n1. Dry run.\n2. Apply.\n3. Verify the counts.",
            "intent": {"kind": "plan-review", "approve": "Approve"},
            "options": [
                {"label": "Approve", "description": "Leave plan mode; carry out the plan."},
                {"label": "Keep planning", "description": "Stay in plan mode."},
            ],
        },
    ]
}
