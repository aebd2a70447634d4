"""The DOM-style abort signal (ABT-*)."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import subprocess
import sys
import textwrap
import traceback
import tracemalloc
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dsh_user_interaction
from dsh_user_interaction import (
    AbortController,
    AbortError,
    AbortSignal,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from dsh_user_interaction_conformance._stand_ins import Ignoring, settle

from .helpers import BOUND, one_question, run

#: A tree of any() calls: a leaf is the index of a controller, a list combines its children.
Tree = int | list["Tree"]
_TREES: st.SearchStrategy[Tree] = st.recursive(
    st.integers(0, 3), lambda children: st.lists(children, max_size=3), max_leaves=8
)


def _ignore(_signal: AbortSignal) -> None:
    return None


def _setter(event: asyncio.Event) -> Callable[[AbortSignal], None]:
    return lambda _signal: event.set()


def _timers() -> int:
    """How many timers the running loop holds, cancelled ones included.

    asyncio's default loop keeps them in ``_scheduled``, a list it replaces
    when it drops the cancelled ones.
    """
    heap: list[object] = vars(asyncio.get_running_loop())["_scheduled"]
    return len(heap)


@asynccontextmanager
async def collecting() -> AsyncGenerator[None]:
    """Run the garbage collector on every loop iteration while the block runs."""

    async def collect() -> None:
        while True:
            gc.collect()
            await asyncio.sleep(0)

    task = asyncio.ensure_future(collect())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


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


def test_a_raising_listener_does_not_stop_the_others(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ABT-ISOLATE-1, ABT-REPORT-1: the error goes to sys.unraisablehook and the rest still run.

    The hook receives a genuine ``UnraisableHookArgs``, which the default hook accepts.
    """
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
    assert reported[0].err_msg == "Exception ignored in abort signal listener"
    sys.__unraisablehook__(reported[0])  # a TypeError if it were a look-alike
    assert "ValueError: listener bug" in capsys.readouterr().err


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


# ABT-ANY-1: dependent signals keep their sources alive and flatten nesting.


def test_an_ask_on_any_of_a_timeout_and_a_user_signal_ends_with_the_timeout() -> None:
    """ABT-ANY-1: in ``any([timeout(...), user.signal])`` the timeout lives, fires and aborts the ask."""

    async def main() -> None:
        service = UserInteractionService()
        service.register_provider(Ignoring())
        user = AbortController()
        combined = AbortSignal.any([AbortSignal.timeout(0.05), user.signal])
        request = one_question(signal=combined)
        gc.collect()
        async with collecting():
            outcome = await settle(service.ask(request))
        assert isinstance(outcome, UserInteractionError)
        assert outcome.code is ErrorCode.ASK_ABORTED
        assert isinstance(combined.reason, TimeoutError)
        assert user.signal.listener_count == 0

    run(main())


def test_any_of_any_follows_the_original_source() -> None:
    """ABT-ANY-1: ``any([any([c.signal])])`` aborts with ``c``, though the inner signal is garbage."""
    controller = AbortController()
    outer = AbortSignal.any([AbortSignal.any([controller.signal])])
    gc.collect()
    assert controller.signal.listener_count == 1
    controller.abort("why")
    assert outer.reason == "why"
    assert controller.signal.listener_count == 0


def _build(tree: Tree, controllers: list[AbortController]) -> AbortSignal:
    if isinstance(tree, int):
        return controllers[tree].signal
    return AbortSignal.any([_build(child, controllers) for child in tree])


def _leaves(tree: Tree) -> set[int]:
    if isinstance(tree, int):
        return {tree}
    found: set[int] = set()
    for child in tree:
        found |= _leaves(child)
    return found


@contextmanager
def _collecting_only_what_is_new() -> Generator[None]:
    """Freeze the heap as it is (``gc.freeze``), so a full collection sees only new objects.

    A full ``gc.collect()`` in a long test session walks every object the
    session made; frozen, it walks what the block makes, and finds the same
    garbage there. A heap the session froze already (``tests/conftest.py``)
    stays frozen after it.
    """
    frozen_before = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()


@settings(max_examples=30)
@given(st.lists(_TREES, max_size=4), st.integers(0, 3))
def test_nested_any_depends_on_each_original_source_once(tree: list[Tree], aborted: int) -> None:
    """ABT-ANY-1, ABT-REMOVE-1: nested any() subscribes once to each original source.

    The inner combined signals are garbage at once; the outer one still
    aborts with the first source that does, and once it has aborted or is
    garbage, no source holds anything for it.
    """
    with _collecting_only_what_is_new():
        _nested_any_depends_on_each_original_source_once(tree, aborted)


def _nested_any_depends_on_each_original_source_once(tree: list[Tree], aborted: int) -> None:
    controllers = [AbortController() for _ in range(4)]
    combined = _build(tree, controllers)
    gc.collect()
    used = _leaves(tree)
    assert [c.signal.listener_count for c in controllers] == [int(i in used) for i in range(4)]
    controllers[aborted].abort(f"reason {aborted}")
    gc.collect()
    assert combined.aborted is (aborted in used)
    if combined.aborted:
        assert combined.reason == f"reason {aborted}"
        assert all(c.signal.listener_count == 0 for c in controllers)
    del combined
    gc.collect()
    assert all(c.signal.listener_count == 0 for c in controllers)


