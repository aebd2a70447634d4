"""The round-trip checks: a drawn client against ``run_tool``, or a bridge's own (``MCP-ROUND-*``).

The provider suite judges what an ask returns; it cannot see how a tool
call's rounds carry answers, since each of its asks is one honest call.
These checks drive the rounds themselves, the way a client that retries
late, replays, or sends answers under the wrong keys would, and judge the
statements of ``spec/mcp.md``:

* a real ``MCPServer`` with one tool, whose body asks one to three drawn
  questions (in turn or together) through an
  :class:`~dsh_user_interaction.extra.mcp.McpElicitationProvider`, under
  the *run* being checked (:func:`~dsh_user_interaction.extra.mcp.run_tool`
  or a variant with its signature), and returns what each ask ended with;
* a real ``Client`` on revision 2026-07-28 whose retries are drawn round by
  round: answer every form (keys in a drawn order), some of them, or none;
  first replay a state already used; send a retry twice at once; send a
  different answer to an ask already answered; send another call's answers
  with this call's state. A body may ask another form under the first
  ask's key from its second round on. A second call, started with other
  answers, lends its keys; a third, with a time to live of 20 ms, is
  retried 60 ms later; in one example of three, a fourth, whose asks have a
  time limit of 100 ms (a signal's timeout or the request's ``deadline``),
  is answered 300 ms later.
  Once the main call has ended, the client calls the tool again with the
  same arguments and no state, which must start afresh.

The body counts how often it runs to its end: once per call (``MCP-ROUND-8``).
Each example runs within a bound of its own, so a *run* that hangs fails it.
Time never decides a verdict the other way: only the late and the timed
calls depend on the clock, and a slow machine only makes them later.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol, cast

import mcp_types as types
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st
from mcp import Client
from mcp.client import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from dsh_user_interaction import (
    AbortSignal,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    UserInteractionError,
    UserInteractionService,
)

from ._ledger import ProcessLedger, StateLedger
from ._provider import McpElicitationProvider
from ._rounds import DEFAULT_STATE_TTL, ROUND_TRIP_VERSION
from ._run_tool import run_tool

__all__ = ["RoundTripFailure", "RunTool", "check_round_trips"]

#: The questions a body asks, each with the replies a human may give it.
_QUESTIONS: Final[tuple[tuple[AskUserQuestionItem, tuple[str, ...]], ...]] = (
    (
        {
            "id": "mode",
            "question": "Which mode?",
            "options": [{"label": "Fast"}, {"label": "Safe"}, {"label": "Later"}],
        },
        ("Fast", "Safe", "Later"),
    ),
    (
        {
            "id": "target",
            "question": "Where to?",
            "options": [{"label": "staging"}, {"label": "prod"}],
        },
        ("staging", "prod"),
    ),
    ({"id": "why", "question": "Why?"}, ("because", "it is late", "ok")),
)
#: Replies that end an ask as a dismissal, and what the body then records.
_DISMISSALS: Final = ("decline", "cancel")
_DISMISSED: Final = "ASK_CANCELLED"
#: What the body records for an ask whose time ran out (``POL-TIMEOUT-1``).
_TIMED_OUT: Final = "ASK_ABORTED timed out"
#: What the body records for an ask its request's defaults answered (``POL-DEFAULT-1``).
_DEFAULTED: Final = "defaulted"
#: How the timed call limits its asks, and the limit of the main call's, far off:
#: a signal's timeout, a ``deadline``, or a ``deadline`` with a default for every question.
_LIMITS: Final = ("signal", "deadline", "defaults")
_FAR: Final = 600.0
#: The time to live of the late call, and how long after its first round it is retried.
_LATE_TTL: Final = 0.02
_LATE_BY: Final = 0.06
#: The time limit of the timed call's asks, and how long after its first round it is answered.
#: Its retry must end within the limit for a run_tool that restarts the limit on each round
#: to be caught: 0.1 s, against rounds of a few milliseconds.
_TIMED_LIMIT: Final = 0.1
_TIMED_LATE_BY: Final = 0.3
#: Rounds whose retry is drawn; later ones answer every form.
_DRAWN_ROUNDS: Final = 6
#: Rounds after which a call that has not ended fails MCP-ROUND-1.
_MAX_ROUNDS: Final = 16
#: Seconds an example may take, by default, before it fails as a hang.
_BOUND: Final = 30.0
_TOOL: Final = "scenario"
#: No explain phase: on a failure it ran some 440 more examples, a minute, to say
#: which draws mattered; the shrunk example says enough.
_PHASES: Final = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
_KEY: Final = re.compile(r"^ask-(\d+)\.")


class RoundTripFailure(AssertionError):
    """A statement of ``spec/mcp.md`` broken, named by its ID (``requirement``)."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(f"{requirement}: {message}")
        #: The ID of the statement broken, such as ``MCP-ROUND-2``.
        self.requirement = requirement


