"""Durable asks across real processes on the SQLite store: a killed agent, several of each.

The children are ``tests/durable_child.py``; each test bounds every wait and
kills what it started. The PostgreSQL store's own multi-process and fault
tests are in ``tests/test_postgres.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from dsh_user_interaction import ScriptedProvider, answer_custom, answer_of
from dsh_user_interaction.durable import DurableProvider, SQLiteStore, serve, with_ask_id

from .helpers import run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def child(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.durable_child", *arguments],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@contextmanager
def reaped(*processes: subprocess.Popen[str]) -> Generator[None]:
    try:
        yield
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


async def answered(store: SQLiteStore, ask_id: str) -> bool:
    record = await store.get(ask_id)
    return record is not None and record.state == "answered"


def test_an_agent_killed_mid_ask_takes_the_answer_given_while_it_was_down(tmp_path: Path) -> None:
    """DUR-RESTART-1, DUR-REASK-1, DUR-ABORT-2: SIGKILL, an answer, a restart; shown once."""
    path = tmp_path / "asks.db"
    store_spec = f"sqlite:{path}"
    first = child("agent", "--store", store_spec, "call-1")
    with reaped(first):

        async def answer_while_down() -> ScriptedProvider:
            async with SQLiteStore(path, poll_interval=0.01) as store:
                ui = ScriptedProvider()
                relay = asyncio.ensure_future(serve(store, ui, via="desk", principal="ana"))
                shown = await ui.next_ask()
                assert shown.request.get("askId") == "call-1"
                first.send_signal(signal.SIGKILL)
                await asyncio.get_running_loop().run_in_executor(None, first.wait)
                assert first.returncode == -signal.SIGKILL
                shown.answer(answer_of(answer_custom("q", "yes, while you were away")))
                while not await answered(store, "call-1"):  # noqa: ASYNC110 - polls the store
                    await asyncio.sleep(0.01)
                relay.cancel()
                await asyncio.gather(relay, return_exceptions=True)
                return ui

        ui = run(answer_while_down(), bound=60)
        assert ui.asked == 1
    again = child("agent", "--store", store_spec, "call-1")
    with reaped(again):
        out, _ = again.communicate(timeout=60)
    (line,) = [json.loads(text) for text in out.splitlines()]
    assert line == {
        "askId": "call-1",
        "text": '{"answers":[{"id":"q","selected":[],"custom":"yes, while you were away"}]}',
        "isError": False,
    }

    async def kept() -> list[tuple[str, str, str | None]]:
        async with SQLiteStore(path) as store:
            return [(r.ask_id, r.state, r.principal) for r in await store.changes(0)]

    assert run(kept()) == [("call-1", "answered", "ana")]


def test_two_agents_and_two_uis_settle_every_ask_exactly_once(tmp_path: Path) -> None:
    """DUR-ONCE-1 across processes: 2 agents x 100 asks, 2 relays; nothing lost or doubled."""
    path = tmp_path / "asks.db"
    store_spec = f"sqlite:{path}"
    uis = [child("ui", "--store", store_spec, "--name", name) for name in ("ui-a", "ui-b")]
    with reaped(*uis):
        for process in uis:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n"
        ids = {agent: [f"{agent}-{n}" for n in range(100)] for agent in ("one", "two")}
        agents = [child("agent", "--store", store_spec, *asks) for asks in ids.values()]
        with reaped(*agents):
            outputs = [process.communicate(timeout=120)[0] for process in agents]
        assert all(process.returncode == 0 for process in agents)
    lines = [json.loads(text) for out in outputs for text in out.splitlines()]
    assert sorted(line["askId"] for line in lines) == sorted(ids["one"] + ids["two"])

    async def kept() -> dict[str, tuple[str, str | None, object]]:
        async with SQLiteStore(path) as store:
            return {r.ask_id: (r.state, r.via, r.answer) for r in await store.changes(0)}

    records = run(kept())
    assert len(records) == 200
    for line in lines:
        state, via, answer = records[line["askId"]]
        assert state == "answered"
        assert via in {"ui-a", "ui-b"}
        # What the agent returned is what the store kept, from the UI that won.
        assert json.loads(line["text"]) == answer
        assert answer == answer_of(answer_custom("q", f"{via}:{line['askId']}"))
    assert os.path.getsize(path) > 0


def test_the_serve_command_answers_through_the_web_page_in_another_process(
    tmp_path: Path,
) -> None:
    """DUR-RELAY-1 with a real UI: ``python -m dsh_user_interaction serve``, the web page, HTTP."""
    path = tmp_path / "asks.db"
    command = [sys.executable, "-m", "dsh_user_interaction", "serve", str(path)]
    ui = subprocess.Popen(
        [*command, "--ui", "web", "--via", "phone", "--principal", "ana"],
        stderr=subprocess.PIPE,
        text=True,
    )
    with reaped(ui):
        assert ui.stderr is not None
        line = ui.stderr.readline()
        assert line.startswith("Open http://127.0.0.1:"), line
        address: str = line.split()[1]
        where = urlsplit(address)

        async def main() -> object:
            async with SQLiteStore(path, poll_interval=0.01) as store:
                asking = asyncio.ensure_future(
                    DurableProvider(store).ask(
                        with_ask_id({"questions": [{"id": "q", "question": "Ship?"}]}, "call_9")
                    )
                )
                page = {
                    "x-dsh-secret": where.fragment.removeprefix("secret="),
                    "origin": f"http://{where.netloc}",
                    "content-type": "application/json",
                }
                answer: dict[str, object] = {
                    "answers": [{"id": "q", "selected": [], "custom": "ship it"}]
                }
                async with httpx.AsyncClient(base_url=f"http://{where.netloc}") as client:
                    while True:  # the relay shows the ask on the page as a1
                        sent = await client.post(
                            "/asks/a1/answer", headers=page, content=json.dumps(answer)
                        )
                        if sent.status_code == 200:
                            break
                        await asyncio.sleep(0.02)
                got = await asking
                record = await store.get("call_9")
                assert record is not None
                assert (record.state, record.principal, record.via) == ("answered", "ana", "phone")
                return got

        assert run(main(), bound=60) == answer_of(answer_custom("q", "ship it"))
        ui.send_signal(signal.SIGTERM)
        assert ui.wait(timeout=30) == 0
    bad = subprocess.run(
        [*command, "--schema", "x"], capture_output=True, text=True, timeout=60, check=False
    )
    assert bad.returncode == 1
    assert "--schema is for a PostgreSQL store only" in bad.stderr
