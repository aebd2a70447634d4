"""The web provider's server, over real HTTP and WebSockets on loopback.

Each test starts a real uvicorn server on 127.0.0.1 and a free port, talks to
it as a page would (httpx for the POSTs, the websockets client for the
socket), and closes it. The browser's own part is proven in the browser.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from dsh_user_interaction import (
    AbortController,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction.extra.web import Limits, WebProvider
from dsh_user_interaction.extra.web._board import Board, Page
from dsh_user_interaction.extra.web._protocol import MAX_CONNECTIONS
from dsh_user_interaction.extra.web._wire import decode_behaviour, encode_behaviour
from dsh_user_interaction.extra.web.testing import CAPABILITIES, Chromium, chromium_executable
from dsh_user_interaction_conformance import strategies

from .helpers import patience

T = TypeVar("T")

#: Every test's own bound: nothing here may hang (10 s on the idle machine, the
#: calibrated patience on a busy one: it ends a red run).
BOUND = patience(1.0)


def run(test: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(BOUND):
            return await test()

    return asyncio.run(bounded())


class Door:
    """One web provider, seen from a page: its address, its secret and its origin."""

    def __init__(self, provider: WebProvider) -> None:
        self.provider = provider
        parts = urlsplit(provider.url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.host = parts.netloc
        self.secret = parts.fragment.removeprefix("secret=")
        self.http = httpx.AsyncClient(base_url=self.base, follow_redirects=False)

    def headers(self, **extra: str) -> dict[str, str]:
        return {"x-dsh-secret": self.secret, "origin": self.base, **extra}

    async def post(self, path: str, body: object, **headers: str) -> httpx.Response:
        sent = {"content-type": "application/json", **self.headers(), **headers}
        return await self.http.post(path, content=json.dumps(body), headers=sent)

    @asynccontextmanager
    async def page(
        self, host: str | None = None, secret: str | None = None, **headers: str
    ) -> AsyncGenerator[Socket]:
        """A page's socket; *host* names the server otherwise, as DNS rebinding would."""
        uri = f"ws://{host or self.host}/ws"
        protocols: Any = ["dsh-ui", f"dsh-secret.{self.secret if secret is None else secret}"]
        sent = {"origin": self.base, **headers}
        with socket.create_connection(("127.0.0.1", urlsplit(self.base).port or 0)) as raw:
            async with connect(
                uri, additional_headers=sent, sock=raw, subprotocols=protocols
            ) as opened:
                yield Socket(opened)


class Socket:
    """A page's socket: reads the server's messages as JSON."""

    def __init__(self, opened: ClientConnection) -> None:
        self.socket = opened
        self.id = ""

    async def next(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self.socket.recv())
        if message["type"] == "hello":
            self.id = message["page"]
        return message

    async def until(self, kind: str) -> dict[str, Any]:
        while True:
            message = await self.next()
            if message["type"] == kind:
                return message


@asynccontextmanager
async def door(**options: Any) -> AsyncGenerator[Door]:
    async with WebProvider(**options) as provider:
        opened = Door(provider)
        try:
            yield opened
        finally:
            await opened.http.aclose()


def request(*questions: dict[str, Any], **extra: Any) -> Any:
    return {"questions": list(questions) or [CHOICE], **extra}


