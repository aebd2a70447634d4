"""The pure-Python floor: the seam's request and answer rules, hand-written for speed.

``request_ok`` checks everything ``check_request`` checks (spec section 1 and
stages 1 to 4 of section 2), and ``answer_ok`` every ``MUST`` answer rule a
strict service enforces (spec section 3); each returns a bool instead of
raising a worded error. They are what a minimal, tuned ``ask()`` would have
to do, so they are the benchmark's floor: one function each, no messages, no
locations, no first-violation bookkeeping, the common case (``dict`` and
``list``) tested before the general one (``Mapping``, ``tuple``).

``python -m bench.floor`` runs :func:`self_test`: both functions must agree
with the reference on the benchmark's workloads, on a list of broken and
valid variants, and on a few thousand random mutations of them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from dsh_user_interaction import (
    AbortController,
    AbortSignal,
    UserInteractionError,
    answer_violations,
    check_request,
)

__all__ = ["answer_ok", "answer_to", "request_of", "request_ok", "self_test"]

#: ECMAScript's WhiteSpace and LineTerminator, what ``String.prototype.trim`` removes.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_ABSENT: Any = object()


def request_of(questions: int, options: int = 4) -> dict[str, Any]:
    """The benchmark's request: *questions* questions of *options* options each."""
    return {
        "questions": [
            {
                "id": f"q{i}",
                "question": f"Question {i}?",
                "options": [{"label": f"option {j}", "description": "why"} for j in range(options)],
            }
            for i in range(questions)
        ]
    }


def answer_to(request: Mapping[str, Any]) -> dict[str, Any]:
    """The matching valid answer: the first option of every question."""
    return {
        "answers": [
            {"id": q["id"], "selected": [q["options"][0]["label"]]} for q in request["questions"]
        ]
    }


def request_ok(request: object) -> bool:
    """Whether ``check_request(request)`` would pass (a provider being registered)."""
    try:
        verdict = _plain_request_ok(request)
    except Exception:  # noqa: BLE001 - a request that cannot be read is a BAD_REQUEST
        return False
    return _request_ok(request) if verdict is None else verdict


def answer_ok(request: Mapping[str, Any], answer: object) -> bool:
    """Whether *answer* keeps every ``MUST`` answer rule for a well-formed *request*."""
    try:
        verdict = _plain_answer_ok(request, answer)
        return _answer_ok(request, answer) if verdict is None else verdict
    except Exception:  # noqa: BLE001 - ANS-SHAPE-1: an answer that cannot be read is broken
        return False


# The common case first: plain dicts, lists and strings, tested by exact type,
# through local names (what runs per option), with required keys read by
# subscript (an absent one raises KeyError: rejected, as by the reference).
# ``None`` hands anything else to the general case below.


def _plain_request_ok(request: Any) -> bool | None:
    type_, dict_, list_, str_ = type, dict, list, str
    if type_(request) is not dict_:
        return None
    questions = request["questions"]
    if type_(questions) is not list_:
        return None
    # REQ-SIGNAL-1, SVC-ORDER-1, SVC-ORDER-2
    if "signal" in request:
        signal = request["signal"]
        if signal is not None and (type_(signal) is not AbortSignal or signal.aborted):
            return False
    if not questions:
        return False
    ids: dict[str, None] = {}
    for question in questions:
        # REQ-ITEM-1, REQ-ID-1, REQ-TEXT-1
        if type_(question) is not dict_:
            return None
        question_id = question["id"]
        text = question["question"]
        if type_(question_id) is not str_ or type_(text) is not str_:
            return None
        if not question_id or not text:
            return False
        ids[question_id] = None
        # REQ-OPTIONS-1, REQ-OPTIONS-2, REQ-OPTIONS-3
        labels: dict[str, None] = {}
        if "options" in question:
            options = question["options"]
            if type_(options) is not list_:
                return None
            for option in options:
                if type_(option) is not dict_:
                    return None
                label = option["label"]
                if type_(label) is not str_:
                    return None
                # One look-up; the default is a str, so a missing description passes.
                if not isinstance(option.get("description", ""), str_):
                    return False
                labels[label] = None
            # A repeated label, or an empty one.
            if len(labels) != len(options) or "" in labels:
                return False
            known = 3
        else:
            known = 2
        if len(question) == known:  # nothing optional
            continue
        # REQ-HEADER-1, REQ-DETAIL-1, REQ-MULTI-1
        if (
            ("header" in question and not isinstance(question["header"], str_))
            or ("detail" in question and not isinstance(question["detail"], str_))
            or ("multiSelect" in question and type_(question["multiSelect"]) is not bool)
        ):
            return False
        if "intent" in question:
            intent = question["intent"]
            # REQ-INTENT-1
            if type_(intent) is not dict_:
                return None
            approve = intent.get("approve")
            if not isinstance(intent.get("kind"), str_) or not isinstance(approve, str_):
                return False
            # INT-APPROVE-1, INT-DETAIL-1
            if approve not in labels or not question.get("detail"):
                return False
    # REQ-ID-2
    return len(ids) == len(questions)


