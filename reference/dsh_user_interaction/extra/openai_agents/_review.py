"""The SDK's approval of any tool call, as one of our questions, and the answer back.

Design notes:

* The question: "Allow <tool>?", the call's arguments as its ``detail`` (a
  JSON code block), and two options, :data:`APPROVE` and :data:`REJECT`.
  Free text is a rejection whose words the model reads.
* Rule: only an exact approval approves. ``selected == [APPROVE]`` with no
  ``custom`` runs the call. ``[REJECT]`` rejects it with
  :data:`REVIEW_REJECTED`; free text rejects it with the human's words. A
  skipped question decides nothing: the interruption stays pending, since
  a skip is neither a yes nor a no.
* How the ask ended decides the rest: dismissed, aborted and timed out
  reject, with a text that tells the model which; an ask that reached no
  human, or an answer that breaks the answer rules, decides nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final, Literal, cast

from ..._errors import ErrorCode, UserInteractionError
from ..._types import AskUserQuestionItem

__all__ = [
    "APPROVE",
    "REJECT",
    "REVIEW_ABORTED",
    "REVIEW_DISMISSED",
    "REVIEW_ID",
    "REVIEW_REJECTED",
    "REVIEW_TIMED_OUT",
    "Verdict",
    "review_outcome",
    "review_question",
]

#: The id of the one question that reviews a call.
REVIEW_ID: Final = "approval"
#: The option label that runs the call.
APPROVE: Final = "Approve"
#: The option label that refuses it.
REJECT: Final = "Reject"
#: The model reads this when the human picked :data:`REJECT`.
REVIEW_REJECTED: Final = "The user rejected this tool call; it did not run."
#: The model reads this when the human dismissed the review.
REVIEW_DISMISSED: Final = (
    "The user dismissed the review of this tool call; it did not run. Stop here and wait for"
    " their message."
)
#: The model reads this when the program aborted the review.
REVIEW_ABORTED: Final = (
    "The review of this tool call was aborted before the user answered; it did not run."
)
#: The model reads this when the review's time ran out.
REVIEW_TIMED_OUT: Final = (
    "The review of this tool call timed out before the user answered; it did not run. Do not"
    " assume an answer."
)

#: How an interruption was decided: approved, rejected, or left pending.
Verdict = Literal["approved", "rejected", "undecided"]

#: The codes of an ask that reached no human, or whose answer cannot be read.
_UNDECIDED: Final = frozenset(
    {
        ErrorCode.NO_PROVIDER,
        ErrorCode.PROVIDER_DISPOSED,
        ErrorCode.STORE_FAILED,
        ErrorCode.BAD_ANSWER,
    }
)


def review_question(tool_name: str, arguments: str) -> AskUserQuestionItem:
    """The question that reviews a call of *tool_name* with *arguments* (JSON text).

    Arguments that are JSON are shown indented; others as they came.

    >>> question = review_question("deploy", '{"env":"prod"}')
    >>> question["question"], [option["label"] for option in question["options"]]
    ('Allow the call of deploy?', ['Approve', 'Reject'])
    >>> print(question["detail"])
    ```json
    {
      "env": "prod"
    }
    ```
    """
    question: dict[str, object] = {
        "id": REVIEW_ID,
        "header": "Approval",
        "question": f"Allow the call of {tool_name}?",
        "options": [
            {"label": APPROVE, "description": "Run the call with these arguments."},
            {
                "label": REJECT,
                "description": "Do not run it. Type instead to tell the model why.",
            },
        ],
    }
    if arguments.strip():
        try:
            shown = json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
        except ValueError:
            shown = arguments
        question["detail"] = f"```json\n{shown}\n```"
    return cast("AskUserQuestionItem", question)


def review_outcome(answer: object, failure: BaseException | None) -> tuple[Verdict, str]:
    """The verdict on a reviewed call, and the text: the rejection message, or why undecided.

    *answer* is what the ask returned; *failure* what it raised instead.
    An approval's text is empty: the model reads the tool's own result.

    >>> review_outcome({"answers": [{"id": "approval", "selected": ["Approve"]}]}, None)
    ('approved', '')
    >>> review_outcome({"answers": [{"id": "approval", "selected": [], "custom": "not on Friday"}]},
    ...     None)
    ('rejected', 'not on Friday')
    """
    if failure is not None:
        return _failed(failure)
    item = _item(answer)
    if item is None:
        return "undecided", "the answer has no item for the review's question"
    selected = item.get("selected")
    custom = item.get("custom")
    if isinstance(custom, str) and custom.strip():
        return "rejected", custom
    if selected == [APPROVE]:
        return "approved", ""
    if selected == [REJECT]:
        return "rejected", REVIEW_REJECTED
    return "undecided", "the review was skipped: neither approved nor rejected"


def _failed(failure: BaseException) -> tuple[Verdict, str]:
    if not isinstance(failure, UserInteractionError) or failure.code in _UNDECIDED:
        return "undecided", str(failure) or type(failure).__name__
    if failure.code is ErrorCode.ASK_CANCELLED:
        return "rejected", REVIEW_DISMISSED
    if failure.code is ErrorCode.ASK_ABORTED:
        return "rejected", REVIEW_TIMED_OUT if failure.timed_out else REVIEW_ABORTED
    return "undecided", str(failure)


def _item(answer: object) -> Mapping[str, object] | None:
    if not isinstance(answer, Mapping):
        return None
    items = cast("Mapping[str, object]", answer).get("answers")
    if not isinstance(items, list | tuple):
        return None
    for item in cast("Sequence[object]", items):
        if isinstance(item, Mapping):
            fields = cast("Mapping[str, object]", item)
            if fields.get("id") == REVIEW_ID:
                return fields
    return None
