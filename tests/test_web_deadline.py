"""The web page shows a request's deadline and its questions' defaults.

What the page is sent (the fast tier, over real HTTP and WebSockets, as in
``test_web.py``): the countdown in the core's words (``countdown_text``) with
the seconds left as of sending, never the deadline itself, and each default
line (``default_text``). What the page shows of it (the slow tier, in
Chromium, as in ``test_web_browser.py``): a countdown line that goes down
each second and ends at "Time is up", and the default line under its
question.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest
from playwright.async_api import Page, expect

from dsh_user_interaction import (
    AbortController,
    AbortSignal,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
    countdown_text,
    default_text,
)
from dsh_user_interaction.extra.web import WebProvider

from .helpers import patience
from .test_web import door, request, started
from .test_web import run as run_fast
from .test_web_browser import browser, opened
from .test_web_browser import run as run_in_browser

#: A question the application gave a default (all of its questions have one).
WAIT: Any = {
    "id": "go",
    "header": "Deploy",
    "question": "Deploy now?",
    "options": [{"label": "Wait (Recommended)"}, {"label": "Deploy"}],
    "default": {"selected": ["Wait (Recommended)"]},
}
TARGETS: Any = {
    "id": "targets",
    "question": "Which targets?",
    "multiSelect": True,
    "options": [{"label": "tests"}, {"label": "<b>docs</b>"}],
    "default": {"selected": ["tests", "<b>docs</b>"], "custom": "lint"},
}
CLOCK = "{clock}"


def test_the_page_is_sent_the_seconds_left_and_the_default_lines_in_the_cores_words() -> None:
    async def main() -> None:
        deadline = time.time() + 90
        asked = request(WAIT, TARGETS, deadline=deadline)
        async with door() as d, d.page() as first:
            task = await started(d.provider, asked)
            shown = (await first.until("ask"))["ask"]
            countdown = shown["countdown"]
            # The seconds left as of sending, never the deadline: the page's clock may differ.
            assert set(countdown) == {"template", "timeUp", "secondsLeft"}
            assert 85 < countdown["secondsLeft"] <= 90
            assert deadline not in countdown.values()
            # The page fills in the clock; the words are countdown_text's, whatever the time.
            for left, clock in [(75, "1:15"), (0.2, "0:01"), (3725, "1:02:05")]:
                expected = countdown_text(asked, now=deadline - left)
                assert countdown["template"].replace(CLOCK, clock) == expected
            assert countdown["timeUp"] == countdown_text(asked, now=deadline) == "Time is up"
            assert [q["defaultText"] for q in shown["questions"]] == [
                default_text(WAIT),
                default_text(TARGETS),
            ]
            assert shown["questions"][1]["defaultText"] == 'Default: tests, <b>docs</b>, and "lint"'
            # A page that comes later is sent the seconds left as of then.
            await asyncio.sleep(0.2)
            async with d.page() as later:
                again = (await later.until("pending"))["asks"][0]["countdown"]
                assert again["secondsLeft"] <= countdown["secondsLeft"] - 0.15
            task.cancel()

    run_fast(main)


def test_without_a_deadline_or_defaults_the_page_is_sent_neither() -> None:
    async def main() -> None:
        plain: Any = {k: v for k, v in WAIT.items() if k != "default"}
        no_defaults = request(plain, deadline=time.time() + 60)
        passed = request(WAIT, deadline=time.time() - 5)
        async with door() as d, d.page() as page:
            tasks = [await started(d.provider, request(plain), 1)]
            tasks.append(await started(d.provider, no_defaults, 2))
            tasks.append(await started(d.provider, passed, 3))
            views = [(await page.until("ask"))["ask"] for _ in tasks]
            assert "countdown" not in views[0]
            assert "defaultText" not in views[0]["questions"][0]
            assert views[1]["countdown"]["template"] == f"{CLOCK} left to answer"
            assert "defaultText" not in views[1]["questions"][0]
            assert views[2]["countdown"]["secondsLeft"] == 0.0
            for task in tasks:
                task.cancel()

    run_fast(main)


def test_at_the_deadline_the_service_answers_with_the_defaults_and_the_pages_hear_so() -> None:
    """With a default for every question, the pages hear ``defaulted``, as the countdown said."""

    async def main() -> None:
        service = UserInteractionService()
        async with door() as d, d.page() as page:
            service.register_provider(d.provider)
            answer = await service.ask(request(WAIT, deadline=time.time() + 0.3))
            assert answer == {
                "answers": [{"id": "go", "selected": ["Wait (Recommended)"]}],
                "defaulted": True,
            }
            settled = await page.until("settled")
            assert (settled["how"], settled["by"]) == ("defaulted", None)
            nothing: list[str] = []
            late = await d.post("/asks/a1/answer", {"answers": [{"id": "go", "selected": nothing}]})
            assert (late.status_code, late.json()["how"]) == (409, "defaulted")

    run_fast(main)


def test_time_running_out_without_defaults_or_on_a_timeout_signal_reads_as_timed_out() -> None:
    """A deadline without defaults, or a timeout signal, is ``timed_out``; any other stop ``withdrawn``."""
    plain = {k: v for k, v in WAIT.items() if k != "default"}

    async def main() -> None:
        service = UserInteractionService()
        async with door() as d, d.page() as page:
            service.register_provider(d.provider)
            with pytest.raises(UserInteractionError) as raised:
                await service.ask(request(plain, deadline=time.time() + 0.2))
            assert raised.value.code is ErrorCode.ASK_ABORTED
            assert (await page.until("settled"))["how"] == "timed_out"
            # A timeout signal, with defaults and a far deadline: the signal wins, no defaults.
            timing_out = request(WAIT, deadline=time.time() + 60, signal=AbortSignal.timeout(0.1))
            with pytest.raises(UserInteractionError):
                await service.ask(timing_out)
            assert (await page.until("settled"))["how"] == "timed_out"
            # Stopped before its deadline, for another reason: withdrawn, defaults or not.
            controller = AbortController()
            stopped = request(WAIT, deadline=time.time() + 60, signal=controller.signal)
            task = await started(d.provider, stopped)
            controller.abort()
            with pytest.raises(UserInteractionError):
                await task
            assert (await page.until("settled"))["how"] == "withdrawn"

    run_fast(main)


def _seconds(line: str) -> int:
    """The seconds a countdown line shows: ``0:03 left ...`` is 3."""
    found = re.match(r"(?:(\d+):)?(\d+):(\d\d) left to answer", line)
    assert found is not None, line
    hours, minutes, seconds = (int(part or 0) for part in found.groups())
    return hours * 3600 + minutes * 60 + seconds


@pytest.mark.slow
def test_the_page_counts_down_to_time_is_up_and_shows_the_defaults() -> None:
    async def main() -> None:
        async with WebProvider() as provider, browser() as chromium:
            # 3.5 s ahead on the idle machine, more on a busy one: the page is drawn first.
            soon: Any = request(WAIT, TARGETS, deadline=time.time() + patience(0.35))
            # More than an hour away, and without defaults: hours shown, and no "then".
            later: Any = {k: v for k, v in WAIT.items() if k != "default"} | {"header": "Later"}
            far: Any = request(later, deadline=time.time() + 3725)
            plain: Any = request({**later, "header": "Plain"})
            # The provider alone: no service withdraws the ask, so "Time is up" stays.
            asks = [asyncio.ensure_future(provider.ask(each)) for each in (soon, far, plain)]
            page: Page  # opened() yields Playwright's page, typed loosely there
            async with opened(provider, chromium) as page:
                card = page.get_by_role("article", name="Deploy", exact=True)
                timer = card.get_by_role("timer")
                running = re.compile(
                    r"(?:\d+:)?\d+:\d\d left to answer; then the defaults are used"
                )
                await expect(timer).to_have_text(running)
                first = await timer.inner_text()
                group = card.get_by_role("group", name="Deploy now?")
                await expect(group).to_have_accessible_description("Default: Wait (Recommended)")
                # Model text in a default is text, never markup.
                targets = card.get_by_role("group", name="Which targets?")
                shown = targets.get_by_text('Default: tests, <b>docs</b>, and "lint"', exact=True)
                await expect(shown).to_be_visible()

                far_line = page.get_by_role("article", name="Later").get_by_role("timer")
                far_text = await far_line.inner_text()
                assert re.fullmatch(r"1:0[12]:\d\d left to answer", far_text), far_text
                now = time.time()
                # Drawn within the last few seconds (ten on the idle machine).
                window = int(4 * patience(1.0))
                assert far_text in {countdown_text(far, now=now - k / 4) for k in range(window)}
                plain_card = page.get_by_role("article", name="Plain")
                assert await plain_card.get_by_role("timer").count() == 0
                assert await plain_card.get_by_text("Default:").count() == 0

                # It goes down, second by second, to "Time is up".
                await expect(timer).not_to_have_text(first)
                after = await timer.inner_text()
                assert after == "Time is up" or _seconds(after) < _seconds(first), after
                await expect(timer).to_have_text("Time is up", timeout=patience(0.5) * 1000)
                for each in asks:
                    each.cancel()

    run_in_browser(main)


@pytest.mark.slow
def test_the_recent_list_says_time_ran_out_and_whether_the_defaults_answered() -> None:
    """The page's log words the two ways time runs out, not as a withdrawal by the agent."""

    async def main() -> None:
        service = UserInteractionService()
        async with WebProvider() as provider, browser() as chromium:
            service.register_provider(provider)
            plain: Any = {k: v for k, v in WAIT.items() if k != "default"} | {"header": "Plain"}
            page: Page
            async with opened(provider, chromium) as page:
                log = page.get_by_role("log")
                for question, said in [
                    (WAIT, "Time ran out; the defaults were used"),
                    (plain, "Time ran out"),
                ]:
                    # A second ahead on the idle machine, more on a busy one: the card shows first.
                    asked = request(question, deadline=time.time() + patience(0.1))
                    pending = asyncio.ensure_future(service.ask(asked))
                    card = page.get_by_role("article", name=asked["questions"][0]["header"])
                    await card.wait_for()
                    await asyncio.gather(pending, return_exceptions=True)
                    await card.wait_for(state="detached")
                    await expect(log).to_contain_text(said)
                assert "Withdrawn" not in await log.inner_text()

    run_in_browser(main)
