"""Driving the web chat page in Debian's Chromium: one browser per test, a page, signing in."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

CHROMIUM_ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"]
ALICE_TOKEN = "alice-token-123"


@contextlib.asynccontextmanager
async def browser_page(chromium: str, **page_options: Any) -> AsyncIterator[Any]:
    """A new page in a headless Chromium started for the test (closed after it)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield await browser.new_page(**page_options)
        finally:
            await browser.close()


async def sign_in(page: Any, url: str, token: str = ALICE_TOKEN) -> None:
    """Open the chat page at ``url`` and enter ``token`` (the page then lists the sessions)."""
    await page.goto(url + "/")
    await page.fill("#token", token)
    await page.dispatch_event("#token", "change")


async def start_session(page: Any, agent: str) -> None:
    """Once signed in: wait for ``agent`` in the list, start a session, see it listed."""
    from playwright.async_api import expect

    await expect(page.locator("#agent option")).to_have_text([agent])
    await page.click("#new")
    await expect(page.locator("#sessions li")).to_have_count(1)