def test_a_dependent_with_a_listener_is_kept_by_its_sources() -> None:
    """ABT-ANY-1: as in the DOM, a pending dependent with listeners lives while a source can abort it.

    Once its listener is removed, nothing keeps it, and its source lets go.
    """
    controller = AbortController()
    seen: list[object] = []
    AbortSignal.any([controller.signal]).add_listener(lambda signal: seen.append(signal.reason))
    other = AbortController()
    remove = AbortSignal.any([other.signal]).add_listener(_ignore)
    gc.collect()
    controller.abort("why")
    assert seen == ["why"]
    assert other.signal.listener_count == 1
    remove()
    gc.collect()
    assert other.signal.listener_count == 0


def test_a_source_gives_its_reason_to_its_dependents_before_any_listener_runs() -> None:
    """ABT-ANY-1: as in the DOM, dependents have aborted when the source's first listener runs.

    Then the source's listeners run, then the dependent's.
    """
    controller = AbortController()
    combined = AbortSignal.any([controller.signal])
    seen: list[str] = []
    controller.signal.add_listener(lambda _s: seen.append(f"source, combined {combined!r}"))
    combined.add_listener(lambda signal: seen.append(f"combined, reason {signal.reason}"))
    controller.signal.add_listener(lambda _s: seen.append("source again"))
    controller.abort("why")
    assert seen == [
        "source, combined <AbortSignal aborted, reason='why'>",
        "source again",
        "combined, reason why",
    ]


def test_an_interrupt_in_a_source_listener_waits_for_the_dependents_listeners() -> None:
    """A BaseException is re-raised after every listener ran, the dependents' included."""
    controller = AbortController()
    combined = AbortSignal.any([controller.signal])
    calls: list[AbortSignal] = []

    def interrupt(_signal: AbortSignal) -> None:
        raise KeyboardInterrupt

    controller.signal.add_listener(interrupt)
    combined.add_listener(calls.append)
    with pytest.raises(KeyboardInterrupt):
        controller.abort()
    assert calls == [combined]


# ABT-TIMEOUT-1: the timer lives as long as someone can observe the signal.


def test_a_timeout_with_a_listener_fires_though_nothing_else_holds_it() -> None:
    """ABT-TIMEOUT-1: as in the DOM, a timeout signal with a listener keeps its timer.

    So does a combined signal of it with a listener: both fire, unreferenced.
    """

    async def main() -> None:
        fired: list[str] = []
        done = asyncio.Event()

        def note(name: str) -> Callable[[AbortSignal], None]:
            def listener(signal: AbortSignal) -> None:
                assert isinstance(signal.reason, TimeoutError)
                fired.append(name)
                if len(fired) == 2:
                    done.set()

            return listener

        AbortSignal.timeout(0.01).add_listener(note("timeout"))
        AbortSignal.any([AbortSignal.timeout(0.01)]).add_listener(note("any"))
        gc.collect()
        async with collecting():
            await done.wait()
        assert sorted(fired) == ["any", "timeout"]

    run(main())


