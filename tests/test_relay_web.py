"""The web page served through a relay: "answered" only once the store has it, and how asks end.

A :class:`WebProvider` behind :func:`~dsh_user_interaction.durable.serve`, on
the embedded SQLite store (wrapped, so that a test can hold or fail a write),
talked to as a page would over real HTTP and a real socket (``DUR-ACK-1``,
``DUR-KEEP-1``, ``DUR-TELL-1``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh_user_interaction import ScriptedProvider, answer_custom, answer_of
from dsh_user_interaction.durable import Outcome, SQLiteStore, serve, stored_request
from dsh_user_interaction.extra.web import WebProvider

from .test_relay_keeps import Flaky, stopped
from .test_web import Door, Socket, run

QUESTION: Any = {"questions": [{"id": "q", "question": "Deploy?"}]}
BODY = answer_of(answer_custom("q", "ship it"))


@asynccontextmanager
async def relayed(
    path: Path, *, via: str = "web", principal: str = "ana"
) -> AsyncGenerator[tuple[Door, Flaky, asyncio.Task[None]]]:
    """A web provider behind a relay on the SQLite file *path*: its door, store and relay."""
    store = Flaky(SQLiteStore(path, poll_interval=0.005))
    async with WebProvider() as provider:
        relay = asyncio.ensure_future(
            serve(store, provider, via=via, principal=principal, on_error=lambda _r, _e: None)
        )
        opened = Door(provider)
        try:
            yield opened, store, relay
        finally:
            await stopped(relay)
            await opened.http.aclose()
            await store.close()


async def put(path: Path, ask_id: str, request: Any = QUESTION) -> None:
    async with SQLiteStore(path) as store:
        await store.put(ask_id, stored_request(request), asked_at=1.0)


async def shown(page: Socket) -> str:
    """The board id of the next ask the page is shown."""
    while True:
        message = await page.next()
        if message["type"] == "ask":
            return str(message["ask"]["askId"])
        if message["type"] == "pending" and message["asks"]:
            return str(message["asks"][0]["askId"])


async def state_of(path: Path, ask_id: str) -> tuple[str, str | None, str | None] | None:
    async with SQLiteStore(path) as store:
        record = await store.get(ask_id)
    return None if record is None else (record.state, record.principal, record.via)


def test_the_page_is_told_answered_only_once_the_store_has_the_answer(tmp_path: Path) -> None:
    """DUR-ACK-1: the POST waits while the write is held; every page hears ``sending`` first."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with relayed(path) as (door, store, _relay), door.page() as page:
            board_id = await shown(page)
            store.gate.clear()  # the store takes its time
            posting = asyncio.ensure_future(
                door.post(f"/asks/{board_id}/answer", BODY, **{"x-dsh-page": page.id})
            )
            sending = await page.until("sending")
            assert (sending["askId"], sending["by"]) == (board_id, page.id)
            await store.attempted.wait()
            await asyncio.sleep(0.05)
            assert not posting.done()  # nothing said while the store has not answered
            assert await state_of(path, "call-1") == ("pending", None, None)
            store.gate.set()
            reply = await posting
            assert (reply.status_code, reply.json()) == (200, {"ok": True})
            assert await state_of(path, "call-1") == ("answered", "ana", "web")
            settled = await page.until("settled")
            assert (settled["how"], settled["by"]) == ("answered", page.id)

    run(main)


