"""Broken variants of the MCP elicitation provider, each a mistake a real bridge makes.

Each runs on a real MCP server and is driven through a real client by the
same driver as the real provider; ``BROKEN_MCP`` maps a name to its factory,
the requirement the suite must name, and the check that finds it.
``BROKEN_ROUNDS`` runs the same mistakes on protocol revision 2026-07-28,
every ask in input-required rounds (``make_round_trip_subject``), with one
mistake of that path of its own: a retry that asks again.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, cast

import mcp_types as types
from mcp.server.mcpserver import Context

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from dsh_user_interaction.extra.mcp import (
    DEFAULT_STATE_TTL,
    Form,
    McpElicitationProvider,
    StateLedger,
    answer_of_content,
    form_of,
    run_tool,
)
from dsh_user_interaction.extra.mcp._rounds import Rounds
from dsh_user_interaction.extra.mcp._run_tool import run_rounds
from dsh_user_interaction.extra.mcp.testing import (
    CAPABILITIES,
    RunTool,
    make_round_trip_subject,
    make_subject,
)
from dsh_user_interaction_conformance import Subject, with_capabilities


def _titled(request: AskUserQuestionRequest[Any], form: Form) -> Form:
    """*form* with each option's value and title set to ``label — description``."""
    for field in form.fields:
        question = request["questions"][field.index]
        prop = form.schema["properties"][field.name]
        holder = prop.get("items", prop)
        key = "anyOf" if "anyOf" in holder else "oneOf"
        if key not in holder:
            continue
        shown = [
            f"{option['label']} \u2014 {description}"
            if (description := option.get("description"))
            else option["label"]
            for option in question.get("options", ())
        ]
        holder[key] = [{"const": text, "title": text} for text in shown]
    return form


class TitlesAsLabels(McpElicitationProvider):
    """Options go out as their display titles (label and description), and the title comes back."""

    def form_of(self, request: AskUserQuestionRequest[Any]) -> Form:
        return _titled(request, form_of(request, custom_text=self.custom_text))

    @staticmethod
    def _read(
        request: AskUserQuestionRequest[Any], form: Form, result: types.ElicitResult
    ) -> AskUserQuestionAnswer:
        if result.action != "accept":
            return McpElicitationProvider._read(request, form, result)
        content = dict(result.content or {})
        answer: AskUserQuestionAnswer = {"answers": []}
        for index, question in enumerate(request["questions"]):
            value = content.get(f"q{index + 1}")
            picked = value if isinstance(value, list) else [] if value is None else [value]
            item: dict[str, Any] = {"id": question["id"], "selected": [str(v) for v in picked]}
            other = content.get(f"q{index + 1}_other", content.get(f"q{index + 1}"))
            if isinstance(other, str) and not question.get("options"):
                item["selected"] = []
                item["custom"] = other
            elif isinstance(content.get(f"q{index + 1}_other"), str):
                item["custom"] = content[f"q{index + 1}_other"]
                if question.get("multiSelect") is not True:
                    item["selected"] = []
            answer["answers"].append(item)  # type: ignore[arg-type] # built key by key above
        return answer


class DeclineAsSkip(McpElicitationProvider):
    """A ``decline`` is read as "answered nothing": every question skipped, not ASK_CANCELLED."""

    @staticmethod
    def _read(
        request: AskUserQuestionRequest[Any], form: Form, result: types.ElicitResult
    ) -> AskUserQuestionAnswer:
        if result.action == "decline":
            return answer_of_content(request, form, {})
        return McpElicitationProvider._read(request, form, result)


class CancelAsSkip(McpElicitationProvider):
    """A ``cancel`` is read as "answered nothing", while a ``decline`` dismisses as it should."""

    @staticmethod
    def _read(
        request: AskUserQuestionRequest[Any], form: Form, result: types.ElicitResult
    ) -> AskUserQuestionAnswer:
        if result.action == "cancel":
            return answer_of_content(request, form, {})
        return McpElicitationProvider._read(request, form, result)


