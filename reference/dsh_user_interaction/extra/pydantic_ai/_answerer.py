"""The harness's ``AskUser`` answered through the seam: its questions in, our answer out.

Design notes:

* Questions in: the harness has validated them already (1 to 10 questions,
  unique headers of at most 25 characters, 2 to 6 options, labels of at most
  50). Each becomes one question of ours whose ``id`` and ``header`` are the
  harness's header (the key its answers are read by), with the same text,
  options and ``multiSelect``. No request the harness accepts is refused on
  the way in; ``seam_request`` still checks the result by our rules, so
  a hand-built harness request that breaks them raises ``BAD_REQUEST``.
* Answers out: labels stay labels, custom text alone is the harness's
  ``custom_answer``. Two answers of ours have no harness value, and each is
  refused with ``BAD_ANSWER`` (the human's answer kept on the error), never
  guessed: a skipped question (the harness answers every question) and custom
  text beside picked labels on a multi-select question (its custom answer
  replaces the labels). The harness's own ``check_response`` then runs, so
  what it would refuse later (custom text with control characters, say) is
  refused here, with the same answer kept.
* Outcomes without an answer: a dismissal is the harness's ``cancelled``
  response, as is a timeout and an answer made of defaults, since the human
  gave none and the harness has no word for either (the model reads that
  the user declined, never a default as the human's choice). An abort, a
  disposed provider and every other failure propagate, and fail the run, as
  the harness's ``Answerer`` protocol asks of a failure. Cancellation passes
  through untouched.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, cast, final

from pydantic_ai_harness.ask_user import (
    AskUserAnswer,
    AskUserRequest,
    AskUserResponse,
    check_response,
)

from dsh_user_interaction import (
    AbortSignal,
    AskingService,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    answer_violations,
    request_violations,
)
from dsh_user_interaction.durable import ASK_ID_KEY

from ._tools import checked_seconds

__all__ = ["SeamAnswerer", "harness_response", "seam_request"]


def _no_answer(error: UserInteractionError) -> bool:
    """Whether *error* says the human gave no answer: a dismissal, or the time ran out."""
    if error.code is ErrorCode.ASK_CANCELLED:
        return True
    return error.code is ErrorCode.ASK_ABORTED and error.timed_out


def seam_request(
    request: AskUserRequest,
    *,
    ask_id: str | None = None,
    signal: AbortSignal | None = None,
    agent: object = None,
    deadline: float | None = None,
) -> AskUserQuestionRequest[Any]:
    """Our request for the harness's *request*: one question per harness question, ids = headers.

    *ask_id* becomes the request's ``askId`` (a durable provider finds the
    same ask by it); *signal*, *agent* and *deadline* (seconds since the
    epoch) are set when given. Raises ``UserInteractionError`` with
    ``BAD_REQUEST``, naming the question and the field, when the result breaks
    our request rules (never for a request the harness validated itself).

    >>> from pydantic_ai_harness.ask_user import Question, QuestionOption
    >>> asked = AskUserRequest(id="r1", questions=(Question(
    ...     header="Mode", question="Which mode?",
    ...     options=(QuestionOption(label="Fast"), QuestionOption(label="Safe"))),))
    >>> seam_request(asked, ask_id="r1")["questions"][0]["options"]
    [{'label': 'Fast'}, {'label': 'Safe'}]
    """
    questions: list[AskUserQuestionItem] = []
    for question in request.questions:
        options: list[AskUserQuestionOption] = []
        for option in question.options:
            choice: AskUserQuestionOption = {"label": option.label}
            if option.description is not None:
                choice = {"label": option.label, "description": option.description}
            options.append(choice)
        item: AskUserQuestionItem = {
            "id": question.header,
            "question": question.question,
            "header": question.header,
            "options": options,
        }
        if question.multi_select:
            item = {**item, "multiSelect": True}
        questions.append(item)
    fields: dict[str, object] = {"questions": questions}
    if agent is not None:
        fields["agent"] = agent
    if signal is not None:
        fields["signal"] = signal
    if deadline is not None:
        fields["deadline"] = deadline
    if ask_id is not None:
        fields[ASK_ID_KEY] = ask_id
    built = cast("AskUserQuestionRequest[Any]", fields)
    problems = request_violations(built)
    if problems:
        raise UserInteractionError(problems[0].describe(), ErrorCode.BAD_REQUEST)
    return built


def _refuse(message: str, answer: object) -> UserInteractionError:
    return UserInteractionError(
        f"the harness cannot carry this answer: {message}", ErrorCode.BAD_ANSWER, answer=answer
    )


def harness_response(request: AskUserRequest, answer: object) -> AskUserResponse:
    """The harness's response for our *answer* to ``seam_request(request)``.

    An answer made of defaults (``defaulted: true``) is a ``cancelled``
    response: the human gave none. Raises ``UserInteractionError`` with
    ``BAD_ANSWER``, the answer kept as its ``answer`` and the message naming
    the question, for an answer that breaks our answer rules, a skipped
    question, custom text beside labels, or anything the harness's
    ``check_response`` refuses.

    >>> from pydantic_ai_harness.ask_user import Question, QuestionOption
    >>> asked = AskUserRequest(id="r1", questions=(Question(
    ...     header="Mode", question="Which mode?",
    ...     options=(QuestionOption(label="Fast"), QuestionOption(label="Safe"))),))
    >>> response = harness_response(asked, {"answers": [{"id": "Mode", "selected": ["Safe"]}]})
    >>> [(a.header, a.selected, a.custom_answer) for a in response.answers], response.cancelled
    ([('Mode', ('Safe',), None)], False)
    """
    ours = seam_request(request)
    problems = [v for v in answer_violations(ours, _without_defaulted(answer)) if v.level == "MUST"]
    if problems:
        raise UserInteractionError(
            f"the answer breaks the answer rules: {problems[0].describe()}",
            ErrorCode.BAD_ANSWER,
            answer=answer,
            violations=problems,
        )
    fields = cast("Mapping[str, object]", answer)
    if fields.get("defaulted") is True:
        return AskUserResponse(cancelled=True)
    answers: list[AskUserAnswer] = []
    for raw in cast("Sequence[Mapping[str, object]]", fields["answers"]):
        header = cast("str", raw["id"])
        selected = tuple(cast("Sequence[str]", raw["selected"]))
        custom = cast("str | None", raw.get("custom"))
        if custom is None and not selected:
            raise _refuse(f'question "{header}" was skipped, and it has no skip', answer)
        if custom is not None and selected:
            raise _refuse(
                f'question "{header}" has custom text beside picked labels, and its custom'
                " answer replaces the labels",
                answer,
            )
        answers.append(AskUserAnswer(header=header, selected=selected, custom_answer=custom))
    response = AskUserResponse(answers=tuple(answers))
    try:
        check_response(request, response)
    except ValueError as error:
        raise _refuse(str(error), answer) from None
    return response


def _without_defaulted(answer: object) -> object:
    """*answer* without the service's ``defaulted`` key, which the answer rules refuse."""
    if not isinstance(answer, Mapping):
        return answer
    fields = cast("Mapping[object, object]", answer)
    if "defaulted" not in fields:
        return fields
    return {key: value for key, value in fields.items() if key != "defaulted"}


