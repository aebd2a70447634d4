"""The request checks and the answer rules, written once.

Every rule here carries the requirement ID of the spec sentence it enforces
(``spec/user-interaction.md``). The service, :class:`ValidatingProvider` and
the conformance suite all call these functions, so the rules cannot drift.

Both functions take ``object``: they are the boundary where untyped data (JSON
from a model, an answer from another language) meets the types, so they never
assume a shape they have not checked, and they never raise anything but the
documented :class:`UserInteractionError`.

Both are single-pass and linear in questions x options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, cast

from typing_extensions import TypeIs

from ._abort import AbortSignal
from ._deadline import DEADLINE_KEY, DEFAULT_KEY, deadline_of
from ._errors import ErrorCode, UserInteractionError
from ._json import js_quote
from ._types import AskUserQuestionItem, AskUserQuestionRequest
from ._violations import MISSING, Level, RequestViolation, Violation, quote, type_name

__all__ = [
    "RequestViolation",
    "Violation",
    "answer_violations",
    "check_request",
    "first_request_violation",
    "is_blank",
    "request_violations",
]

#: Whitespace as ECMAScript's ``String.prototype.trim`` sees it (WhiteSpace and
#: LineTerminator). Note: the original trims with JavaScript, so we use its set,
#: not ``str.isspace``, which differs (``\x1c``-``\x1f`` are Python whitespace,
#: ``\ufeff`` is not).
_JS_WHITESPACE: Final = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_ITEM_KEYS: Final = frozenset({"id", "selected", "custom"})
_ANSWER_KEYS: Final = frozenset({"answers"})
#: At most this many unknown keys are named in a message; the rest are counted.
_KEYS_NAMED: Final = 3


def is_blank(text: str) -> bool:
    """Whether *text* is empty after trimming, as JavaScript's ``trim`` sees it.

    >>> is_blank(" \\u3000\\n"), is_blank(" x ")
    (True, False)
    """
    return all(char in _JS_WHITESPACE for char in text)


def _plain(label: object) -> object:
    """A str of any kind as its exact characters (no override of a subclass runs); else itself."""
    return str.__str__(cast("str", label)) if issubclass(type(label), str) else label


def _is_mapping(value: object) -> TypeIs[Mapping[object, object]]:
    # A dict is by far the common case; the ABC check is the slow path.
    return type(value) is dict or isinstance(value, Mapping)


_SEQUENCES: Final = (list, tuple)


def _is_list(value: object) -> TypeIs[list[object] | tuple[object, ...]]:
    # Note: a request's lists may be tuples (its types say Sequence); an answer's may not.
    return type(value) is list or isinstance(value, _SEQUENCES)


def _bad_request(message: str) -> UserInteractionError:
    return UserInteractionError(message, ErrorCode.BAD_REQUEST)


#: One question with an intent, and its option labels, for stage 4.
_Intent = tuple[Mapping[object, object], dict[str, None]]


class _Stop(Exception):
    """Ends a first-problem-only scan at its first violation."""


class _Scan:
    """One pass over a request's structure (stage 3), in spec order.

    Note: the original checks no structure; ``BAD_REQUEST`` is this spec's, so a
    malformed request never reaches a UI that would render it wrongly.

    With *first_only*, the pass stops at the first violation; otherwise it
    collects every one it can reach (a question that is not a mapping, or
    options that are not a list, hide what is inside them).
    """

    __slots__ = ("first_only", "found", "intents")

    def __init__(self, *, first_only: bool) -> None:
        self.first_only = first_only
        self.found: list[RequestViolation] = []
        self.intents: list[_Intent] = []

    def add(  # noqa: PLR0917 - one call per rule, read like a table row
        self,
        requirement: str,
        path: tuple[str | int, ...],
        expected: str,
        value: object = MISSING,
        question: str | None = None,
        earlier: tuple[str | int, ...] | None = None,
        *,
        detail: str | None = None,
    ) -> None:
        self.found.append(
            RequestViolation(requirement, path, expected, value, question, earlier, detail)
        )
        if self.first_only:
            raise _Stop

    def request(self, request: Mapping[object, object], questions: Sequence[object]) -> None:
        # REQ-SIGNAL-1. Note: ``agent`` is opaque (REQ-AGENT-2); nothing here reads it.
        signal = request.get("signal", MISSING)
        if signal is not MISSING and signal is not None and not isinstance(signal, AbortSignal):
            self.add("REQ-SIGNAL-1", ("signal",), "AbortSignal", signal)
        # REQ-DEADLINE-1
        deadline: object = request.get(DEADLINE_KEY, MISSING)
        if deadline is not MISSING and deadline_of(request) is None:
            self.add("REQ-DEADLINE-1", (DEADLINE_KEY,), "finite number", deadline)
        first_index: dict[str, int] = {}
        defaults: list[int] = []
        for index, question in enumerate(questions):
            if not _is_mapping(question):
                self.add("REQ-ITEM-1", ("questions", index), "mapping", question)
                continue
            if DEFAULT_KEY in question:
                defaults.append(index)
            self.question(index, question, first_index)
        # REQ-DEFAULT-2: defaults are all or nothing, and need a deadline.
        if defaults:
            if deadline is MISSING:
                self.add("REQ-DEFAULT-2", (DEADLINE_KEY,), "present")
            for index, question in enumerate(questions):
                if _is_mapping(question) and DEFAULT_KEY not in question:
                    question_id = question.get("id")
                    named = question_id if isinstance(question_id, str) and question_id else None
                    where = ("questions", index, DEFAULT_KEY)
                    self.add("REQ-DEFAULT-2", where, "present", MISSING, named)

    def question(
        self, index: int, question: Mapping[object, object], first_index: dict[str, int]
    ) -> None:
        here = ("questions", index)
        # REQ-ID-1, REQ-ID-2
        question_id: object = question.get("id", MISSING)
        valid_id: str | None = None
        if not isinstance(question_id, str) or not question_id:
            self.add("REQ-ID-1", (*here, "id"), "non-empty string", question_id)
        else:
            valid_id = question_id
            earlier = first_index.setdefault(question_id, index)
            if earlier != index:
                where = ("questions", earlier, "id")
                self.add("REQ-ID-2", (*here, "id"), "unique", question_id, valid_id, where)
        # REQ-TEXT-1
        text: object = question.get("question", MISSING)
        if not isinstance(text, str) or not text:
            self.add("REQ-TEXT-1", (*here, "question"), "non-empty string", text, valid_id)
        # REQ-HEADER-1, REQ-DETAIL-1
        for key, requirement in (("header", "REQ-HEADER-1"), ("detail", "REQ-DETAIL-1")):
            if key in question and not isinstance(question[key], str):
                self.add(requirement, (*here, key), "string", question[key], valid_id)
        # REQ-OPTIONS-1, REQ-OPTIONS-2, REQ-OPTIONS-3
        labels = self.options(here, valid_id, question["options"]) if "options" in question else {}
        # REQ-MULTI-1
        if "multiSelect" in question and not isinstance(question["multiSelect"], bool):
            self.add(
                "REQ-MULTI-1", (*here, "multiSelect"), "bool", question["multiSelect"], valid_id
            )
        # REQ-DEFAULT-1
        if DEFAULT_KEY in question and valid_id is not None:
            self.default(here, valid_id, question, labels)
        # REQ-INTENT-1
        if "intent" in question:
            intent = question["intent"]
            if not _is_mapping(intent):
                self.add("REQ-INTENT-1", (*here, "intent"), "mapping", intent, valid_id)
                return
            sound = True
            for key in ("kind", "approve"):
                value: object = intent.get(key, MISSING)
                if not isinstance(value, str):
                    sound = False
                    self.add("REQ-INTENT-1", (*here, "intent", key), "string", value, valid_id)
            if sound and valid_id is not None:
                self.intents.append((question, labels))

    def default(
        self,
        here: tuple[str | int, ...],
        question_id: str,
        question: Mapping[object, object],
        labels: dict[str, None],
    ) -> None:
        """Check a question's default by the answer rules, as the item it would become."""
        default = question[DEFAULT_KEY]
        where = (*here, DEFAULT_KEY)
        if not _is_mapping(default):
            self.add("REQ-DEFAULT-1", where, "mapping", default, question_id)
            return
        multi = question.get("multiSelect") is True
        shown: dict[str, object] = {"id": question_id, "question": "?", "multiSelect": multi}
        shown["options"] = [{"label": label} for label in labels]
        item: dict[object, object] = {key: value for key, value in default.items() if key != "id"}
        item["id"] = question_id
        if "id" in default:
            detail = "default has unknown keys: id (a default has no id of its own)"
            self.add("REQ-DEFAULT-1", where, "answer", default, question_id, detail=detail)
        alone = cast("AskUserQuestionRequest", {"questions": [shown]})
        for violation in must_violations(alone, {"answers": [item]}):
            detail = violation.message.replace("answers[0]", "default")
            self.add("REQ-DEFAULT-1", where, "answer", default, question_id, detail=detail)

    def options(
        self, here: tuple[str | int, ...], question_id: str | None, options: object
    ) -> dict[str, None]:
        """Check one question's options; return their labels, in order, as a set-like dict."""
        if not _is_list(options):
            self.add("REQ-OPTIONS-1", (*here, "options"), "list", options, question_id)
            return {}
        labels: dict[str, int] = {}
        for number, option in enumerate(options):
            where = (*here, "options", number)
            if not _is_mapping(option):
                self.add("REQ-OPTIONS-1", where, "mapping", option, question_id)
                continue
            label: object = option.get("label", MISSING)
            if not isinstance(label, str) or not label:
                self.add("REQ-OPTIONS-1", (*where, "label"), "non-empty string", label, question_id)
            if "description" in option and not isinstance(option["description"], str):
                description = option["description"]
                self.add(
                    "REQ-OPTIONS-2", (*where, "description"), "string", description, question_id
                )
            if isinstance(label, str) and label:
                earlier = labels.setdefault(label, number)
                if earlier != number:
                    first = (*here, "options", earlier, "label")
                    self.add(
                        "REQ-OPTIONS-3", (*where, "label"), "unique", label, question_id, first
                    )
        return dict.fromkeys(labels)


