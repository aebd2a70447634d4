"""Durable asks: asks per second through each store, an answer's way to the agent, 10,000 pending.

Measured for the embedded :class:`~dsh_user_interaction.durable.SQLiteStore`
(a file in a temporary folder) and for
:class:`~dsh_user_interaction.extra.postgres.PostgresStore` (a throwaway
server of the machine's own, ``dsh_user_interaction.extra.postgres.testing``),
each beside a peer from the same run:

* **asks per second**: a :class:`~dsh_user_interaction.UserInteractionService`
  with a :class:`~dsh_user_interaction.durable.DurableProvider` on one store
  handle asks 200 questions, 50 at a time, and a relay
  (:func:`~dsh_user_interaction.durable.serve`) on a second handle on the same
  data, in the same process, answers each at once through a
  :class:`~dsh_user_interaction.ScriptedProvider`. The peer: the same service
  asking a ``ScriptedProvider`` directly, with no store. Both by wall time
  (asks per second) and by CPU time per ask (``time.process_time``: every
  thread of this process, the store's worker threads included; for
  PostgreSQL, the server's processes too, read from ``/proc``). Beside it,
  an agent on the relay's own handle, which a change wakes at once where the
  two handles need the store to tell them (SQLite: the next poll). The runs
  are interleaved, in a shuffled order in each of five repeats; medians.
  Also the store alone: ``put`` then ``settle``, one ask after another, on
  one handle, with no service and no relay.
* **from an answer written to ``ask()`` returning**: an agent waits on one
  ask; the answer is written with ``store.settle`` on the agent's own store
  handle, on a second handle in this process, or on a handle in a child
  process; the time runs from ``settle`` returning to ``ask()`` returning.
  The peers: an :class:`asyncio.Future` set in this process, and, across
  processes, a line written to a pipe that this process's event loop is
  waiting on. Wall time (``time.monotonic``, which is the same clock in every
  process of the machine), median and p99 over 100 rounds, interleaved in a
  shuffled order in each round. Each answer is written 5 ms plus a random
  0 to 50 ms after the agent started waiting, so that an SQLite watcher's
  poll (every 50 ms) is met at a random phase, as a human's answer meets it.
  The relays are stopped for this part.
* **10,000 pending asks**: both of the above again on a store that already
  holds 10,000 pending asks (written with ``store.put``), which the relay
  shows and keeps on its UI while it runs; each figure as a ratio to the
  empty store's, measured in the same rounds.

``python -m bench durable`` writes ``bench/results/durable.json``; the child
process is ``python -m bench.durable settler ...``. The throwaway PostgreSQL
server runs with ``fsync`` and ``synchronous_commit`` off, where the SQLite
store always writes with ``synchronous=FULL``. Its tables are analysed
(``ANALYZE``) before the relays start, as a server's autovacuum does within
a minute or so: without statistics, the planner reads a freshly made table
whole for each watcher's read of the changes, and the empty store, having
the smaller table, came out slower than the one with 10,000 asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, LiteralString

from dsh_user_interaction import AskUserQuestionAnswer, ScriptedProvider, UserInteractionService
from dsh_user_interaction.durable import (
    AskStore,
    DurableProvider,
    Outcome,
    SQLiteStore,
    serve,
    with_ask_id,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

#: Asks per throughput run, and how many of them are asked at once.
ASKS: Final = 200
BATCH: Final = 50
#: Throughput runs of each candidate; the figures are the medians.
REPEATS: Final = 5
#: Pending asks already in the store, for the third part.
BACKLOG: Final = 10_000
#: Rounds of the latency part.
ROUNDS: Final = 100
#: Before an answer is written: this, plus a random part up to JITTER, in seconds.
SETTLE_AFTER: Final = 0.005
JITTER: Final = 0.05
#: The two stores of each engine: empty, and holding BACKLOG pending asks.
STATES: Final = ("empty", "backlog")
#: A request key that tells the relay's UI to show the ask and never answer it.
HOLD_KEY: Final = "benchHold"

REQUEST: Final[dict[str, Any]] = {
    "questions": [
        {
            "id": "q",
            "question": "Deploy the build?",
            "options": [{"label": "Yes", "description": "Ship it."}, {"label": "No"}],
        }
    ]
}
ANSWER: Final[AskUserQuestionAnswer] = {"answers": [{"id": "q", "selected": ["Yes"]}]}


def _request(**extra: Any) -> Any:
    return {**REQUEST, **extra}


def _outcome() -> Outcome:
    return Outcome.answered(ANSWER, principal="bench", via="bench")


def _respond(request: Any) -> Any:
    """The relay's UI: answer at once, or show a held ask until it is withdrawn."""
    if request.get(HOLD_KEY):
        return asyncio.get_running_loop().create_future()
    return ANSWER


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _tree_cpu(root: int | None) -> float:
    """CPU seconds of process *root* and its descendants (those reaped included)."""
    if root is None:
        return 0.0
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # the process ended meanwhile
        fields = text[text.rindex(")") + 2 :].split()
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        # utime, stime, cutime, cstime: fields 14 to 17 of proc(5).
        ticks[pid] = sum(int(value) for value in fields[11:15])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


