"""MCP revision 2026-07-28: asks across input-required round trips, with one code path.

A tool's body runs through ``run_tool``: on a legacy connection each ask is
an ``elicitation/create`` request, and on 2026-07-28 the call ends with an
``InputRequiredResult`` until every ask has its answer, the body running
again on each retry. Real SDK clients and servers, in process; the
``requestState`` is sealed by the SDK and refused here when it is used
twice, has expired, was tampered with, or answers another form.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlencode

import mcp_types as types
import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from dsh_user_interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra.mcp import (
    ElicitationCancelled,
    ElicitationUnsupported,
    McpElicitationProvider,
    ProcessLedger,
    SQLiteLedger,
    StateLedger,
    elicitation_callback,
    form_of,
    run_tool,
    tool_call,
)
from dsh_user_interaction.extra.mcp._ledger import FORGET_AFTER
from dsh_user_interaction.extra.mcp.testing import mcp_round_trip_subject
from dsh_user_interaction.extra.postgres.testing import ServerUnavailable, shared_server
from dsh_user_interaction_conformance import run_suite

from .gallery.mcp import BROKEN_ROUNDS
from .helpers import caught_within, rotating_seed, run

MODE: Any = {
    "id": "mode",
    "question": "Which mode?",
    "options": [{"label": "Fast"}, {"label": "Safe"}],
}
WHY: Any = {"id": "why", "question": "Why?"}
ROUND_TRIP = "2026-07-28"


def _human(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """Picks "Safe", skips every text of its own, and types "because" where there is no choice."""
    answers: list[Any] = []
    for question in request["questions"]:
        if "options" in question:
            answers.append({"id": question["id"], "selected": ["Safe"]})
        elif question["id"].endswith("_other"):
            answers.append({"id": question["id"], "selected": []})
        else:
            answers.append({"id": question["id"], "selected": [], "custom": "because"})
    return {"answers": answers}


class _Deployer:
    """An MCP server whose tool asks through the seam: once or twice, in turn or together."""

    def __init__(self, *, ttl: float = 600.0) -> None:
        self.server = MCPServer("deployer")
        self.service = UserInteractionService()
        self.service.register_provider(McpElicitationProvider())
        #: How many times a body ran, and the errors the guarded tool's asks ended with.
        self.runs = 0
        self.outcomes: list[object] = []
        deployer = self

        @self.server.tool()
        async def deploy(ctx: Context, together: bool = False) -> str | types.InputRequiredResult:
            """Ask the mode, then why (or both at once)."""

            async def body() -> str:
                deployer.runs += 1
                if together:
                    first, second = await asyncio.gather(
                        deployer.service.ask({"questions": [MODE]}),
                        deployer.service.ask({"questions": [WHY]}),
                    )
                else:
                    first = await deployer.service.ask({"questions": [MODE]})
                    second = await deployer.service.ask({"questions": [WHY]})
                picked = first["answers"][0]["selected"]
                return f"{picked[0]} / {second['answers'][0].get('custom')}"

            return await run_tool(ctx, body, ttl=ttl)

        @self.server.tool()
        async def guarded(ctx: Context) -> str | types.InputRequiredResult:
            """Ask once; say how the ask ended."""

            async def body() -> str:
                try:
                    await deployer.service.ask({"questions": [MODE]})
                except UserInteractionError as error:
                    deployer.outcomes.append(error)
                    return f"ended: {error.code}"
                return "answered"

            return await run_tool(ctx, body)

        @self.server.tool()
        async def pushed(ctx: Context) -> str:
            """Asks inside tool_call() only: the legacy way."""
            with tool_call(ctx):
                answer = await deployer.service.ask({"questions": [MODE]})
            return str(answer["answers"][0]["selected"])

    def client(self, mode: str) -> Client:
        return Client(self.server, mode=mode, elicitation_callback=_callback())


def _callback() -> Any:
    return elicitation_callback(ScriptedProvider(respond=_human))


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.mark.parametrize(
    ("mode", "version", "runs"), [("legacy", "2025-11-25", 1), (ROUND_TRIP, ROUND_TRIP, 3)]
)
def test_the_same_tool_code_asks_on_either_revision(mode: str, version: str, runs: int) -> None:
    """Legacy: two elicitation requests in one call. 2026-07-28: three rounds, the body re-run."""

    async def main() -> None:
        deployer = _Deployer()
        async with deployer.client(mode) as client:
            assert client.protocol_version == version
            result = await client.call_tool("deploy", {})
            assert not result.is_error, result
            assert _text(result) == "Safe / because"
        assert deployer.runs == runs

    run(main())


def test_asks_made_together_go_out_in_one_round() -> None:
    """Two asks gathered in one body are two input requests of one result: two rounds."""

    async def main() -> None:
        deployer = _Deployer()
        async with deployer.client(ROUND_TRIP) as client:
            first = await client.session.call_tool(
                "deploy", {"together": True}, allow_input_required=True
            )
            assert isinstance(first, types.InputRequiredResult)
            keys = sorted(first.input_requests or {})
            call = keys[0].split(".", 1)[1]
            # Keyed by the ask's place in the body and the call's own id, the same for both.
            assert keys == [f"ask-1.{call}", f"ask-2.{call}"]
            result = await client.call_tool("deploy", {"together": True})
            assert _text(result) == "Safe / because"
        assert deployer.runs == 1 + 2

    run(main())


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_declined_or_cancelled_form_ends_the_ask_as_a_dismissal(action: str) -> None:
    """The body's ask raises ASK_CANCELLED, keeping which of the two the user chose."""

    async def main() -> None:
        deployer = _Deployer()
        async with deployer.client(ROUND_TRIP) as client:
            first = await client.session.call_tool("guarded", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            (key,) = first.input_requests or {}
            result = await client.session.call_tool(
                "guarded",
                {},
                input_responses={key: types.ElicitResult(action=action)},  # type: ignore[arg-type]
                request_state=first.request_state,
                allow_input_required=True,
            )
            assert isinstance(result, types.CallToolResult)
            assert _text(result) == "ended: ASK_CANCELLED"
        (error,) = deployer.outcomes
        assert isinstance(error, ElicitationCancelled)
        assert error.action == action

    run(main())


async def _first_round(client: Client) -> tuple[str, str]:
    first = await client.session.call_tool("guarded", {}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    assert first.request_state is not None
    (key,) = first.input_requests or {}
    return key, first.request_state


def _picked(key: str) -> dict[str, Any]:
    return {key: types.ElicitResult(action="accept", content={"q1": "Safe"})}


def test_a_request_state_is_used_once() -> None:
    """A retry that sends a state again, after it was used, is refused with INVALID_PARAMS."""

    async def main() -> None:
        deployer = _Deployer()
        async with deployer.client(ROUND_TRIP) as client:
            key, state = await _first_round(client)
            answered = await client.session.call_tool(
                "guarded", {}, input_responses=_picked(key), request_state=state
            )
            assert _text(answered) == "answered"
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool(
                    "guarded", {}, input_responses=_picked(key), request_state=state
                )
            assert refused.value.code == types.INVALID_PARAMS
            assert refused.value.message == (
                "requestState refused: it was used already; call the tool again from the start"
            )

    run(main())


def test_a_tampered_or_forged_request_state_is_refused() -> None:
    """MCP-ROUND-5: the SDK's seal refuses a state changed on the way, or made up by the client."""

    async def main() -> None:
        deployer = _Deployer()
        async with deployer.client(ROUND_TRIP) as client:
            key, state = await _first_round(client)
            flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
            forged = '{"v":1,"n":"x","exp":1e12,"known":{},"asked":{}}'
            for bad in (flipped, forged):
                with pytest.raises(MCPError) as refused:
                    await client.session.call_tool(
                        "guarded", {}, input_responses=_picked(key), request_state=bad
                    )
                assert refused.value.code == types.INVALID_PARAMS

    run(main())


def test_an_expired_request_state_is_refused() -> None:
    """A state older than run_tool's ttl is refused, whatever the seal's own time to live."""

    async def main() -> None:
        deployer = _Deployer(ttl=0.05)
        async with deployer.client(ROUND_TRIP) as client:
            first = await client.session.call_tool("deploy", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            await asyncio.sleep(0.1)
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool(
                    "deploy",
                    {},
                    input_responses=_picked("ask-1"),
                    request_state=first.request_state,
                )
            assert refused.value.message == (
                "requestState refused: it has expired; call the tool again from the start"
            )

    run(main())


def test_an_answer_to_another_form_is_never_used() -> None:
    """A body that asks something else under the same key on the retry is asked again."""
    questions = [MODE]

    async def main() -> None:
        server = MCPServer("changing")
        service = UserInteractionService()
        service.register_provider(McpElicitationProvider())

        @server.tool()
        async def changing(ctx: Context) -> str | types.InputRequiredResult:
            async def body() -> str:
                answer = await service.ask({"questions": list(questions)})
                return str(answer["answers"])

            return await run_tool(ctx, body)

        async with Client(server, mode=ROUND_TRIP, elicitation_callback=_callback()) as client:
            first = await client.session.call_tool("changing", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            questions[:] = [{**MODE, "options": [{"label": "Safe"}, {"label": "Fast"}]}]
            (key,) = first.input_requests or {}
            again = await client.session.call_tool(
                "changing",
                {},
                input_responses=_picked(key),
                request_state=first.request_state,
                allow_input_required=True,
            )
            # Asked again, with the new form: "Safe" is not read as the old form's answer.
            assert isinstance(again, types.InputRequiredResult)
            request = (again.input_requests or {})[key]
            assert isinstance(request, types.ElicitRequest)
            assert isinstance(request.params, types.ElicitRequestFormParams)
            assert [
                o["const"] for o in request.params.requested_schema["properties"]["q1"]["oneOf"]
            ] == [
                "Safe",
                "Fast",
            ]

    run(main())


def test_an_abort_ends_the_ask_and_asks_nothing() -> None:
    """A signal that aborts while the ask waits for its round ends it with ASK_ABORTED."""

    async def main() -> None:
        server = MCPServer("aborting")
        service = UserInteractionService()
        service.register_provider(McpElicitationProvider())
        outcomes: list[object] = []

        @server.tool()
        async def aborting(ctx: Context) -> str | types.InputRequiredResult:
            async def body() -> str:
                controller = AbortController()
                asyncio.get_running_loop().call_soon(controller.abort)
                try:
                    await service.ask({"questions": [MODE], "signal": controller.signal})
                except UserInteractionError as error:
                    outcomes.append(error.code)
                return "stopped"

            return await run_tool(ctx, body)

        async with Client(server, mode=ROUND_TRIP, elicitation_callback=_callback()) as client:
            result = await client.session.call_tool("aborting", {}, allow_input_required=True)
            assert isinstance(result, types.CallToolResult)
            assert _text(result) == "stopped"
        assert outcomes == [ErrorCode.ASK_ABORTED]

    run(main())


def test_a_provider_built_with_the_calls_context_asks_in_rounds_too() -> None:
    """``McpElicitationProvider(ctx)`` inside run_tool asks through the round, as the bound one."""

    async def main() -> None:
        server = MCPServer("own")

        @server.tool()
        async def own(ctx: Context) -> str | types.InputRequiredResult:
            async def body() -> str:
                service = UserInteractionService()
                service.register_provider(McpElicitationProvider(ctx))
                answer = await service.ask({"questions": [MODE]})
                return str(answer["answers"][0]["selected"])

            return await run_tool(ctx, body)

        for mode in ("legacy", ROUND_TRIP):
            async with Client(server, mode=mode, elicitation_callback=_callback()) as client:
                assert _text(await client.call_tool("own", {})) == "['Safe']"

    run(main())


def test_tool_call_alone_on_the_new_revision_says_to_use_run_tool() -> None:
    """Without run_tool, a 2026-07-28 connection cannot be asked: the error says what to do."""

    async def main() -> None:
        deployer = _Deployer()
        async with deployer.client(ROUND_TRIP) as client:
            result = await client.call_tool("pushed", {})
            assert result.is_error
        async with deployer.client("legacy") as client:
            assert _text(await client.call_tool("pushed", {})) == "['Safe']"

    run(main())
    provider = McpElicitationProvider()
    with pytest.raises(ElicitationUnsupported, match="outside an MCP tool call"):
        run(provider.ask({"questions": [MODE]}))


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan"), float("inf")])
def test_run_tool_refuses_a_time_to_live_that_is_not_positive(ttl: float) -> None:
    """The state's time to live is a positive, finite number of seconds."""

    async def main() -> None:
        deployer = MCPServer("ttl")

        @deployer.tool()
        async def ask(ctx: Context) -> str | types.InputRequiredResult:
            async def body() -> str:
                return "never"

            return await run_tool(ctx, body, ttl=ttl)

        async with Client(deployer, mode=ROUND_TRIP) as client:
            result = await client.call_tool("ask", {})
            assert result.is_error

    run(main())


def test_every_form_has_a_digest_and_another_form_another() -> None:
    """Model text with lone surrogates still digests; a changed label changes the digest."""
    odd: Any = {"id": "odd", "question": "Pick \ud800?", "options": [{"label": "\udfff"}]}
    swapped: Any = {**MODE, "options": [{"label": "Safe"}, {"label": "Fast"}]}
    forms = [
        form_of({"questions": [MODE]}),
        form_of({"questions": [swapped]}),
        form_of({"questions": [odd]}),
    ]
    digests = [form.digest for form in forms]
    assert len(set(digests)) == 3
    assert forms[0].digest == form_of({"questions": [MODE]}).digest


_WORKER = Path(__file__).with_name("mcp_stdio_server.py")
ROOT = Path(__file__).resolve().parents[1]
_ASK: Any = {"questions": [MODE]}


def _worker(key: str) -> StdioServerParameters:
    """A server process on stdio, whose request states are sealed with *key*."""
    return StdioServerParameters(
        command=sys.executable,
        args=[str(_WORKER)],
        env={"PYTHONPATH": os.pathsep.join(sys.path), "DSH_TEST_STATE_KEY": key},
    )


@pytest.mark.slow
def test_a_retry_completes_on_another_worker_with_the_same_keys_only() -> None:
    """Round one on one server process, the retry on another: it completes where keys agree.

    Nothing is pending on the first process between the rounds; the state
    carries what the retry needs. A process with other keys cannot open it.
    """
    shared, other = "a" * 32 + "shared-key", "b" * 32 + "other-key"

    async def main() -> None:
        async with Client(
            _worker(shared), mode=ROUND_TRIP, elicitation_callback=_callback()
        ) as first:
            assert first.protocol_version == ROUND_TRIP
            round_one = await first.session.call_tool(
                "ask_user_question", _ASK, allow_input_required=True
            )
        assert isinstance(round_one, types.InputRequiredResult)
        (key,) = round_one.input_requests or {}
        state = round_one.request_state
        async with Client(
            _worker(other), mode=ROUND_TRIP, elicitation_callback=_callback()
        ) as stranger:
            with pytest.raises(MCPError) as refused:
                await stranger.session.call_tool(
                    "ask_user_question", _ASK, input_responses=_picked(key), request_state=state
                )
            assert refused.value.code == types.INVALID_PARAMS
        async with Client(
            _worker(shared), mode=ROUND_TRIP, elicitation_callback=_callback()
        ) as second:
            done = await second.session.call_tool(
                "ask_user_question", _ASK, input_responses=_picked(key), request_state=state
            )
        assert not done.is_error, done
        assert json.loads(_text(done)) == {"answers": [{"id": "mode", "selected": ["Safe"]}]}

    run(main(), bound=60)


def test_the_suite_passes_the_provider_on_the_new_revision() -> None:
    """The whole provider suite, every ask in input-required rounds through a 2026-07-28 client."""
    report = run_suite(
        subject_factory=mcp_round_trip_subject, kinds=["provider"], profile="quick", seed=1
    )
    assert report.ok, [(r.requirement.id, r.message) for r in report.results if r.fails_run]


@pytest.mark.slow
def test_the_suite_passes_the_provider_on_the_new_revision_at_the_default_profile() -> None:
    """As above, at the default profile, on the day's seed."""
    report = run_suite(
        subject_factory=mcp_round_trip_subject,
        kinds=["provider"],
        profile="default",
        seed=rotating_seed(),
    )
    assert report.ok, [(r.requirement.id, r.message) for r in report.results if r.fails_run]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BROKEN_ROUNDS))
def test_a_broken_bridge_is_caught_on_the_new_revision(name: str) -> None:
    """Each broken variant fails the run on 2026-07-28 too, named by the requirement it breaks."""
    factory, requirement, check = BROKEN_ROUNDS[name]
    report, failed = caught_within(factory, requirement, check, bound=1.0)
    assert not report.ok
    assert requirement in failed, failed


def test_a_state_minted_for_one_principal_is_refused_for_another() -> None:
    """MCP-ROUND-5: with the seal bound to a principal, another user's retry cannot use it.

    The SDK binds a state to the principal its ``bind_principal`` reads: by
    default the OAuth token's client, issuer and subject. In process there is
    no token, so the binding here reads a ``_meta`` key the test's clients
    send; the seal, not ``run_tool``, does the refusing.
    """

    def principal(ctx: Any) -> str | None:
        params: dict[str, Any] = ctx.params or {}
        meta: dict[str, Any] = params.get("_meta") or {}
        user = meta.get("test/user")
        return user if isinstance(user, str) else None

    async def main() -> None:
        security = RequestStateSecurity(keys=["k" * 32], bind_principal=principal)
        server = MCPServer("bound", request_state_security=security)
        service = UserInteractionService()
        service.register_provider(McpElicitationProvider())

        @server.tool()
        async def bound(ctx: Context) -> str | types.InputRequiredResult:
            async def body() -> str:
                answer = await service.ask({"questions": [MODE]})
                return str(answer["answers"][0]["selected"])

            return await run_tool(ctx, body)

        async with Client(server, mode=ROUND_TRIP, elicitation_callback=_callback()) as client:
            alice: Any = {"test/user": "alice"}
            bob: Any = {"test/user": "bob"}
            first = await client.session.call_tool(
                "bound", {}, meta=alice, allow_input_required=True
            )
            assert isinstance(first, types.InputRequiredResult)
            (key,) = first.input_requests or {}
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool(
                    "bound",
                    {},
                    input_responses=_picked(key),
                    request_state=first.request_state,
                    meta=bob,
                )
            assert refused.value.code == types.INVALID_PARAMS
            done = await client.session.call_tool(
                "bound",
                {},
                input_responses=_picked(key),
                request_state=first.request_state,
                meta=alice,
            )
            assert _text(done) == "['Safe']"

    run(main())


def _unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it in CI, where ``.ci/run`` installs PostgreSQL."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass(frozen=True)
class _SharedLedger:
    """One ledger of used request states, named for worker processes."""

    #: The worker's environment naming it (see ``tests/mcp_stdio_server.py``).
    environment: dict[str, str]
    #: How many nonces it holds as used.
    used: Callable[[], int]


def _sqlite_ledger(path: Path) -> _SharedLedger:
    """A SQLite file at *path*, which every worker opens as a ``SQLiteLedger``."""

    def used() -> int:
        with closing(sqlite3.connect(path)) as db, db:
            (count,) = db.execute("SELECT count(*) FROM dsh_used_request_states").fetchone()
        return int(count)

    return _SharedLedger({"DSH_TEST_STATE_LEDGER": str(path)}, used)


def _postgres_ledger(dsn: str, schema: str) -> _SharedLedger:
    """The database of *dsn*, in *schema*, which every worker opens as a ``PostgresLedger``."""

    def used() -> int:
        with psycopg.connect(dsn, autocommit=True) as db:
            query = sql.SQL("SELECT count(*) FROM {}.used_request_states").format(
                sql.Identifier(schema)
            )
            row = db.execute(query).fetchone()
        assert row is not None
        return int(row[0])

    # Every keyword of a libpq connection string is also a URI's query parameter.
    uri = "postgresql://?" + urlencode(conninfo_to_dict(dsn))
    environment = {"DSH_TEST_STATE_LEDGER": uri, "DSH_TEST_STATE_LEDGER_SCHEMA": schema}
    return _SharedLedger(environment, used)


@pytest.fixture(params=["sqlite", "postgres"])
def shared_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_SharedLedger]:
    """A ledger for workers to share: a SQLite file, or a fresh schema in PostgreSQL.

    PostgreSQL's is on the process's shared throwaway server (``shared_server``
    of the postgres extra's testing module, or ``DSH_POSTGRES_DSN``'s), and
    the schema is dropped after the test.
    """
    if request.param == "sqlite":
        yield _sqlite_ledger(tmp_path / "states.db")
        return
    try:
        dsn = shared_server().dsn
    except ServerUnavailable as missing:
        _unavailable(f"no PostgreSQL server can be started: {missing}")
    schema = f"dsh_test_{uuid.uuid4().hex}"
    try:
        yield _postgres_ledger(dsn, schema)
    finally:
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.mark.slow
def test_a_state_used_on_one_worker_is_refused_by_another_sharing_the_ledger(
    shared_ledger: _SharedLedger,
) -> None:
    """Two workers share keys and a ledger: a state replayed to the second is refused.

    The ledger is a SQLite file (workers on one machine) or a PostgreSQL
    database (workers on several); each worker process opens its own
    ``SQLiteLedger`` or ``PostgresLedger`` on it. The refusal is the exact
    "used already" error, and the ledger holds the one nonce the first
    worker used. Without a shared ledger each worker remembers only its own
    nonces, and the replay would be accepted there (the docs say so).
    """
    shared = "c" * 32 + "shared-key"

    def worker() -> StdioServerParameters:
        parameters = _worker(shared)
        assert parameters.env is not None
        return parameters.model_copy(
            update={"env": {**parameters.env, **shared_ledger.environment}}
        )

    async def main() -> None:
        async with Client(worker(), mode=ROUND_TRIP, elicitation_callback=_callback()) as first:
            round_one = await first.session.call_tool(
                "ask_user_question", _ASK, allow_input_required=True
            )
            assert isinstance(round_one, types.InputRequiredResult)
            (key,) = round_one.input_requests or {}
            state = round_one.request_state
            done = await first.session.call_tool(
                "ask_user_question", _ASK, input_responses=_picked(key), request_state=state
            )
            assert not done.is_error, done
        async with Client(worker(), mode=ROUND_TRIP, elicitation_callback=_callback()) as second:
            with pytest.raises(MCPError) as refused:
                await second.session.call_tool(
                    "ask_user_question", _ASK, input_responses=_picked(key), request_state=state
                )
        assert refused.value.message == (
            "requestState refused: it was used already; call the tool again from the start"
        )

    run(main(), bound=60)
    assert shared_ledger.used() == 1


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12))
def test_a_ledger_says_yes_once_per_nonce(nonces: list[str]) -> None:
    """Both ledgers accept each nonce once."""

    async def main(ledger: StateLedger) -> list[bool]:
        return [await ledger.use(nonce, time.time() + 60) for nonce in nonces]

    expected = [nonce not in nonces[:i] for i, nonce in enumerate(nonces)]
    with tempfile.TemporaryDirectory() as folder:
        for ledger in (ProcessLedger(), SQLiteLedger(Path(folder) / "states.db")):
            assert run(main(ledger)) == expected