def request_violations(request: object) -> list[RequestViolation]:
    """Every structural problem of *request* (the ``REQ-*`` rules), in spec order.

    The first one is the ``BAD_REQUEST`` that ``ask()`` raises at stage 3; the
    tool words the same violations for a model. Stages 1 and 2 (an aborted
    signal, no questions) and the intent rules are not structure, and are not
    listed.

    >>> [v.describe() for v in request_violations(
    ...     {"questions": [{"id": "q", "question": "", "multiSelect": "no"}]})]
    ['question "q" (questions[0]): question must be a non-empty string, got an empty string', \
'question "q" (questions[0]): multiSelect must be a bool, got str']
    """
    scan = _Scan(first_only=False)
    _scan(scan, request)
    return scan.found


def first_request_violation(request: object) -> RequestViolation | None:
    """The first of :func:`request_violations`, found without scanning the rest."""
    scan = _Scan(first_only=True)
    _scan(scan, request)
    return scan.found[0] if scan.found else None


def _scan(scan: _Scan, request: object) -> None:
    try:
        if not _is_mapping(request):
            scan.add("REQ-QUESTIONS-1", (), "mapping", request)
            return
        questions: object = request.get("questions", MISSING)
        if not _is_list(questions):
            # REQ-QUESTIONS-1
            scan.add("REQ-QUESTIONS-1", ("questions",), "non-empty list", questions)
            return
        scan.request(request, questions)
    except _Stop:
        return


