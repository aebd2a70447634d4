"""SIGKILL at each step of an answer through ``serve --ui web``: the page's word is the truth.

The relay (``tests/durable_child.py web``, the serve command's web relay
with a hook at each step) and the agent (``durable_child agent``) are killed
with SIGKILL at one step of a human's answer: before the relay writes it,
after the store has it, after the relay has the store's verdict but before
the page's POST is answered, and after the page was answered. Then a new
relay (a scripted UI answering otherwise) and a new agent run on the same
store. The proof (``DUR-ACK-1``, ``DUR-KEEP-1``): an answer the page was told
was saved (HTTP 200, "Answered here") is the ask's outcome; one it was not
told of is the outcome only when the store had it; and every ask has
exactly one outcome, which the restarted agent returns. On the SQLite store
and on a throwaway PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from dsh_user_interaction import answer_custom, answer_of
from dsh_user_interaction.durable import AskStore, SQLiteStore
from dsh_user_interaction.extra.postgres import PostgresStore
from dsh_user_interaction.extra.postgres.testing import (
    PostgresServer,
    ServerUnavailable,
    postgres_server,
)

from .helpers import run
from .test_durable_processes import ROOT, reaped

pytestmark = pytest.mark.slow

#: Where the relay is frozen, then killed; ``after-response`` kills it once the page has 200.
STEPS = ("before-write", "after-write", "before-response", "after-response")
FIRST = answer_of(answer_custom("q", "from the page"))


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(postgres_server())
        except ServerUnavailable as missing:
            if os.environ.get("CI"):
                pytest.fail(f"no PostgreSQL server can be started: {missing}")
            pytest.skip(f"no PostgreSQL server can be started: {missing}")
        yield running


@pytest.fixture(params=["sqlite", "postgres"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The children's ``--store``: a new SQLite file, or a new schema on the server."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'asks.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return f"postgres:dsh_crash_{uuid.uuid4().hex}@{server.dsn}"


async def opened(spec: str) -> AskStore:
    kind, _, rest = spec.partition(":")
    if kind == "sqlite":
        return SQLiteStore(rest)
    schema, _, dsn = rest.partition("@")
    return await PostgresStore.connect(dsn, schema=schema)


def child(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.durable_child", *arguments],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def line_of(process: subprocess.Popen[str], bound: float = 60.0) -> str:
    """The child's next line of output, waited for at most *bound* seconds (a hang fails)."""
    assert process.stdout is not None
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        reading = pool.submit(process.stdout.readline)
        try:
            return reading.result(timeout=bound)
        except concurrent.futures.TimeoutError:
            process.kill()  # ends the read, so the pool can close
            raise


async def post_answer(address: str) -> int | None:
    """Answer ask a1 as the page would; the status, or ``None`` when the server never replied."""
    where = urlsplit(address)
    headers = {
        "x-dsh-secret": where.fragment.removeprefix("secret="),
        "origin": f"http://{where.netloc}",
        "content-type": "application/json",
    }
    async with httpx.AsyncClient(base_url=f"http://{where.netloc}", timeout=120) as client:
        while True:
            try:
                reply = await client.post(
                    "/asks/a1/answer", headers=headers, content=json.dumps(FIRST)
                )
            except httpx.TransportError:
                return None  # killed mid-request: the page has no reply
            if reply.status_code != 404:  # 404: the relay has not shown the ask yet
                return reply.status_code
            await asyncio.sleep(0.02)


def kill(*processes: subprocess.Popen[str]) -> None:
    for process in processes:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)


@pytest.mark.parametrize("step", STEPS)
def test_a_page_told_saved_is_the_outcome_whatever_is_killed_when(
    store_spec: str, step: str
) -> None:
    """DUR-ACK-1, DUR-KEEP-1: SIGKILL of the relay and the agent at *step*, then a restart."""
    store = store_spec
    relay = child(
        "web", "--store", store, "--stop-at", "never" if step == "after-response" else step
    )
    agent = child("agent", "--store", store, "call-1")
    with reaped(relay, agent):
        first = line_of(relay)
        assert first.startswith("url "), first
        # The page's POST runs in a thread of its own, while this one watches the relay.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            reply = pool.submit(asyncio.run, post_answer(first.split()[1]))
            if step != "after-response":
                assert line_of(relay) == f"at {step}\n"
                kill(relay, agent)
            status = reply.result(timeout=120)
        if step == "after-response":
            assert status == 200
            kill(relay, agent)
        else:
            assert status is None  # the page has no reply: it says it may not be saved
    told_saved = status == 200

    # The restart: a relay that answers otherwise, and the agent asking again.
    other = child("ui", "--store", store, "--name", "desk")
    again = child("agent", "--store", store, "call-1")
    with reaped(other, again):
        assert line_of(other) == "ready\n"
        out, _ = again.communicate(timeout=120)
    (line,) = [json.loads(text) for text in out.splitlines()]
    got = json.loads(line["text"])

    async def kept() -> list[tuple[str, str, str | None]]:
        reading = await opened(store)
        try:
            return [(r.ask_id, r.state, r.via) for r in await reading.changes(0)]
        finally:
            await reading.close()

    ((ask_id, state, via),) = run(kept())
    assert (ask_id, state) == ("call-1", "answered")
    if told_saved:
        assert (got, via) == (FIRST, "web")
    elif step == "before-write":
        # Never written: the answer after the restart is the outcome, and nothing else.
        assert (got, via) == (answer_of(answer_custom("q", "desk:call-1")), "desk")
    else:
        # Written, but the page was never told so: it said "may not have been saved".
        assert (got, via) == (FIRST, "web")
