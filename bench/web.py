"""The web provider: memory per pending ask, from a keystroke to ``ask()`` returning, 1,000 asks.

Measured: the memory a pending ask holds, the time from the human's Send to
``ask()`` returning, and the page with 1,000 asks pending.

``python -m bench web`` (with Playwright and Debian's Chromium) writes
``bench/results/web.json``. Each figure comes with a peer from the same run:

* memory per pending ask (``tracemalloc``, after ``gc.collect()``), against the
  reference's :class:`~dsh_user_interaction.ScriptedProvider` holding the
  same asks;
* Enter on the focused Send button in Chromium until ``ask()`` returns,
  against a POST of the same answer from Python (httpx) until it returns:
  the page's own share is the difference. Wall time, median and p99 over the
  rounds: the time spans three processes (this one, Chromium and
  Playwright's driver), so no one thread's CPU time covers it;
* the page with 1,000 asks pending: loading it until the last card is on
  screen, and one more ask until its card is on screen, against the same
  ask with nothing else pending.
"""

from __future__ import annotations

import asyncio
import gc
import json
import shutil
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from dsh_user_interaction import ScriptedProvider
from dsh_user_interaction.extra.web import Limits, WebProvider

RESULTS = Path(__file__).resolve().parent / "results"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _request(n: int) -> Any:
    return {
        "questions": [
            {
                "id": "q",
                "header": f"Ask {n}",
                "question": f"Deploy build {n}?",
                "options": [{"label": "Yes", "description": "Ship it."}, {"label": "No"}],
            }
        ]
    }


ANSWER: Any = {"answers": [{"id": "q", "selected": ["Yes"]}]}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _memory(asks: int) -> dict[str, float]:
    """Bytes held per pending ask: the web provider against a scripted one."""

    async def held(provider: Any) -> float:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tasks = [asyncio.ensure_future(provider.ask(_request(n))) for n in range(asks)]
        await asyncio.sleep(0.05)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return (after - before) / asks

    async with WebProvider() as web:
        web_bytes = await held(web)
    scripted_bytes = await held(ScriptedProvider())
    return {
        "web_bytes_per_ask": round(web_bytes),
        "scripted_bytes_per_ask": round(scripted_bytes),
        "ratio": round(web_bytes / scripted_bytes, 2),
    }


def _page_headers(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    base = f"http://{parts.netloc}"
    secret = parts.fragment.removeprefix("secret=")
    return base, {"x-dsh-secret": secret, "origin": base, "content-type": "application/json"}


async def _latency(rounds: int) -> dict[str, Any]:
    """A click on Send, and a POST from Python, until ``ask()`` returns; in ms."""
    from playwright.async_api import async_playwright

    clicks: list[float] = []
    posts: list[float] = []
    limits = Limits(rate=10_000.0, burst=10_000)
    async with WebProvider(limits=limits) as provider, async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM)
        page = await browser.new_page()
        await page.goto(provider.url)
        base, headers = _page_headers(provider.url)
        async with httpx.AsyncClient(base_url=base, headers=headers) as client:
            for n in range(rounds):
                # The page: pick and send, as a person does.
                asked = asyncio.ensure_future(provider.ask(_request(n)))
                card = page.get_by_role("article", name=f"Ask {n}")
                await card.get_by_role("radio", name="Yes").check()
                # Focused first, then Enter: a click would also time Playwright's own
                # wait for the button to hold still for two frames.
                await card.get_by_role("button", name="Send").focus()
                started = time.perf_counter()
                await page.keyboard.press("Enter")
                await asked
                clicks.append((time.perf_counter() - started) * 1000)
                # The peer: the same answer posted from here.
                asked = asyncio.ensure_future(provider.ask(_request(n)))
                while provider.pending_count == 0:  # noqa: ASYNC110 - polled from outside
                    await asyncio.sleep(0)
                ask_id = f"a{2 * n + 2}"
                started = time.perf_counter()
                sent = await client.post(f"/asks/{ask_id}/answer", content=json.dumps(ANSWER))
                sent.raise_for_status()  # a refused answer would leave the ask waiting
                await asked
                posts.append((time.perf_counter() - started) * 1000)
        await browser.close()
    return {
        "rounds": rounds,
        "click_ms": {
            "median": round(statistics.median(clicks), 2),
            "p99": round(_quantile(clicks, 0.99), 2),
        },
        "post_ms": {
            "median": round(statistics.median(posts), 2),
            "p99": round(_quantile(posts, 0.99), 2),
        },
        "ratio_of_medians": round(statistics.median(clicks) / statistics.median(posts), 2),
    }


async def until_pending(provider: WebProvider) -> None:
    """Until the ask just made is pending (it opens on the task's first step)."""
    before = provider.pending_count
    while provider.pending_count == before:  # noqa: ASYNC110 - polled from outside
        await asyncio.sleep(0)


async def _many(pending: int) -> dict[str, Any]:
    """The page with *pending* asks: loading it, and one more ask, against one ask alone; in ms."""
    from playwright.async_api import async_playwright

    async def one_more(provider: WebProvider, page: Any, n: int) -> float:
        started = time.perf_counter()
        asked = asyncio.ensure_future(provider.ask(_request(n)))
        await until_pending(provider)
        # By its ask id, not by role and name: a role query reads every card's name,
        # which would time Playwright's scan of 1,000 cards, not the page.
        ask_id = max(provider._board.asks, key=lambda a: int(a[1:]))  # noqa: SLF001
        await page.locator(f'article[data-ask-id="{ask_id}"]').wait_for()
        elapsed = (time.perf_counter() - started) * 1000
        asked.cancel()
        await asyncio.gather(asked, return_exceptions=True)
        return elapsed

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM)
        async with WebProvider() as alone:
            page = await browser.new_page()
            await page.goto(alone.url)
            await page.get_by_text("Nothing to answer right now.").wait_for()
            single = statistics.median([await one_more(alone, page, n) for n in range(5)])
            await page.close()
        async with WebProvider() as crowded:
            tasks = [asyncio.ensure_future(crowded.ask(_request(n))) for n in range(pending)]
            while crowded.pending_count < pending:  # noqa: ASYNC110 - polled from outside
                await asyncio.sleep(0.001)
            page = await browser.new_page()
            started = time.perf_counter()
            await page.goto(crowded.url)
            await page.locator(f'article[data-ask-id="a{pending}"]').wait_for()
            load = (time.perf_counter() - started) * 1000
            more = statistics.median([await one_more(crowded, page, pending + n) for n in range(5)])
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await browser.close()
    return {
        "pending": pending,
        "load_ms": round(load, 1),
        "one_more_ask_ms": round(more, 1),
        "one_ask_alone_ms": round(single, 1),
        "ratio_one_more_to_alone": round(more / single, 2),
    }


def main() -> dict[str, Any]:
    """All three measurements; written to ``bench/results/web.json``."""
    results = {
        "memory": asyncio.run(_memory(1000)),
        "latency": asyncio.run(_latency(100)),
        "many_pending": asyncio.run(_many(1000)),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "web.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
