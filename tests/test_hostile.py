"""Hostile values never make the checks, the service or the tools misbehave."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from dsh_user_interaction import (
    AbortSignal,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
    ValidatingProvider,
    answer_custom,
    answer_of,
    answer_violations,
    check_request,
)
from dsh_user_interaction.plan_review import plan_review_verdict, review_plan
from dsh_user_interaction.tool import (
    ASK_USER_QUESTION_TOOL,
    ToolResult,
    anthropic_tool,
    ask_user_question,
    openai_tool,
)

from .helpers import run


class Liar(str):
    """A str that claims to equal everything, and hashes like "A"."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash("A")


class Raising(str):
    """A str whose comparisons and formatting raise."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("format")


class RaisingEq(str):
    """A str that hashes as itself but whose comparisons raise."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        return str.__hash__(self)


def test_a_lying_str_cannot_pass_for_another_id_or_label() -> None:
    """ANS-ORDER-1 and ANS-SEL-3: ids and labels are compared as plain strings."""
    request: Any = {"questions": [{"id": "q", "question": "?", "options": [{"label": "A"}]}]}
    answer = {"answers": [{"id": Liar("not-q"), "selected": [Liar("Z")]}]}
    found = {v.requirement for v in answer_violations(request, answer)}
    assert found == {"ANS-ORDER-1", "ANS-SEL-3"}
    verdict = plan_review_verdict({"answers": [{"id": Liar("other"), "selected": ["Approve"]}]})
    assert not verdict.approved


def test_a_hostile_request_is_a_bad_request() -> None:
    """SVC-ORDER-3: a request whose own methods raise is BAD_REQUEST, never another error."""

    class BadGet(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise RuntimeError("get")

    class BadIter(list[object]):
        def __iter__(self) -> Iterator[object]:
            raise RuntimeError("iter")

    hostile: list[object] = [
        BadGet(questions=[{"id": "q", "question": "?"}]),
        {"questions": BadIter([{"id": "q", "question": "?"}])},
        {"questions": [{RaisingEq("id"): "q", "question": "?"}]},
        {
            "questions": [
                {"id": "q", "question": "?", "options": [{"label": RaisingEq("A")}, {"label": "A"}]}
            ]
        },
    ]
    for request in hostile:
        with pytest.raises(UserInteractionError) as raised:
            check_request(request)
        assert raised.value.code in {ErrorCode.BAD_REQUEST, ErrorCode.EMPTY_QUESTIONS}, request


def test_bad_intent_messages_never_run_a_hostile_format() -> None:
    """SVC-ORDER-4: the id and kind are written as plain strings, without their own __format__."""
    request = {
        "questions": [
            {
                "id": Raising("p"),
                "question": "?",
                "options": [{"label": "A"}],
                "detail": "plan",
                "intent": {"kind": Raising("k"), "approve": "B"},
            }
        ]
    }
    with pytest.raises(UserInteractionError) as raised:
        check_request(request)
    assert raised.value.code in {ErrorCode.BAD_INTENT, ErrorCode.BAD_REQUEST}


def test_a_provider_error_with_a_hostile_code_is_not_a_dismissal() -> None:
    """PLAN-TEXT-1 and TOOL-SAFE-1: review_plan never raises, whatever the error's code does."""

    class Weird(Exception):
        @property
        def code(self) -> str:
            raise RuntimeError("code")

    async def fail(request: object) -> Any:
        raise Weird("odd")

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=fail))
    assert run(review_plan(service, "# P")) == ToolResult("Error: odd", is_error=True)


def test_a_hostile_plan_never_raises() -> None:
    """PLAN-HEADING-1: a str subclass whose __bool__ raises is read as plain text."""

    class Plan(str):
        __slots__ = ()

        def __bool__(self) -> bool:
            raise RuntimeError("bool")

    seen: list[object] = []

    def approve(request: Any) -> Any:
        seen.append(request["questions"][0]["detail"])
        return {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=approve))
    assert not run(review_plan(service, Plan("# P"))).is_error
    assert type(seen[0]) is str


def test_editing_an_adapter_never_changes_the_definition() -> None:
    """TOOL-DEF-2: the adapters hand out copies, so a harness's edits stay its own."""
    before = json.dumps(ASK_USER_QUESTION_TOOL)
    openai_tool()["function"]["parameters"]["additionalProperties"] = False
    anthropic_tool()["input_schema"]["required"].append("x")
    assert json.dumps(ASK_USER_QUESTION_TOOL) == before


def test_the_providers_own_cancellation_propagates_unchanged() -> None:
    """SVC-ERR-1 and SVC-CANCEL-1: a CancelledError the provider raises is not ASK_ABORTED."""
    own = asyncio.CancelledError("the ui closed")

    async def fail(request: object) -> Any:
        raise own

    async def main() -> object:
        service = UserInteractionService()
        service.register_provider(ScriptedProvider(respond=fail))
        try:
            await service.ask({"questions": [{"id": "q", "question": "?"}]})
        except asyncio.CancelledError as error:
            return error
        return None

    assert asyncio.run(main()) is own


def test_a_metaclass_name_cannot_break_a_message() -> None:
    """TOOL-SAFE-1: type names are read through type itself, and shortened."""

    class Meta(type):
        @property
        def __name__(cls) -> Any:  # type: ignore[override]
            return 12345

    class Odd(Exception, metaclass=Meta):
        pass

    async def fail(request: object) -> Any:
        raise Odd

    service = UserInteractionService()
    service.register_provider(ScriptedProvider(respond=fail))
    result = run(ask_user_question(service, {"questions": [{"id": "q", "question": "?"}]}))
    assert result == ToolResult("Error: Odd", is_error=True)


def test_an_endless_mapping_is_refused_not_read_to_the_end() -> None:
    """TOOL-ARGS-1: reading stops once the items are more than the size limit allows."""

    class Endless(dict[str, object]):
        def items(self) -> Any:
            def forever() -> Iterator[tuple[str, object]]:
                number = 0
                while True:
                    number += 1
                    yield f"k{number}", number

            return forever()

    service = UserInteractionService()
    service.register_provider(ScriptedProvider())
    result = run(ask_user_question(service, Endless(), max_bytes=1000))
    assert result == ToolResult("Error: $: arguments are over the 1000-byte limit", is_error=True)


def test_a_huge_timeout_is_no_deadline() -> None:
    """ABT-TIMEOUT-1: an int too large for a float is no deadline; a huge negative one a ValueError."""

    async def main() -> None:
        assert not AbortSignal.timeout(10**400).aborted
        with pytest.raises(ValueError, match="seconds"):
            AbortSignal.timeout(-(10**400))

    asyncio.run(main())


def test_validating_provider_accepts_any_agent() -> None:
    """REQ-AGENT-2 and PRV-MUTATE-1: an agent object is compared by identity, never copied."""
    import threading

    class Agent:
        def __init__(self) -> None:
            self.lock = threading.Lock()

    provider = ValidatingProvider(
        ScriptedProvider(respond=lambda request: answer_of(answer_custom("n", "ok")))
    )
    request: Any = {"questions": [{"id": "n", "question": "Notes?"}], "agent": Agent()}
    assert run(provider.ask(request)) == {"answers": [{"id": "n", "selected": [], "custom": "ok"}]}