class AbortLeavesRequest(McpElicitationProvider):
    """An abort raises ASK_ABORTED but never cancels the elicitation: the client still shows it."""

    async def _withdraw(self, elicit: asyncio.Future[types.ElicitResult]) -> None:
        return


class CustomReplacesPicks(McpElicitationProvider):
    """On a multi-select question, typed text replaces the picked labels, as on a single-select."""

    @staticmethod
    def _read(
        request: AskUserQuestionRequest[Any], form: Form, result: types.ElicitResult
    ) -> AskUserQuestionAnswer:
        answer = McpElicitationProvider._read(request, form, result)
        for item in answer["answers"]:
            if "custom" in item:
                item["selected"] = []
        return answer


class CancellationAsDismissal(McpElicitationProvider):
    """A cancelled ask raises ASK_CANCELLED instead of letting CancelledError propagate."""

    async def ask(self, request: AskUserQuestionRequest[Any]) -> AskUserQuestionAnswer:
        try:
            return await super().ask(request)
        except asyncio.CancelledError:
            raise UserInteractionError.of(ErrorCode.ASK_CANCELLED) from None


def _sent(result: types.ElicitResult, index: int) -> object:
    """What the client sent for question *index*'s choice (a choice's value is its label)."""
    return (result.content or {}).get(f"q{index + 1}")


class UnorderedPicks(McpElicitationProvider):
    """Multi-select labels come back in the order the client listed them, not in option order."""

    @staticmethod
    def _read(
        request: AskUserQuestionRequest[Any], form: Form, result: types.ElicitResult
    ) -> AskUserQuestionAnswer:
        answer = McpElicitationProvider._read(request, form, result)
        for index, item in enumerate(answer["answers"]):
            sent = _sent(result, index)
            if isinstance(sent, list) and request["questions"][index].get("multiSelect") is True:
                item["selected"] = [str(label) for label in cast("list[object]", sent)]
        return answer


class PickBesideText(McpElicitationProvider):
    """On a single-select question, an option picked and text typed both stay in the answer."""

    @staticmethod
    def _read(
        request: AskUserQuestionRequest[Any], form: Form, result: types.ElicitResult
    ) -> AskUserQuestionAnswer:
        answer = McpElicitationProvider._read(request, form, result)
        for index, item in enumerate(answer["answers"]):
            sent = _sent(result, index)
            single = request["questions"][index].get("multiSelect") is not True
            if "custom" in item and isinstance(sent, str) and single:
                item["selected"] = [sent]
        return answer