def _check_intents(checked: list[_Intent]) -> None:
    """Stage 4: raise ``BAD_INTENT`` for the first intent problem."""
    for question, labels in checked:
        intent = cast("Mapping[object, object]", question["intent"])
        # Plain copies: a str subclass's own __format__, __eq__ or __hash__ never runs.
        question_id = str.__str__(cast("str", question["id"]))
        kind = str.__str__(cast("str", intent["kind"]))
        approve = str.__str__(cast("str", intent["approve"]))
        # INT-APPROVE-1
        if approve not in labels:
            msg = (
                f"question {question_id} declares intent {kind} whose approve label "
                f"{js_quote(approve)} names none of its options"
            )
            raise UserInteractionError(msg, ErrorCode.BAD_INTENT)
        # INT-DETAIL-1. Note: the original accepts an empty detail; we do not,
        # since a review of nothing cannot be approved meaningfully.
        if not question.get("detail"):
            msg = f"question {question_id} declares intent {kind} without the detail it reviews"
            raise UserInteractionError(msg, ErrorCode.BAD_INTENT)


def check_request(request: object, *, has_provider: bool = True) -> None:
    """Raise the :class:`UserInteractionError` that ``ask(request)`` would raise.

    The stages run in the spec's order (``SVC-ORDER-1`` to ``SVC-ORDER-5``) and
    each scans the questions in order; the first failure wins. Pass
    ``has_provider=False`` to include the last stage, ``NO_PROVIDER``.

    >>> check_request({"questions": [{"id": "q", "question": "Ship it?"}]})
    >>> def code_and_message(request):
    ...     try:
    ...         check_request(request)
    ...     except UserInteractionError as error:
    ...         return f"{error.code}: {error}"
    >>> code_and_message({"questions": []})
    'EMPTY_QUESTIONS: ask_user_question requires at least one question'
    >>> code_and_message({"questions": [{"id": "q", "question": "Ship?", "multiSelect": "no"}]})
    'BAD_REQUEST: question "q" (questions[0]): multiSelect must be a bool, got str'
    """
    checked_request(request, has_provider=has_provider)


