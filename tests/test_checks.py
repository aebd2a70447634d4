"""The request checks (REQ-*, INT-*, SVC-ORDER-*) and the answer rules (ANS-*)."""

from __future__ import annotations

import json
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import (
    AbortSignal,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    answer_violations,
    check_request,
    is_blank,
    request_violations,
)
from dsh_user_interaction_conformance.strategies import (
    InvalidAnswer,
    InvalidRequest,
    agents,
    invalid_answers,
    invalid_requests,
    requests,
    valid_answers,
)

from .helpers import json_values

# Values shaped like requests, with junk in every position.
near_requests = st.fixed_dictionaries(
    {
        "questions": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": json_values | st.text(max_size=3),
                    "question": json_values | st.text(max_size=3),
                    "header": json_values,
                    "detail": json_values,
                    "options": st.lists(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "label": json_values | st.text(max_size=2),
                                "description": json_values,
                            },
                        )
                        | json_values,
                        max_size=3,
                    )
                    | json_values,
                    "multiSelect": json_values,
                    "intent": st.fixed_dictionaries(
                        {}, optional={"kind": json_values, "approve": json_values}
                    )
                    | json_values,
                },
            )
            | json_values,
            max_size=3,
        )
        | json_values
    },
    optional={"agent": json_values, "signal": st.none() | st.builds(AbortSignal.abort)},
)


def _raised(request: object, *, has_provider: bool = True) -> UserInteractionError | None:
    try:
        check_request(request, has_provider=has_provider)
    except UserInteractionError as error:
        return error
    return None


@given(requests())
def test_well_formed_requests_pass(request: AskUserQuestionRequest) -> None:
    """Every drawn well-formed request passes, and with no provider fails only NO_PROVIDER."""
    assert _raised(request) is None
    error = _raised(request, has_provider=False)
    assert error is not None
    assert error.code is ErrorCode.NO_PROVIDER
    assert str(error) == "no user-interaction provider is registered"


@given(invalid_requests())
def test_each_defect_raises_its_code(case: InvalidRequest) -> None:
    """A request with one defect raises that defect's code; BAD_REQUEST names the field."""
    error = _raised(case.request, has_provider=False)
    assert error is not None, case
    assert error.code is case.code, (case, error)
    if case.code is ErrorCode.BAD_REQUEST:
        assert case.field is not None
        assert case.field in str(error)


@given(near_requests)
def test_junk_never_crashes_the_checks(request: object) -> None:
    """Whatever the request holds, the checks raise a UserInteractionError or nothing."""
    error = _raised(request)
    assert error is None or isinstance(error, UserInteractionError)


@given(json_values)
def test_junk_requests_are_bad_requests(request: object) -> None:
    """A request that is not a mapping is a BAD_REQUEST naming ``request``."""
    if isinstance(request, dict):
        return
    error = _raised(request)
    assert error is not None
    assert error.code is ErrorCode.BAD_REQUEST
    assert "request must be a mapping" in str(error)


def _question(**extra: Any) -> dict[str, Any]:
    return {"id": "q", "question": "Go?", **extra}


def test_bad_intent_messages_are_exact() -> None:
    """SVC-ORDER-4: the original's messages, with the approve label JSON-quoted."""
    approve = _question(
        options=[{"label": "Yes"}],
        detail="plan",
        intent={"kind": "plan-review", "approve": 'Ap"prove'},
    )
    error = _raised({"questions": [approve]})
    assert error is not None
    assert str(error) == (
        "question q declares intent plan-review whose approve label "
        '"Ap\\"prove" names none of its options'
    )
    no_detail = _question(
        options=[{"label": "Yes"}], intent={"kind": "custom-kind", "approve": "Yes"}
    )
    error = _raised({"questions": [no_detail]})
    assert error is not None
    assert error.code is ErrorCode.BAD_INTENT
    assert str(error) == "question q declares intent custom-kind without the detail it reviews"


def test_approve_check_comes_before_detail_check() -> None:
    """Within one question, INT-APPROVE-1 is reported before INT-DETAIL-1."""
    both = _question(intent={"kind": "plan-review", "approve": "Approve"})
    error = _raised({"questions": [both]})
    assert error is not None
    assert "names none of its options" in str(error)