def _plain_answer_ok(request: Mapping[str, Any], answer: Any) -> bool | None:
    type_, dict_, list_, str_ = type, dict, list, str
    # ANS-SHAPE-1, ANS-KEYS-1
    if type_(answer) is not dict_:
        return None
    items = answer["answers"]
    if type_(items) is not list_:
        return None
    if len(answer) != 1:
        return False
    questions = request["questions"]
    # ANS-COUNT-1
    if len(items) != len(questions):
        return False
    for question, item in zip(questions, items, strict=True):
        if type_(item) is not dict_:
            return None
        # ANS-ORDER-1, ANS-SEL-1
        item_id = item["id"]
        selected = item["selected"]
        if type_(item_id) is not str_ or type_(selected) is not list_:
            return None
        if item_id != question["id"]:
            return False
        # ANS-KEYS-1: id and selected are there, so only custom may be added.
        size = len(item)
        has_custom = size == 3 and "custom" in item
        if size != 2 and not has_custom:
            return False
        if selected:
            options = question.get("options") or ()
            if question.get("multiSelect") is not True:
                # ANS-SINGLE-1, ANS-SINGLE-2
                if len(selected) != 1 or has_custom:
                    return False
                # ANS-SEL-1, ANS-SEL-3
                label = selected[0]
                if type_(label) is not str_:
                    return None
                for option in options:
                    if option["label"] == label:
                        break
                else:
                    return False
            else:
                offered = {option["label"] for option in options}
                for label in selected:
                    if type_(label) is not str_:
                        return None
                    if label not in offered:
                        return False
                # ANS-SEL-2
                if len(set(selected)) != len(selected):
                    return False
        # ANS-CUSTOM-1
        if has_custom:
            custom = item["custom"]
            if type_(custom) is not str_:
                return None
            if not custom.strip(_JS_WHITESPACE):
                return False
    return True


def _request_ok(request: object) -> bool:
    """The general case: any mapping, list or tuple."""
    if type(request) is not dict and not isinstance(request, Mapping):
        return False
    signal = request.get("signal")
    # REQ-SIGNAL-1, SVC-ORDER-1
    if signal is not None and (not isinstance(signal, AbortSignal) or signal.aborted):
        return False
    questions = request.get("questions")
    # REQ-QUESTIONS-1, SVC-ORDER-2
    if type(questions) is not list and not isinstance(questions, (list, tuple)):
        return False
    if not questions:
        return False
    ids: set[str] = set()
    for question in questions:
        # REQ-ITEM-1
        if type(question) is not dict and not isinstance(question, Mapping):
            return False
        get = question.get
        # REQ-ID-1, REQ-ID-2
        question_id = get("id")
        if not isinstance(question_id, str) or not question_id or question_id in ids:
            return False
        ids.add(question_id)
        # REQ-TEXT-1
        text = get("question")
        if not isinstance(text, str) or not text:
            return False
        # REQ-HEADER-1, REQ-DETAIL-1, REQ-MULTI-1
        if (
            not isinstance(get("header", ""), str)
            or not isinstance(get("detail", ""), str)
            or not isinstance(get("multiSelect", False), bool)
        ):
            return False
        # REQ-OPTIONS-1, REQ-OPTIONS-2, REQ-OPTIONS-3
        options = get("options", ())
        if type(options) is not list and not isinstance(options, (list, tuple)):
            return False
        labels: set[str] = set()
        for option in options:
            if type(option) is not dict and not isinstance(option, Mapping):
                return False
            label = option.get("label")
            if not isinstance(label, str) or not label or label in labels:
                return False
            labels.add(label)
            if not isinstance(option.get("description", ""), str):
                return False
        intent = get("intent", _ABSENT)
        if intent is not _ABSENT:
            # REQ-INTENT-1
            if type(intent) is not dict and not isinstance(intent, Mapping):
                return False
            approve = intent.get("approve")
            if not isinstance(intent.get("kind"), str) or not isinstance(approve, str):
                return False
            # INT-APPROVE-1, INT-DETAIL-1
            if approve not in labels or not get("detail"):
                return False
    return True