#: No labels: a skip, or custom text alone.
NOTHING: list[str] = []
CHOICE: Any = {"id": "q", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
MANY: Any = {
    "id": "m",
    "question": "Which?",
    "multiSelect": True,
    "options": [{"label": "a"}, {"label": "b"}],
}


async def until(check: Callable[[], bool]) -> None:
    """Wait until *check()* holds: the provider's state is read from outside, so poll it."""
    while not check():  # noqa: ASYNC110 - no event to wait on from outside the provider
        await asyncio.sleep(0.001)


async def started(provider: WebProvider, ask: Any, count: int = 1) -> asyncio.Task[Any]:
    """Ask in a task, and wait until *count* asks are pending."""
    task = asyncio.ensure_future(provider.ask(ask))
    await until(lambda: provider.pending_count >= count or task.done())
    return task


# -- asks and pages ---------------------------------------------------------------------


def test_every_page_sees_the_ask_and_hears_who_answered_it() -> None:
    async def main() -> None:
        async with door(agent="planner") as d, d.page() as one, d.page() as two:
            hello = await one.next()
            assert hello == {"type": "hello", "page": one.id, "agent": "planner"}
            assert await one.next() == {"type": "pending", "asks": []}
            await two.until("pending")
            task = await started(d.provider, request())
            shown = (await one.until("ask"))["ask"]
            assert shown == (await two.until("ask"))["ask"]
            assert shown["questions"] == [{**CHOICE, "multiSelect": False}]
            answer = {"answers": [{"id": "q", "selected": ["Yes"]}]}
            sent = await d.post(f"/asks/{shown['askId']}/answer", answer, **{"x-dsh-page": one.id})
            assert sent.status_code == 200, sent.text
            assert await task == answer
            settled = {"type": "settled", "askId": shown["askId"], "how": "answered", "by": one.id}
            assert await one.until("settled") == settled
            assert await two.until("settled") == settled

    run(main)


def test_the_first_answer_wins_and_a_later_one_is_told_it_came_too_late() -> None:
    async def main() -> None:
        async with door() as d, d.page() as page:
            task = await started(d.provider, request())
            ask_id = (await page.until("ask"))["ask"]["askId"]
            first = {"answers": [{"id": "q", "selected": ["No"]}]}
            assert (
                await d.post(f"/asks/{ask_id}/answer", first, **{"x-dsh-page": page.id})
            ).is_success
            late = await d.post(
                f"/asks/{ask_id}/answer", {"answers": [{"id": "q", "selected": NOTHING}]}
            )
            assert late.status_code == 409
            assert late.json() == {
                "error": "this ask is no longer pending",
                "question": None,
                "how": "answered",
                "by": page.id,
            }
            assert (await d.post(f"/asks/{ask_id}/dismiss", {})).status_code == 409
            assert (await d.post("/asks/a999/answer", first)).status_code == 404
            assert await task == first

    run(main)


def test_a_page_that_connects_late_sees_every_pending_ask_in_order() -> None:
    async def main() -> None:
        async with door() as d:
            tasks = [
                await started(d.provider, request({**CHOICE, "question": f"Q{n}?"}), n + 1)
                for n in range(3)
            ]
            async with d.page() as page:
                pending = (await page.until("pending"))["asks"]
            assert [a["questions"][0]["question"] for a in pending] == ["Q0?", "Q1?", "Q2?"]
            assert [a["askId"] for a in pending] == ["a1", "a2", "a3"]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    run(main)


@pytest.mark.parametrize(
    ("answer", "question", "words"),
    [
        ({"answers": []}, None, "answers has 0 item(s)"),
        ({"answers": [{"id": "other", "selected": NOTHING}]}, "q", "answers[0].id"),
        ({"answers": [{"id": "q", "selected": ["Maybe"]}]}, "q", '"Maybe"'),
        ({"answers": [{"id": "q", "selected": ["Yes", "No"]}]}, "q", "single-select"),
        ({"answers": [{"id": "q", "selected": ["Yes"], "custom": "and"}]}, "q", "custom overrides"),
        (
            {"answers": [{"id": "q", "selected": NOTHING, "custom": "\u3000 "}]},
            "q",
            "answers[0].custom",
        ),
        ({"answers": [{"id": "q", "selected": "Yes"}]}, "q", "answers[0].selected"),
        ({"reply": "yes"}, None, '"reply"'),
    ],
)
def test_an_answer_that_breaks_the_rules_is_refused_naming_the_field(
    answer: object, question: str | None, words: str
) -> None:
    """The page gets a 422 that names the question and the field; the ask stays pending."""

    async def main() -> None:
        async with door() as d:
            task = await started(d.provider, request())
            refused = await d.post("/asks/a1/answer", answer)
            assert refused.status_code == 422, refused.text
            reply = refused.json()
            assert reply["question"] == question
            assert words in reply["error"], reply
            assert reply["requirement"].startswith("ANS-")
            assert not task.done()
            good = {"answers": [{"id": "q", "selected": NOTHING, "custom": "later"}]}
            assert (await d.post("/asks/a1/answer", good)).is_success
            assert await task == good

    run(main)


def test_an_answer_is_credited_only_to_a_page_connected_now() -> None:
    """A page id is what the client says: one no connected page has is credited to no page."""

    async def main() -> None:
        async with door() as d, d.page() as page:
            task = await started(d.provider, request())
            await page.until("ask")
            first = {"answers": [{"id": "q", "selected": ["No"]}]}
            assert (await d.post("/asks/a1/answer", first, **{"x-dsh-page": "p999"})).is_success
            settled = await page.until("settled")
            assert settled["by"] is None
            assert await task == first

    run(main)


def test_ask_id_of_names_a_pending_request_by_identity_and_forgets_it_once_settled() -> None:
    """Two equal requests are two asks: each is named by the object, not by what it asks."""

    async def main() -> None:
        async with door() as d:
            first, second = request(), request()
            assert first == second
            one = await started(d.provider, first)
            two = await started(d.provider, second, count=2)
            assert d.provider.ask_id_of(first) == "a1"
            assert d.provider.ask_id_of(second) == "a2"
            assert d.provider.ask_id_of(request()) is None
            answer = {"answers": [{"id": "q", "selected": ["Yes"]}]}
            assert (await d.post("/asks/a2/answer", answer)).is_success
            assert await two == answer
            assert d.provider.ask_id_of(second) is None
            assert d.provider.ask_id_of(first) == "a1"
            one.cancel()
            await asyncio.gather(one, return_exceptions=True)

    run(main)


def test_a_duplicate_label_on_a_multi_select_is_refused() -> None:
    async def main() -> None:
        async with door() as d:
            task = await started(d.provider, request(MANY))
            twice = {"answers": [{"id": "m", "selected": ["a", "a"]}]}
            refused = await d.post("/asks/a1/answer", twice)
            assert refused.status_code == 422
            assert refused.json()["question"] == "m"
            both = {"answers": [{"id": "m", "selected": ["a", "b"], "custom": "and c"}]}
            assert (await d.post("/asks/a1/answer", both)).is_success
            assert await task == both

    run(main)


def test_dismissing_raises_ask_cancelled_and_every_page_hears_it() -> None:
    async def main() -> None:
        async with door() as d, d.page() as page:
            task = await started(d.provider, request())
            await page.until("ask")
            assert (await d.post("/asks/a1/dismiss", {}, **{"x-dsh-page": page.id})).is_success
            with pytest.raises(UserInteractionError) as raised:
                await task
            assert raised.value.code is ErrorCode.ASK_CANCELLED
            settled = await page.until("settled")
            assert (settled["how"], settled["by"]) == ("dismissed", page.id)

    run(main)


def test_an_abort_withdraws_the_ask_from_every_page() -> None:
    async def main() -> None:
        async with door() as d, d.page() as page:
            controller = AbortController()
            task = await started(d.provider, request(signal=controller.signal))
            await page.until("ask")
            controller.abort()
            with pytest.raises(UserInteractionError) as raised:
                await task
            assert raised.value.code is ErrorCode.ASK_ABORTED
            assert (await page.until("settled"))["how"] == "withdrawn"
            assert controller.signal.listener_count == 0
            late = await d.post("/asks/a1/answer", {"answers": [{"id": "q", "selected": NOTHING}]})
            assert (late.status_code, late.json()["how"]) == (409, "withdrawn")

    run(main)


def test_a_cancelled_ask_is_withdrawn_too() -> None:
    async def main() -> None:
        async with door() as d, d.page() as page:
            task = await started(d.provider, request())
            await page.until("ask")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert (await page.until("settled"))["how"] == "withdrawn"
            assert d.provider.pending_count == 0

    run(main)


def test_closing_tells_every_page_the_agent_has_gone() -> None:
    async def main() -> None:
        async with door() as d, d.page() as page:
            task = await started(d.provider, request())
            await page.until("ask")
            await d.provider.aclose()
            with pytest.raises(UserInteractionError) as raised:
                await task
            assert raised.value.code is ErrorCode.PROVIDER_DISPOSED
            assert (await page.until("settled"))["how"] == "disposed"
            assert await page.next() == {"type": "gone"}
            with pytest.raises(ConnectionClosed):
                await page.next()
            with pytest.raises(UserInteractionError) as after:
                await d.provider.ask(request())
            assert after.value.code is ErrorCode.PROVIDER_DISPOSED

    run(main)


def test_through_a_strict_service() -> None:
    async def main() -> None:
        service = UserInteractionService()
        async with door() as d:
            service.register_provider(d.provider)
            task = asyncio.ensure_future(service.ask(request(MANY)))
            await until(lambda: d.provider.pending_count == 1)
            answer = {"answers": [{"id": "m", "selected": ["b"]}]}
            assert (await d.post("/asks/a1/answer", answer)).is_success
            assert await task == answer

    run(main)


def test_model_text_reaches_the_page_exactly_lone_surrogates_included() -> None:
    async def main() -> None:
        hostile = "<script>alert(1)</script>\u202e\ud800 \u200b😀"
        asked = request({"id": "q", "question": hostile, "options": [{"label": hostile}]})
        async with door() as d, d.page() as page:
            task = await started(d.provider, asked)
            shown = (await page.until("ask"))["ask"]["questions"][0]
            assert shown["question"] == hostile
            answer = {"answers": [{"id": "q", "selected": [hostile]}]}
            assert (await d.post("/asks/a1/answer", answer)).is_success
            assert await task == answer

    run(main)


def test_a_refusal_naming_a_question_id_with_a_lone_surrogate_is_a_4xx_not_a_crash() -> None:
    """The reply names the question by its id as given, in JSON that raw UTF-8 cannot hold."""

    async def main() -> None:
        asked = request({"id": "q\udbff", "question": "Which?", "options": [{"label": "a"}]})
        async with door() as d:
            task = await started(d.provider, asked)
            sent = {"answers": [{"id": "q\udbff", "selected": ["b"]}]}
            reply = await d.post("/asks/a1/answer", sent)
            assert reply.status_code == 422, reply.text
            assert reply.json()["question"] == "q\udbff"
            assert not task.done()
            task.cancel()

    run(main)


# -- the door ---------------------------------------------------------------------------


def test_the_secret_travels_in_the_fragment_and_the_page_itself_holds_none() -> None:
    """No request carries the secret in its address; the static page loads without it."""

    async def main() -> None:
        async with door() as d:
            assert urlsplit(d.provider.url).query == ""
            assert len(d.secret) >= 40
            page = await d.http.get("/")
            assert page.status_code == 200
            assert "set-cookie" not in page.headers
            assert page.headers["content-security-policy"].startswith("default-src 'none'")
            assert "'unsafe-inline'" not in page.headers["content-security-policy"]
            assert page.headers["x-frame-options"] == "DENY"
            assert d.secret not in page.text
            assert (await d.http.get("/static/app.js")).status_code == 200
            assert (await d.http.get("/favicon.ico")).status_code == 204
            assert (await d.http.get("/static/../_app.py")).status_code == 404

    run(main)


def test_every_connection_sends_at_once_with_nagles_algorithm_off() -> None:
    """The server's connections have TCP_NODELAY: no response waits for the browser's ACK.

    With Nagle's algorithm on, a response on a kept-alive connection (every
    load after the first, every answer posted) sent its head, then waited
    for the browser's delayed ACK (40 ms on Linux) before sending its body.
    """

    async def main() -> None:
        async with door() as d:
            for path in ("/", "/static/app.css", "/static/app.js"):
                assert (await d.http.get(path)).status_code == 200
            server = d.provider._server
            assert server is not None
            connections = list(server.server_state.connections)
            assert connections
            for connection in connections:
                transport: Any = connection.transport
                sock = transport.get_extra_info("socket")
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

    run(main)


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/favicon.ico"])
def test_a_page_load_by_another_host_name_gets_nothing(path: str) -> None:
    async def main() -> None:
        async with door() as d:
            got = await d.http.get(path, headers={"host": "evil.example"})
            assert got.status_code == 421, got.text
            assert "<" not in got.text

    run(main)


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"origin": "http://evil.example"}, 403),
        ({"origin": ""}, 403),
        ({"x-dsh-secret": ""}, 403),
        ({"x-dsh-secret": "guess"}, 403),
        ({"content-type": "text/plain"}, 415),
        ({"content-type": "application/x-www-form-urlencoded"}, 415),
        ({"host": "evil.example"}, 421),
        ({"sec-fetch-site": "same-site"}, 403),
    ],
)
def test_a_post_from_another_site_or_without_the_secret_settles_nothing(
    change: dict[str, str], status: int
) -> None:
    async def main() -> None:
        async with door() as d:
            task = await started(d.provider, request())
            refused = await d.post(
                "/asks/a1/answer", {"answers": [{"id": "q", "selected": NOTHING}]}, **change
            )
            assert refused.status_code == status, refused.text
            assert refused.json()["error"], "a page is told why, in JSON"
            assert not task.done()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main)