class AsksAgainOnRetry(McpElicitationProvider):
    """On revision 2026-07-28, takes no answer the first time a round gives it: it asks again."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self._ignored: set[str] = set()

    async def _ask_in_rounds(
        self, rounds: Rounds, request: AskUserQuestionRequest[Any], form: Form
    ) -> AskUserQuestionAnswer:
        key = f"ask-1.{rounds.call}"
        if key in rounds.responses and key not in self._ignored:
            self._ignored.add(key)
            rounds.responses = {}  # the answer given is dropped, and the form sent again
        return await super()._ask_in_rounds(rounds, request, form)


def _factory(provider_type: type[McpElicitationProvider]) -> Callable[[], Awaitable[Subject]]:
    @with_capabilities(CAPABILITIES)
    async def factory() -> Subject:
        return await make_subject(provider_type, name=provider_type.__name__)

    return factory


#: The broken variants, by their gallery name.
_VARIANTS: dict[str, type[McpElicitationProvider]] = {
    "titles-as-labels": TitlesAsLabels,
    "decline-as-skip": DeclineAsSkip,
    "cancel-as-skip": CancelAsSkip,
    "abort-leaves-request": AbortLeavesRequest,
    "custom-replaces-picks": CustomReplacesPicks,
    "cancellation-as-dismissal": CancellationAsDismissal,
    "pick-beside-text": PickBesideText,
}

#: name -> (subject factory, requirement it breaks, the check that finds it)
BROKEN_MCP: dict[str, tuple[Callable[[], Awaitable[Subject]], str, str]] = {
    "titles-as-labels": (_factory(TitlesAsLabels), "ANS-SEL-3", "provider-answers"),
    "decline-as-skip": (_factory(DeclineAsSkip), "PRV-DISMISS-1", "provider-lifecycle"),
    "cancel-as-skip": (_factory(CancelAsSkip), "PRV-DISMISS-1", "provider-lifecycle"),
    "abort-leaves-request": (_factory(AbortLeavesRequest), "PRV-ABORT-2", "provider-lifecycle"),
    "custom-replaces-picks": (_factory(CustomReplacesPicks), "PRV-ANSWER-1", "provider-answers"),
    "cancellation-as-dismissal": (
        _factory(CancellationAsDismissal),
        "PRV-CANCEL-1",
        "provider-lifecycle",
    ),
    # Both fields of a single-select filled: pick, then type (a Revise behaviour).
    "pick-beside-text": (_factory(PickBesideText), "ANS-SINGLE-2", "provider-answers"),
}
#: A SHOULD violation: reported as a warning, and the run still passes.
SHOULD_MCP: dict[str, tuple[Callable[[], Awaitable[Subject]], str, str]] = {
    "unordered-picks": (_factory(UnorderedPicks), "ANS-MULTI-2", "provider-answers"),
}


def _round_trip(provider_type: type[McpElicitationProvider]) -> Callable[[], Awaitable[Subject]]:
    @with_capabilities(CAPABILITIES)
    async def factory() -> Subject:
        return await make_round_trip_subject(provider_type, name=f"{provider_type.__name__}-rounds")

    return factory


#: The same mistakes on revision 2026-07-28, and one of that path's own.
BROKEN_ROUNDS: dict[str, tuple[Callable[[], Awaitable[Subject]], str, str]] = {
    **{
        name: (_round_trip(_VARIANTS[name]), requirement, check)
        for name, (_, requirement, check) in BROKEN_MCP.items()
        # Its mistake is in withdrawing an elicitation/create request: the push path only.
        if name != "abort-leaves-request"
    },
    "asks-again-on-retry": (_round_trip(AsksAgainOnRetry), "PRV-ANSWER-1", "provider-answers"),
}


# Broken ``run_tool``s: the rounds' own mistakes, judged by the round-trip checks
# (``check_round_trips``, MCP-ROUND-* of spec/mcp.md), which the provider suite
# cannot see. Each wraps the real one and changes what reaches it.


def _retried(
    context: Context,
    *,
    state: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    responses: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
) -> types.CallToolRequestParams | None:
    """The call's params, its (already unsealed) state and responses changed as given."""
    plain, given = context.request_state, dict(context.input_responses or {})
    if plain is None:
        return None
    fields: dict[str, Any] = json.loads(plain)
    if responses is not None:
        given = responses(fields, given)
    if state is not None:
        fields = state(fields)
    return types.CallToolRequestParams(
        name="retried",
        request_state=json.dumps(fields),
        input_responses=given,
    )


def _broken(
    doc: str,
    *,
    state: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    responses: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
    fixed_ttl: float | None = None,
    fixed_ledger: StateLedger | None = None,
) -> RunTool:
    """``run_tool``, with the retry's state or responses changed, or its ttl or ledger fixed."""

    async def broken(
        context: Context,
        body: Callable[[], Awaitable[str]],
        *,
        params: types.CallToolRequestParams | None = None,
        ttl: float = DEFAULT_STATE_TTL,
        ledger: StateLedger | None = None,
    ) -> str | types.InputRequiredResult:
        if state is not None or responses is not None:
            params = _retried(context, state=state, responses=responses)
        return await run_tool(
            context,
            body,
            params=params,
            ttl=ttl if fixed_ttl is None else fixed_ttl,
            ledger=ledger if fixed_ledger is None else fixed_ledger,
        )

    broken.__doc__ = doc
    return broken