class RunTool(Protocol):
    """What is checked: a callable shaped like :func:`~dsh_user_interaction.extra.mcp.run_tool`."""

    def __call__(
        self,
        context: Context,
        body: Callable[[], Awaitable[str]],
        *,
        params: types.CallToolRequestParams | None = None,
        ttl: float = DEFAULT_STATE_TTL,
        ledger: StateLedger | None = None,
    ) -> Awaitable[str | types.InputRequiredResult]: ...


@dataclass(frozen=True, slots=True)
class _Call:
    """One tool call: the questions its body asks (by index), the replies, and how it asks.

    *change*: from its second round on, the body's first ask asks this
    question instead (by index), and the human gives it this reply. *limit*:
    how each ask's time is limited (a signal's timeout, a ``deadline``, or a
    ``deadline`` with defaults), and how many seconds.
    """

    questions: tuple[int, ...]
    replies: tuple[str, ...]
    together: bool
    change: tuple[int, str] | None = None
    limit: tuple[str, float] | None = None


@st.composite
def _calls(draw: st.DrawFn, lent_to: _Call | None = None) -> _Call:
    """A call; one lending its keys to *lent_to* asks the same, and replies otherwise."""
    if lent_to is None:
        questions = tuple(
            draw(st.lists(st.integers(0, len(_QUESTIONS) - 1), min_size=1, max_size=3))
        )
        replies = tuple(
            draw(
                st.sampled_from(_QUESTIONS[q][1] + _DISMISSALS) | st.sampled_from(_QUESTIONS[q][1])
            )
            for q in questions
        )
    else:
        questions = lent_to.questions
        replies = tuple(
            draw(st.sampled_from([r for r in _QUESTIONS[q][1] if r != mine]))
            for q, mine in zip(questions, lent_to.replies, strict=True)
        )
    return _Call(questions, replies, draw(st.booleans()))


@st.composite
def _main_calls(draw: st.DrawFn) -> _Call:
    """The main call: maybe asking another form under its first key, maybe limited far off."""
    call = draw(_calls())
    others = [q for q in range(len(_QUESTIONS)) if q != call.questions[0]]
    change = draw(st.none() | st.sampled_from(others), label="first ask's form from round 2")
    limit = draw(st.none() | st.sampled_from(_LIMITS), label="its asks' time limit, far off")
    return _Call(
        call.questions,
        call.replies,
        call.together,
        None if change is None else (change, draw(st.sampled_from(_QUESTIONS[change][1]))),
        None if limit is None else (limit, _FAR),
    )


@st.composite
def _timed_calls(draw: st.DrawFn) -> _Call:
    """A call whose asks, made together, have a short time limit."""
    call = draw(_calls())
    limit = draw(st.sampled_from(_LIMITS), label="how its asks' time is limited")
    return _Call(call.questions, call.replies, True, limit=(limit, _TIMED_LIMIT))


