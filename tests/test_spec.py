"""The spec, the schemas and the types stay in step."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NotRequired, Required, get_args, get_origin, get_type_hints

import jsonschema
import pytest

# typing_extensions' versions see through ReadOnly (PEP 705) on Python 3.11 too.
import typing_extensions
from hypothesis import given
from hypothesis import strategies as st
from typing_extensions import ReadOnly

import dsh_user_interaction
from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    answer_violations,
)
from dsh_user_interaction._checks import LEVELS
from dsh_user_interaction.extra.stdio import PROTOCOL_VERSION
from dsh_user_interaction_conformance.strategies import invalid_answers, requests, valid_answers

ROOT = Path(__file__).parent.parent
SPEC = (ROOT / "spec" / "user-interaction.md").read_text(encoding="utf-8")
REQUIREMENT = re.compile(
    r"^- \*\*(?P<id>[A-Z]+(?:-[A-Z]+)*-\d+)\*\* \((?P<level>MUST NOT|MUST|SHOULD)\) ", re.M
)
SCHEMAS = ROOT / "spec" / "schema"


def spec_requirements() -> dict[str, str]:
    found: dict[str, str] = {}
    for match in REQUIREMENT.finditer(SPEC):
        assert match["id"] not in found, f"duplicate requirement {match['id']}"
        found[match["id"]] = match["level"]
    return found


def test_spec_declares_its_version_and_requirements() -> None:
    """The spec's version is the package's SPEC_VERSION, and it has requirements."""
    assert f"Spec version: **{dsh_user_interaction.SPEC_VERSION}**" in SPEC
    assert len(spec_requirements()) >= 50


def test_every_id_the_reference_cites_is_in_the_spec() -> None:
    """No requirement ID in the reference's source is unknown to the spec."""
    known = spec_requirements()
    source = "".join(p.read_text() for p in (ROOT / "reference").rglob("*.py"))
    cited = set(re.findall(r"\b(?:REQ|INT|SVC|ANS|PRV|ERR|ABT)-[A-Z]+-\d+\b", source))
    assert cited, "the reference cites requirement IDs"
    assert cited <= set(known), cited - set(known)


def test_answer_rule_levels_match_the_spec() -> None:
    """The levels the answer checks use are the spec's."""
    known = spec_requirements()
    for requirement, level in LEVELS.items():
        assert known[requirement] == level, requirement