@dataclass
class Engine:
    """One store engine: how to open a handle on each state's data, and its child."""

    name: str
    #: A new handle on the data of ``STATES[index]``.
    open: Callable[[int], Awaitable[AskStore]]
    #: The arguments of ``python -m bench.durable settler`` for the same data.
    settler: list[str]
    #: The server's main process, whose tree's CPU time is counted (``None``: no server).
    server_pid: int | None = None
    #: Run before the relays start: what a long-running server's autovacuum would have done.
    analyze: Callable[[], Awaitable[None]] | None = None
    notes: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class State:
    """One store's data, with the agent's and the relay's handles on it."""

    name: str
    agent: AskStore
    other: AskStore
    #: The agent: a service whose durable provider is on the ``agent`` handle.
    service: UserInteractionService = field(default_factory=UserInteractionService)
    provider: DurableProvider | None = None
    #: Another agent, on the relay's own handle (``other``).
    same_service: UserInteractionService = field(default_factory=UserInteractionService)
    ui: ScriptedProvider = field(default_factory=lambda: ScriptedProvider(respond=_respond))
    relay: asyncio.Task[None] | None = None


# -- the child that writes answers from another process ----------------------------------------


async def _open_store(kind: str, dsn: str, location: str) -> AskStore:
    if kind == "sqlite":
        return SQLiteStore(location)
    from dsh_user_interaction.extra.postgres import PostgresStore

    return await PostgresStore.connect(dsn, schema=location)


async def _settler(kind: str, dsn: str, locations: list[str]) -> None:
    """Settle the asks named on stdin; write ``time.monotonic()`` after each, or for a ping."""
    stores = [await _open_store(kind, dsn, location) for location in locations]
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while line := await reader.readline():
            command, *arguments = line.decode().split()
            if command == "settle":
                index, ask_id = arguments
                settled = await stores[int(index)].settle(
                    ask_id, _outcome(), settled_at=time.time()
                )
                written = time.monotonic()
                if not settled.won:
                    sys.exit(f"{ask_id} was settled before")
            else:
                written = time.monotonic()
            sys.stdout.write(f"{written!r}\n")
            sys.stdout.flush()
    finally:
        for store in stores:
            await store.close()


@contextlib.asynccontextmanager
async def _child(engine: Engine) -> AsyncGenerator[asyncio.subprocess.Process]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [environment.get("PYTHONPATH")])]
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.durable",
        "settler",
        *engine.settler,
        cwd=ROOT,
        env=environment,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(60):
            ready = await process.stdout.readline()
        if ready != b"ready\n":
            msg = f"the settler did not start: {ready!r}"
            raise RuntimeError(msg)
        yield process
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            async with asyncio.timeout(10):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


async def _ask_child(process: asyncio.subprocess.Process, command: str) -> float:
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(f"{command}\n".encode())
    await process.stdin.drain()
    line = await process.stdout.readline()
    if not line:
        msg = "the settler ended"
        raise RuntimeError(msg)
    return float(line)


# -- the figures ---------------------------------------------------------------------------------


async def _fill(store: AskStore, count: int) -> float:
    """Put *count* held pending asks, 100 at a time; the seconds it took."""
    started = time.perf_counter()
    for first in range(0, count, 100):
        await asyncio.gather(
            *(
                store.put(
                    f"backlog-{n}",
                    _request(**{HOLD_KEY: "hold", "askId": f"backlog-{n}"}),
                    asked_at=time.time(),
                )
                for n in range(first, min(count, first + 100))
            )
        )
    return time.perf_counter() - started


async def _timed(work: Callable[[], Awaitable[None]], server_pid: int | None) -> dict[str, float]:
    server = _tree_cpu(server_pid)
    cpu = time.process_time()
    wall = time.perf_counter()
    await work()
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    server = _tree_cpu(server_pid) - server
    return {"wall": wall, "cpu": cpu, "server_cpu": server}