def _expected(reply: str) -> str:
    return _DISMISSED if reply in _DISMISSALS else reply


def _wanted(call: _Call) -> list[str]:
    """What each ask of *call* must end with, its every form answered in time."""
    replies = list(call.replies)
    if call.change is not None:
        replies[0] = call.change[1]
    return [_expected(reply) for reply in replies]


def _question_of(request: types.InputRequest) -> int:
    """Which question an input request's form asks (by index), from its field's title."""
    params = request.params if isinstance(request, types.ElicitRequest) else None
    if isinstance(params, types.ElicitRequestFormParams):
        field_: object = params.requested_schema.get("properties", {}).get("q1", {})
        title = (
            str(cast("dict[str, object]", field_).get("title", ""))
            if isinstance(field_, dict)
            else ""
        )
        for index, (question, _) in enumerate(_QUESTIONS):
            if question["question"] in title:
                return index
    msg = f"an input request that is not one of the body's forms: {request!r}"
    raise RoundTripFailure("MCP-ROUND-2", msg)


def _response(call: _Call, number: int, question: int | None = None) -> types.ElicitResult:
    """The client's answer to the *number*-th ask (from 1) of *call*, whose form asks *question*."""
    if not 1 <= number <= len(call.replies):
        msg = f"an input request for ask {number}, which the body never makes"
        raise RoundTripFailure("MCP-ROUND-2", msg)
    reply = call.replies[number - 1]
    if number == 1 and call.change is not None and question == call.change[0]:
        reply = call.change[1]
    if reply in _DISMISSALS:
        return types.ElicitResult(action="decline" if reply == "decline" else "cancel")
    return types.ElicitResult(action="accept", content={"q1": reply})


def _responses(
    call: _Call, result: types.InputRequiredResult, keys: list[str] | None = None
) -> dict[str, types.ElicitResult]:
    """The client's answers to the forms *result* sends under *keys* (every key by default)."""
    requests = result.input_requests or {}
    chosen = list(requests) if keys is None else keys
    return {key: _response(call, _number(key), _question_of(requests[key])) for key in chosen}


def _number(key: str) -> int:
    match = _KEY.match(key)
    if match is None:
        msg = f"an input request's key {key!r} is not ask-<n>.<call>"
        raise RoundTripFailure("MCP-ROUND-2", msg)
    return int(match[1])


@dataclass(eq=False)
class _Server:
    """The server under check: one tool whose body asks the questions of a registered call."""

    run: RunTool
    ledger: StateLedger = field(default_factory=ProcessLedger)
    server: MCPServer = field(default_factory=lambda: MCPServer("dsh-round-trip-checks"))
    calls: dict[str, _Call] = field(default_factory=dict[str, _Call])
    #: How many times each case's tool ran, and how many times its body ran to its end.
    runs: dict[str, int] = field(default_factory=dict[str, int])
    finished: dict[str, int] = field(default_factory=dict[str, int])

    def __post_init__(self) -> None:
        self.service = UserInteractionService()
        self.service.register_provider(McpElicitationProvider())
        self.server.tool(name=_TOOL)(self._tool)

    async def _tool(self, ctx: Context, case: str, ttl: float) -> str | types.InputRequiredResult:
        call = self.calls[case]
        run = self.runs[case] = self.runs.get(case, 0) + 1

        async def one(number: int, question: int) -> str:
            if number == 1 and call.change is not None and run > 1:
                question = call.change[0]
            request: dict[str, object] = {"questions": [_QUESTIONS[question][0]]}
            if call.limit is not None:
                kind, seconds = call.limit
                if kind == "signal":
                    request["signal"] = AbortSignal.timeout(seconds)
                else:
                    request["deadline"] = time.time() + seconds
                if kind == "defaults":
                    skipped: dict[str, list[str]] = {"selected": []}
                    request["questions"] = [{**_QUESTIONS[question][0], "default": skipped}]
            try:
                answer = await self.service.ask(cast("AskUserQuestionRequest", request))
            except UserInteractionError as error:
                return f"{error.code} timed out" if error.timed_out else str(error.code)
            if answer.get("defaulted"):
                return _DEFAULTED
            item = answer["answers"][0]
            return item["selected"][0] if item["selected"] else item.get("custom", "")

        async def body() -> str:
            asks = list(enumerate(call.questions, 1))
            if call.together:
                outcomes = await asyncio.gather(*(one(n, q) for n, q in asks))
            else:
                outcomes = [await one(n, q) for n, q in asks]
            # The side effect after the last ask: once per call (MCP-ROUND-8).
            self.finished[case] = self.finished.get(case, 0) + 1
            return json.dumps(outcomes)

        return await self.run(ctx, body, ttl=ttl, ledger=self.ledger)