def test_a_page_that_reconnects_while_an_answer_is_saved_sees_it_sending(tmp_path: Path) -> None:
    """DUR-ACK-1: the snapshot marks an ask being saved, with the page it came through."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with relayed(path) as (door, store, _relay), door.page() as first:
            board_id = await shown(first)
            store.gate.clear()
            posting = asyncio.ensure_future(
                door.post(f"/asks/{board_id}/answer", BODY, **{"x-dsh-page": first.id})
            )
            await store.attempted.wait()
            async with door.page() as second:
                snapshot = await second.until("pending")
                assert [(a["askId"], a["sending"]) for a in snapshot["asks"]] == [
                    (board_id, first.id)
                ]
                again = await door.post(
                    f"/asks/{board_id}/answer", BODY, **{"x-dsh-page": second.id}
                )
                assert again.status_code == 409
                assert (again.json()["how"], again.json()["by"]) == ("sending", first.id)
            store.gate.set()
            assert (await posting).status_code == 200

    run(main)


def test_of_two_pages_on_one_store_exactly_one_is_told_it_won(tmp_path: Path) -> None:
    """DUR-ACK-1, DUR-TELL-1: two pages press Send at once; exactly one hears 200.

    Both writes are held until both are sent; the other page hears 409
    "answered" with the winner's principal and via, never "answered here".
    """
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with (
            relayed(path, via="desk", principal="ana") as (desk, desk_store, _r1),
            relayed(path, via="phone", principal="bo") as (phone, phone_store, _r2),
            desk.page() as desk_page,
            phone.page() as phone_page,
        ):
            desk_id, phone_id = await shown(desk_page), await shown(phone_page)
            desk_store.gate.clear()
            phone_store.gate.clear()
            replies = [
                asyncio.ensure_future(
                    door.post(f"/asks/{ask}/answer", BODY, **{"x-dsh-page": page.id})
                )
                for door, ask, page in ((desk, desk_id, desk_page), (phone, phone_id, phone_page))
            ]
            await desk_store.attempted.wait()
            await phone_store.attempted.wait()
            desk_store.gate.set()
            phone_store.gate.set()
            desk_reply, phone_reply = [await reply for reply in replies]
            state = await state_of(path, "call-1")
            assert state is not None
            won, lost = (
                (desk_reply, phone_reply) if state[2] == "desk" else (phone_reply, desk_reply)
            )
            assert won.status_code == 200
            assert lost.status_code == 409
            assert {k: lost.json()[k] for k in ("how", "by", "principal", "via")} == {
                "how": "answered",
                "by": None,
                "principal": state[1],
                "via": state[2],
            }

    run(main)


def test_a_page_hears_an_answer_given_elsewhere_by_whom_and_where(tmp_path: Path) -> None:
    """DUR-TELL-1: another relay answered; the page hears its principal and via.

    A late POST is told the same.
    """
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with relayed(path) as (door, _store, _relay), door.page() as page:
            board_id = await shown(page)
            other = ScriptedProvider(respond=lambda _r: answer_of(answer_custom("q", "no")))
            async with SQLiteStore(path, poll_interval=0.005) as store:
                phone = asyncio.ensure_future(serve(store, other, via="phone", principal="bo"))
                settled = await page.until("settled")
                await stopped(phone)
            assert {k: settled.get(k) for k in ("askId", "how", "by", "principal", "via")} == {
                "askId": board_id,
                "how": "answered",
                "by": None,
                "principal": "bo",
                "via": "phone",
            }
            late = await door.post(f"/asks/{board_id}/answer", BODY, **{"x-dsh-page": page.id})
            assert late.status_code == 409
            assert (late.json()["how"], late.json()["principal"], late.json()["via"]) == (
                "answered",
                "bo",
                "phone",
            )

    run(main)


@pytest.mark.parametrize(
    ("outcome", "deadline", "how"),
    [
        (Outcome.cancelled(principal="bo", via="phone"), None, "dismissed"),
        (Outcome.aborted(via="agent"), None, "withdrawn"),
        (Outcome.expired(via="agent"), 4_000_000_000.0, "timed_out"),
        (Outcome.answered({**BODY, "defaulted": True}, via="agent"), 4_000_000_000.0, "defaulted"),
        (Outcome.expired(via="upkeep"), None, "expired"),
    ],
)
def test_the_page_hears_each_way_an_ask_ended(
    tmp_path: Path, outcome: Outcome, deadline: float | None, how: str
) -> None:
    """DUR-TELL-1: the web provider keeps the Withdrawn reason: how, and where."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        request = {**QUESTION, **({"deadline": deadline} if deadline is not None else {})}
        await put(path, "call-1", request)
        async with relayed(path) as (door, _store, _relay), door.page() as page:
            await shown(page)
            async with SQLiteStore(path) as store:
                await store.settle("call-1", outcome, settled_at=2.0)
            settled = await page.until("settled")
            assert settled["how"] == how
            assert settled.get("via") == outcome.via
            assert settled.get("principal") == outcome.principal

    run(main)


