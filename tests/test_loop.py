"""The bounded example runner: whatever the scenario does, it returns in a fixed time."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from dsh_user_interaction_conformance._loop import LoopResult, run_bounded

LIMIT = 0.5
BOUND = 0.1
#: The most any run may take: the limit, five bounds, and the second of slack.
WORST = LIMIT + 5 * BOUND + 1.0


async def _nothing() -> None:
    return None


async def _stubborn() -> None:
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue


async def _answers() -> object:
    return 42


async def _hangs() -> None:
    await asyncio.Event().wait()


async def _swallows() -> None:
    await _stubborn()


async def _blocks() -> None:
    time.sleep(5)  # noqa: ASYNC251 - the flaw under test


async def _leaks() -> None:
    asyncio.get_running_loop().create_task(_stubborn())
    await asyncio.sleep(0)


async def _orphans_an_error() -> None:
    async def fails() -> None:
        raise ValueError

    task = asyncio.ensure_future(fails())
    await asyncio.sleep(0)
    del task  # dropped without looking at its exception


def _run(scenario: Callable[[], Coroutine[Any, Any, object]]) -> tuple[LoopResult, float]:
    started = time.monotonic()
    result = run_bounded(scenario, teardown=_nothing, limit=LIMIT, bound=BOUND)
    return result, time.monotonic() - started


def test_a_scenario_that_returns_is_settled_with_its_value() -> None:
    """A well-behaved scenario settles at once, with its value, and leaves nothing."""
    result, seconds = _run(_answers)
    assert (result.settled, result.value, result.leftovers) == (True, 42, [])
    assert not result.abandoned
    assert seconds < LIMIT


@pytest.mark.parametrize(
    ("scenario", "settled", "ignored_cancel", "abandoned", "leftovers"),
    [
        (_hangs, False, False, False, False),
        (_swallows, False, True, False, True),
        (_blocks, False, False, True, False),
        (_leaks, True, False, False, True),
    ],
)
def test_every_hostile_scenario_ends_in_bounded_time_and_says_why(
    scenario: Callable[[], Coroutine[Any, Any, object]],
    settled: bool,
    ignored_cancel: bool,
    abandoned: bool,
    leftovers: bool,
) -> None:
    """Hangs, swallowed cancellation, a blocked loop and stubborn tasks all end, classified."""
    result, seconds = _run(scenario)
    assert seconds < WORST + 0.5
    assert result.settled is settled
    assert result.ignored_cancel is ignored_cancel
    assert result.abandoned is abandoned
    assert bool(result.leftovers) is leftovers
    if abandoned:
        assert result.stall > LIMIT


def test_a_blocking_call_is_measured_as_a_stall() -> None:
    """A blocking call shorter than the patience is still seen, by the heartbeat."""

    async def blocks_briefly() -> None:
        time.sleep(0.3)  # noqa: ASYNC251 - the flaw under test

    result, _ = _run(blocks_briefly)
    assert result.settled
    assert result.stall >= 0.25


def test_unretrieved_errors_are_kept_off_the_log() -> None:
    """An exception nobody retrieved is recorded on the result, not logged over the report."""
    result, _ = _run(_orphans_an_error)
    gc.collect()
    assert result.loop_errors == ["Task exception was never retrieved"]