def _summary(runs: list[dict[str, float]], count: int) -> dict[str, Any]:
    wall = statistics.median(run["wall"] for run in runs)
    cpu = statistics.median(run["cpu"] + run["server_cpu"] for run in runs)
    server = statistics.median(run["server_cpu"] for run in runs)
    return {
        "per_second": round(count / wall, 1),
        "cpu_us_each": round(cpu / count * 1e6, 1),
        "server_cpu_us_each": round(server / count * 1e6, 1),
        "per_second_runs": [round(count / run["wall"], 1) for run in runs],
    }


async def _store_alone(engine: Engine, states: list[State]) -> dict[str, Any]:
    """``put`` then ``settle``, one ask after another, on the agent's handle."""
    runs: dict[str, list[dict[str, float]]] = {state.name: [] for state in states}
    order = list(states)
    for repeat in range(REPEATS):
        random.shuffle(order)
        for state in order:
            store = state.agent

            async def work() -> None:
                for n in range(ASKS):
                    ask_id = f"alone-{repeat}-{n}"
                    await store.put(ask_id, _request(askId=ask_id), asked_at=time.time())
                    settled = await store.settle(ask_id, _outcome(), settled_at=time.time())
                    assert settled.won

            runs[state.name].append(await _timed(work, engine.server_pid))
    return {name: _summary(found, ASKS) for name, found in runs.items()}


async def _asks(service: UserInteractionService) -> None:
    for _ in range(ASKS // BATCH):
        answers = await asyncio.gather(*(service.ask(_request()) for _ in range(BATCH)))
        assert all(answer == ANSWER for answer in answers)


async def _throughput(engine: Engine, states: list[State]) -> dict[str, Any]:
    """The durable path against the same service asking a ScriptedProvider directly."""
    direct = UserInteractionService()
    direct.register_provider(ScriptedProvider(respond=_respond))
    candidates: dict[str, UserInteractionService] = {"direct": direct}
    for state in states:
        candidates[f"{state.name}/two_handles"] = state.service
        candidates[f"{state.name}/same_handle"] = state.same_service
    for service in candidates.values():
        await _asks(service)  # warm-up, not counted
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in candidates}
    order = list(candidates)
    for _ in range(REPEATS):
        random.shuffle(order)
        for name in order:
            server = None if name == "direct" else engine.server_pid
            runs[name].append(await _timed(lambda: _asks(candidates[name]), server))
    figures = {name: _summary(found, ASKS) for name, found in runs.items()}
    peer = figures["direct"]
    result: dict[str, Any] = {"direct": peer}
    for state in states:
        result[state.name] = {}
        for way in ("two_handles", "same_handle"):
            own = figures[f"{state.name}/{way}"]
            result[state.name][way] = {
                **own,
                "over_direct": {
                    "per_second": round(own["per_second"] / peer["per_second"], 5),
                    "cpu_us_each": round(own["cpu_us_each"] / peer["cpu_us_each"], 1),
                },
            }
    return result


async def _durable_round(
    state: State, ask_id: str, delay: float, settle: Callable[[str], Awaitable[float]]
) -> float:
    """One ask: seconds from the answer's ``settle`` returning to ``ask()`` returning."""
    provider = state.provider
    assert provider is not None
    request = with_ask_id(_request(), ask_id)
    returned: list[float] = []

    async def agent() -> object:
        answer = await state.service.ask(request)
        returned.append(time.monotonic())
        return answer

    asking = asyncio.ensure_future(agent())
    async with asyncio.timeout(30):
        while provider.ask_id_of(request) is None:
            if asking.done():
                await asking  # it failed before waiting: raise its error
            await asyncio.sleep(0.001)
        await asyncio.sleep(delay)
        written = await settle(ask_id)
        answer = await asking
    assert answer == ANSWER, answer
    return returned[0] - written


def _durable_way(
    state: State, way: str, settle: Callable[[str], Awaitable[float]], n: int, delay: float
) -> Awaitable[float]:
    return _durable_round(state, f"latency-{way}-{n}", delay, settle)


async def _future_round(delay: float) -> float:
    """The in-process peer: a future set by one task, awaited by another."""
    future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    returned: list[float] = []

    async def waiter() -> None:
        await future
        returned.append(time.monotonic())

    waiting = asyncio.ensure_future(waiter())
    await asyncio.sleep(delay)
    future.set_result(ANSWER)
    written = time.monotonic()
    await waiting
    return returned[0] - written