@dataclass(eq=False)
class _Client:
    """The drawn client: its session, the example's draws, and the calls it has made."""

    session: ClientSession
    data: st.DataObject
    cases: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def call(
        self,
        case: str,
        ttl: float,
        responses: Mapping[str, types.ElicitResult] | None = None,
        state: str | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        result = await self.session.call_tool(
            _TOOL,
            {"case": case, "ttl": ttl},
            input_responses=dict(responses) if responses is not None else None,
            request_state=state,
            allow_input_required=True,
        )
        if isinstance(result, types.CallToolResult) and result.is_error:
            text = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
            msg = f"the tool call failed: {text}"
            raise RoundTripFailure("MCP-ROUND-2", msg)
        return result

    async def refused(
        self,
        requirement: str,
        why: str,
        case: str,
        ttl: float,
        *,
        state: str | None,
        responses: Mapping[str, types.ElicitResult] | None = None,
    ) -> None:
        """Send a retry that must be refused with ``INVALID_PARAMS`` saying *why*."""
        try:
            await self.call(case, ttl, responses, state)
        except MCPError as error:
            if error.code == types.INVALID_PARAMS and why in error.message:
                return
            msg = f"a retry that must be refused ({why}) failed otherwise: {error.message}"
            raise RoundTripFailure(requirement, msg) from None
        msg = f"a request state was accepted, but {why}"
        raise RoundTripFailure(requirement, msg)


def _outcomes(result: types.CallToolResult) -> list[str]:
    """What each ask of the body ended with, from the call's final result."""
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    try:
        outcomes: object = json.loads(text)
    except ValueError:
        outcomes = text
    if not isinstance(outcomes, list):
        msg = f"the body's result {text!r} is not its list of outcomes"
        raise RoundTripFailure("MCP-ROUND-2", msg)
    return [str(outcome) for outcome in cast("list[object]", outcomes)]


async def _start(
    client: _Client, server: _Server, call: _Call, role: str, ttl: float
) -> tuple[str, types.InputRequiredResult]:
    """Call the tool for *call* once: its case, and its first round."""
    case = f"{role}-{next(client.cases)}"
    server.calls[case] = call
    result = await client.call(case, ttl)
    if not isinstance(result, types.InputRequiredResult):
        msg = "a call whose body asks ended without asking"
        raise RoundTripFailure("MCP-ROUND-1", msg)
    return case, result


async def _first_keys(client: _Client, server: _Server, call: _Call) -> dict[int, str]:
    """Start *call* and leave it: the keys of its first round, by ask number."""
    _, result = await _start(client, server, call, "lender", DEFAULT_STATE_TTL)
    return {_number(key): key for key in result.input_requests or {}}


async def _late(client: _Client, server: _Server, call: _Call) -> None:
    """MCP-ROUND-4: a retry after the state's time to live is refused."""
    case, result = await _start(client, server, call, "late", _LATE_TTL)
    await asyncio.sleep(_LATE_BY)
    await client.refused(
        "MCP-ROUND-4",
        "it has expired",
        case,
        _LATE_TTL,
        responses=_responses(call, result),
        state=result.request_state,
    )


async def _timed(client: _Client, server: _Server, call: _Call) -> None:
    """MCP-ROUND-6: asks whose time limit passed before the retry end as on a legacy connection.

    The late retry answers every form, or none (the human walked away):
    answered late, every ask times out, the late answer never replaced by
    defaults; unanswered, a ``deadline`` with defaults gives the defaults,
    and any other limit times out.
    """
    case = f"timed-{next(client.cases)}"
    server.calls[case] = call
    answering = client.data.draw(st.booleans(), label="the late retry answers every form")
    result = await client.call(case, DEFAULT_STATE_TTL)
    sent: set[int] = set()
    if isinstance(result, types.InputRequiredResult):
        # After the limit: the retry is late for each of them.
        sent = {_number(key) for key in result.input_requests or {}}
        await asyncio.sleep(_TIMED_LATE_BY)
        responses = _responses(call, result) if answering else None
        result = await client.call(case, DEFAULT_STATE_TTL, responses, result.request_state)
    if isinstance(result, types.InputRequiredResult):
        msg = "a retry after the asks' time limit asked again"
        raise RoundTripFailure("MCP-ROUND-6", msg)
    outcomes = _outcomes(result)
    defaults = call.limit is not None and call.limit[0] == "defaults"
    # A late answer to a form that was sent times out; an ask without one (unanswered,
    # dismissed late, or whose deadline passed in the first round before its form went
    # out, as on a busy machine) ends as its deadline says: the defaults where it has them.
    answered = {
        number for number in sent if answering and call.replies[number - 1] not in _DISMISSALS
    }
    wanted = [
        _DEFAULTED if defaults and number not in answered else _TIMED_OUT
        for number in range(1, len(call.questions) + 1)
    ]
    if outcomes != wanted:
        how = "answered" if answering else "retried without answers"
        msg = (
            f"asks limited to {_TIMED_LIMIT:g} s ({call.limit}) and {how} {_TIMED_LATE_BY:g} s "
            f"after their first round ended with {outcomes}, not {wanted}"
        )
        raise RoundTripFailure("MCP-ROUND-6", msg)


async def _retry(
    client: _Client,
    case: str,
    responses: dict[str, types.ElicitResult] | None,
    state: str | None,
    *,
    twice: bool,
) -> types.CallToolResult | types.InputRequiredResult:
    """One retry of *case*; *twice*: the same retry sent twice at once, exactly one accepted."""
    if not twice:
        return await client.call(case, DEFAULT_STATE_TTL, responses, state)
    both = await asyncio.gather(
        client.call(case, DEFAULT_STATE_TTL, responses, state),
        client.call(case, DEFAULT_STATE_TTL, responses, state),
        return_exceptions=True,
    )
    accepted = [r for r in both if not isinstance(r, BaseException)]
    refused = [
        r
        for r in both
        if isinstance(r, MCPError)
        and r.code == types.INVALID_PARAMS
        and "it was used already" in r.message
    ]
    if len(accepted) == 1 and len(refused) == 1:
        return accepted[0]
    for outcome in both:
        if isinstance(outcome, RoundTripFailure):
            raise outcome
    msg = (
        f"two retries with one state at once: {len(accepted)} accepted and "
        f"{len(refused)} refused as used already, not one of each"
    )
    raise RoundTripFailure("MCP-ROUND-3", msg)


async def _main_call(client: _Client, server: _Server, call: _Call, lender: _Call | None) -> None:
    """Drive *call* to its end with drawn retries; judge every round (MCP-ROUND-1 to 3, 8)."""
    data = client.data
    case = f"main-{next(client.cases)}"
    server.calls[case] = call
    lent = await _first_keys(client, server, lender) if lender is not None else {}
    used: list[str] = []
    #: Each key answered: the round whose retry carried the answer, and the form it answered.
    answered: dict[str, tuple[int, int]] = {}
    responses: dict[str, types.ElicitResult] | None = None
    state: str | None = None
    asked_again: str | None = None
    twice = False
    keys_seen: list[str] = []
    round_number = 0
    while True:
        round_number += 1
        if round_number > _MAX_ROUNDS:
            msg = f"the call had not ended after {_MAX_ROUNDS} rounds, every form answered"
            raise RoundTripFailure("MCP-ROUND-1", msg)
        result = await _retry(client, case, responses, state, twice=twice)
        if state is not None:
            used.append(state)
        if not isinstance(result, types.InputRequiredResult):
            break
        requests = result.input_requests or {}
        keys = list(requests)
        keys_seen += keys
        forms = {key: _question_of(requests[key]) for key in keys}
        again = [key for key in keys if key in answered and answered[key][1] == forms[key]]
        if again and asked_again is None:
            # Judged at the end: an answer used by another ask breaks MCP-ROUND-2 instead.
            asked_again = (
                f"round {round_number} sent the form of {again[0]!r} again, "
                f"though the retry of round {answered[again[0]][0]} carried its answer"
            )
        if not keys or result.request_state is None:
            msg = "an input-required result with no input request or no request state"
            raise RoundTripFailure("MCP-ROUND-1", msg)
        state = result.request_state
        moves = ["all"]
        # Asks answered in earlier rounds and not sent again: another answer to one is stray.
        earlier = sorted(set(answered) - set(keys))
        twice = False
        if round_number <= _DRAWN_ROUNDS:
            moves += ["none", *(["some"] if len(keys) > 1 else [])]
            # A stray answer twice as often: only a call of several rounds can send one.
            moves += [*(["replay"] if used else []), *(["stray"] * 2 if earlier else [])]
            moves += ["cross"] if any(_number(k) in lent for k in keys) else []
            twice = data.draw(st.booleans(), label="send the retry twice at once")
        move = data.draw(st.sampled_from(moves), label=f"round {round_number}")
        if move == "replay":
            old = data.draw(st.sampled_from(used), label="replayed state")
            await client.refused(
                "MCP-ROUND-3", "it was used already", case, DEFAULT_STATE_TTL, state=old
            )
            move = "all"
        chosen: list[str] = []
        if move in ("all", "stray"):
            chosen = data.draw(st.permutations(keys), label="answered, in this order")
        elif move == "some":
            chosen = data.draw(
                st.lists(st.sampled_from(keys), min_size=1, max_size=len(keys) - 1, unique=True),
                label="answered",
            )
        responses = _responses(call, result, chosen)
        for key in chosen:
            answered[key] = (round_number, forms[key])
        if move == "stray":
            # Another answer to an ask already answered: never used (its answer was kept).
            key = data.draw(st.sampled_from(earlier), label="answered again")
            number = _number(key)
            given = answered[key][1]
            mine = _response(call, number, given).content or {}
            other = next(r for r in _QUESTIONS[given][1] if r != mine.get("q1"))
            responses[key] = types.ElicitResult(action="accept", content={"q1": other})
        if move == "cross" and lender is not None:
            # The other call's answers, under its keys, with this call's state: never used.
            for key in keys:
                number = _number(key)
                if number in lent:
                    responses[lent[number]] = _response(lender, number)
    outcomes = _outcomes(result)
    wanted = _wanted(call)
    if outcomes != wanted:
        msg = f"the asks ended with {outcomes}, but the answers given to them were {wanted}"
        raise RoundTripFailure("MCP-ROUND-2", msg)
    if asked_again is not None:
        raise RoundTripFailure("MCP-ROUND-1", asked_again)
    finished = server.finished.get(case, 0)
    if finished != 1:
        msg = f"the body ran to its end {finished} times in one call, not once"
        raise RoundTripFailure("MCP-ROUND-8", msg)
    replay: bool = data.draw(st.booleans(), label="replay the last state")
    if used and replay:
        await client.refused(
            "MCP-ROUND-3", "it was used already", case, DEFAULT_STATE_TTL, state=used[-1]
        )
    await _afresh(client, case, {key.split(".", 1)[1] for key in keys_seen})


async def _afresh(client: _Client, case: str, calls: set[str]) -> None:
    """MCP-ROUND-2: the same tool and arguments again, without a state, start a new call."""
    result = await client.call(case, DEFAULT_STATE_TTL)
    if not isinstance(result, types.InputRequiredResult):
        msg = (
            "a call without a request state, with the arguments of a call that had ended, "
            "ended at once: it used the earlier call's answers"
        )
        raise RoundTripFailure("MCP-ROUND-2", msg)
    resumed = [key for key in result.input_requests or {} if key.split(".", 1)[-1] in calls]
    if resumed:
        msg = (
            f"a call without a request state asked {resumed[0]!r}, a key of the earlier "
            "call with the same arguments: it resumed that call"
        )
        raise RoundTripFailure("MCP-ROUND-2", msg)


async def _no_push(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """The client's elicitation callback: never called, since the checks answer each round."""
    del context, params
    return types.ErrorData(code=types.INTERNAL_ERROR, message="forms come in rounds here")


async def _example(run: RunTool, data: st.DataObject) -> None:
    call = data.draw(_main_calls(), label="call")
    lender = data.draw(st.none() | _calls(call), label="another call, lending its keys")
    late = data.draw(st.none() | _calls(), label="a call retried late")
    # One example in three: each waits out the limit.
    timed_now = data.draw(st.sampled_from((False, False, True)), label="a timed call")
    timed = data.draw(_timed_calls(), label="a call answered late") if timed_now else None
    server = _Server(run)
    failure: RoundTripFailure | None = None
    async with Client(
        server.server, mode=ROUND_TRIP_VERSION, elicitation_callback=_no_push
    ) as connected:
        client = _Client(connected.session, data)
        try:
            if late is not None:
                await _late(client, server, late)
            if timed is not None:
                await _timed(client, server, timed)
            await _main_call(client, server, call, lender)
        except RoundTripFailure as failed:
            failure = failed  # raised once the client has closed, not inside its task group
    if failure is not None:
        raise failure


def check_round_trips(
    run: RunTool = run_tool, *, seed: int | None = None, examples: int = 40, bound: float = _BOUND
) -> None:
    """Judge *run* by ``MCP-ROUND-1`` to ``4``, ``6`` and ``8`` over *examples* drawn clients.

    Raises :class:`RoundTripFailure`, naming the requirement and carrying
    Hypothesis's minimal example in its notes, at the first broken one; an
    example that takes more than *bound* seconds fails ``MCP-ROUND-1``.
    *seed* makes the run repeatable.

    >>> check_round_trips(examples=2, seed=1)
    """
    if isinstance(examples, bool) or examples < 1:
        msg = f"examples must be a positive int, got {examples!r}"
        raise ValueError(msg)
    if isinstance(bound, bool) or not (math.isfinite(bound) and bound > 0):
        msg = f"bound must be a positive, finite number of seconds, got {bound!r}"
        raise ValueError(msg)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        phases=_PHASES,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        async def bounded() -> None:
            timed_out = False
            try:
                async with asyncio.timeout(bound):
                    await _example(run, data)
            except TimeoutError:
                timed_out = True
            if timed_out:
                # Raised outside the handler, with no context: where the timeout
                # interrupted the run varies, and Hypothesis would call a failure
                # whose context differs on replay flaky.
                msg = f"an example did not end within {bound:g} s"
                raise RoundTripFailure("MCP-ROUND-1", msg)

        asyncio.run(bounded())

    (check if seed is None else seeded(seed)(check))()