def checked_request(request: object, *, has_provider: bool = True) -> RequestIndex | None:
    """:func:`check_request`, returning the fast path's index when it accepted the request.

    The service passes the index on to :func:`fast_answer_accepted`.
    """
    index = fast_request_index(request)
    if index is not None:
        # Well-formed, with sound intents, questions and a signal that has not
        # aborted: of the five stages only the last can still fail.
        if not has_provider:
            raise UserInteractionError.of(ErrorCode.NO_PROVIDER)
        return index
    full_check_request(request, has_provider=has_provider)
    return None


def full_check_request(request: object, *, has_provider: bool = True) -> None:
    """The five stages by the full rules, without the fast path.

    A request whose own methods raise while it is read (a mapping whose
    ``get`` fails, a key whose ``__eq__`` does) is a ``BAD_REQUEST`` too: the
    checks never raise anything but :class:`UserInteractionError`.
    """
    try:
        _full_check_request(request, has_provider=has_provider)
    except UserInteractionError:
        raise
    except Exception as error:  # noqa: BLE001 - a request that cannot be read is malformed
        raise unreadable_request(error) from None


def unreadable_request(error: Exception) -> UserInteractionError:
    """The ``BAD_REQUEST`` of a request whose own methods raised *error* while it was read."""
    return _bad_request(f"request could not be read: {type_name(error)} raised while reading it")


def check_first_stages(request: object) -> None:
    """Stages 1 and 2 alone (``ASK_ABORTED``, ``EMPTY_QUESTIONS``): what runs before a gate.

    A request that cannot be read is left to the later stages, which word it.
    """
    try:
        _first_stages(request)
    except UserInteractionError:
        raise
    except Exception:  # noqa: BLE001, S110 - read again, and worded, by full_check_request
        pass


