"""The terminal shows a request's deadline and its questions' defaults, and keeps no clock after.

A request with a ``deadline`` shows the time left under the status line, in
the core's words (``countdown_text``), redrawn as the seconds change; a
question with a ``default`` names it under the question (``default_text``).
The screen's clock is the test's (:class:`_Clock`, in place of
:func:`time.time` where the terminal reads the time), so what it shows
depends on no machine's speed; the service's deadline is real, and far
enough ahead (:func:`~tests.helpers.patience`) for the screen to be drawn
first on a busy machine, so the file takes a second or two of wall clock and
almost no CPU.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any, NoReturn

import pytest

import dsh_user_interaction._deadline as deadline_module
import dsh_user_interaction.extra.terminal._provider as provider_module
from dsh_user_interaction import (
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
    countdown_text,
    deadline_of,
    default_text,
)
from dsh_user_interaction.extra.terminal import TerminalProvider
from dsh_user_interaction.extra.terminal._provider import CLOCK_TASK
from dsh_user_interaction.extra.terminal.testing import TerminalDriver, make_subject
from dsh_user_interaction_conformance import Nothing

from .helpers import patience, run

PAGE_UP = "\x1b[5~"

_DEPLOY: AskUserQuestionItem = {
    "id": "go",
    "question": "Deploy now?",
    "options": [{"label": "Wait (Recommended)"}, {"label": "Deploy"}],
    "default": {"selected": ["Wait (Recommended)"]},
}
_TARGETS: AskUserQuestionItem = {
    "id": "targets",
    "question": "Which targets?",
    "multiSelect": True,
    "options": [{"label": "tests"}, {"label": "docs"}],
    "default": {"selected": ["tests", "docs"], "custom": "lint \x1b[31m"},
}
_PLAIN: AskUserQuestionItem = {
    "id": "mode",
    "question": "Which mode?",
    "options": [{"label": "Fast"}, {"label": "Safe"}],
}


class _Clock:
    """The time the terminal reads, set by the test: it moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now

    def request(self, seconds: float, *questions: AskUserQuestionItem) -> AskUserQuestionRequest:
        """A request of *questions* whose deadline is *seconds* after this clock's time."""
        return {"questions": list(questions), "deadline": self.now + seconds}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    """The terminal's clock, stopped at the real time: the countdown shows what the test says.

    Its redraws still come on the loop's real timers; only the time they
    show is the test's.
    """
    stopped = _Clock()
    fake = SimpleNamespace(time=stopped.time)
    monkeypatch.setattr(provider_module, "time", fake)
    monkeypatch.setattr(deadline_module, "time", fake)
    return stopped


def _in(seconds: float, *questions: AskUserQuestionItem) -> AskUserQuestionRequest:
    """A request of *questions* whose deadline is *seconds* from now (the real time)."""
    return {"questions": list(questions), "deadline": time.time() + seconds}


def _seconds(request: AskUserQuestionRequest, line: str) -> int | None:
    """The whole seconds left that *line* shows as *request*'s countdown (0: time is up).

    ``None`` when it is no countdown of *request*'s, in the core's words, of
    at most 1000 s.
    """
    deadline = deadline_of(request)
    assert deadline is not None
    return next(
        (left for left in range(1000) if countdown_text(request, now=deadline - left) == line),
        None,
    )


def _default(*selected: str, custom: str | None = None) -> str | None:
    """The line that names a default of plain *selected* labels and *custom* text."""
    default: dict[str, object] = {"selected": list(selected)}
    if custom is not None:
        default["custom"] = custom
    return default_text({"default": default})


def _clocks() -> list[asyncio.Task[Any]]:
    """The loop's countdown tasks that have not ended."""
    return [t for t in asyncio.all_tasks() if t.get_name() == CLOCK_TASK and not t.done()]


def _live_timers() -> int:
    """How many timers the running loop holds that are not cancelled.

    asyncio's default loop keeps them in ``_scheduled`` (see ``test_abort``).
    """
    heap: list[asyncio.TimerHandle] = vars(asyncio.get_running_loop())["_scheduled"]
    return sum(1 for handle in heap if not handle.cancelled())


async def _until(check: Callable[[], bool], within: float, what: str) -> None:
    """Poll *check* every 20 ms; fail when it has not held after :func:`patience` for *within*.

    *within* is what it takes at most on the idle machine; the bound only ends a red run.
    """
    loop = asyncio.get_running_loop()
    bound = patience(within)
    end = loop.time() + bound
    while not check():
        assert loop.time() < end, f"{what} did not happen within {bound:.1f} s"
        await asyncio.sleep(0.02)


