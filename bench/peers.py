"""The peers the seam is compared with, written the way their users would write them.

Each peer validates the benchmark's request (and, where said, its answer)
with a popular library and its idiomatic types: ``list[...]`` fields and
explicit ``Required`` / ``NotRequired``, with no custom validators. What each
one checks, and what it leaves out, is in :data:`ANCHORS`, so a ratio is never
read as a comparison of equal work.
"""

# Note: no ``from __future__ import annotations``. TypedDict reads Required and
# NotRequired when the class is created, so they must be real objects.
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, Required

import jsonschema
import msgspec
import pydantic
from typing_extensions import TypedDict

from dsh_user_interaction import AskUserQuestionRequest

__all__ = [
    "ANCHORS",
    "Anchor",
    "NaturalAnswer",
    "NaturalRequest",
    "RequestStruct",
    "jsonschema_validator",
    "msgspec_reference",
    "msgspec_struct",
    "msgspec_typeddict",
    "pydantic_list",
    "pydantic_list_with_answer",
    "pydantic_models_with_answer",
    "pydantic_reference",
]

ROOT = Path(__file__).resolve().parent.parent


# --- TypedDicts as a user would write them (pydantic needs typing_extensions' on 3.11) ----


class NaturalOption(TypedDict):
    label: Required[str]
    description: NotRequired[str]


class NaturalIntent(TypedDict):
    kind: Required[str]
    approve: Required[str]


class NaturalQuestion(TypedDict):
    id: Required[str]
    question: Required[str]
    detail: NotRequired[str]
    header: NotRequired[str]
    options: NotRequired[list[NaturalOption]]
    multiSelect: NotRequired[bool]
    intent: NotRequired[NaturalIntent]


class NaturalRequest(TypedDict):
    questions: Required[list[NaturalQuestion]]


class NaturalAnswerItem(TypedDict):
    id: Required[str]
    selected: Required[list[str]]
    custom: NotRequired[str]


class NaturalAnswer(TypedDict):
    answers: Required[list[NaturalAnswerItem]]


# --- pydantic models, the other way its users write it ----------------------------------


class OptionModel(pydantic.BaseModel):
    label: str
    description: str | None = None


class IntentModel(pydantic.BaseModel):
    kind: str
    approve: str


class QuestionModel(pydantic.BaseModel):
    id: str
    question: str
    detail: str | None = None
    header: str | None = None
    options: list[OptionModel] | None = None
    multiSelect: bool = False
    intent: IntentModel | None = None


class RequestModel(pydantic.BaseModel):
    questions: list[QuestionModel]


class AnswerItemModel(pydantic.BaseModel):
    id: str
    selected: list[str]
    custom: str | None = None


class AnswerModel(pydantic.BaseModel):
    answers: list[AnswerItemModel]


# --- msgspec Structs; UNSET marks a key that may be absent -----------------------------


class OptionStruct(msgspec.Struct):
    label: str
    description: str | msgspec.UnsetType = msgspec.UNSET


class IntentStruct(msgspec.Struct):
    kind: str
    approve: str


class QuestionStruct(msgspec.Struct):
    id: str
    question: str
    detail: str | msgspec.UnsetType = msgspec.UNSET
    header: str | msgspec.UnsetType = msgspec.UNSET
    options: list[OptionStruct] | msgspec.UnsetType = msgspec.UNSET
    multiSelect: bool = False
    intent: IntentStruct | msgspec.UnsetType = msgspec.UNSET


class RequestStruct(msgspec.Struct):
    questions: list[QuestionStruct]


# --- the validators: each a one-argument callable built once ----------------------------

Validate = Callable[[Any], object]


def pydantic_list() -> Validate:
    """``TypeAdapter(NaturalRequest).validate_python``."""
    return pydantic.TypeAdapter(NaturalRequest).validate_python


def pydantic_list_with_answer() -> Callable[[Any, Any], object]:
    """The request and the answer, each with its own ``TypeAdapter``."""
    request = pydantic.TypeAdapter(NaturalRequest).validate_python
    answer = pydantic.TypeAdapter(NaturalAnswer).validate_python

    def both(request_value: Any, answer_value: Any) -> object:
        request(request_value)
        return answer(answer_value)

    return both


def pydantic_models_with_answer() -> Callable[[Any, Any], object]:
    """``RequestModel.model_validate`` and ``AnswerModel.model_validate``: model instances."""
    request = RequestModel.model_validate
    answer = AnswerModel.model_validate

    def both(request_value: Any, answer_value: Any) -> object:
        request(request_value)
        return answer(answer_value)

    return both


def pydantic_reference() -> Validate:
    """pydantic on the reference's own ``AskUserQuestionRequest``.

    It is generic with a PEP 696 default and a ``ReadOnly`` agent: pydantic
    takes it once parametrised (``[object]``), with ``arbitrary_types_allowed``
    for the ``AbortSignal``; it warns that it cannot enforce ``ReadOnly``.
    """
    config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Items .* are using the `ReadOnly` qualifier")
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(
            AskUserQuestionRequest[object], config=config
        )
    return adapter.validate_python


