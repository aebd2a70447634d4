"""An ask that pauses a LangGraph run: :class:`InterruptProvider` and the resume values.

Design notes (the invariants this module keeps):

* The provider never waits. Its ``ask`` calls LangGraph's ``interrupt()`` with
  the request as JSON (:data:`INTERRUPT_KIND`); the first time, that raises
  LangGraph's ``GraphInterrupt``, which passes through the service and the
  node untouched, and the run pauses with its state in the checkpointer.
  When the run resumes, the node runs again from its start and the same
  ``interrupt()`` call returns the resume value, which is read here.
* The ask's ``askId`` is LangGraph's own: the request's ``askId`` when the
  caller gave one (a tool call's id), else ``<thread id>:<interrupt id>``.
  The interrupt id is fixed by the node's task and the ask's place in it, so
  a node run again asks the same ask, and a durable store on the answering
  side shows it once.
* A resume value is one of the shapes :func:`resume_value` makes; anything
  else is ``BAD_ANSWER`` naming the field, with the raw value kept on the
  error. Only an answer that keeps the answer rules for this very request
  is returned.
* Note: a LangGraph checkpointer saves a lone surrogate as ``?``. The
  interrupt's request therefore has each lone surrogate written as the six
  characters ``\\udXXX``, as a form of ours shows it, and an answer that
  gives an id or a label so written is read as the request's own. A request
  that two of its ids or labels would then share is refused
  (``BAD_REQUEST``).
* The deadline and the abort are the answering side's: the resume value says
  how the ask ended, so the provider keeps its own time (``keeps_own_time``)
  and a service never ends it for a deadline it cannot see.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal, NotRequired, Required, TypeAlias, TypedDict, cast

from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.types import Interrupt, interrupt

from ... import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    answer_violations,
    check_request,
)
from ...durable import ASK_ID_KEY, stored_request

__all__ = [
    "INTERRUPT_KIND",
    "AskInterrupt",
    "InterruptProvider",
    "ResumeOutcome",
    "ResumeValue",
    "answer_of_resume",
    "ask_id_for",
    "resume_value",
]

#: The ``kind`` of the interrupt value an :class:`InterruptProvider` raises.
INTERRUPT_KIND: Final = "dsh-user-interaction/ask"

#: How an ask ended, as a resume value says it.
ResumeOutcome: TypeAlias = Literal[
    "answered", "dismissed", "aborted", "timed_out", "provider_disposed"
]

_OUTCOMES: Final[tuple[ResumeOutcome, ...]] = (
    "answered",
    "dismissed",
    "aborted",
    "timed_out",
    "provider_disposed",
)

#: The error each unanswered outcome stands for, and back.
_CODES: Final[dict[ResumeOutcome, ErrorCode]] = {
    "dismissed": ErrorCode.ASK_CANCELLED,
    "aborted": ErrorCode.ASK_ABORTED,
    "provider_disposed": ErrorCode.PROVIDER_DISPOSED,
}


class AskInterrupt(TypedDict):
    """The value of the interrupt an :class:`InterruptProvider` raises: JSON only."""

    #: Always :data:`INTERRUPT_KIND`; tells an answering side this is an ask of ours.
    kind: Required[str]
    #: The request as a store keeps it: no signal, the agent as text, with its ``askId``;
    #: each lone surrogate in its text written ``\\udXXX`` (a checkpointer keeps none).
    request: Required[dict[str, Any]]


class ResumeValue(TypedDict):
    """What a run is resumed with for an :class:`AskInterrupt`: how the ask ended."""

    #: How the ask ended.
    outcome: Required[ResumeOutcome]
    #: The answer, only when ``outcome`` is ``"answered"``; ``defaulted`` kept.
    answer: NotRequired[AskUserQuestionAnswer]


def resume_value(outcome: AskUserQuestionAnswer | UserInteractionError) -> ResumeValue:
    """The resume value that tells an interrupted ask how it ended.

    *outcome* is the answer an ``ask()`` returned (its ``defaulted`` flag
    kept), or the :class:`~dsh_user_interaction.UserInteractionError` it
    raised: ``ASK_CANCELLED`` is ``dismissed``, ``ASK_ABORTED`` is ``aborted``
    or, when ``timed_out``, ``timed_out``, and ``PROVIDER_DISPOSED`` is
    ``provider_disposed``. Raises :class:`ValueError` for any other code: such
    an ask did not end, so no resume value can say how.

    >>> resume_value({"answers": [{"id": "q", "selected": ["Yes"]}]})
    {'outcome': 'answered', 'answer': {'answers': [{'id': 'q', 'selected': ['Yes']}]}}
    >>> resume_value(UserInteractionError.timed_out_error())
    {'outcome': 'timed_out'}
    """
    if not isinstance(outcome, UserInteractionError):
        return {"outcome": "answered", "answer": outcome}
    if outcome.code is ErrorCode.ASK_ABORTED and outcome.timed_out:
        return {"outcome": "timed_out"}
    for name, code in _CODES.items():
        if outcome.code is code:
            return {"outcome": name}
    msg = f"a {outcome.code} error ends no ask, so no resume value says it: {outcome}"
    raise ValueError(msg)


def _bad(message: str, raw: object) -> UserInteractionError:
    return UserInteractionError(f"resume value: {message}", ErrorCode.BAD_ANSWER, answer=raw)


def answer_of_resume(value: object, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
    """Read the resume *value* of an ask of *request*: return its answer or raise its end.

    ``answered`` returns the answer, checked against *request*;
    ``dismissed``, ``aborted``, ``timed_out`` and ``provider_disposed`` raise
    the :class:`~dsh_user_interaction.UserInteractionError` they stand for
    (``ASK_CANCELLED``, ``ASK_ABORTED``, a timed-out ``ASK_ABORTED``,
    ``PROVIDER_DISPOSED``). An answer of defaults (``"defaulted": true``)
    raises a timed-out ``ASK_ABORTED`` whose ``deadline_passed`` is true: a
    service then answers with its request's defaults, flagged ``defaulted``,
    as for its own deadline, and a request without defaults times out.
    An id or a label given as the interrupt showed it, each lone surrogate
    written ``\\udXXX``, is read as the request's own. Anything else raises
    ``BAD_ANSWER`` naming the field and the problem, with *value* kept as
    ``error.answer``.

    >>> request = {"questions": [{"id": "q", "question": "Go?"}]}
    >>> answer_of_resume({"outcome": "dismissed"}, request)
    Traceback (most recent call last):
    ...
    dsh_user_interaction._errors.UserInteractionError: the user cancelled ask_user_question
    >>> answer_of_resume({"outcome": "answered"}, request)
    Traceback (most recent call last):
    ...
    dsh_user_interaction._errors.UserInteractionError: resume value: $.answer: required \
