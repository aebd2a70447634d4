"""The DOM-style abort signal (ABT-*)."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import AbortController, AbortError, AbortSignal

from .helpers import run


@given(st.lists(st.booleans(), max_size=20), st.integers(1, 3))
def test_listeners_run_once_in_order_and_removed_ones_never(keep: list[bool], aborts: int) -> None:
    """ABT-ONCE-1 and ABT-REMOVE-1: kept listeners run once, in order; removed ones never."""
    controller = AbortController()
    calls: list[int] = []

    def listener(number: int) -> Callable[[AbortSignal], None]:
        return lambda _signal: calls.append(number)

    removers = [controller.signal.add_listener(listener(i)) for i in range(len(keep))]
    for remover, kept in zip(removers, keep, strict=True):
        if not kept:
            remover()
            remover()  # idempotent
    assert controller.signal.listener_count == sum(keep)
    for _ in range(aborts):
        controller.abort("why")
    assert calls == [i for i, kept in enumerate(keep) if kept]
    assert controller.signal.aborted
    assert controller.signal.reason == "why"
    assert controller.signal.listener_count == 0


def test_default_reason_is_an_abort_error() -> None:
    """``abort()`` without a reason uses AbortError, like the DOM."""
    controller = AbortController()
    signal = controller.signal
    assert not signal.aborted
    controller.abort()
    assert isinstance(controller.signal.reason, AbortError)
    with pytest.raises(AbortError):
        controller.signal.throw_if_aborted()


def test_throw_if_aborted() -> None:
    """Raises nothing before the abort; the reason itself if it is an exception; else wraps it."""
    controller = AbortController()
    controller.signal.throw_if_aborted()
    controller.abort(KeyError("k"))
    with pytest.raises(KeyError):
        controller.signal.throw_if_aborted()
    with pytest.raises(AbortError, match="'plain'"):
        AbortSignal.abort("plain").throw_if_aborted()


def test_a_raising_listener_does_not_stop_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """ABT-ISOLATE-1: the error is reported to sys.unraisablehook and the rest still run."""
    reported: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    controller = AbortController()
    calls: list[str] = []

    def bad(_signal: AbortSignal) -> None:
        calls.append("bad")
        raise ValueError("listener bug")

    controller.signal.add_listener(bad)
    controller.signal.add_listener(lambda _s: calls.append("good"))
    controller.abort()
    assert calls == ["bad", "good"]
    assert len(reported) == 1
    assert isinstance(reported[0].exc_value, ValueError)
    assert reported[0].object is bad


def test_a_base_exception_in_a_listener_is_reraised_after_all_listeners() -> None:
    """Cancellation and interrupts are never swallowed, and the others still run first."""
    controller = AbortController()
    calls: list[str] = []

    def interrupt(_signal: AbortSignal) -> None:
        calls.append("interrupt")
        raise KeyboardInterrupt

    controller.signal.add_listener(interrupt)
    controller.signal.add_listener(lambda _s: calls.append("after"))
    with pytest.raises(KeyboardInterrupt):
        controller.abort()
    assert calls == ["interrupt", "after"]


def test_listener_added_after_abort_is_never_called() -> None:
    """As in the DOM: check ``aborted`` first."""
    signal = AbortSignal.abort()
    calls: list[object] = []
    remove = signal.add_listener(calls.append)
    remove()
    assert calls == []
    assert signal.listener_count == 0


def test_a_shared_signal_does_not_grow() -> None:
    """ABT-REMOVE-1: 100,000 add/remove pairs leave the signal empty."""
    controller = AbortController()
    for _ in range(100_000):
        controller.signal.add_listener(lambda _s: None)()
    assert controller.signal.listener_count == 0


def test_timeout_aborts_with_timeout_error() -> None:
    """``AbortSignal.timeout`` aborts on the loop's clock with TimeoutError."""

    async def main() -> None:
        signal = AbortSignal.timeout(0.01)
        assert not signal.aborted
        fired = asyncio.Event()
        signal.add_listener(lambda _s: fired.set())
        await fired.wait()
        assert isinstance(signal.reason, TimeoutError)

    run(main())


def test_timeout_rejects_negative_and_needs_a_loop() -> None:
    """A negative delay is a ValueError; outside a loop there is no clock."""
    with pytest.raises(ValueError, match="must be >= 0"):
        AbortSignal.timeout(-1)
    with pytest.raises(RuntimeError):
        AbortSignal.timeout(1)


@given(st.integers(1, 5), st.data())
def test_any_follows_the_first_source_to_abort(count: int, data: st.DataObject) -> None:
    """``AbortSignal.any`` aborts with the reason of the first source, then lets go of all."""
    controllers = [AbortController() for _ in range(count)]
    combined = AbortSignal.any(c.signal for c in controllers)
    assert not combined.aborted
    first = data.draw(st.integers(0, count - 1))
    controllers[first].abort(f"reason {first}")
    assert combined.reason == f"reason {first}"
    assert all(c.signal.listener_count == 0 for c in controllers)


def test_any_of_an_aborted_signal_is_aborted_at_once() -> None:
    """A source that has already aborted decides the combined signal."""
    combined = AbortSignal.any([AbortController().signal, AbortSignal.abort("done")])
    assert combined.reason == "done"


def test_any_releases_its_sources_when_collected() -> None:
    """ABT-REMOVE-1: a combined signal that dies unaborted leaves no listener behind."""
    source = AbortController()
    combined = AbortSignal.any([source.signal])
    assert source.signal.listener_count == 1
    del combined
    gc.collect()
    assert source.signal.listener_count == 0