def _first_stages(request: object) -> None:
    if _is_mapping(request):
        # SVC-ORDER-1
        signal = request.get("signal")
        if isinstance(signal, AbortSignal) and signal.aborted:
            raise UserInteractionError.of(ErrorCode.ASK_ABORTED)
        # SVC-ORDER-2
        questions: object = request.get("questions")
        if _is_list(questions) and not questions:
            raise UserInteractionError.of(ErrorCode.EMPTY_QUESTIONS)


def _full_check_request(request: object, *, has_provider: bool) -> None:
    _first_stages(request)
    # SVC-ORDER-3
    scan = _Scan(first_only=True)
    _scan(scan, request)
    if scan.found:
        raise _bad_request(scan.found[0].describe())
    # SVC-ORDER-4
    _check_intents(scan.intents)
    # SVC-ORDER-5
    if not has_provider:
        raise UserInteractionError.of(ErrorCode.NO_PROVIDER)


def answer_violations(request: AskUserQuestionRequest, answer: object) -> list[Violation]:
    """Every way *answer* breaks the answer rules for *request*.

    *request* must pass :func:`check_request`. *answer* may be anything. An
    empty list means the answer keeps every rule. ``SHOULD`` violations are
    listed too; a strict service raises only for ``MUST`` ones.

    >>> request = {"questions": [{"id": "mode", "question": "Mode?",
    ...                           "options": [{"label": "Fast"}, {"label": "Safe"}]}]}
    >>> answer_violations(request, {"answers": [{"id": "mode", "selected": ["Safe"]}]})
    []
    >>> [v.requirement for v in answer_violations(
    ...     request, {"answers": [{"id": "mode", "selected": ["Fast", "Safe"]}]})]
    ['ANS-SINGLE-1']
    """
    found: list[Violation] = []
    try:
        _answer_violations(request, answer, found)
    except Exception as error:  # noqa: BLE001 - a hostile answer is a broken answer
        # Note: an answer whose own methods raise (a mapping whose .get fails, say)
        # cannot be read, so it breaks ANS-SHAPE-1; the error never escapes.
        message = f"answer could not be read: {type_name(error)} raised while reading it"
        found.append(Violation("ANS-SHAPE-1", "MUST", None, message))
    return found


def _answer_violations(
    request: AskUserQuestionRequest, answer: object, found: list[Violation]
) -> None:

    def add(requirement: str, question: str | None, message: str) -> None:
        found.append(Violation(requirement, LEVELS[requirement], question, message))

    # ANS-SHAPE-1
    if not _is_mapping(answer):
        add("ANS-SHAPE-1", None, f"answer must be a mapping, got {type_name(answer)}")
        return
    if not answer.keys() <= _ANSWER_KEYS:
        extra = _name_keys(key for key in answer if key not in _ANSWER_KEYS)
        add("ANS-KEYS-1", None, f"answer has keys besides answers: {extra}")
    items: object = answer.get("answers")
    if not isinstance(items, list):
        got = "nothing" if "answers" not in answer else type_name(items)
        add("ANS-SHAPE-1", None, f"answer.answers must be a list, got {got}")
        return
    questions = request["questions"]
    answers = cast("list[object]", items)
    # ANS-COUNT-1
    if len(answers) != len(questions):
        add(
            "ANS-COUNT-1",
            None,
            f"answers has {len(answers)} item(s) for {len(questions)} question(s)",
        )
    for index, (question, item) in enumerate(zip(questions, answers, strict=False)):
        _item_violations(index, question, item, add)