@asynccontextmanager
async def _terminal(**kwargs: Any) -> AsyncGenerator[tuple[TerminalProvider, TerminalDriver]]:
    subject = make_subject(**kwargs)
    provider, driver = subject.provider, subject.driver
    assert isinstance(provider, TerminalProvider)
    assert isinstance(driver, TerminalDriver)
    try:
        yield provider, driver
    finally:
        assert subject.aclose is not None
        await subject.aclose()


async def _lines(driver: TerminalDriver, request: AskUserQuestionRequest) -> list[str]:
    """The screen's lines once *request* is shown and the screen has settled."""
    await asyncio.wait_for(driver.perform(request, Nothing()), patience(2))
    await driver.settled()
    return driver.terminal.text().splitlines()


async def _ended(task: asyncio.Future[Any]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


# -- what the screen shows --------------------------------------------------------


def test_the_countdown_shows_under_the_status_line_and_counts_down_to_time_is_up(
    clock: _Clock,
) -> None:
    """The time left is the second line, redrawn as each second passes, until ``Time is up``.

    The test moves the terminal's clock a second at a time once the screen
    shows the last one; each is redrawn without a key pressed, and at time
    up the countdown stops redrawing.
    """
    request = clock.request(2.5, _DEPLOY)
    deadline = deadline_of(request)
    assert deadline is not None

    async def main() -> list[int | None]:
        async with _terminal(columns=72, rows=12) as (provider, driver):
            task = asyncio.ensure_future(provider.ask(request))
            try:
                lines = await _lines(driver, request)
                assert lines[0].startswith("ask #1 | question 1/1")
                seen = [_seconds(request, lines[1])]
                for left in (1.5, 0.5, -0.5):
                    clock.now = deadline - left
                    shows = math.ceil(max(left, 0))

                    def redrawn(shows: int = shows) -> bool:
                        return _seconds(request, driver.terminal.lines[1].rstrip()) == shows

                    # The clock's next redraw comes within a second of the real time.
                    await _until(redrawn, 1.5, f"the countdown showing {shows}")
                    seen.append(shows)
                await _until(lambda: _clocks() == [], 1.5, "the clock stopping at time up")
                return seen
            finally:
                await _ended(task)

    assert run(main()) == [3, 2, 1, 0]


def test_a_question_with_a_default_names_it_under_the_question(clock: _Clock) -> None:
    """``default_text`` under each question; model text in it is escaped, never written raw."""
    request = clock.request(600, _DEPLOY, _TARGETS)

    async def main() -> tuple[list[str], list[str]]:
        async with _terminal(columns=72, rows=14) as (provider, driver):
            task = asyncio.ensure_future(provider.ask(request))
            try:
                first = await _lines(driver, request)
                driver.keyboard.send_text("1")  # answer the first; the second comes up
                await driver.settled()
                return first, driver.terminal.text().splitlines()
            finally:
                await _ended(task)

    first, second = run(main())
    assert _seconds(request, first[1]) == 600
    assert _seconds(request, second[1]) == 600
    assert first[2:4] == ["Deploy now?", _default("Wait (Recommended)")]
    # The ESC of the model's text is drawn as an escape, never written raw.
    assert second[2:4] == ["Which targets?", _default("tests", "docs", custom="lint \\x1b[31m")]


def _raise(self: object, *args: object) -> NoReturn:
    raise RuntimeError("a hostile method ran")


class _Loud(str):
    """A str subclass whose reading methods raise: a default's labels are model text."""

    __slots__ = ()

    __str__ = _raise
    __repr__ = _raise
    __format__ = _raise
    __hash__ = _raise
    __eq__ = _raise
    __len__ = _raise
    __iter__ = _raise


def test_a_default_of_hostile_strs_is_drawn_as_their_characters() -> None:
    """No override of a str subclass in a default runs; its characters are shown, escaped."""
    label, custom = _Loud("Wait\u202e"), _Loud("later")
    question: AskUserQuestionItem = {
        "id": "go",
        "question": "Deploy now?",
        "options": [{"label": label}],
        "default": {"selected": [label], "custom": custom},
    }

    async def main() -> list[str]:
        async with _terminal(columns=72, rows=12) as (provider, driver):
            request = _in(600, question)
            task = asyncio.ensure_future(provider.ask(request))
            try:
                return await _lines(driver, request)
            finally:
                await _ended(task)

    lines = run(main())
    assert lines[3] == _default("Wait<U+202E>", custom="later")


def test_a_default_without_a_deadline_is_named_without_a_countdown() -> None:
    """A direct ask may carry a default without a deadline: it is named, and no time is shown."""

    async def main() -> list[str]:
        async with _terminal(columns=72, rows=12) as (provider, driver):
            request: AskUserQuestionRequest = {"questions": [_DEPLOY]}
            task = asyncio.ensure_future(provider.ask(request))
            try:
                lines = await _lines(driver, request)
                assert _clocks() == []
                return lines
            finally:
                await _ended(task)

    lines = run(main())
    assert lines[1:3] == ["Deploy now?", _default("Wait (Recommended)")]


def test_a_request_without_a_deadline_looks_as_before_and_runs_no_clock() -> None:
    """No countdown line, no default line, and no task redrawing the screen."""

    async def main() -> tuple[list[str], int]:
        async with _terminal(columns=72, rows=12) as (provider, driver):
            request: AskUserQuestionRequest = {"questions": [_PLAIN]}
            task = asyncio.ensure_future(provider.ask(request))
            try:
                lines = await _lines(driver, request)
                clocks = len(_clocks())
                return lines, clocks
            finally:
                await _ended(task)

    lines, clocks = run(main())
    assert lines == [
        "ask #1 | question 1/1 | 1 unanswered",
        "Which mode?",
        "> 1. Fast",
        "  2. Safe",
        *[""] * 6,
        "Up/Down move | Enter or 1-9 choose | t type | s skip",
        "Left/Right question | Esc dismiss",
    ]
    assert clocks == 0


def test_the_clock_runs_only_while_a_batch_with_a_deadline_is_shown(clock: _Clock) -> None:
    """Paging from a batch without a deadline to one with it starts the clock; back stops it."""

    async def main() -> None:
        async with _terminal(columns=72, rows=12) as (provider, driver):
            plain: AskUserQuestionRequest = {"questions": [_PLAIN]}
            timed = clock.request(600, _DEPLOY)
            tasks = [asyncio.ensure_future(provider.ask(r)) for r in (plain, timed)]
            try:
                lines = await _lines(driver, plain)
                assert lines[1] == "Which mode?"
                assert _clocks() == []
                lines = await _lines(driver, timed)  # the driver pages down to it
                assert lines[0].startswith("ask #2 ")
                assert _seconds(timed, lines[1]) == 600
                assert len(_clocks()) == 1
                driver.keyboard.send_text(PAGE_UP)
                await driver.settled()
                assert driver.terminal.lines[1].rstrip() == "Which mode?"
                assert _clocks() == []
            finally:
                for task in tasks:
                    await _ended(task)

    run(main())


# -- the service's deadline ends the ask ----------------------------------------


@pytest.mark.parametrize("defaults", [True, False], ids=["defaults-answer", "times-out"])
def test_the_services_deadline_ends_the_ask_and_leaves_nothing_behind(
    defaults: bool, clock: _Clock
) -> None:
    """POL-DEFAULT-1, POL-TIMEOUT-1: at the deadline the service cancels the terminal's ask.

    The screen shows the countdown until then; afterwards the application
    has left the terminal, and no task and no timer of the provider's is left.
    The service's deadline is real: a second ahead on the idle machine (the
    screen is drawn in a tenth of that), later on a busy one, so the screen
    is drawn before it passes.
    """
    question: AskUserQuestionItem = _DEPLOY if defaults else _PLAIN
    ahead = patience(0.1)

    async def main() -> None:
        async with _terminal(columns=72, rows=12) as (provider, driver):
            service = UserInteractionService()
            timers = _live_timers()  # the test's own bound is one
            with service.register_provider(provider):
                clock.now = time.time()  # the screen's clock, stopped at the real time now
                request = clock.request(ahead, question)
                task = asyncio.ensure_future(service.ask(request))
                lines = await _lines(driver, request)
                assert _seconds(request, lines[1]) == math.ceil(ahead)
                assert len(_clocks()) == 1
                if defaults:
                    answer = await task
                    assert answer == {
                        "answers": [{"id": "go", "selected": ["Wait (Recommended)"]}],
                        "defaulted": True,
                    }
                else:
                    with pytest.raises(UserInteractionError) as caught:
                        await task
                    assert caught.value.code is ErrorCode.ASK_ABORTED
                    assert caught.value.timed_out
                assert provider.pending == 0
                # The application leaves the terminal within a few loop iterations.
                this = asyncio.current_task()
                await _until(lambda: asyncio.all_tasks() == {this}, 1.0, "every task ending")
                assert _live_timers() == timers
                assert driver.terminal.text() == ""

    run(main())