def test_a_page_is_told_not_saved_when_the_relay_stops_before_the_store_took_it(
    tmp_path: Path,
) -> None:
    """DUR-KEEP-1, DUR-ACK-1: the relay stops while every write fails: the page hears "Not saved".

    The POST is answered 503, every page hears ``unsaved``, and the ask
    stays pending in the store.
    """
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with relayed(path) as (door, store, relay), door.page() as page:
            board_id = await shown(page)
            store.failures = 10**6
            posting = asyncio.ensure_future(
                door.post(f"/asks/{board_id}/answer", BODY, **{"x-dsh-page": page.id})
            )
            while store.attempts < 2:  # noqa: ASYNC110 - counted by the wrapper
                await asyncio.sleep(0.005)
            assert not posting.done()
            await stopped(relay)
            reply = await posting
            assert reply.status_code == 503
            assert reply.json()["how"] == "unsaved"
            assert reply.json()["error"].startswith("Not saved")
            settled = await page.until("settled")
            assert (settled["how"], settled["by"]) == ("unsaved", page.id)
            assert "relay stopped" in settled["note"]
        assert await state_of(path, "call-1") == ("pending", None, None)

    run(main)


def test_a_dismissal_through_a_relay_waits_for_the_store_too(tmp_path: Path) -> None:
    """DUR-ACK-1: Dismiss is answered once ``cancelled`` is written."""
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with relayed(path) as (door, store, _relay), door.page() as page:
            board_id = await shown(page)
            store.gate.clear()
            posting = asyncio.ensure_future(
                door.post(f"/asks/{board_id}/dismiss", {}, **{"x-dsh-page": page.id})
            )
            await store.attempted.wait()
            await asyncio.sleep(0.05)
            assert not posting.done()
            store.gate.set()
            reply: httpx.Response = await posting
            assert reply.status_code == 200
            assert await state_of(path, "call-1") == ("cancelled", "ana", "web")

    run(main)


def test_a_store_slower_than_the_verdict_wait_gets_202_then_the_socket_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DUR-ACK-1: past the verdict wait, the POST hears 202 (still saving); the socket says the rest.

    Once the store has the answer, the socket says it was saved through this page.
    """
    from dsh_user_interaction.extra.web import _app

    monkeypatch.setattr(_app, "VERDICT_WAIT", 0.05)
    path = tmp_path / "asks.db"

    async def main() -> None:
        await put(path, "call-1")
        async with relayed(path) as (door, store, _relay), door.page() as page:
            board_id = await shown(page)
            store.gate.clear()
            reply = await door.post(f"/asks/{board_id}/answer", BODY, **{"x-dsh-page": page.id})
            assert (reply.status_code, reply.json()) == (202, {"ok": False, "saving": True})
            assert await state_of(path, "call-1") == ("pending", None, None)
            store.gate.set()
            settled = await page.until("settled")
            assert (settled["how"], settled["by"]) == ("answered", page.id)
            assert await state_of(path, "call-1") == ("answered", "ana", "web")

    run(main)


def test_the_board_keeps_no_words_for_an_ask_that_is_not_pending() -> None:
    """Bounded memory: who and where are kept only for a pending ask, and go with it."""
    from dsh_user_interaction.extra.web._board import Board

    async def main() -> None:
        board = Board()
        board.tell("a9", principal="bo", via="phone")
        assert board.details == {}
        ask = board.open(QUESTION)
        board.tell(ask.id, principal="bo", via="phone")
        assert board.details == {ask.id: {"principal": "bo", "via": "phone"}}
        board.settle(ask.id, "answered", None)
        assert board.settled[ask.id] == ("answered", None)

    run(main)