def test_timeouts_nobody_can_observe_cancel_their_timers() -> None:
    """ABT-TIMEOUT-1: 20,000 timeouts on settled asks leave no timer and no memory behind.

    Each is used as an ask uses it (a listener added, then removed), half of
    them alone and half combined with a long-lived signal, then dropped. The
    loop's timer heap goes back to its size before, and tracemalloc sees less
    than 100 bytes per timeout kept (keeping every timer costs about 500).
    """
    count = 20_000

    async def main() -> None:
        user = AbortController()
        gc.collect()
        before = _timers()
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            for _ in range(count // 2):
                AbortSignal.timeout(300).add_listener(_ignore)()
                AbortSignal.any([AbortSignal.timeout(300), user.signal]).add_listener(_ignore)()
            gc.collect()
            await asyncio.sleep(0)  # the loop drops cancelled timers from its heap
            await asyncio.sleep(0)
            kept = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert _timers() == before
        assert kept < 100 * count, f"{kept} bytes kept"
        assert user.signal.listener_count == 0

    run(main(), bound=60)  # 20,000 timeouts under tracemalloc: seconds of CPU


def test_timeout_inf_never_fires_and_schedules_nothing() -> None:
    """ABT-TIMEOUT-1: ``inf`` means no deadline; any real number (not a bool) is a delay."""

    async def main() -> None:
        before = _timers()
        never = AbortSignal.timeout(math.inf)
        assert _timers() == before
        fraction: Any = Fraction(1, 1000)
        signals = [AbortSignal.timeout(0), AbortSignal.timeout(fraction)]
        assert _timers() == before + 2
        # Every listener before any wait: the 1 ms timer may fire while the first waits.
        fired = [asyncio.Event() for _ in signals]
        for signal, event in zip(signals, fired, strict=True):
            signal.add_listener(_setter(event))
        for signal, event in zip(signals, fired, strict=True):
            await event.wait()
            assert isinstance(signal.reason, TimeoutError)
        assert not never.aborted

    run(main())


@pytest.mark.parametrize(
    ("seconds", "error"),
    [
        (-1, ValueError),
        (-0.001, ValueError),
        (-math.inf, ValueError),
        (math.nan, ValueError),
        (True, TypeError),
        (False, TypeError),
        ("1", TypeError),
        (None, TypeError),
    ],
)
def test_timeout_checks_its_argument_first(seconds: Any, error: type[Exception]) -> None:
    """ABT-TIMEOUT-1: NaN and negatives are ValueErrors, bools and non-numbers TypeErrors.

    The message names the parameter and the value, and the check comes
    before the need for a running loop.
    """
    with pytest.raises(error) as raised:
        AbortSignal.timeout(seconds)
    assert "timeout seconds" in str(raised.value)
    assert repr(seconds) in str(raised.value)


# ABT-REPORT-1: a raising listener is reported where the default hook accepts it.


def test_a_raising_listener_is_reported_without_pytest() -> None:
    """ABT-REPORT-1: under the default sys.unraisablehook, abort() returns and reports on stderr.

    Outside and inside a running loop, later listeners still run, and stderr
    has the error with its traceback.
    """
    script = textwrap.dedent(
        """
        import asyncio
        from dsh_user_interaction import AbortController

        def bad(signal):
            raise ValueError("listener bug")

        def abort_one(where):
            controller = AbortController()
            calls = []
            controller.signal.add_listener(bad)
            controller.signal.add_listener(lambda signal: calls.append(where))
            controller.abort()
            print("returned", calls)

        async def main():
            abort_one("in a loop")

        abort_one("no loop")
        asyncio.run(main())
        """
    )
    package_root = Path(dsh_user_interaction.__file__).parent.parent
    path = os.pathsep.join([str(package_root), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=BOUND,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["returned ['no loop']", "returned ['in a loop']"]
    assert result.stderr.count("Exception ignored in abort signal listener: <function bad") == 2
    assert result.stderr.count("Traceback (most recent call last):") == 2
    assert result.stderr.count(", in bad\n") == 2
    assert result.stderr.count("ValueError: listener bug") == 2
    assert "TypeError" not in result.stderr


def test_a_failing_unraisable_hook_does_not_break_the_abort(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ABT-REPORT-1: as in CPython, a hook that raises is reported by the default hook."""

    def broken(_unraisable: object) -> None:
        raise RuntimeError("hook bug")

    monkeypatch.setattr(sys, "unraisablehook", broken)
    controller = AbortController()
    calls: list[str] = []

    def bad(_signal: AbortSignal) -> None:
        raise ValueError("listener bug")

    controller.signal.add_listener(bad)
    controller.signal.add_listener(lambda _s: calls.append("after"))
    controller.abort()
    assert calls == ["after"]
    err = capsys.readouterr().err
    assert "Exception ignored in sys.unraisablehook" in err
    assert "RuntimeError: hook bug" in err


# Details of listeners and reasons.


@example([[1], []])
@given(st.lists(st.lists(st.integers(0, 9), max_size=3), min_size=1, max_size=10))
def test_a_listener_removed_during_the_abort_is_skipped(plan: list[list[int]]) -> None:
    """ABT-ONCE-1: as in the DOM, a listener that an earlier one removes never runs.

    Listener ``i`` removes the listeners ``plan[i]`` (modulo their number) when it runs.
    """
    controller = AbortController()
    calls: list[int] = []
    removers: list[Callable[[], None]] = []

    def listener(number: int, targets: list[int]) -> Callable[[AbortSignal], None]:
        def call(_signal: AbortSignal) -> None:
            calls.append(number)
            for target in targets:
                removers[target % len(plan)]()

        return call

    removers.extend(
        controller.signal.add_listener(listener(i, targets)) for i, targets in enumerate(plan)
    )
    controller.abort()
    expected: list[int] = []
    removed: set[int] = set()
    for number, targets in enumerate(plan):
        if number not in removed:
            expected.append(number)
            removed.update(target % len(plan) for target in targets)
    assert calls == expected
    assert controller.signal.listener_count == 0


@pytest.mark.parametrize("raised_before", [False, True])
def test_throw_if_aborted_raises_the_same_reason_without_growing_its_traceback(
    raised_before: bool,
) -> None:
    """The reason is raised as the same object each time, and its traceback keeps its length.

    It keeps the frames it had when the signal aborted.
    """
    reason = KeyError("k")
    if raised_before:
        try:
            raise reason
        except KeyError:
            pass
    origin = traceback.extract_tb(reason.__traceback__)
    controller = AbortController()
    controller.abort(reason)
    depths: set[int] = set()
    for _ in range(50):
        with pytest.raises(KeyError) as raised:
            controller.signal.throw_if_aborted()
        assert raised.value is reason
        frames = traceback.extract_tb(reason.__traceback__)
        assert frames[len(frames) - len(origin) :] == origin
        depths.add(len(frames))
    assert len(depths) == 1
    assert controller.signal.reason is reason