async def _pipe_round(process: asyncio.subprocess.Process, delay: float) -> float:
    """The cross-process peer: the child writes its clock to a pipe this loop waits on."""
    await asyncio.sleep(delay)
    written = await _ask_child(process, "ping")
    return time.monotonic() - written


def _in_process(store: AskStore) -> Callable[[str], Awaitable[float]]:
    async def settle(ask_id: str) -> float:
        settled = await store.settle(ask_id, _outcome(), settled_at=time.time())
        written = time.monotonic()
        assert settled.won
        return written

    return settle


def _in_child(process: asyncio.subprocess.Process, index: int) -> Callable[[str], Awaitable[float]]:
    async def settle(ask_id: str) -> float:
        return await _ask_child(process, f"settle {index} {ask_id}")

    return settle


def _latency_figures(values: list[float]) -> dict[str, Any]:
    return {
        "median_ms": round(statistics.median(values) * 1e3, 3),
        "p99_ms": round(_quantile(values, 0.99) * 1e3, 3),
        "sorted_ms": [round(value * 1e3, 3) for value in sorted(values)],
    }


async def _latency(engine: Engine, states: list[State]) -> dict[str, Any]:
    """From ``settle`` returning to ``ask()`` returning, against a future and a pipe."""
    rounds: dict[str, Callable[[int, float], Awaitable[float]]] = {}
    async with _child(engine) as process:
        for index, state in enumerate(states):
            ways = {
                "same_handle": _in_process(state.agent),
                "two_handles": _in_process(state.other),
                "other_process": _in_child(process, index),
            }
            for way, settle in ways.items():
                rounds[f"{state.name}/{way}"] = functools.partial(_durable_way, state, way, settle)
        rounds["peer/future"] = lambda _n, delay: _future_round(delay)
        rounds["peer/pipe"] = lambda _n, delay: _pipe_round(process, delay)
        values: dict[str, list[float]] = {name: [] for name in rounds}
        order = list(rounds)
        for n in range(ROUNDS):
            random.shuffle(order)
            for name in order:
                delay = SETTLE_AFTER + random.uniform(0, JITTER)
                values[name].append(await rounds[name](n, delay))
    figures = {name: _latency_figures(found) for name, found in values.items()}
    result: dict[str, Any] = {"rounds": ROUNDS}
    for state in states:
        by_way: dict[str, Any] = {}
        for way in ("same_handle", "two_handles", "other_process"):
            own = figures[f"{state.name}/{way}"]
            peer = figures["peer/pipe" if way == "other_process" else "peer/future"]
            by_way[way] = {
                "median_ms": own["median_ms"],
                "p99_ms": own["p99_ms"],
                "over_peer_median": round(own["median_ms"] / peer["median_ms"], 1),
                "sorted_ms": own["sorted_ms"],
            }
        result[state.name] = by_way
    result["peers"] = {"future": figures["peer/future"], "pipe": figures["peer/pipe"]}
    return result


def _growth(
    empty: dict[str, Any], backlog: dict[str, Any], keys: tuple[str, ...]
) -> dict[str, float]:
    return {key: round(backlog[key] / empty[key], 2) for key in keys}


async def _engine(engine: Engine) -> dict[str, Any]:
    """Every figure for one engine: fill, the store alone, throughput, latency."""
    started = time.perf_counter()
    states: list[State] = []
    try:
        for index, name in enumerate(STATES):
            state = State(name, await engine.open(index), await engine.open(index))
            state.provider = DurableProvider(state.agent)
            state.service.register_provider(state.provider)
            state.same_service.register_provider(DurableProvider(state.other))
            states.append(state)
        backlog = states[1]
        fill = await _fill(backlog.other, BACKLOG)
        alone = await _store_alone(engine, states)
        if engine.analyze is not None:
            await engine.analyze()
        shown = time.perf_counter()
        for state in states:
            state.relay = asyncio.ensure_future(serve(state.other, state.ui, via="bench"))
        async with asyncio.timeout(120):
            while backlog.ui.asked < BACKLOG:  # noqa: ASYNC110 - the UI has no event
                await asyncio.sleep(0.01)
        shown = time.perf_counter() - shown
        throughput = await _throughput(engine, states)
        stopped = time.perf_counter()
        for state in states:
            if state.relay is not None:
                state.relay.cancel()
                await asyncio.gather(state.relay, return_exceptions=True)
        stopped = time.perf_counter() - stopped
        latency = await _latency(engine, states)
    finally:
        for state in states:
            if state.relay is not None and not state.relay.done():
                state.relay.cancel()
                await asyncio.gather(state.relay, return_exceptions=True)
            await state.agent.close()
            await state.other.close()
    keys = ("per_second", "cpu_us_each")
    growth = {
        "store_alone": _growth(alone["empty"], alone["backlog"], keys),
        "asks_two_handles": _growth(
            throughput["empty"]["two_handles"], throughput["backlog"]["two_handles"], keys
        ),
        "asks_same_handle": _growth(
            throughput["empty"]["same_handle"], throughput["backlog"]["same_handle"], keys
        ),
    }
    for way in ("same_handle", "two_handles", "other_process"):
        growth[f"latency_{way}"] = _growth(
            latency["empty"][way], latency["backlog"][way], ("median_ms", "p99_ms")
        )
    return {
        **engine.notes,
        "backlog_put_s": round(fill, 2),
        "relay_shows_backlog_s": round(shown, 2),
        "relay_stops_s": round(stopped, 2),
        "store_alone": alone,
        "asks": throughput,
        "latency": latency,
        "backlog_over_empty": growth,
        "seconds": round(time.perf_counter() - started, 1),
    }