@pytest.mark.parametrize(
    "headers", [{"origin": "http://evil.example"}, {"host": "evil.example:80"}]
)
def test_a_socket_from_elsewhere_is_refused(headers: dict[str, str]) -> None:
    async def main() -> None:
        async with door() as d:
            with pytest.raises(InvalidStatus) as refused:
                async with d.page(**headers):
                    pass
            assert refused.value.response.status_code == 403

    run(main)


def test_a_socket_without_the_secret_is_closed_saying_so_and_gets_nothing() -> None:
    """The server's own page is told why, in a close code its script can read."""

    async def main() -> None:
        async with door() as d:
            task = await started(d.provider, request())
            async with d.page(secret="guess") as page:
                with pytest.raises(ConnectionClosed) as closed:
                    await page.next()
            assert closed.value.rcvd is not None
            assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4403, "wrong secret")
            assert d.provider._board.sockets == 0
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main)


def test_a_page_that_writes_on_its_socket_is_cut_off() -> None:
    async def main() -> None:
        async with door() as d, d.page() as page:
            await page.until("pending")
            await page.socket.send('{"type": "answer"}')
            with pytest.raises(ConnectionClosed) as closed:
                await page.next()
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 1008

    run(main)


def test_sizes_pages_and_rates_are_limited_and_asks_still_settle() -> None:
    async def main() -> None:
        limits = Limits(max_body=1000, max_pages=2, rate=1.0, burst=5)
        async with door(limits=limits) as d:
            task = await started(d.provider, request())
            big = {"answers": [{"id": "q", "selected": NOTHING, "custom": "x" * 2000}]}
            assert (await d.post("/asks/a1/answer", big)).status_code == 413
            async with d.page(), d.page(), d.page() as third:
                with pytest.raises(ConnectionClosed) as closed:
                    await third.next()
                assert closed.value.rcvd is not None
                refusal = (closed.value.rcvd.code, closed.value.rcvd.reason)
                assert refusal == (1013, "too many pages")
            # A made-up page id with each POST gets no allowance of its own.
            statuses = [
                (
                    await d.post("/asks/a1/answer", {"answers": []}, **{"x-dsh-page": f"p{n}"})
                ).status_code
                for n in range(8)
            ]
            assert 429 in statuses
            assert statuses[:4] == [422] * 4
            assert not task.done()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main)


