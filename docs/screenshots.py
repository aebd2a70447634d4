"""Screenshots of the web provider's page for the docs: ``nox -s screenshots``.

Serves the demos' sample batch and a plan review through a real
:class:`~dsh_user_interaction.extra.web.WebProvider`, opens the page in
Debian's Chromium through Playwright at phone and desktop width, and writes
``docs/_static/web-*.png``. Run again after the page changes; the pictures
are kept in the repository, so the docs build needs no browser.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

from playwright.async_api import async_playwright

from dsh_user_interaction.extra._demo_request import DEMO_REQUEST
from dsh_user_interaction.extra.web import WebProvider

OUT = Path(__file__).resolve().parent / "_static"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: The sample batch's plan review, asked alone: a page shows it as a plan card.
PLAN: Any = {"questions": [q for q in DEMO_REQUEST["questions"] if q["id"] == "plan-review"]}
#: (file name, viewport width, viewport height, whole page)
SHOTS = [("web-phone.png", 360, 780, False), ("web-desktop.png", 1280, 900, False)]


async def main() -> list[Path]:
    """Shoot the page with a plan review and the sample batch pending; the files written."""
    written: list[Path] = []
    async with WebProvider(agent="planner") as provider, async_playwright() as driver:
        asks = [asyncio.ensure_future(provider.ask(r)) for r in (PLAN, DEMO_REQUEST)]
        browser = await driver.chromium.launch(executable_path=CHROMIUM)
        for name, width, height, whole in SHOTS:
            page = await browser.new_page(viewport={"width": width, "height": height})
            await page.goto(provider.url)
            await page.get_by_role("article").nth(1).wait_for()
            path = OUT / name
            await page.screenshot(path=str(path), full_page=whole)
            written.append(path)
            await page.close()
        await browser.close()
        for ask in asks:
            ask.cancel()
        await asyncio.gather(*asks, return_exceptions=True)
    return written


if __name__ == "__main__":
    for path in asyncio.run(main()):
        sys.stdout.write(f"wrote {path}\n")