def _convert(target: Any) -> Validate:
    def convert(value: Any) -> object:
        return msgspec.convert(value, type=target)

    convert.__qualname__ = f"convert[{getattr(target, '__name__', target)}]"
    return convert


def msgspec_struct() -> Validate:
    """``msgspec.convert(request, type=RequestStruct)``."""
    return _convert(RequestStruct)


def msgspec_typeddict() -> Validate:
    """``msgspec.convert(request, type=NaturalRequest)``."""
    return _convert(NaturalRequest)


def msgspec_reference() -> Validate:
    """``msgspec.convert`` to the reference's own ``AskUserQuestionRequest``."""
    convert = _convert(AskUserQuestionRequest)
    convert({"questions": [{"id": "q", "question": "Q?"}]})  # raises where unsupported
    return convert


def jsonschema_validator() -> Validate:
    """A compiled ``Draft202012Validator`` on ``spec/schema/request.schema.json``."""
    schema = json.loads((ROOT / "spec" / "schema" / "request.schema.json").read_text())
    # The JSON form has no agent or signal keys, and the workload has neither.
    schema.get("properties", {}).pop("agent", None)
    schema.get("properties", {}).pop("signal", None)
    return jsonschema.Draft202012Validator(schema).is_valid


@dataclass(frozen=True)
class Anchor:
    """What a candidate checks, and what it leaves out, against ``check_request``."""

    checks: str
    leaves_out: str


_TYPES_ONLY = (
    "non-empty id, question and label; unique ids; unique labels; the intent's approve "
    "label among the options; a non-empty detail under an intent"
)

#: Every candidate of the benchmark, by name.
ANCHORS: dict[str, Anchor] = {
    "strict ask": Anchor(
        "every request rule (REQ-*, INT-*, stages 1-5), the provider call with abort and "
        "dispose wiring, every MUST answer rule; worded errors",
        "nothing",
    ),
    "lenient ask": Anchor("every request rule and the provider call with its wiring", "the answer"),
    "direct provider": Anchor(
        "nothing: `await provider.ask(request)` on the ScriptedProvider", "everything"
    ),
    "check_request": Anchor(
        "every request rule (REQ-*, INT-*), with a worded BAD_REQUEST/BAD_INTENT", "the answer"
    ),
    "answer_violations": Anchor(
        "every answer rule, MUST and SHOULD, collecting worded violations", "the request"
    ),
    "floor request": Anchor(
        "every request rule check_request checks, as one tuned bool function",
        "the answer; messages",
    ),
    "floor answer": Anchor(
        "every MUST answer rule, as one tuned bool function",
        "the request; ANS-MULTI-2 (a SHOULD); messages",
    ),
    "floor ask": Anchor(
        "floor request + `await provider.ask` + floor answer: a minimal strict ask",
        "abort and dispose wiring; messages",
    ),
    "pydantic-list": Anchor(
        "types and required keys of the request (lax mode: 1 passes as a bool); "
        "builds a copy without unknown keys",
        f"{_TYPES_ONLY}; empty questions; the signal; the answer",
    ),
    "pydantic-list req+answer": Anchor(
        "pydantic-list, then the answer's types and required keys (its own TypeAdapter); "
        "builds a copy of both",
        f"{_TYPES_ONLY}; empty questions; the signal; the answer's order and count, the "
        "labels offered, repeated labels, one label on a single-select question, custom "
        "text with a choice or blank, unknown keys (dropped, not refused)",
    ),
    "pydantic-models req+answer": Anchor(
        "as pydantic-list req+answer, with BaseModel classes (None allowed where a key "
        "may be absent); builds model instances",
        "as pydantic-list req+answer; also accepts null for an optional key",
    ),
    "pydantic-reference": Anchor(
        "as pydantic-list, on the reference's Sequence-typed generic TypedDict "
        "(also the signal's type)",
        f"{_TYPES_ONLY}; empty questions; the answer",
    ),
    "msgspec-struct": Anchor(
        "types and required keys of the request; builds Structs",
        f"{_TYPES_ONLY}; empty questions; the signal; the answer",
    ),
    "msgspec-typeddict": Anchor(
        "types and required keys of the request; builds dicts",
        f"{_TYPES_ONLY}; empty questions; the signal; the answer",
    ),
    "msgspec-reference": Anchor(
        "as msgspec-typeddict, on the reference's types", "as msgspec-typeddict"
    ),
    "jsonschema": Anchor(
        "types, required keys, non-empty questions, non-empty id, question and label "
        "(minItems, minLength)",
        "unique ids; unique labels; the intent's approve label; a detail under an intent; "
        "the signal; the answer",
    ),
}