class _Forgetful:
    """A ledger that marks nothing: every state is new to it."""

    async def use(self, nonce: str, expires: float) -> bool:
        return True


def _by_number(fields: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    return {f"{key.split('.')[0]}.{fields['call']}": value for key, value in given.items()}


def _in_order(fields: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(fields["asked"], given.values(), strict=False))


def _all_asked(fields: dict[str, Any]) -> dict[str, Any]:
    known = {key: value[0] for key, value in fields["known"].items()}
    return {**fields, "asked": {**known, **fields["asked"]}}


forgets_kept_answers = _broken(
    "Keeps no answer past the round that gave it: an ask answered earlier is asked again.",
    state=lambda fields: {**fields, "known": {}},
)
ignores_ttl = _broken(
    "Drops the application's time to live for the default: a late retry is accepted.",
    fixed_ttl=DEFAULT_STATE_TTL,
)
accepts_replays = _broken(
    "Keeps no ledger of used states: a state sent again is accepted again.",
    fixed_ledger=_Forgetful(),
)
matches_by_number = _broken(
    "Matches a response to an ask by its number alone: another call's answers are used.",
    responses=_by_number,
)
routes_by_order = _broken(
    "Gives the responses to the asks in the order they came, not by their keys.",
    responses=_in_order,
)
uses_unasked_answers = _broken(
    "Takes a response for any ask of the call, even one answered already and not asked.",
    state=_all_asked,
)


forgets_time_limits = _broken(
    "Carries no ask's time limit: each round's body starts its timeout or deadline afresh.",
    state=lambda fields: {**fields, "t": {}},
)


class _Racy:
    """A ledger that reads, then marks in a second step: two retries at once both pass the read."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    async def use(self, nonce: str, expires: float) -> bool:
        if nonce in self._used:
            return False
        await asyncio.sleep(0.05)  # the write, a round trip after the read
        self._used.add(nonce)
        return True


races_on_one_state = _broken(
    "Checks a nonce, then marks it in another step: two retries with one state both run.",
    fixed_ledger=_Racy(),
)


def _resumes_by_arguments() -> RunTool:
    # What each server's calls last brought, by their tool's arguments.
    memories: weakref.WeakKeyDictionary[object, dict[str, tuple[dict[str, Any], dict[str, Any]]]]
    memories = weakref.WeakKeyDictionary()

    async def resumes_by_arguments(
        context: Context,
        body: Callable[[], Awaitable[str]],
        *,
        params: types.CallToolRequestParams | None = None,
        ttl: float = DEFAULT_STATE_TTL,
        ledger: StateLedger | None = None,
    ) -> str | types.InputRequiredResult:
        """Resumes a call by its tool's arguments when a retry brings no state."""
        wire = context.request_context.params or {}
        arguments = json.dumps([wire.get("name"), wire.get("arguments")], sort_keys=True)
        memory = memories.setdefault(context.mcp_server, {})
        plain = context.request_state
        if plain is not None:
            memory[arguments] = (json.loads(plain), dict(context.input_responses or {}))
        elif arguments in memory:
            fields, given = memory[arguments]
            fresh = {**fields, "n": secrets.token_hex(16), "exp": time.time() + ttl}
            params = types.CallToolRequestParams(
                name="resumed", request_state=json.dumps(fresh), input_responses=given
            )
        return await run_tool(context, body, params=params, ttl=ttl, ledger=ledger)

    return resumes_by_arguments


resumes_by_arguments = _resumes_by_arguments()


def _expired_afresh(fields: dict[str, Any]) -> dict[str, Any] | None:
    return None if fields["exp"] < time.time() and not fields["known"] else fields


async def restarts_an_expired_state(
    context: Context,
    body: Callable[[], Awaitable[str]],
    *,
    params: types.CallToolRequestParams | None = None,
    ttl: float = DEFAULT_STATE_TTL,
    ledger: StateLedger | None = None,
) -> str | types.InputRequiredResult:
    """Takes an expired state with no answers yet for a new call instead of refusing it."""
    plain = context.request_state
    if plain is not None and _expired_afresh(json.loads(plain)) is None:
        params = types.CallToolRequestParams(
            name="restarted", input_responses=dict(context.input_responses or {})
        )
    return await run_tool(context, body, params=params, ttl=ttl, ledger=ledger)


class _FormBlind(Rounds):
    """A round that matches answers by key alone: a form changed under a key takes the old answer."""

    def kept_for(self, key: str, digest: str) -> types.ElicitResult | None:
        kept = self.known.get(key)
        return None if kept is None else types.ElicitResult.model_validate(kept[1])

    def response_for(self, key: str, digest: str) -> types.ElicitResult | None:
        return super().response_for(key, self.asked.get(key, digest))


async def ignores_form_changes(
    context: Context,
    body: Callable[[], Awaitable[str]],
    *,
    params: types.CallToolRequestParams | None = None,
    ttl: float = DEFAULT_STATE_TTL,
    ledger: StateLedger | None = None,
) -> str | types.InputRequiredResult:
    """Uses an answer for its key whatever form the body now asks under it."""
    return await run_rounds(
        context, body, params=params, ttl=ttl, ledger=ledger, rounds_type=_FormBlind
    )


async def reruns_after_last_answer(
    context: Context,
    body: Callable[[], Awaitable[str]],
    *,
    params: types.CallToolRequestParams | None = None,
    ttl: float = DEFAULT_STATE_TTL,
    ledger: StateLedger | None = None,
) -> str | types.InputRequiredResult:
    """Once the body has returned, runs it again on the same answers, "to be sure"."""
    result = await run_tool(context, body, params=params, ttl=ttl, ledger=ledger)
    if isinstance(result, types.InputRequiredResult) or context.request_state is None:
        return result
    again = _retried(context, state=lambda fields: {**fields, "n": secrets.token_hex(16)})
    return await run_tool(context, body, params=again, ttl=ttl, ledger=ledger)


#: name -> (the broken run_tool, the requirements the round-trip checks may name, first the usual)
BROKEN_RUN_TOOLS: dict[str, tuple[RunTool, tuple[str, ...]]] = {
    "forgets-kept-answers": (forgets_kept_answers, ("MCP-ROUND-1",)),
    "matches-by-number": (matches_by_number, ("MCP-ROUND-2",)),
    # An answer given to one of two asks with the same form and the same reply goes to
    # the other: the outcomes are right, and the ask whose answer was carried is asked again.
    "routes-by-order": (routes_by_order, ("MCP-ROUND-2", "MCP-ROUND-1")),
    "uses-unasked-answers": (uses_unasked_answers, ("MCP-ROUND-2",)),
    "accepts-replays": (accepts_replays, ("MCP-ROUND-3",)),
    "ignores-ttl": (ignores_ttl, ("MCP-ROUND-4",)),
    "forgets-time-limits": (forgets_time_limits, ("MCP-ROUND-6",)),
    # Two retries both accepted; when the second was the last round, the body ran twice.
    "races-on-one-state": (races_on_one_state, ("MCP-ROUND-3", "MCP-ROUND-8")),
    "resumes-by-arguments": (resumes_by_arguments, ("MCP-ROUND-2",)),
    "restarts-an-expired-state": (restarts_an_expired_state, ("MCP-ROUND-4",)),
    "ignores-form-changes": (ignores_form_changes, ("MCP-ROUND-2",)),
    "reruns-after-last-answer": (reruns_after_last_answer, ("MCP-ROUND-8",)),
}
