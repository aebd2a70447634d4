"""A lifelong StdioProvider forgets what its settled asks carried (``HAR-RELEASE-1``).

Before the release, both sides kept every request, signal and answer by
handle, and the child re-serialised every request it held on every reply:
100 asks with a signal each took 0.8 s at first and 9.5 s after 1,400. These
tests pin the rule's parts: what the parent keeps, what the child forgets,
identity among the asks pending together, and a 1.1 child left alone.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_user_interaction import AbortController, ErrorCode, UserInteractionError
from dsh_user_interaction.extra.stdio import StdioProvider
from dsh_user_interaction.extra.stdio._session import Session
from dsh_user_interaction.extra.stdio._values import Codec, WireError

ROOT = Path(__file__).resolve().parents[1]
CHILD = [sys.executable, "-m", "dsh_user_interaction_conformance.child"]
#: The reference provider: it shows each ask until its signal aborts (its driver never acts).
WAITING = "dsh_user_interaction_conformance:reference_subject"


def _provider(target: str, *, mode: str | None = None) -> StdioProvider:
    command = [*CHILD, "--provider", target]
    if mode is not None:
        command = [sys.executable, "-m", "tests.harness_mitm", mode, "--", *command]
    return StdioProvider(command, cwd=str(ROOT))


def _session(provider: StdioProvider) -> Session:
    session = provider._session
    assert session is not None
    return session


def _request(question: str, **extra: Any) -> Any:
    return {"questions": [{"id": "q", "question": question}], **extra}


# -- the codec ------------------------------------------------------------------------


def test_a_released_object_goes_out_as_new_and_a_forgotten_handle_reads_no_more() -> None:
    """Release stops naming a handle at once; forget drops its object once the child confirmed."""
    names = iter(f"s{n}" for n in range(1, 100))
    codec = Codec(lambda: next(names))
    request: Any = _request("Go?")
    with codec.collecting(set()) as used:
        _, handle = codec.encode_top(request)
    assert handle is not None
    assert used == {handle}
    assert codec.encode(request) == {"$": "ref", "handle": handle}
    codec.release([handle])
    # Never named again: sent in full, as a new object with a new handle.
    assert codec.encode(request) == request
    again, fresh = codec.encode_top(request)
    assert fresh not in {None, handle}
    assert again == request
    # What the child wrote before it read the release still reads, until forget.
    assert codec.decode({"$": "ref", "handle": handle}) is request
    codec.forget([handle, "s99"])  # an unknown handle is skipped
    with pytest.raises(WireError, match="which no object was sent as"):
        codec.decode({"$": "ref", "handle": handle})
    assert codec.decode({"$": "ref", "handle": fresh}) is request


def test_collecting_gathers_every_handle_a_decode_reads() -> None:
    """A reply's refs, signals and opaque values count as the ask's, so they stay while it does."""
    names = iter(f"s{n}" for n in range(1, 100))
    codec = Codec(lambda: next(names))
    controller = AbortController()
    with codec.collecting(set()) as sent:
        codec.encode_top(_request("Go?", signal=controller.signal))
    with codec.collecting(set()) as read:
        codec.decode_top(
            {"answers": [], "x": {"$": "opaque", "handle": "c1", "type": "T"}}, "c2", "value"
        )
        codec.decode({"$": "signal", "handle": "c3", "aborted": False})
        codec.decode([{"$": "ref", "handle": h} for h in sorted(sent)])
    assert read == {"c1", "c2", "c3"} | sent


# -- the parent and the Python child --------------------------------------------------


def test_a_thousand_asks_leave_only_the_last_release_in_flight() -> None:
    """Each ask with its own signal and a shared agent: what the parent holds stays small.

    Before the release, the parent held three handles more per ask (request,
    signal, answer) and a mirror per signal; after 1,000 asks, 3,000 and 1,000.
    """

    async def main() -> None:
        agent = {"name": "planner"}
        async with _provider("tests.harness_entries:answering") as provider:
            for n in range(1000):
                controller = AbortController()
                answer = await provider.ask(
                    _request(f"Go {n}?", signal=controller.signal, agent=agent)
                )
                assert answer == {"answers": [{"id": "q", "selected": []}]}
            session = _session(provider)
            assert len(session.codec.objects) <= 4, sorted(session.codec.objects)
            assert len(session._mirrors) == 0
            assert len(session._made) <= 2
            assert session._held == []

    asyncio.run(main())


def test_asks_pending_together_keep_their_shared_signal_and_agent() -> None:
    """A signal two pending asks share is not released while either waits: one abort ends both.

    The first ask settles while the others wait; if its release took the shared
    signal, the child's copy would be gone and the abort would reach nobody.
    """

    async def main() -> None:
        async with (
            _provider(WAITING) as waiting,
            _provider("tests.harness_entries:answering") as answering,
        ):
            shared = AbortController()
            agent = {"name": "planner"}
            pending = [
                asyncio.ensure_future(
                    waiting.ask(_request(f"Wait {n}?", signal=shared.signal, agent=agent))
                )
                for n in range(3)
            ]
            await asyncio.sleep(0.2)
            # Another ask on the same provider ends meanwhile (its caller cancels it)
            # and releases what it alone used.
            late = AbortController()
            settled = asyncio.ensure_future(waiting.ask(_request("Other?", signal=late.signal)))
            await asyncio.sleep(0.2)
            settled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(settled, 5)
            assert _session(waiting).codec.handle_of(late.signal) is None
            await asyncio.sleep(0.2)
            shared.abort()
            outcomes = await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 5)
            codes = [getattr(o, "code", o) for o in outcomes]
            assert codes == [ErrorCode.ASK_ABORTED] * 3
            assert await answering.ask(_request("Still there?", agent=agent)) == {
                "answers": [{"id": "q", "selected": []}]
            }

    asyncio.run(main())


def test_the_child_stops_reporting_a_released_request() -> None:
    """A provider that rewrites the request before this one: the child must not report it.

    The parent has forgotten that request once the child confirmed the release;
    a child that still reported its change would name a handle that reads no
    more, and its asks would fail with ChildFailed.
    """

    async def main() -> None:
        async with _provider("tests.harness_entries:rewrites_earlier_and_skips") as provider:
            for n in range(20):
                answer = await provider.ask(_request(f"Go {n}?", signal=AbortController().signal))
                assert answer["answers"][0]["id"] == "q"

    asyncio.run(main())


def test_a_child_that_speaks_1_1_is_never_sent_release() -> None:
    """Release is 1.2's: a 1.1 child would read it as a protocol error, so it never gets one."""

    async def main() -> None:
        async with _provider("tests.harness_entries:answering", mode="speaks-1.1") as provider:
            for n in range(5):
                await provider.ask(_request(f"Go {n}?", signal=AbortController().signal))
            session = _session(provider)
            assert not session.connection.releases
            assert len(session.codec.objects) == 15  # request, signal and answer of each

    asyncio.run(main())


