"""LangChain's ``HumanInTheLoopMiddleware`` review, asked through any service of ours.

Design notes:

* Each action request becomes one question, ``action-<i>``, whose options are
  the action's allowed decisions in the order its review config lists them
  (``Approve``, ``Edit``, ``Reject``, ``Respond``); the action's arguments are
  the question's ``detail``, as JSON. When a decision that takes text is
  allowed, a second, free-text question ``action-<i>-text`` follows it: the
  edited arguments as a JSON object for ``Edit``, the reply for ``Respond``,
  the reason for ``Reject`` (optional). A single-select answer cannot hold a
  label and text at once, hence the second question.
* Strict both ways: a request this package cannot show faithfully is refused
  with ``BAD_REQUEST`` naming the field; an answer that does not make one
  allowed decision per action (no choice, text where the decision takes
  none, missing text, arguments that are not a JSON object) is refused with
  ``BAD_ANSWER`` naming the question, and the answer is kept on the error.
* A dismissal, an abort, a timeout and a disposal are not decisions. By
  default they propagate, and the run stays paused; with
  ``unanswered="reject"`` every action is rejected with the error's message,
  so the model reads why. An answer made of defaults never decides an action.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, cast

from langchain.agents.middleware.human_in_the_loop import (
    Decision,
    DecisionType,
    HITLRequest,
    HITLResponse,
)

from ... import (
    AskingService,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from ...durable import with_ask_id

__all__ = [
    "DECISION_LABELS",
    "Unanswered",
    "answer_hitl",
    "hitl_decisions",
    "hitl_questions",
    "tool_approval_review",
]

#: The option label each decision is shown with, and read back from.
DECISION_LABELS: Final[dict[DecisionType, str]] = {
    "approve": "Approve",
    "edit": "Edit",
    "reject": "Reject",
    "respond": "Respond",
}

_DESCRIPTIONS: Final[dict[DecisionType, str]] = {
    "approve": "Run the action as it is.",
    "edit": "Run it with the arguments you type below, as a JSON object.",
    "reject": "Do not run it; the reason you type below, if any, goes to the model.",
    "respond": "Do not run it; the reply you type below is its result.",
}

#: What happens to a review that ends without decisions: raise, or reject every action.
Unanswered: TypeAlias = Literal["raise", "reject"]

_TEXT_SUFFIX: Final = "-text"


def _refuse(message: str) -> UserInteractionError:
    return UserInteractionError(f"review: {message}", ErrorCode.BAD_REQUEST)


def _actions(request: object) -> list[tuple[str, dict[str, Any], str | None, list[DecisionType]]]:
    """``(name, args, description, allowed)`` per action, or ``BAD_REQUEST`` naming the field."""
    if not isinstance(request, Mapping):
        raise _refuse(f"$: expected an object, got {type(request).__name__}")
    fields = cast("Mapping[str, object]", request)
    actions = fields.get("action_requests")
    configs = fields.get("review_configs")
    if not isinstance(actions, list) or not actions:
        raise _refuse("$.action_requests: expected a non-empty array")
    if not isinstance(configs, list):
        raise _refuse("$.review_configs: expected an array")
    action_list = cast("list[object]", actions)
    config_list = cast("list[object]", configs)
    if len(config_list) != len(action_list):
        raise _refuse(
            f"$.review_configs: expected one per action request ({len(action_list)}),"
            f" got {len(config_list)}"
        )
    read: list[tuple[str, dict[str, Any], str | None, list[DecisionType]]] = []
    for index, (raw, raw_config) in enumerate(zip(action_list, config_list, strict=True)):
        here = f"$.action_requests[{index}]"
        if not isinstance(raw, Mapping):
            raise _refuse(f"{here}: expected an object")
        action = cast("Mapping[str, object]", raw)
        name = action.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _refuse(f"{here}.name: expected a non-empty string, got {name!r}")
        args = action.get("args")
        if not isinstance(args, dict):
            raise _refuse(f"{here}.args: expected an object, got {type(args).__name__}")
        description = action.get("description")
        if description is not None and not isinstance(description, str):
            raise _refuse(f"{here}.description: expected a string")
        read.append(
            (name, cast("dict[str, Any]", args), description, _allowed(raw_config, index, name))
        )
    return read


def _allowed(raw: object, index: int, name: str) -> list[DecisionType]:
    here = f"$.review_configs[{index}]"
    if not isinstance(raw, Mapping):
        raise _refuse(f"{here}: expected an object")
    config = cast("Mapping[str, object]", raw)
    if config.get("action_name") != name:
        raise _refuse(
            f"{here}.action_name: expected {name!r}, the action's name, got"
            f" {config.get('action_name')!r}"
        )
    allowed = config.get("allowed_decisions")
    if not isinstance(allowed, list) or not allowed:
        raise _refuse(f"{here}.allowed_decisions: expected a non-empty array")
    decisions: list[DecisionType] = []
    for number, decision in enumerate(cast("list[object]", allowed)):
        if decision not in DECISION_LABELS:
            raise _refuse(
                f"{here}.allowed_decisions[{number}]: unknown decision {decision!r};"
                f" known: {', '.join(DECISION_LABELS)}"
            )
        if decision in decisions:
            raise _refuse(f"{here}.allowed_decisions[{number}]: {decision!r} is listed twice")
        decisions.append(decision)
    return decisions


def _arguments_text(name: str, args: dict[str, Any], index: int) -> str:
    try:
        return json.dumps(args, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        msg = f"$.action_requests[{index}].args: cannot be shown as JSON: {error}"
        raise _refuse(msg) from None


def hitl_questions(request: HITLRequest | Mapping[str, object]) -> AskUserQuestionRequest[Any]:
    """The questions that review *request*, a ``HumanInTheLoopMiddleware`` ``HITLRequest``.

    Raises ``BAD_REQUEST`` (a :class:`~dsh_user_interaction.UserInteractionError`)
    naming the field when *request* is malformed or cannot be shown
    faithfully (a config for another action, an unknown or repeated
    decision, arguments that are not JSON).

    >>> request = hitl_questions({
    ...     "action_requests": [{"name": "delete", "args": {"path": "a.txt"}}],
    ...     "review_configs": [
    ...         {"action_name": "delete", "allowed_decisions": ["approve", "reject"]}]})
    >>> [(q["id"], [o["label"] for o in q.get("options", [])]) for q in request["questions"]]
    [('action-0', ['Approve', 'Reject']), ('action-0-text', [])]
    """
    questions: list[AskUserQuestionItem] = []
    for index, (name, args, description, allowed) in enumerate(_actions(request)):
        options: list[AskUserQuestionOption] = [
            {"label": DECISION_LABELS[decision], "description": _DESCRIPTIONS[decision]}
            for decision in allowed
        ]
        question_id = f"action-{index}"
        questions.append(
            {
                "id": question_id,
                "header": name,
                "question": description if description and description.strip() else f"Run {name}?",
                "detail": _arguments_text(name, args, index),
                "options": options,
            }
        )
        wanted = [DECISION_LABELS[d] for d in allowed if d != "approve"]
        if wanted:
            questions.append(
                {
                    "id": question_id + _TEXT_SUFFIX,
                    "header": name,
                    "question": _text_question(allowed),
                }
            )
    return {"questions": questions}


def _text_question(allowed: Sequence[DecisionType]) -> str:
    parts = {
        "edit": "the edited arguments as a JSON object (Edit)",
        "respond": "your reply (Respond)",
        "reject": "why, if you like (Reject)",
    }
    return "Your text: " + "; ".join(parts[d] for d in allowed if d in parts) + "."


def _bad_answer(message: str, answer: object) -> UserInteractionError:
    return UserInteractionError(message, ErrorCode.BAD_ANSWER, answer=answer)


def hitl_decisions(
    request: HITLRequest | Mapping[str, object], answer: AskUserQuestionAnswer
) -> HITLResponse:
    """The ``{"decisions": [...]}`` that *answer* (to :func:`hitl_questions`) makes for *request*.

    Raises ``BAD_ANSWER`` naming the question, with *answer* kept on the
    error, when an action gets no allowed decision, text it does not take, no
    text where it needs some, or edited arguments that are not a JSON object;
    and for an answer made of defaults. Raises ``BAD_REQUEST`` for a malformed
    *request*, as :func:`hitl_questions` does.

    >>> request = {"action_requests": [{"name": "delete", "args": {"path": "a.txt"}}],
    ...     "review_configs": [{"action_name": "delete", "allowed_decisions": ["edit"]}]}
    >>> hitl_decisions(request, {"answers": [{"id": "action-0", "selected": ["Edit"]},
    ...     {"id": "action-0-text", "selected": [], "custom": '{"path": "b.txt"}'}]})
    {'decisions': [{'type': 'edit', 'edited_action': {'name': 'delete', \
'args': {'path': 'b.txt'}}}]}
    """
    actions = _actions(request)
    if cast("Mapping[str, object]", answer).get("defaulted") is True:
        raise _bad_answer("an answer made of defaults never decides an action", answer)
    items: dict[str, Mapping[str, object]] = {}
    raw_items = cast("Mapping[str, object]", answer).get("answers")
    if isinstance(raw_items, list):
        for raw in cast("list[object]", raw_items):
            if isinstance(raw, Mapping):
                item = cast("Mapping[str, object]", raw)
                if isinstance(item.get("id"), str):
                    items[cast("str", item["id"])] = item
    decisions: list[Decision] = []
    for index, (name, _args, _description, allowed) in enumerate(actions):
        decisions.append(_decision(index, name, allowed, items, answer))
    return {"decisions": decisions}


def _decision(
    index: int,
    name: str,
    allowed: Sequence[DecisionType],
    items: Mapping[str, Mapping[str, object]],
    answer: object,
) -> Decision:
    question_id = f"action-{index}"
    where = f"question {question_id!r} ({name})"
    item = items.get(question_id)
    if item is None:
        raise _bad_answer(f"{where}: no answer", answer)
    selected = item.get("selected")
    if (
        "custom" in item
        or not isinstance(selected, list)
        or len(cast("list[object]", selected)) != 1
    ):
        choices = ", ".join(DECISION_LABELS[d] for d in allowed)
        raise _bad_answer(f"{where}: choose exactly one of {choices}", answer)
    label = cast("list[object]", selected)[0]
    chosen = next((d for d in allowed if DECISION_LABELS[d] == label), None)
    if chosen is None:
        raise _bad_answer(f"{where}: {label!r} is not an allowed decision", answer)
    text_item = items.get(question_id + _TEXT_SUFFIX)
    text = text_item.get("custom") if text_item is not None else None
    text_where = f"question {question_id + _TEXT_SUFFIX!r} ({name})"
    if text is not None and not isinstance(text, str):
        raise _bad_answer(f"{text_where}: custom must be a string", answer)
    if chosen == "approve":
        if text is not None:
            raise _bad_answer(f"{text_where}: Approve takes no text; skip this question", answer)
        return {"type": "approve"}
    if chosen == "reject":
        return {"type": "reject", "message": text} if text else {"type": "reject"}
    if not text:
        needed = (
            "Edit needs the edited arguments" if chosen == "edit" else "Respond needs the reply"
        )
        raise _bad_answer(f"{text_where}: {needed}", answer)
    if chosen == "respond":
        return {"type": "respond", "message": text}
    try:
        args = json.loads(text)
    except json.JSONDecodeError as error:
        raise _bad_answer(
            f"{text_where}: the edited arguments are not JSON: {error}", answer
        ) from None
    if not isinstance(args, dict):
        raise _bad_answer(
            f"{text_where}: the edited arguments must be a JSON object, got {type(args).__name__}",
            answer,
        )
    return {"type": "edit", "edited_action": {"name": name, "args": cast("dict[str, Any]", args)}}


def _rejected(
    request: HITLRequest | Mapping[str, object], error: UserInteractionError
) -> HITLResponse:
    return {"decisions": [{"type": "reject", "message": str(error)} for _ in _actions(request)]}


async def answer_hitl(
    service: AskingService,
    request: HITLRequest | Mapping[str, object],
    *,
    ask_id: str | None = None,
    unanswered: Unanswered = "raise",
) -> HITLResponse:
    """Ask *service* to review *request* and return the middleware's ``HITLResponse``.

    *ask_id* names the ask (``askId``) for a durable provider; pass the
    interrupt's (:func:`ask_id_for`). A dismissal, an abort, a timeout or a
    disposal raises its :class:`~dsh_user_interaction.UserInteractionError`
    unless *unanswered* is ``"reject"``: then every action is rejected with
    the error's message. Raises ``BAD_REQUEST`` or ``BAD_ANSWER`` as
    :func:`hitl_questions` and :func:`hitl_decisions` do; cancellation
    propagates.
    """
    questions = hitl_questions(request)
    asked = with_ask_id(questions, ask_id) if ask_id is not None else questions
    try:
        answer = await service.ask(asked)
    except UserInteractionError as error:
        ended = error.code in (
            ErrorCode.ASK_CANCELLED,
            ErrorCode.ASK_ABORTED,
            ErrorCode.PROVIDER_DISPOSED,
        )
        if unanswered == "reject" and ended:
            return _rejected(request, error)
        raise
    return hitl_decisions(request, answer)


def tool_approval_review(request: Mapping[str, object], response_schema: object) -> HITLRequest:
    """The one-action ``HITLRequest`` equal to a ``per_call`` mode ``ToolApprovalRequest``.

    In ``per_call`` mode the middleware pauses once per gated tool call, and
    the decisions it allows are written only in the interrupt's
    ``response_schema``: the keys of its discriminator's ``mapping``, or the
    one ``type`` constant when a single decision is allowed. The interrupt is
    resumed with one decision, ``hitl_decisions(...)["decisions"][0]``.
    Raises ``BAD_REQUEST`` naming the field when *request* is malformed or
    the schema names no decision.

    >>> tool_approval_review(
    ...     {"type": "tool_approval", "tool_call_id": "c1", "name": "rm", "args": {}},
    ...     {"properties": {"type": {"const": "respond"}}})["review_configs"]
    [{'action_name': 'rm', 'allowed_decisions': ['respond']}]
    """
    if request.get("type") != "tool_approval":
        raise _refuse(f"$.type: expected 'tool_approval', got {request.get('type')!r}")
    name = request.get("name")
    action: dict[str, object] = {"name": name, "args": request.get("args")}
    description = request.get("description")
    if description is not None:
        action["description"] = description
    allowed = _schema_decisions(response_schema)
    review = {
        "action_requests": [action],
        "review_configs": [{"action_name": name, "allowed_decisions": allowed}],
    }
    _actions(review)  # the same checks, naming the same fields
    return cast("HITLRequest", review)


def _schema_decisions(schema: object) -> list[object]:
    """The decision types a ``per_call`` interrupt's ``response_schema`` allows, in its order."""
    if isinstance(schema, Mapping):
        fields = cast("Mapping[str, object]", schema)
        discriminator = fields.get("discriminator")
        if isinstance(discriminator, Mapping):
            mapping = cast("Mapping[str, object]", discriminator).get("mapping")
            if isinstance(mapping, Mapping) and mapping:
                return list(cast("Mapping[object, object]", mapping))
        properties = fields.get("properties")
        if isinstance(properties, Mapping):
            kind = cast("Mapping[str, object]", properties).get("type")
            if isinstance(kind, Mapping) and "const" in kind:
                return [cast("Mapping[str, object]", kind)["const"]]
    msg = "response_schema: names no decision (no discriminator mapping, no type constant)"
    raise _refuse(msg)