when outcome is "answered"
    """
    if not isinstance(value, Mapping):
        raise _bad(f"$: expected an object, got {type(value).__name__}", value)
    fields = cast("Mapping[object, object]", value)
    raw: object = fields
    unknown = sorted(repr(key) for key in fields if key not in ("outcome", "answer"))
    if unknown:
        raise _bad(f"$: unknown keys {', '.join(unknown)}", raw)
    outcome = fields.get("outcome")
    if outcome not in _OUTCOMES:
        choices = ", ".join(f'"{name}"' for name in _OUTCOMES)
        raise _bad(f"$.outcome: expected one of {choices}, got {outcome!r}", raw)
    if outcome != "answered":
        if "answer" in fields:
            raise _bad(f'$.answer: not allowed when outcome is "{outcome}"', raw)
        if outcome == "timed_out":
            raise UserInteractionError.timed_out_error()
        raise UserInteractionError.of(_CODES[cast("ResumeOutcome", outcome)])
    if "answer" not in fields:
        raise _bad('$.answer: required when outcome is "answered"', raw)
    answer: object = fields["answer"]
    defaulted = False
    sent = fields["answer"]
    given: Mapping[str, object] = (
        cast("Mapping[str, object]", sent) if isinstance(sent, Mapping) else {}
    )
    if "defaulted" in given:
        if given["defaulted"] is not True:
            raise _bad(f"$.answer.defaulted: expected true, got {given['defaulted']!r}", raw)
        defaulted = True
        answer = {key: item for key, item in given.items() if key != "defaulted"}
    answer = _as_asked(request, answer)
    problems = [v for v in answer_violations(request, answer) if v.level == "MUST"]
    if problems:
        raise UserInteractionError(
            f"resume value: $.answer: {problems[0].describe()}",
            ErrorCode.BAD_ANSWER,
            answer=raw,
            violations=problems,
        )
    if defaulted:
        # The defaults are the service's to give, from its own request (POL-DEFAULT-1).
        raise UserInteractionError.timed_out_error(deadline_passed=True)
    return cast("AskUserQuestionAnswer", answer)


def ask_id_for(thread_id: object, interrupt_id: str) -> str:
    """The ask id of a LangGraph interrupt: ``<thread id>:<interrupt id>``.

    Raises :class:`ValueError` when *thread_id* is not a non-empty string: a
    run without a thread cannot be resumed, so its ask has no lasting name.

    >>> ask_id_for("thread-1", "5f0c")
    'thread-1:5f0c'
    """
    if not isinstance(thread_id, str) or not thread_id:
        msg = f"configurable.thread_id must be a non-empty string, got {thread_id!r}"
        raise ValueError(msg)
    return f"{thread_id}:{interrupt_id}"


_LONE: Final = re.compile("[\ud800-\udfff]")


def _escaped(value: object) -> object:
    """The JSON *value* with each lone surrogate in its text written ``\\udXXX``."""
    if isinstance(value, str):
        return _LONE.sub(lambda found: f"\\u{ord(found.group()):04x}", value)
    if isinstance(value, Mapping):
        items = cast("Mapping[str, object]", value).items()
        return {cast("str", _escaped(key)): _escaped(item) for key, item in items}
    if isinstance(value, list):
        return [_escaped(item) for item in cast("list[object]", value)]
    return value


def _as_asked(request: AskUserQuestionRequest[Any], answer: object) -> object:
    """*answer* with each id and label the interrupt showed escaped put back as *request* has it.

    Only text equal to the request's own once both are escaped is put back;
    anything else is left for the answer rules to judge.
    """
    given: object = answer
    if not isinstance(given, Mapping):
        return given
    fields = cast("Mapping[str, object]", given)
    items = fields.get("answers")
    if not isinstance(items, list):
        return fields
    kept: list[object] = []
    questions = request["questions"]
    for index, raw in enumerate(cast("list[object]", items)):
        if index >= len(questions) or not isinstance(raw, Mapping):
            kept.append(raw)
            continue
        item = dict(cast("Mapping[str, object]", raw))
        question = questions[index]
        if item.get("id") != question["id"] and _escaped(item.get("id")) == _escaped(
            question["id"]
        ):
            item["id"] = question["id"]
        selected = item.get("selected")
        if isinstance(selected, list):
            labels = [option["label"] for option in question.get("options", ())]
            escaped = [cast("str", _escaped(label)) for label in labels]
            # Only a label that no other label reads the same as once escaped is put back.
            offered = {
                key: label
                for key, label in zip(escaped, labels, strict=True)
                if escaped.count(key) == 1
            }
            item["selected"] = [
                offered.get(cast("str", _escaped(label)), label)
                if isinstance(label, str) and label not in labels
                else label
                for label in cast("list[object]", selected)
            ]
        kept.append(item)
    return {**fields, "answers": kept}


class InterruptProvider:
    """A provider whose ``ask`` pauses the LangGraph run it is called in, then returns the answer.

    Register it on a service used inside a graph node (or a tool the graph
    runs). The first ``ask`` raises LangGraph's ``GraphInterrupt`` with an
    :class:`AskInterrupt` value; the run pauses in its checkpointer. Resumed
    with a :class:`ResumeValue` (see :func:`answer_interrupts`), the node
    runs again and the same ``ask`` returns the answer, or raises
    ``ASK_CANCELLED``, ``ASK_ABORTED`` (``timed_out`` when the time ran out)
    or ``PROVIDER_DISPOSED`` as the value says; a malformed value raises
    ``BAD_ANSWER``. An aborted signal raises ``ASK_ABORTED`` before anything
    is shown. A request that cannot be kept as JSON raises ``BAD_REQUEST``;
    so does one whose ids or labels collide once each lone surrogate is
    written ``\\udXXX`` (see the module's notes).
    Outside a graph run it raises :class:`RuntimeError`.
    """

    __slots__ = ()

    #: The answering side keeps the deadline and the abort; a service never
    #: ends this provider's asks itself.
    keeps_own_time: Final = True

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        """Pause the run with *request*; on resume, return or raise how the ask ended."""
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        try:
            data = stored_request(request)
        except ValueError as error:
            raise UserInteractionError(str(error), ErrorCode.BAD_REQUEST) from None
        shown = cast("dict[str, Any]", _escaped(data))
        if shown != data:
            try:
                check_request(shown)
            except UserInteractionError as error:
                msg = f"request: with its lone surrogates written \\udXXX, {error}"
                raise UserInteractionError(msg, ErrorCode.BAD_REQUEST) from None
        try:
            configurable = get_config().get("configurable", {})
        except RuntimeError:
            msg = "InterruptProvider asks only inside a LangGraph run (a node or a tool it runs)"
            raise RuntimeError(msg) from None
        value: AskInterrupt = {"kind": INTERRUPT_KIND, "request": shown}
        try:
            resumed = interrupt(value)
        except GraphInterrupt as pause:
            # Name the ask after LangGraph's own ids before the run saves the value.
            if ASK_ID_KEY not in value["request"]:
                for raised in cast("tuple[Interrupt, ...]", pause.args[0] if pause.args else ()):
                    if raised.value is value:
                        thread_id = configurable.get("thread_id")
                        value["request"][ASK_ID_KEY] = ask_id_for(thread_id, raised.id)
            raise
        return answer_of_resume(resumed, request)

    def __repr__(self) -> str:
        return "InterruptProvider()"