def load(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def keys_of(cls: type) -> tuple[set[str], set[str]]:
    """The required and optional keys of a TypedDict, from its explicit qualifiers."""
    hints = get_type_hints(cls, include_extras=True)
    required: set[str] = set()
    optional: set[str] = set()
    for key, hint in hints.items():
        origin = get_origin(hint)
        assert origin in {Required, NotRequired}, (
            f"{cls.__name__}.{key} must say Required or NotRequired"
        )
        (required if origin is Required else optional).add(key)
    assert required == cls.__required_keys__  # type: ignore[attr-defined]
    return required, optional


@pytest.mark.parametrize(
    ("cls", "path"),
    [
        (AskUserQuestionRequest, ("request.schema.json", None)),
        (AskUserQuestionItem, ("request.schema.json", "question")),
        (AskUserQuestionOption, ("request.schema.json", "option")),
        (PlanReviewIntent, ("request.schema.json", "intent")),
        (AskUserQuestionAnswer, ("answer.schema.json", None)),
        (AskUserQuestionAnswerItem, ("answer.schema.json", "item")),
    ],
)
def test_schemas_match_the_typed_dicts(cls: type, path: tuple[str, str | None]) -> None:
    """Each schema object has the TypedDict's keys, with the same required set."""
    schema = load(path[0])
    node = schema if path[1] is None else schema["$defs"][path[1]]
    required, optional = keys_of(cls)
    live: set[str] = {"signal", "agent"} if cls is AskUserQuestionRequest else set()
    assert set(node["required"]) == required
    assert set(node["properties"]) == (required | optional) - live


TYPES = {str: "string", bool: "boolean"}


def test_request_types_are_read_only_for_providers() -> None:
    """PRV-MUTATE-1 in the types: every key a provider receives is ReadOnly; answers are not."""
    for cls in (
        AskUserQuestionRequest,
        AskUserQuestionItem,
        AskUserQuestionOption,
        PlanReviewIntent,
    ):
        for key, hint in get_type_hints(cls, include_extras=True).items():
            assert get_origin(get_args(hint)[0]) is ReadOnly, f"{cls.__name__}.{key}"
    for answer_cls in (AskUserQuestionAnswer, AskUserQuestionAnswerItem):
        for key, hint in get_type_hints(answer_cls, include_extras=True).items():
            assert get_origin(get_args(hint)[0]) is not ReadOnly, f"{answer_cls.__name__}.{key}"


def test_scalar_types_match() -> None:
    """Scalar keys have the same JSON type as their Python annotation."""
    schema = load("request.schema.json")
    for cls, name in [(AskUserQuestionItem, "question"), (AskUserQuestionOption, "option")]:
        hints = typing_extensions.get_type_hints(cls)  # without ReadOnly
        for key, hint in hints.items():
            if hint in TYPES:
                assert schema["$defs"][name]["properties"][key]["type"] == TYPES[hint], key
    assert get_args(typing_extensions.get_type_hints(PlanReviewIntent)["kind"]) == ("plan-review",)
    assert get_origin(get_type_hints(AskUserQuestionAnswerItem)["selected"]) is list


@pytest.mark.slow
@given(requests())
def test_drawn_requests_validate_against_the_schema(request: AskUserQuestionRequest) -> None:
    """Every well-formed request is valid JSON Schema instance (without live keys)."""
    data = {k: v for k, v in request.items() if k not in {"signal", "agent"}}
    jsonschema.validate(data, load("request.schema.json"))


@pytest.mark.slow
@given(st.data())
def test_answer_schema_agrees_on_valid_answers(data: st.DataObject) -> None:
    """Answers that keep the rules are valid schema instances."""
    request = data.draw(requests())
    jsonschema.validate(data.draw(valid_answers(request)), load("answer.schema.json"))


@pytest.mark.slow
@given(st.data())
def test_answer_schema_never_accepts_what_the_shape_rules_reject(data: st.DataObject) -> None:
    """Where a shape rule (SHAPE, KEYS, SEL-1, SEL-2, CUSTOM) breaks, the schema rejects too."""
    request = data.draw(requests())
    case = data.draw(invalid_answers(request))
    shape_rules = {"ANS-SHAPE-1", "ANS-KEYS-1", "ANS-SEL-1", "ANS-SEL-2", "ANS-CUSTOM-1"}
    broken = {v.requirement for v in answer_violations(request, case.answer)}
    if broken & shape_rules:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(case.answer, load("answer.schema.json"))


def test_tool_spec_ids_and_their_tests_agree() -> None:
    """Every TOOL-/PLAN- requirement is cited by a test, and every cited ID exists."""
    text = (ROOT / "spec" / "tool.md").read_text(encoding="utf-8")
    declared = {m["id"] for m in REQUIREMENT.finditer(text)}
    assert f"Spec version: **{dsh_user_interaction.SPEC_VERSION}**" in text
    tests = "".join(
        (ROOT / "tests" / name).read_text() for name in ("test_tool.py", "test_plan_review.py")
    )
    cited = set(re.findall(r"\b(?:TOOL|PLAN)-[A-Z]+-\d+\b", tests))
    assert declared
    assert declared == cited, (declared - cited, cited - declared)


HARNESS = (ROOT / "spec" / "harness.md").read_text(encoding="utf-8")
HARNESS_ID = re.compile(
    r"^- \*\*(?P<id>HAR-[A-Z]+-\d+)\*\* \((?P<level>MUST NOT|MUST|SHOULD)\) ", re.M
)


def test_every_harness_requirement_is_implemented_where_it_is_cited() -> None:
    """Each HAR-* ID of spec/harness.md is cited by the suite's side of the protocol.

    The IDs are unique, the protocol declares the version the suite speaks,
    and no code cites an ID the protocol does not define.
    """
    ids = [match["id"] for match in HARNESS_ID.finditer(HARNESS)]
    assert len(ids) == len(set(ids)) >= 20
    assert f"Protocol version: **{PROTOCOL_VERSION}**" in HARNESS
    sources = [
        *(ROOT / "reference" / "dsh_user_interaction" / "extra" / "stdio").glob("*.py"),
        *(ROOT / "conformance" / "dsh_user_interaction_conformance").rglob("*.py"),
    ]
    text = "\n".join(path.read_text(encoding="utf-8") for path in sources)
    assert [rid for rid in ids if rid not in text] == []
    cited = set(re.findall(r"HAR-[A-Z]+-\d+", text))
    assert cited <= set(ids), cited - set(ids)


def test_the_harness_schema_is_valid_and_covers_every_method() -> None:
    """The harness schema is valid 2020-12, and names every method of the spec's tables."""
    schema = json.loads((SCHEMAS / "harness.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    methods = set(re.findall(r"^\| `([a-z_.]+)` \|", HARNESS, re.M))
    named = set(re.findall(r'"const": "([a-z_.]+)"', json.dumps(schema, indent=1)))
    protocol = {"hello", "new", "close", "ask", "perform", "is_shown", "register", "dispose",
                "ping", "provider.ask", "abort", "listeners", "cancel"}  # fmt: skip
    assert protocol <= methods
    assert protocol <= named
