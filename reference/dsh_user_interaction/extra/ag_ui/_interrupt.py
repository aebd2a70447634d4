"""A pending ask of ours as an AG-UI ``Interrupt``, and the ``RUN_FINISHED`` that carries it.

The mapping:

* ``id`` is the ask id, the request's ``askId`` (``DUR-ID-1``): a tool call's
  id when the ask came from one, so a run resumed after a restart names the
  same interrupt;
* ``reason`` is ``plan_review`` when a question reviews a plan, else
  ``ask_user_question``;
* ``message`` is the questions' texts, one a line, each after its header;
* ``toolCallId`` is the tool call the ask came from, when it came from one
  (the request's ``agUiToolCallId`` key);
* ``responseSchema`` is :func:`~dsh_user_interaction.extra.ag_ui.answer_schema`
  of the request: a resume's payload is our answer itself;
* ``expiresAt`` is the request's ``deadline`` in ISO 8601, UTC, to the
  millisecond;
* ``metadata`` holds, under ``dsh-user-interaction``, the questions as JSON
  (options, descriptions, headers, details, defaults), so a client can draw
  the same question any of our UIs draws.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from ag_ui.core import Interrupt, RunFinishedEvent, RunFinishedInterruptOutcome

from dsh_user_interaction import (
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    check_request,
    deadline_of,
)
from dsh_user_interaction.durable import ask_id_of, stored_request

from ._answer import answer_schema

__all__ = [
    "METADATA_KEY",
    "TOOL_CALL_ID_KEY",
    "expires_at_of",
    "interrupt_of",
    "moment_of",
    "run_finished_interrupt",
]

#: The key of an interrupt's ``metadata`` under which our questions travel.
METADATA_KEY: Final = "dsh-user-interaction"
#: The request's extra key (``REQ-EXTRA-1``) naming the AG-UI tool call an ask came from.
TOOL_CALL_ID_KEY: Final = "agUiToolCallId"

_REASON_ASK: Final = "ask_user_question"
_REASON_PLAN: Final = "plan_review"


def expires_at_of(deadline: float) -> str:
    """A request's *deadline* (seconds since the epoch) as an interrupt's ``expiresAt``.

    >>> expires_at_of(1_800_000_000.25)
    '2027-01-15T08:00:00.250Z'
    """
    moment = datetime.datetime.fromtimestamp(deadline, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def moment_of(expires_at: str) -> float:
    """An ``expiresAt`` in ISO 8601 as seconds since the epoch; a time without a zone is UTC.

    Raises :class:`ValueError` naming the value when it is not an ISO 8601
    date and time.

    >>> moment_of("2027-01-15T08:00:00.250Z")
    1800000000.25
    """
    try:
        moment = datetime.datetime.fromisoformat(expires_at)
    except ValueError:
        msg = f"expiresAt {expires_at!r} is not an ISO 8601 date and time"
        raise ValueError(msg) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    seconds = moment.timestamp()
    if not math.isfinite(seconds):  # pragma: no cover - datetime keeps its range finite
        msg = f"expiresAt {expires_at!r} is out of range"
        raise ValueError(msg)
    return seconds


def _message(questions: Sequence[Mapping[str, Any]]) -> str:
    lines: list[str] = []
    for question in questions:
        header = question.get("header")
        text = str(question["question"])
        lines.append(f"{header}: {text}" if isinstance(header, str) and header else text)
    return "\n".join(lines)


def interrupt_of(
    request: AskUserQuestionRequest[Any],
    *,
    ask_id: str | None = None,
    tool_call_id: str | None = None,
) -> Interrupt:
    """The AG-UI interrupt that shows *request*, a pending ask, to an AG-UI client.

    Its id is *ask_id*, or else the request's ``askId``; its ``toolCallId``
    is *tool_call_id*, or else the request's ``agUiToolCallId``. Raises
    :class:`~dsh_user_interaction.UserInteractionError` with ``BAD_REQUEST``
    when the request breaks a request rule, has no ask id, or holds a value
    that is not JSON.

    >>> interrupt = interrupt_of({"askId": "call-1", "deadline": 1_800_000_000.0,
    ...     "questions": [{"id": "go", "question": "Deploy?", "header": "Confirm",
    ...                    "options": [{"label": "Yes"}, {"label": "No"}]}]})
    >>> interrupt.id, interrupt.reason, interrupt.message, interrupt.expires_at
    ('call-1', 'ask_user_question', 'Confirm: Deploy?', '2027-01-15T08:00:00.000Z')
    """
    check_request(request)
    name = ask_id if ask_id is not None else ask_id_of(request)
    if not name:
        msg = "an interrupt needs an id: give the request an askId, or pass ask_id"
        raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)
    try:
        data = stored_request(request)
    except ValueError as error:
        raise UserInteractionError(str(error), ErrorCode.BAD_REQUEST) from None
    questions = cast("list[dict[str, Any]]", data["questions"])
    call = tool_call_id if tool_call_id is not None else data.get(TOOL_CALL_ID_KEY)
    if call is not None and not (isinstance(call, str) and call):
        msg = f"the request's {TOOL_CALL_ID_KEY} must be a non-empty string, got {call!r}"
        raise UserInteractionError(msg, ErrorCode.BAD_REQUEST)
    plan = any(
        isinstance(question.get("intent"), dict) and question["intent"].get("kind") == "plan-review"
        for question in questions
    )
    deadline = deadline_of(request)
    return Interrupt(
        id=name,
        reason=_REASON_PLAN if plan else _REASON_ASK,
        message=_message(questions),
        tool_call_id=call,
        response_schema=answer_schema(request),
        expires_at=None if deadline is None else expires_at_of(deadline),
        metadata={METADATA_KEY: {"questions": questions}},
    )


def run_finished_interrupt(
    thread_id: str, run_id: str, interrupts: Sequence[Interrupt]
) -> RunFinishedEvent:
    """The ``RUN_FINISHED`` event that ends a run waiting for *interrupts* (at least one).

    Raises :class:`ValueError` when *interrupts* is empty: a run with nothing
    to wait for finishes with success instead.
    """
    if not interrupts:
        msg = "an interrupted run waits for at least one interrupt"
        raise ValueError(msg)
    return RunFinishedEvent(
        thread_id=thread_id,
        run_id=run_id,
        outcome=RunFinishedInterruptOutcome(interrupts=list(interrupts)),
    )
