"""The store suite's races: two calls "at once" take their steps in the order the example drew.

``interleaved`` (``_store/_loop.py``, Rule 4) is what makes a race replay: the
same turns give the same interleaving in every run, whatever the threads or
the machine do; a call that waits on the other does not hang the race; a
cancellation reaches the calls; and what each call returned or raised comes
back as ``gather(..., return_exceptions=True)`` gives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction_conformance._store._loop import interleaved

from .helpers import run


async def _stepping(name: str, steps: int, seen: list[str], *, in_thread: bool) -> str:
    """A call of *steps* steps, each awaiting a thread's work (or a bare loop step)."""
    loop = asyncio.get_running_loop()
    for step in range(steps):
        seen.append(f"{name}{step}")
        if in_thread:
            await loop.run_in_executor(None, lambda: None)
        else:
            await asyncio.sleep(0)
    return name


def _order(turns: Sequence[int], *, in_thread: bool) -> list[str]:
    seen: list[str] = []

    async def main() -> list[object]:
        calls = [_stepping(n, 3, seen, in_thread=in_thread) for n in "ab"]
        return await interleaved(calls, turns)

    assert run(main()) == ["a", "b"]
    return seen


@given(st.lists(st.integers(0, 1), max_size=8))
def test_the_same_turns_give_the_same_interleaving_whatever_the_threads_do(
    turns: list[int],
) -> None:
    """Steps that wait on a thread interleave exactly as steps that wait on nothing do."""
    seen = _order(turns, in_thread=True)
    assert seen == _order(turns, in_thread=False)
    assert sorted(seen) == ["a0", "a1", "a2", "b0", "b1", "b2"]


def test_zero_hands_the_step_on_and_one_keeps_it() -> None:
    """0 alternates the calls, 1 lets the same call go on; past the turns, they alternate."""
    assert _order([0, 0, 0, 0, 0, 0], in_thread=True) == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert _order([0, 1, 1], in_thread=True) == ["a0", "a1", "a2", "b0", "b1", "b2"]
    assert _order([], in_thread=True) == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_a_call_that_waits_on_the_other_frees_the_race_and_both_end() -> None:
    """A call blocked on an event only the other sets: after the patience, both run freely."""

    async def main() -> list[object]:
        released = asyncio.Event()

        async def waits() -> str:
            await released.wait()  # one step that lasts until the other call's step
            return "waited"

        async def releases() -> str:
            await asyncio.sleep(0)
            released.set()
            return "released"

        return await interleaved([waits(), releases()], [0, 0], patience=0.05)

    assert run(main(), bound=5) == ["waited", "released"]


def test_errors_come_back_in_place_and_a_cancellation_reaches_the_calls() -> None:
    """A raising call's error is its result; cancelling the race cancels both calls."""

    async def fails() -> str:
        await asyncio.sleep(0)
        raise LookupError("no such ask")

    async def answers() -> str:
        await asyncio.sleep(0)
        return "ok"

    async def errors() -> list[object]:
        return await interleaved([fails(), answers()], [])

    first, second = run(errors())
    assert isinstance(first, LookupError)
    assert second == "ok"

    cancelled: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    async def cancels() -> None:
        race = asyncio.ensure_future(interleaved([forever("a"), forever("b")], [], patience=0.05))
        await asyncio.sleep(0.2)
        race.cancel()
        with pytest.raises(asyncio.CancelledError):
            await race

    run(cancels(), bound=5)
    assert sorted(cancelled) == ["a", "b"]