def _item_violations(
    index: int,
    question: AskUserQuestionItem,
    item: object,
    add: Callable[[str, str | None, str], None],
) -> None:
    question_id = question["id"]
    if not _is_mapping(item):
        add(
            "ANS-SHAPE-1",
            question_id,
            f"answers[{index}] must be a mapping, got {type_name(item)}",
        )
        return
    if not item.keys() <= _ITEM_KEYS:
        extra = _name_keys(key for key in item if key not in _ITEM_KEYS)
        add("ANS-KEYS-1", question_id, f"answers[{index}] has unknown keys: {extra}")
    # ANS-ORDER-1, judged by str itself: a str subclass cannot pass for another id
    item_id: object = item.get("id")
    if not (isinstance(item_id, str) and str.__eq__(item_id, question_id) is True):
        got = quote(item_id) if isinstance(item_id, str) else type_name(item_id)
        add(
            "ANS-ORDER-1",
            question_id,
            f"answers[{index}].id must be {quote(question_id)} (question order), got {got}",
        )
    # ANS-SEL-1
    selected: object = item.get("selected")
    labels: list[str] = []
    if not isinstance(selected, list):
        got = "nothing" if "selected" not in item else type_name(selected)
        add(
            "ANS-SEL-1",
            question_id,
            f"answers[{index}].selected must be a list of labels, got {got}",
        )
    else:
        for label in cast("list[object]", selected):
            if isinstance(label, str):
                labels.append(str.__str__(label))  # the plain text, compared exactly
            else:
                got = type_name(label)
                add(
                    "ANS-SEL-1",
                    question_id,
                    f"answers[{index}].selected holds a {got}, not a label",
                )
    options = question.get("options") or ()
    # Keyed by the labels' plain text, as the answer's labels are: a str subclass
    # in the request, with its own __eq__ or __hash__, must not decide the match.
    offered = {_plain(option["label"]): number for number, option in enumerate(options)}
    # ANS-SEL-2, ANS-SEL-3
    seen: set[str] = set()
    repeated: set[str] = set()
    for label in labels:
        if label in seen:
            if label not in repeated:  # one violation per repeated label, however often
                repeated.add(label)
                add(
                    "ANS-SEL-2",
                    question_id,
                    f"answers[{index}].selected repeats label {quote(label)}",
                )
            continue
        seen.add(label)
        if label not in offered:
            add(
                "ANS-SEL-3",
                question_id,
                f"answers[{index}].selected label {quote(label)}"
                " is not one of the question's options",
            )
    # ANS-CUSTOM-1
    has_custom = "custom" in item
    if has_custom:
        custom: object = item["custom"]
        if not isinstance(custom, str):
            add(
                "ANS-CUSTOM-1",
                question_id,
                f"answers[{index}].custom must be a string, got {type_name(custom)}",
            )
        elif is_blank(custom):
            add(
                "ANS-CUSTOM-1",
                question_id,
                f"answers[{index}].custom must hold a non-whitespace character; omit it to skip",
            )
    if question.get("multiSelect") is True:
        # ANS-MULTI-2
        ranks = [offered[label] for label in labels if label in offered]
        if ranks != sorted(ranks):
            add(
                "ANS-MULTI-2",
                question_id,
                f"answers[{index}].selected labels are not in option order",
            )
        return
    # ANS-SINGLE-1, ANS-SINGLE-2
    if len(labels) > 1:
        add(
            "ANS-SINGLE-1",
            question_id,
            f"answers[{index}].selected has {len(labels)} labels on a single-select question",
        )
    if has_custom and labels:
        add(
            "ANS-SINGLE-2",
            question_id,
            f"answers[{index}] has both selected and custom on a single-select question;"
            " custom overrides the choice, so selected must be empty",
        )


#: The level of every requirement an answer can break.
LEVELS: Final[dict[str, Level]] = {
    "ANS-SHAPE-1": "MUST",
    "ANS-KEYS-1": "MUST",
    "ANS-COUNT-1": "MUST",
    "ANS-ORDER-1": "MUST",
    "ANS-SEL-1": "MUST",
    "ANS-SEL-2": "MUST",
    "ANS-SEL-3": "MUST",
    "ANS-SINGLE-1": "MUST",
    "ANS-SINGLE-2": "MUST",
    "ANS-MULTI-2": "SHOULD",
    "ANS-CUSTOM-1": "MUST",
}