@final
class SeamAnswerer:
    """The harness's ``Answerer``, answered through any ``AskingService`` of ours.

    Pass it as ``AskUser(answerer=SeamAnswerer(service))``: each
    ``ask_user_question`` call is asked through *service* (any provider: a
    terminal, a web page, an MCP client, a durable store) with the harness's
    request id as ``askId``, and the human's answer goes back as the
    harness's ``AskUserResponse``. *signal* aborts every pending ask;
    *answer_within*, in seconds, gives each request a ``deadline`` that UIs
    count down (``ValueError`` unless it is positive and finite); *agent* is
    passed through.

    Calling it raises ``UserInteractionError``: ``BAD_ANSWER`` for an answer
    the harness cannot carry (see ``harness_response``), and the
    service's own error for an abort, a disposed provider or any failure
    other than a dismissal or a timeout, which become a ``cancelled``
    response.
    """

    __slots__ = ("_agent", "_answer_within", "_service", "_signal")

    def __init__(
        self,
        service: AskingService,
        *,
        signal: AbortSignal | None = None,
        answer_within: float | None = None,
        agent: object = None,
    ) -> None:
        self._service = service
        self._signal = signal
        self._answer_within = checked_seconds(answer_within)
        self._agent = agent

    async def __call__(self, request: AskUserRequest, /) -> AskUserResponse:
        """Ask *request* through the service and return the harness's response."""
        deadline = None if self._answer_within is None else time.time() + self._answer_within
        ours = seam_request(
            request,
            ask_id=request.id or None,
            signal=self._signal,
            agent=self._agent,
            deadline=deadline,
        )
        try:
            answer: object = await self._service.ask(ours)
        except UserInteractionError as error:
            if _no_answer(error):
                return AskUserResponse(cancelled=True)
            raise
        return harness_response(request, answer)