def test_an_aborted_ask_is_released_too() -> None:
    """An ask that ends by its signal frees what it carried, the abort's reason included."""

    async def main() -> None:
        async with _provider(WAITING) as provider:
            for n in range(30):
                controller = AbortController()
                task = asyncio.ensure_future(
                    provider.ask(_request(f"Wait {n}?", signal=controller.signal))
                )
                await asyncio.sleep(0.01)
                controller.abort(ValueError(f"stop {n}"))
                with pytest.raises(UserInteractionError) as raised:
                    await asyncio.wait_for(task, 5)
                assert raised.value.code is ErrorCode.ASK_ABORTED
            assert len(_session(provider).codec.objects) <= 4

    asyncio.run(main())


def test_asks_through_a_service_after_release_still_answer_and_abort() -> None:
    """The service's strict checks and abort handling see nothing different after releases."""
    from dsh_user_interaction import UserInteractionService

    async def main() -> None:
        service = UserInteractionService()
        async with _provider("tests.harness_entries:answering") as provider:
            service.register_provider(provider)
            for n in range(50):
                assert (await service.ask(_request(f"Go {n}?")))["answers"][0]["id"] == "q"
            aborted = AbortController()
            aborted.abort()
            with pytest.raises(UserInteractionError) as raised:
                await service.ask(_request("Late?", signal=aborted.signal))
            assert raised.value.code is ErrorCode.ASK_ABORTED

    asyncio.run(main())