def _answer_ok(request: Mapping[str, Any], answer: object) -> bool:
    """The general case: any mapping."""
    # ANS-SHAPE-1, ANS-KEYS-1
    if type(answer) is not dict and not isinstance(answer, Mapping):
        return False
    items = answer.get("answers")
    if not isinstance(items, list) or len(answer) != 1:
        return False
    questions = request["questions"]
    # ANS-COUNT-1
    if len(items) != len(questions):
        return False
    for question, item in zip(questions, items, strict=True):
        if type(item) is not dict and not isinstance(item, Mapping):
            return False
        # ANS-ORDER-1
        if item.get("id") != question["id"]:
            return False
        # ANS-SEL-1
        selected = item.get("selected")
        if not isinstance(selected, list):
            return False
        # ANS-KEYS-1: id and selected are there, so only custom may be added.
        size = len(item)
        has_custom = size == 3 and "custom" in item
        if size != 2 and not has_custom:
            return False
        multi = question.get("multiSelect", False)
        if selected:
            options = question.get("options") or ()
            if not multi:
                # ANS-SINGLE-1, ANS-SINGLE-2
                if len(selected) != 1 or has_custom:
                    return False
                # ANS-SEL-1, ANS-SEL-3
                label = selected[0]
                if not isinstance(label, str):
                    return False
                for option in options:
                    if option["label"] == label:
                        break
                else:
                    return False
            else:
                offered = {option["label"] for option in options}
                for label in selected:
                    if not isinstance(label, str) or label not in offered:
                        return False
                # ANS-SEL-2
                if len(set(selected)) != len(selected):
                    return False
        # ANS-CUSTOM-1
        if has_custom:
            custom = item["custom"]
            if not isinstance(custom, str) or not custom.strip(_JS_WHITESPACE):
                return False
    return True


# --- the self-test -----------------------------------------------------------------------


def _reference_accepts_request(request: object) -> bool:
    try:
        check_request(request)
    except UserInteractionError:
        return False
    return True


def _reference_accepts_answer(request: Any, answer: object) -> bool:
    return not [v for v in answer_violations(request, answer) if v.level == "MUST"]


def _question(request: dict[str, Any], index: int = 0) -> dict[str, Any]:
    question: dict[str, Any] = request["questions"][index]
    return question