def _name_keys(keys: Iterable[object]) -> str:
    """At most a few keys, quoted and shortened, then how many more; never a ``repr``."""
    named: list[str] = []
    more = 0
    for key in keys:
        if len(named) < _KEYS_NAMED:
            named.append(quote(key) if isinstance(key, str) else f"a {type_name(key)} key")
        else:
            more += 1
    return ", ".join(named) + (f" and {more} more" if more else "")


def bad_answer(answer: object, violations: Sequence[Violation]) -> UserInteractionError:
    """The ``BAD_ANSWER`` error for the ``MUST`` *violations*, keeping *answer*."""
    first = violations[0]
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    message = f"the provider's answer breaks {first.describe()}{more}"
    return UserInteractionError(message, ErrorCode.BAD_ANSWER, answer=answer, violations=violations)


def must_violations(request: AskUserQuestionRequest, answer: object) -> list[Violation]:
    """The ``MUST`` violations only: the ones that make an answer unusable."""
    return [v for v in answer_violations(request, answer) if v.level == "MUST"]


# ---------------------------------------------------------------------------
# Fast accept paths
#
# Accept-only shortcuts for the common case: plain dicts, lists and strings that
# keep every rule. They never reject and never word anything: on the first
# thing they do not expect they return None (or False), and the full rules
# above decide, so errors and their order are the full rules' alone. A
# differential property test (tests/test_fast_paths.py) proves that whatever
# they accept, the full rules accept too.
#
# They read a value only after an exact ``type(...) is`` test, so no caller's
# code runs in them (beyond the hash and equality of a dict's own keys, as in
# any lookup), and a required key that is absent raises KeyError, which ends
# them: a subscript is much cheaper than ``.get()``, and the full rules word the
# gap. An optional key read for its type alone (an option's description) is
# read once, with ``.get()`` and a default that passes the test. A test that a
# list of values holds no empty string runs once on the dict they went into,
# not once per value. They run once per option, so they read ``type`` and the
# types they test through local names, which CPython reads faster than globals.
#
# They stay per-field bytecode: on CPython 3.11 whole-list passes made of
# builtins (``map`` with ``type`` or ``operator.itemgetter``, ``set``,
# ``chain``) cost more than the specialised ``type(x) is T`` and subscript
# bytecode they would replace, at 1, 16 and 256 questions of 4 options.
# ---------------------------------------------------------------------------

#: Per question, in order: the question, its options list (``None`` without the
#: key), its labels as the keys of a dict (empty without options), and whether
#: it is multi-select.
_IndexEntry = tuple[dict[str, object], "list[object] | None", dict[str, None], bool]


#: What the fast request pass learnt, for the answer pass to reuse: the questions
#: list it read, and one entry per question, by id, in question order. A plain
#: tuple, made without a Python-level ``__init__``.
RequestIndex = tuple[list[object], dict[str, _IndexEntry]]


# The exact types the fast paths accept, typed as ``type[Any]`` so that the
# checkers do not narrow to ``dict[Unknown, Unknown]`` and the like: the paths
# read values only after an exact ``type(...) is`` test.
_DICT: Final[type[Any]] = dict
_LIST: Final[type[Any]] = list
_STR: Final[type[Any]] = str
_BOOL: Final[type[Any]] = bool
_SIGNAL: Final[type[Any]] = AbortSignal