def test_a_ledger_forgets_a_long_expired_state_and_two_workers_race_once(tmp_path: Path) -> None:
    """A nonce long expired is forgotten; of two uses at once through one file, one wins."""

    async def main() -> None:
        path = tmp_path / "states.db"
        first, second = SQLiteLedger(path), SQLiteLedger(path)
        assert await first.use("old", time.time() - FORGET_AFTER - 1)
        assert await second.use("fresh", time.time() + 60)
        # "old" expired longer ago than the margin: forgotten, and then new to the ledger.
        assert await first.use("old", time.time() + 60)
        won = await asyncio.gather(
            *(ledger.use("race", time.time() + 60) for ledger in (first, second) * 4)
        )
        assert sorted(won) == [False] * 7 + [True]

    run(main())


def test_the_process_ledger_says_yes_once_to_loops_on_several_threads() -> None:
    """Event loops on eight threads share the default ledger: one of them wins each nonce."""
    ledger = ProcessLedger()
    won: list[bool] = []
    start = threading.Barrier(8)

    def use() -> None:
        start.wait()
        won.append(asyncio.run(ledger.use("shared", time.time() + 60)))

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(won) == [False] * 7 + [True]


def test_the_provider_and_the_rounds_import_in_one_direction() -> None:
    """``_rounds`` imports neither the provider nor ``run_tool``; the provider not ``run_tool``."""
    folder = ROOT / "reference" / "dsh_user_interaction" / "extra" / "mcp"

    def imported(name: str) -> set[str]:
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        return {
            node.module or ""
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1
        }

    assert not {"_provider", "_run_tool"} & imported("_rounds")
    assert "_rounds" in imported("_provider")
    assert "_run_tool" not in imported("_provider")