def _request_variants() -> list[tuple[str, Callable[[dict[str, Any]], object], bool]]:
    """(name, how to change a 4-question request, whether the result is still valid)."""
    aborted = AbortController()
    aborted.abort()

    def edit(change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
        def apply(request: dict[str, Any]) -> object:
            change(request)
            return request

        return apply

    def intent(approve: str, detail: object = _ABSENT) -> Callable[[dict[str, Any]], object]:
        def change(request: dict[str, Any]) -> None:
            question = _question(request, 1)
            question["intent"] = {"kind": "plan-review", "approve": approve}
            if detail is not _ABSENT:
                question["detail"] = detail

        return edit(change)

    return [
        ("not a mapping", lambda r: [r], False),
        ("questions missing", edit(lambda r: r.pop("questions")), False),
        ("questions not a list", edit(lambda r: r.update(questions="q0")), False),
        ("questions empty", edit(lambda r: r.update(questions=[])), False),
        ("question not a mapping", edit(lambda r: r["questions"].append("q9")), False),
        ("id missing", edit(lambda r: _question(r).pop("id")), False),
        ("id empty", edit(lambda r: _question(r).update(id="")), False),
        ("id not a string", edit(lambda r: _question(r).update(id=1)), False),
        ("ids repeated", edit(lambda r: _question(r, 2).update(id="q0")), False),
        ("question empty", edit(lambda r: _question(r).update(question="")), False),
        ("question missing", edit(lambda r: _question(r).pop("question")), False),
        ("header not a string", edit(lambda r: _question(r).update(header=None)), False),
        ("detail not a string", edit(lambda r: _question(r).update(detail=3)), False),
        ("options not a list", edit(lambda r: _question(r).update(options="a")), False),
        ("options None", edit(lambda r: _question(r).update(options=None)), False),
        ("option not a mapping", edit(lambda r: _question(r)["options"].append("x")), False),
        ("label missing", edit(lambda r: _question(r)["options"][1].pop("label")), False),
        ("label empty", edit(lambda r: _question(r)["options"][1].update(label="")), False),
        (
            "labels repeated",
            edit(lambda r: _question(r)["options"][3].update(label="option 0")),
            False,
        ),
        (
            "description not a string",
            edit(lambda r: _question(r)["options"][0].update(description=1)),
            False,
        ),
        ("multiSelect not a bool", edit(lambda r: _question(r).update(multiSelect="no")), False),
        ("multiSelect 1", edit(lambda r: _question(r).update(multiSelect=1)), False),
        ("intent not a mapping", edit(lambda r: _question(r).update(intent="plan")), False),
        ("intent None", edit(lambda r: _question(r).update(intent=None)), False),
        (
            "intent kind missing",
            edit(lambda r: _question(r).update(intent={"approve": "option 0"}, detail="d")),
            False,
        ),
        (
            "intent approve not a string",
            edit(lambda r: _question(r).update(intent={"kind": "k", "approve": 0}, detail="d")),
            False,
        ),
        ("intent approve not offered", intent("option 9", "the plan"), False),
        ("intent without detail", intent("option 0"), False),
        ("intent with empty detail", intent("option 0", ""), False),
        ("signal not a signal", edit(lambda r: r.update(signal="stop")), False),
        ("signal aborted", edit(lambda r: r.update(signal=aborted.signal)), False),
        ("valid: intent with detail", intent("option 0", "the plan"), True),
        (
            "valid: unknown intent kind",
            edit(
                lambda r: _question(r).update(
                    intent={"kind": "?", "approve": "option 1"}, detail="d"
                )
            ),
            True,
        ),
        (
            "valid: tuples",
            lambda r: {
                "questions": tuple({**q, "options": tuple(q["options"])} for q in r["questions"])
            },
            True,
        ),
        (
            "valid: header, detail, multiSelect",
            edit(lambda r: _question(r).update(header="H", detail="", multiSelect=True)),
            True,
        ),
        ("valid: no options", edit(lambda r: _question(r).pop("options")), True),
        ("valid: empty options", edit(lambda r: _question(r).update(options=[])), True),
        ("valid: extra keys", edit(lambda r: (r.update(x=1), _question(r).update(y=2))), True),
        ("valid: signal", edit(lambda r: r.update(signal=AbortController().signal)), True),
        ("valid: signal None", edit(lambda r: r.update(signal=None)), True),
        ("valid: agent", edit(lambda r: r.update(agent=object())), True),
    ]


def _answer_variants() -> list[
    tuple[str, Callable[[dict[str, Any], dict[str, Any]], object], bool]
]:
    """(name, how to change the answer to a 4-question request, whether it is still valid).

    The change may also edit the request (make a question multi-select, say).
    """

    def item(index: int, **changes: object) -> Callable[[dict[str, Any], dict[str, Any]], object]:
        def apply(_request: dict[str, Any], answer: dict[str, Any]) -> object:
            answer["answers"][index].update(changes)
            return answer

        return apply

    def multi(**changes: object) -> Callable[[dict[str, Any], dict[str, Any]], object]:
        def apply(request: dict[str, Any], answer: dict[str, Any]) -> object:
            _question(request, 1)["multiSelect"] = True
            answer["answers"][1].update(changes)
            return answer

        return apply

    class Hostile(dict[str, Any]):
        def get(self, *_args: object) -> Any:
            raise RuntimeError

    return [
        ("not a mapping", lambda _r, a: a["answers"], False),
        ("extra key", lambda _r, a: {**a, "extra": 1}, False),
        ("answers missing", lambda _r, _a: {}, False),
        ("answers a tuple", lambda _r, a: {"answers": tuple(a["answers"])}, False),
        ("one item short", lambda _r, a: {"answers": a["answers"][:-1]}, False),
        ("one item too many", lambda _r, a: {"answers": [*a["answers"], a["answers"][0]]}, False),
        ("out of order", lambda _r, a: {"answers": a["answers"][::-1]}, False),
        ("item not a mapping", lambda _r, a: {"answers": ["q0", *a["answers"][1:]]}, False),
        ("id missing", lambda _r, a: (a["answers"][0].pop("id"), a)[1], False),
        ("selected missing", lambda _r, a: (a["answers"][0].pop("selected"), a)[1], False),
        ("selected a tuple", item(0, selected=("option 0",)), False),
        ("selected holds an int", item(0, selected=[0]), False),
        ("label not offered", item(0, selected=["option 9"]), False),
        ("two labels on single-select", item(0, selected=["option 0", "option 1"]), False),
        ("repeated label on single-select", item(0, selected=["option 0", "option 0"]), False),
        ("selected and custom on single-select", item(0, custom="mine"), False),
        ("blank custom", item(0, selected=[], custom=" \u3000\n"), False),
        ("empty custom", item(0, selected=[], custom=""), False),
        ("custom not a string", item(0, selected=[], custom=1), False),
        ("unknown item key", item(0, note="x"), False),
        ("hostile mapping", lambda _r, a: Hostile(a), False),
        ("multi: repeated label", multi(selected=["option 0", "option 0"]), False),
        ("multi: label not offered", multi(selected=["option 0", "nope"]), False),
        ("multi: blank custom", multi(custom="\ufeff"), False),
        ("valid: skipped", item(0, selected=[]), True),
        ("valid: custom only", item(0, selected=[], custom=" mine "), True),
        ("valid: \\x1c is not JS whitespace", item(0, selected=[], custom="\x1c"), True),
        (
            "valid: multi, two labels and custom",
            multi(selected=["option 0", "option 2"], custom="and"),
            True,
        ),
        (
            "valid: multi out of option order (a SHOULD)",
            multi(selected=["option 2", "option 0"]),
            True,
        ),
    ]


def _mutations(rng: random.Random, request: dict[str, Any]) -> object:
    """A random small change deep inside *request*: a value replaced, a key dropped or added."""
    values: list[object] = [
        "",
        "option 0",
        "option 1",
        "q1",
        0,
        True,
        None,
        [],
        {},
        (),
        " ",
        "x",
        "plan",
        ["option 2"],
    ]

    def mutate(node: object, depth: int) -> object:
        if isinstance(node, dict) and node and (depth < 4 and rng.random() < 0.7):
            key = rng.choice(list(node))
            node[key] = mutate(node[key], depth + 1)
            return node
        if isinstance(node, list) and node and (depth < 4 and rng.random() < 0.7):
            index = rng.randrange(len(node))
            node[index] = mutate(node[index], depth + 1)
            return node
        if isinstance(node, dict) and rng.random() < 0.5:
            if node and rng.random() < 0.5:
                node.pop(rng.choice(list(node)))
            else:
                node[rng.choice(["id", "question", "detail", "intent", "multiSelect", "label"])] = (
                    rng.choice([*values, {"kind": "k", "approve": "option 0"}])
                )
            return node
        return rng.choice(values)

    return mutate(request, 0)


def self_test(mutations: int = 3_000) -> int:
    """Assert that the floor agrees with the reference; return how many inputs were compared."""
    compared = 0
    for size in (1, 4, 16):
        request = request_of(size)
        answer = answer_to(request)
        assert request_ok(request), size
        assert _reference_accepts_request(request), size
        assert answer_ok(request, answer), size
        assert _reference_accepts_answer(request, answer), size
        compared += 2
    for name, edit_request, valid in _request_variants():
        changed = edit_request(request_of(4))
        assert request_ok(changed) is valid, f"floor request_ok, {name}: expected {valid}"
        assert _reference_accepts_request(changed) is valid, f"reference, {name}"
        compared += 1
    for name, edit_answer, valid in _answer_variants():
        request = request_of(4)
        changed = edit_answer(request, answer_to(request))
        assert request_ok(request), name
        assert answer_ok(request, changed) is valid, f"floor answer_ok, {name}: expected {valid}"
        assert _reference_accepts_answer(request, changed) is valid, f"reference, {name}"
        compared += 1
    rng = random.Random(20_251_201)
    for _ in range(mutations):
        mutated = _mutations(rng, request_of(rng.choice((1, 2, 4))))
        assert request_ok(mutated) is _reference_accepts_request(mutated), mutated
        compared += 1
    for _ in range(mutations):
        request = request_of(rng.choice((1, 2, 4)))
        if rng.random() < 0.3:
            _question(request)["multiSelect"] = True
        mutated = _mutations(rng, answer_to(request))
        assert answer_ok(request, mutated) is _reference_accepts_answer(request, mutated), mutated
        compared += 1
    return compared


if __name__ == "__main__":
    print(f"bench.floor: the floor agrees with the reference on {self_test()} inputs")