def fast_request_index(request: object) -> RequestIndex | None:
    """The index of a plainly well-formed request, or ``None`` to let the full rules decide.

    Accepted means: ``check_request`` passes it whenever a provider is registered.
    """
    value: Any = request
    question: Any
    option: Any
    type_, dict_, list_, str_ = type, _DICT, _LIST, _STR
    try:
        if type_(value) is not dict_:
            return None
        questions = value["questions"]
        if type_(questions) is not list_ or not questions:
            return None
        if len(value) != 1:  # questions alone has no deadline or signal to judge
            if "deadline" in value:
                return None  # the full rules judge deadlines and defaults
            if "signal" in value:
                signal = value["signal"]
                if signal is not None and (type_(signal) is not _SIGNAL or signal.aborted):
                    return None
        entries: dict[str, _IndexEntry] = {}
        for question in questions:
            if type_(question) is not dict_:
                return None
            question_id = question["id"]
            text = question["question"]
            if (
                type_(question_id) is not str_
                or type_(text) is not str_
                or not question_id
                or not text
            ):
                return None
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
                    if type_(option.get("description", "")) is not str_:
                        return None
                    labels[label] = None
                if len(labels) != len(options) or "" in labels:
                    return None  # a repeated label, or an empty one
                known = 3
            else:
                options = None
                known = 2
            if len(question) == known:  # id, question and perhaps options: nothing optional
                entries[question_id] = (question, options, labels, False)
                continue
            if (
                ("header" in question and type_(question["header"]) is not str_)
                or ("detail" in question and type_(question["detail"]) is not str_)
                or "default" in question
            ):
                return None
            multi = False
            if "multiSelect" in question:
                multi = question["multiSelect"]
                if type_(multi) is not _BOOL:
                    return None
            if "intent" in question:
                intent = question["intent"]
                if (
                    type_(intent) is not dict_
                    or type_(intent["kind"]) is not str_
                    or type_(approve := intent["approve"]) is not str_
                    or approve not in labels
                    or not question["detail"]
                ):
                    return None
            entries[question_id] = (question, options, labels, multi)
        if len(entries) != len(questions):
            return None  # a repeated id
        return questions, entries
    except Exception:  # noqa: BLE001 - an absent key or a hostile one: the full rules decide
        return None


def fast_answer_accepted(request: object, answer: object, index: RequestIndex) -> bool:
    """Whether *answer* plainly keeps every ``MUST`` rule; ``False`` lets the rules decide."""
    asked: Any = request
    given: Any = answer
    item: Any
    type_, dict_, list_, str_ = type, _DICT, _LIST, _STR
    try:
        if type_(given) is not dict_ or len(given) != 1:
            return False
        items = given["answers"]
        checked, entries = index
        if type_(items) is not list_ or len(items) != len(entries):
            return False
        # The index is the request as it was checked; if the request's questions or
        # options are not the same objects any more, the full rules read it again.
        if type_(asked) is not dict_ or asked["questions"] is not checked:
            return False
        # Same lengths, compared above; zip(strict=True) would cost a keyword call.
        for (question, options, labels, multi), item in zip(entries.values(), items):  # noqa: B905
            if type_(item) is not dict_:
                return False
            item_id = item["id"]
            selected = item["selected"]
            if (
                type_(item_id) is not str_
                or type_(selected) is not list_
                or item_id != question["id"]
            ):
                return False
            if options is None:
                if "options" in question:
                    return False
            elif question["options"] is not options:
                return False
            if len(item) != 2:  # custom text, or a key besides id, selected and custom
                custom = item["custom"]
                if (
                    len(item) != 3
                    or type_(custom) is not str_
                    or is_blank(custom)
                    or (selected and not multi)  # custom overrides a single choice
                ):
                    return False
            if not selected:
                continue
            if multi:
                for label in selected:
                    if type_(label) is not str_ or label not in labels:
                        return False
                if len(set(selected)) != len(selected):
                    return False  # a repeated label
            else:
                (label,) = selected  # more than one label on a single-select question raises
                if type_(label) is not str_ or label not in labels:
                    return False
        return True
    except Exception:  # noqa: BLE001 - an absent key or a hostile one: the full rules decide
        return False