async def _sqlite() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as folder:
        paths = [str(Path(folder) / f"{name}.db") for name in STATES]

        async def open_store(index: int) -> AskStore:
            return SQLiteStore(paths[index])

        engine = Engine(
            "sqlite",
            open_store,
            ["sqlite", "-", *paths],
            notes={"poll_interval_s": 0.05, "synchronous": "FULL", "folder": folder},
        )
        return await _engine(engine)


async def _postgres() -> dict[str, Any]:
    try:
        from dsh_user_interaction.extra.postgres import PostgresStore
        from dsh_user_interaction.extra.postgres.testing import ServerUnavailable, postgres_server
    except ImportError as error:
        return {"skipped": str(error)}
    try:
        with postgres_server() as server:
            suffix = uuid.uuid4().hex[:8]
            schemas = [f"bench_{name}_{suffix}" for name in STATES]

            async def open_store(index: int) -> AskStore:
                return await PostgresStore.connect(server.dsn, schema=schemas[index])

            async def analyze() -> None:
                await _sql(server.dsn, [("ANALYZE {}.asks", schema) for schema in schemas])

            pid = None
            if server.folder is not None:
                pid_file = server.folder / "data" / "postmaster.pid"
                pid = int(pid_file.read_text().splitlines()[0])
            engine = Engine(
                "postgres",
                open_store,
                ["postgres", server.dsn, *schemas],
                server_pid=pid,
                analyze=analyze,
                notes={
                    "server": await _sql(server.dsn, [("SHOW server_version", None)]),
                    "throwaway": server.owned,
                    "settings": "fsync=off, synchronous_commit=off, full_page_writes=off"
                    if server.owned
                    else "the server's own",
                },
            )
            try:
                return await _engine(engine)
            finally:
                drop: LiteralString = "DROP SCHEMA IF EXISTS {} CASCADE"
                await _sql(server.dsn, [(drop, schema) for schema in schemas])
    except ServerUnavailable as error:
        return {"skipped": str(error)}


async def _sql(dsn: str, statements: list[tuple[LiteralString, str | None]]) -> str:
    """Run each template, with its schema's name quoted in; the first column of the last row."""
    import psycopg
    from psycopg import sql

    found = ""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        for template, schema in statements:
            query = sql.SQL(template)
            cursor = await connection.execute(
                query if schema is None else query.format(sql.Identifier(schema))
            )
            row = await cursor.fetchone() if cursor.description else None
            found = "" if row is None else str(row[0])
    return found


async def _measure() -> dict[str, Any]:
    started = time.perf_counter()
    random.seed(20261202)
    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "load_average_before": [round(load, 2) for load in os.getloadavg()],
        "asks": ASKS,
        "batch": BATCH,
        "repeats": REPEATS,
        "backlog": BACKLOG,
        "rounds": ROUNDS,
    }
    results["sqlite"] = await _sqlite()
    results["postgres"] = await _postgres()
    results["load_average_after"] = [round(load, 2) for load in os.getloadavg()]
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results


def main() -> dict[str, Any]:
    """Every figure, for both stores; written to ``bench/results/durable.json``."""
    results = asyncio.run(_measure())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "durable.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    if sys.argv[1:2] == ["settler"]:
        kind, dsn, *locations = sys.argv[2:]
        asyncio.run(_settler(kind, dsn, locations))
    else:
        print(json.dumps(main(), indent=2))