def test_a_page_too_slow_to_keep_up_is_cut_off_and_the_rest_go_on() -> None:
    """A page's queue is bounded: past it, the page ends (it reconnects and catches up)."""

    async def main() -> None:
        board = Board()
        slow = board.join(None)
        slow.queue = asyncio.Queue(3)
        stopped: list[bool] = []
        slow.stop = lambda: stopped.append(True)
        fast = board.join(None)
        for n in range(5):
            board.broadcast({"type": "note", "n": n})
        assert slow.cut_off
        assert stopped == [True], "its writer, maybe stuck on a socket nobody reads, is stopped"
        assert slow.id not in board.pages
        assert slow.queue.get_nowait() is None
        assert fast.queue.qsize() == 7  # hello, pending, five notes
        assert isinstance(fast, Page)

    run(main)


def test_listening_beyond_loopback_needs_an_explicit_option() -> None:
    """Another address needs allow_remote; a wildcard is refused, since no host name would pass."""
    with pytest.raises(ValueError, match="allow_remote"):
        WebProvider(host="192.0.2.1")
    WebProvider(host="192.0.2.1", allow_remote=True)
    for wildcard in ("0.0.0.0", "::"):
        with pytest.raises(ValueError, match="name the address"):
            WebProvider(host=wildcard, allow_remote=True)
    WebProvider(host="::1")