@given(st.data())
def test_stages_run_in_order(data: st.DataObject) -> None:
    """SVC-ORDER-1..5: with defects at several stages, the earliest stage wins, anywhere."""
    request = cast("dict[str, Any]", dict(data.draw(requests(min_questions=2))))
    questions = [dict(q) for q in request["questions"]]
    for question in questions:
        question.pop("intent", None)
    request["questions"] = questions
    intent_at, structure_at = data.draw(st.permutations(range(len(questions))))[:2]
    questions[intent_at]["intent"] = {"kind": "plan-review", "approve": "\x00never a label"}
    questions[intent_at]["detail"] = "plan"
    stages = data.draw(st.sets(st.sampled_from(["abort", "structure"])))
    if "structure" in stages:
        questions[structure_at]["multiSelect"] = "yes"
    if "abort" in stages:
        request["signal"] = AbortSignal.abort()
    error = _raised(request, has_provider=False)
    assert error is not None
    expected = (
        ErrorCode.ASK_ABORTED if "abort" in stages
        else ErrorCode.BAD_REQUEST if "structure" in stages
        else ErrorCode.BAD_INTENT
    )  # fmt: skip
    assert error.code is expected


def test_empty_questions_beats_structure_but_not_abort() -> None:
    """SVC-ORDER-1 before SVC-ORDER-2 before SVC-ORDER-3."""
    empty = _raised({"questions": [], "agent": 3})
    assert empty is not None
    assert empty.code is ErrorCode.EMPTY_QUESTIONS
    aborted = _raised({"questions": [], "signal": AbortSignal.abort()})
    assert aborted is not None
    assert aborted.code is ErrorCode.ASK_ABORTED


def test_bad_request_names_question_by_id_and_index() -> None:
    """SVC-ORDER-3: the message names the question and the field, ids quoted as JSON.stringify does."""
    request = {"questions": [_question(), {"id": "\u202eevil\n", "question": "x", "header": 3}]}
    error = _raised(request)
    assert error is not None
    assert str(error) == 'question "\u202eevil\\n" (questions[1]): header must be a string, got int'


def test_unknown_keys_pass_through() -> None:
    """REQ-EXTRA-1: keys the spec does not name are allowed everywhere."""
    request = {
        "questions": [_question(options=[{"label": "a", "icon": "x"}], priority=1)],
        "trace": "abc",
    }
    assert _raised(request) is None


@given(st.data())
def test_valid_answers_have_no_violations(data: st.DataObject) -> None:
    """Answers built from any human behaviour keep every rule."""
    request = data.draw(requests())
    answer = data.draw(valid_answers(request))
    assert answer_violations(request, answer) == []


@given(st.data())
def test_invalid_answers_are_caught_with_their_requirement(data: st.DataObject) -> None:
    """Each broken rule is reported under its own requirement ID, naming the question."""
    request = data.draw(requests())
    case: InvalidAnswer = data.draw(invalid_answers(request))
    found = answer_violations(request, case.answer)
    assert case.requirement in {violation.requirement for violation in found}, (case, found)
    assert all(
        violation.level == "MUST"
        for violation in found
        if violation.requirement == case.requirement
    )


@given(st.data(), json_values)
def test_junk_answers_never_crash(data: st.DataObject, answer: object) -> None:
    """answer_violations accepts anything and reports, never raises."""
    request = data.draw(requests())
    found = answer_violations(request, answer)
    if not isinstance(answer, dict):
        assert [violation.requirement for violation in found] == ["ANS-SHAPE-1"]


def test_multi_select_order_is_a_should() -> None:
    """ANS-MULTI-2: labels out of option order are a SHOULD violation only."""
    request: AskUserQuestionRequest = {
        "questions": [
            {
                "id": "m",
                "question": "Which?",
                "multiSelect": True,
                "options": [{"label": "a"}, {"label": "b"}],
            }
        ]
    }
    found = answer_violations(request, {"answers": [{"id": "m", "selected": ["b", "a"]}]})
    assert [(v.requirement, v.level) for v in found] == [("ANS-MULTI-2", "SHOULD")]
    assert (
        found[0].describe()
        == 'ANS-MULTI-2 (SHOULD): question "m": answers[0].selected labels are not in option order'
    )


@given(st.text())
def test_blank_matches_javascript_trim(text: str) -> None:
    """ANS-CUSTOM-1: blankness is JavaScript's trim, not str.isspace."""
    js_whitespace = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
        chr(c) for c in range(0x2000, 0x200B)
    )
    assert is_blank(text) == (text.strip(js_whitespace) == "")


def test_blank_differs_from_isspace_where_javascript_does() -> None:
    """``\\x1c`` is Python whitespace but not JavaScript's; ``\\ufeff`` the reverse."""
    assert not is_blank("\x1c")
    assert is_blank("\ufeff")


def test_violation_messages_quote_hostile_labels() -> None:
    """Labels in messages are JSON-quoted, so escapes and overrides stay visible."""
    request: AskUserQuestionRequest = {
        "questions": [{"id": "q", "question": "?", "options": [{"label": "a"}]}]
    }
    (violation,) = answer_violations(request, {"answers": [{"id": "q", "selected": ["\x1b[31m"]}]})
    assert json.dumps("\x1b[31m") in violation.message


def test_hostile_answers_give_bounded_reports() -> None:
    """A label repeated 10,000 times is one ANS-SEL-2 violation, and long labels are shortened."""
    label = "x" * 5_000
    request: AskUserQuestionRequest = {
        "questions": [
            {"id": "q", "question": "?", "multiSelect": True, "options": [{"label": label}]}
        ]
    }
    found = answer_violations(request, {"answers": [{"id": "q", "selected": [label] * 10_000}]})
    assert [v.requirement for v in found] == ["ANS-SEL-2"]
    assert len(found[0].message) < 400
    assert "(5000 characters)" in found[0].message


@given(invalid_requests())
def test_the_first_violation_is_the_bad_request_message(case: InvalidRequest) -> None:
    """SVC-ORDER-3: BAD_REQUEST is the first of request_violations, worded with its location."""
    found = request_violations(case.request)
    if case.code is not ErrorCode.BAD_REQUEST:
        return
    assert found, case
    assert found[0].requirement == case.requirement
    error = _raised(case.request, has_provider=False)
    assert error is not None
    assert str(error) == found[0].describe()
    assert str(error).startswith(found[0].location() + " ")


def test_request_violations_lists_every_problem_in_spec_order() -> None:
    """REQ-*: every reachable problem, in question order and field order, with its path."""
    request = {
        "questions": [
            {"id": "", "question": 3, "header": 1, "options": [{"label": "a"}, {"label": "a"}]},
            7,
            {"id": "q", "question": "?", "multiSelect": "no", "intent": {"kind": 1}},
        ],
        "signal": "now",
        "agent": object(),
    }
    found = request_violations(request)
    assert [(v.requirement, v.path) for v in found] == [
        ("REQ-SIGNAL-1", ("signal",)),
        ("REQ-ID-1", ("questions", 0, "id")),
        ("REQ-TEXT-1", ("questions", 0, "question")),
        ("REQ-HEADER-1", ("questions", 0, "header")),
        ("REQ-OPTIONS-3", ("questions", 0, "options", 1, "label")),
        ("REQ-ITEM-1", ("questions", 1)),
        ("REQ-MULTI-1", ("questions", 2, "multiSelect")),
        ("REQ-INTENT-1", ("questions", 2, "intent", "kind")),
        ("REQ-INTENT-1", ("questions", 2, "intent", "approve")),
    ]
    assert [v.describe() for v in found] == [
        "request.signal must be an AbortSignal, got str",
        "questions[0]: id must be a non-empty string, got an empty string",
        "questions[0]: question must be a non-empty string, got int",
        "questions[0]: header must be a string, got int",
        'questions[0]: options[1].label "a" duplicates an earlier option\'s label',
        "questions[1] must be a mapping, got int",
        'question "q" (questions[2]): multiSelect must be a bool, got str',
        'question "q" (questions[2]): intent.kind must be a string, got int',
        'question "q" (questions[2]): intent.approve must be a string, got nothing',
    ]
    assert [v.describe_for_model() for v in found] == [
        "$.signal: expected an AbortSignal, got string",
        "$.questions[0].id: expected a non-empty string, got an empty string",
        "$.questions[0].question: expected a non-empty string, got number",
        "$.questions[0].header: expected a string, got number",
        '$.questions[0].options[1].label: "a" duplicates $.questions[0].options[0].label',
        "$.questions[1]: expected an object, got number",
        "$.questions[2].multi_select: expected a boolean, got string",
        "$.questions[2].intent.kind: expected a string, got number",
        "$.questions[2].intent.approve: required",
    ]
    assert request_violations({"questions": []}) == []
    assert [v.describe() for v in request_violations([])] == ["request must be a mapping, got list"]
    assert [v.describe() for v in request_violations({})] == [
        "request.questions must be a non-empty list, got nothing"
    ]