# -- the demo ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("dismiss", [False, True])
def test_the_web_demo_prints_the_address_then_the_answer(dismiss: bool) -> None:
    """``web-demo`` says where the page is; the answer goes to standard output, a dismissal to 1."""
    command = [sys.executable, "-m", "dsh_user_interaction", "web-demo"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as demo:
        assert demo.stderr is not None
        line: str = demo.stderr.readline()
        assert line.startswith("Open http://127.0.0.1:"), line
        parts = urlsplit(line.split()[1])
        headers = {
            "x-dsh-secret": parts.fragment.removeprefix("secret="),
            "origin": f"http://{parts.netloc}",
            "content-type": "application/json",
        }
        answer = {
            "answers": [
                {"id": "mode", "selected": ["Fast"]},
                {"id": "targets", "selected": ["tests", "docs"]},
                {"id": "branch", "selected": NOTHING, "custom": "release/1.0"},
                {"id": "plan-review", "selected": ["Approve"]},
            ]
        }
        path = "/asks/a1/dismiss" if dismiss else "/asks/a1/answer"
        body = json.dumps({} if dismiss else answer)
        deadline = time.monotonic() + BOUND
        while True:  # the address is printed just before the batch is asked
            sent = httpx.post(f"http://{parts.netloc}{path}", content=body, headers=headers)
            if sent.status_code != 404 or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert sent.status_code == 200, sent.text
        out, err = demo.communicate(timeout=BOUND)
    if dismiss:
        assert demo.returncode == 1
        assert err.strip() == "Error: the user cancelled ask_user_question"
    else:
        assert demo.returncode == 0, err
        assert json.loads(out) == answer


@pytest.mark.slow
@pytest.mark.parametrize("module", ["starlette", "uvicorn", "websockets"])
def test_the_subpackage_without_its_extra_names_the_extra(module: str) -> None:
    """Without any one of its three libraries, one ImportError names it and the pip command."""
    prelude = f"import sys; sys.modules[{module!r}] = None; "
    out = subprocess.run(
        [sys.executable, "-c", prelude + "import dsh_user_interaction.extra.web"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert f"ImportError: dsh_user_interaction.extra.web needs {module}: " in out.stderr
    assert "pip install 'dsh-user-interaction[web]'" in out.stderr
    demo = "import runpy, sys; sys.argv = ['x', 'web-demo']; "
    demo += "runpy.run_module('dsh_user_interaction', run_name='__main__')"
    out = subprocess.run(
        [sys.executable, "-c", prelude + demo], capture_output=True, text=True, check=False
    )
    assert out.returncode == 1
    assert "pip install 'dsh-user-interaction[web]'" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("module", ["playwright", "hypothesis"])
def test_the_driver_without_its_extra_names_the_extra(module: str) -> None:
    """Without Playwright or the suite, the testing module's ImportError names the extra."""
    prelude = f"import sys; sys.modules[{module!r}] = None; "
    out = subprocess.run(
        [sys.executable, "-c", prelude + "import dsh_user_interaction.extra.web.testing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert f"ImportError: dsh_user_interaction.extra.web.testing needs {module}: " in out.stderr
    assert "pip install 'dsh-user-interaction[web-testing]'" in out.stderr


def test_the_driver_finds_chromium_where_told_and_says_how_to_get_it_when_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """DSH_CHROMIUM names the browser; a missing one is a clear error, before any launch."""
    fake = tmp_path / "chromium"
    fake.write_text("")
    monkeypatch.setenv("DSH_CHROMIUM", str(fake))
    assert chromium_executable() == str(fake)
    monkeypatch.setenv("DSH_CHROMIUM", str(tmp_path / "absent"))
    assert chromium_executable() is None

    with pytest.raises(FileNotFoundError, match="apt-get install chromium"):
        asyncio.run(Chromium().connect())


def test_the_headless_shell_is_driven_before_the_full_browser(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without DSH_CHROMIUM, Debian's headless shell is taken when installed, else chromium."""
    monkeypatch.delenv("DSH_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert chromium_executable() is None
    for name in ("chromium-browser", "chromium", "chromium-headless-shell"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
        assert chromium_executable() == str(tmp_path / name)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_every_behaviour_reaches_the_browser_host_as_it_was_drawn(data: st.DataObject) -> None:
    """The driver's behaviours cross to the host as JSON and come back equal, ways and all."""
    asked = data.draw(strategies.requests())
    behaviour = data.draw(strategies.behaviours(asked, CAPABILITIES, include_nothing=True))
    wire = json.loads(json.dumps(encode_behaviour(behaviour), ensure_ascii=True))
    assert decode_behaviour(wire) == behaviour


# -- what a hostile review found ---------------------------------------------------------


def test_a_taken_port_is_an_oserror_and_the_process_goes_on() -> None:
    """Uvicorn exits the process when it cannot bind; the provider binds first and raises."""

    async def main() -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            provider = WebProvider(port=port)
            with pytest.raises(OSError, match="in use"):
                await provider.start()
            await provider.aclose()

    run(main)


def test_closing_while_the_first_ask_starts_the_server_ends_that_ask() -> None:
    async def main() -> None:
        provider = WebProvider()
        asked = asyncio.ensure_future(provider.ask(request()))
        await asyncio.sleep(0)
        await provider.aclose()
        with pytest.raises(UserInteractionError) as raised:
            await asyncio.wait_for(asked, 5)
        assert raised.value.code is ErrorCode.PROVIDER_DISPOSED
        assert provider.pending_count == 0
        with pytest.raises(httpx.ConnectError):
            await httpx.AsyncClient().get(provider.url.split("#")[0])

    run(main)


def test_an_abort_while_the_server_starts_ends_the_ask() -> None:
    async def main() -> None:
        async with WebProvider() as provider:
            pass  # a fresh one below, not yet started
        provider = WebProvider()
        controller = AbortController()
        asked = asyncio.ensure_future(provider.ask(request(signal=controller.signal)))
        await asyncio.sleep(0)
        controller.abort()
        with pytest.raises(UserInteractionError) as raised:
            await asyncio.wait_for(asked, 5)
        assert raised.value.code is ErrorCode.ASK_ABORTED
        await provider.aclose()

    run(main)


def test_a_flood_of_labels_is_refused_by_count_before_the_rules_word_each() -> None:
    """8,000 unknown labels within 64 KiB: refused at once, naming the count, not each label."""

    async def main() -> None:
        async with door() as d:
            task = await started(d.provider, request())
            flood = {"answers": [{"id": "q", "selected": [str(n) for n in range(8_000)]}]}
            refused = await d.post("/asks/a1/answer", flood)
            assert refused.status_code == 422
            assert refused.json() == {
                "error": "answers[0].selected has 8000 labels; the question offers 2",
                "question": "q",
            }
            too_many = {"answers": [{"id": "q", "selected": NOTHING}] * 3}
            assert "3 items for 1 question" in (await d.post("/asks/a1/answer", too_many)).text
            assert not task.done()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main)


def test_an_answer_to_an_ask_settled_long_ago_is_still_told_it_is_no_longer_pending() -> None:
    async def main() -> None:
        async with door() as d:
            task = await started(d.provider, request())
            await d.post("/asks/a1/dismiss", {})
            await asyncio.gather(task, return_exceptions=True)
            d.provider._board.settled.clear()
            late = await d.post("/asks/a1/answer", {"answers": []})
            assert (late.status_code, late.json()["how"]) == (409, None)
            assert (await d.post("/asks/a2/answer", {"answers": []})).status_code == 404

    run(main)


def test_idle_connections_cannot_take_the_agents_file_descriptors() -> None:
    """300 connections that send nothing: the server keeps at most its limit of them."""

    async def main() -> None:
        async with door() as d:
            before = len(os.listdir("/proc/self/fd"))
            port = urlsplit(d.base).port or 0
            flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
            try:
                await asyncio.sleep(0.5)
                held = len(os.listdir("/proc/self/fd")) - before - len(flood)
                assert held <= MAX_CONNECTIONS + 4, held
            finally:
                for sock in flood:
                    sock.close()
            await asyncio.sleep(0.2)
            task = await started(d.provider, request())
            good = {"answers": [{"id": "q", "selected": ["Yes"]}]}
            assert (await d.post("/asks/a1/answer", good)).is_success
            assert await task == good

    run(main)


def test_behind_a_proxy_the_public_address_is_the_one_answered_and_printed() -> None:
    """With public_url, the proxy's host name and origin are admitted, and url is built on it."""
    with pytest.raises(ValueError, match="allow_remote"):
        WebProvider(public_url="https://agent.example")
    with pytest.raises(ValueError, match="no http"):
        WebProvider(public_url="agent.example", allow_remote=True)

    async def main() -> None:
        provider = WebProvider(public_url="https://agent.example", allow_remote=True)
        async with provider:
            assert provider.url.startswith("https://agent.example/#secret=")
            local = Door(provider)
            port = provider._server.servers[0].sockets[0].getsockname()[1]  # type: ignore[union-attr]
            task = await started(provider, request())
            proxied = {
                "host": "agent.example",
                "origin": "https://agent.example",
                "x-dsh-secret": local.secret,
                "content-type": "application/json",
            }
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                answer = {"answers": [{"id": "q", "selected": ["No"]}]}
                sent = await client.post(
                    "/asks/a1/answer", content=json.dumps(answer), headers=proxied
                )
                assert sent.status_code == 200, sent.text
                assert await task == answer
                other = {**proxied, "origin": "http://agent.example"}
                refused = await client.post("/asks/a1/answer", content="{}", headers=other)
                assert refused.status_code == 403
            await local.http.aclose()

    run(main)