@given(agents())
def test_any_agent_passes_the_checks(agent: object) -> None:
    """REQ-AGENT-2: the agent is opaque; nothing checks it."""
    check_request({"questions": [{"id": "q", "question": "?"}], "agent": agent})
    assert request_violations({"questions": [{"id": "q", "question": "?"}], "agent": agent}) == []


def test_unknown_answer_keys_are_bounded_and_never_repred() -> None:
    """ANS-KEYS-1: at most three keys named, shortened, then a count; a key's repr is never called."""

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("repr")

        def __hash__(self) -> int:
            return 1

    request: AskUserQuestionRequest = {"questions": [{"id": "q", "question": "?"}]}
    item: dict[object, object] = {"id": "q", "selected": [], "k" * 1_000_000: 1, Hostile(): 2}
    item.update({f"extra{i}": i for i in range(100_000)})
    found = answer_violations(request, {"answers": [item], Hostile(): 3})
    assert [v.requirement for v in found] == ["ANS-KEYS-1", "ANS-KEYS-1"]
    assert found[0].message == "answer has keys besides answers: a Hostile key"
    assert len(found[1].message) < 600
    assert found[1].message.endswith(" and 99999 more")
    assert "(1000000 characters)" in found[1].message


def test_a_hostile_answer_breaks_the_shape_rule_instead_of_raising() -> None:
    """ANS-SHAPE-1: an answer whose own methods raise is reported, never raised."""

    class Hostile(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise RuntimeError("no")

    request: AskUserQuestionRequest = {"questions": [{"id": "q", "question": "?"}]}
    (violation,) = answer_violations(request, Hostile(answers=[]))
    assert violation.requirement == "ANS-SHAPE-1"
    assert "could not be read" in violation.message


def test_tuples_are_not_lists_in_answers() -> None:
    """ANS-SEL-1 and ANS-SHAPE-1: an answer's lists must be lists, as in the types and in JSON."""
    request: AskUserQuestionRequest = {
        "questions": [{"id": "q", "question": "?", "options": [{"label": "A"}]}]
    }
    assert [
        v.requirement
        for v in answer_violations(request, {"answers": [{"id": "q", "selected": ("A",)}]})
    ] == ["ANS-SEL-1"]
    assert [
        v.requirement
        for v in answer_violations(request, {"answers": ({"id": "q", "selected": ["A"]},)})
    ] == ["ANS-SHAPE-1"]


def test_bad_request_messages_are_bounded() -> None:
    """SVC-ORDER-3: a 1 MB id or label is shortened in the message; the location stays exact."""
    huge = "i" * 1_000_000
    request = {"questions": [{"id": huge, "question": "?"}, {"id": huge, "question": "?"}]}
    error = _raised(request, has_provider=False)
    assert error is not None
    assert error.code is ErrorCode.BAD_REQUEST
    assert len(str(error)) < 600
    assert str(error).endswith(
        "(1000000 characters) (questions[1]): id duplicates an earlier question's id"
    )
    label = "l" * 1_000_000
    options = [{"label": label}, {"label": label}]
    error = _raised(
        {"questions": [{"id": "q", "question": "?", "options": options}]}, has_provider=False
    )
    assert error is not None
    assert len(str(error)) < 600


class _Contrary(str):
    """A label whose own equality and hash disagree with its characters."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 7


def test_a_str_subclass_label_is_matched_by_its_characters() -> None:
    """Picking the option the page showed is a valid answer, whatever the label's own __eq__ says."""
    request: Any = {
        "questions": [
            {
                "id": "q",
                "question": "Go?",
                "multiSelect": True,
                "options": [{"label": _Contrary("Yes")}, {"label": _Contrary("No")}],
            }
        ]
    }
    answer = {"answers": [{"id": "q", "selected": ["Yes", "No"]}]}
    assert answer_violations(request, answer) == []
    wrong = {"answers": [{"id": "q", "selected": ["Maybe"]}]}
    assert [v.requirement for v in answer_violations(request, wrong)] == ["ANS-SEL-3"]
