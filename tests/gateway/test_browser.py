"""The web chat page in a real browser (Playwright driving Debian's Chromium): send a message
and see the streamed reply, approve a confirmation, steer and stop a running turn."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.gateway.browser import browser_page, sign_in, start_session
from tests.gateway.helpers import Tools, make_agent, make_app, require_external, uvicorn_server

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture
def chromium() -> str:
    require_external("chromium", Path(CHROMIUM).exists(), "apt-get install -y chromium")
    try:
        import playwright  # noqa: F401
    except ImportError:
        require_external("playwright", False, "pip install playwright")
    return CHROMIUM


async def test_chat_page_streams_confirms_steers_and_stops(tmp_path: Path, chromium: str) -> None:
    from playwright.async_api import expect

    tools = Tools()
    agent = make_agent(tmp_path, tools)
    with uvicorn_server(make_app(agent)) as url:
        async with browser_page(chromium) as page:
            await sign_in(page, url)
            await start_session(page, "helper")

            # a message and its streamed reply
            await page.fill("#input", "hello")
            await page.press("#input", "Enter")
            reply = page.locator(".assistant").last
            await expect(reply).to_have_text("You said: hello. Streaming this reply in pieces.")
            await expect(page.locator(".status").last).to_have_text("done")

            # a tool call that needs approval
            await page.fill("#input", "deploy prod")
            await page.press("#input", "Enter")
            await page.locator(".confirm .approve").click()
            await expect(page.locator("details.tool").last).to_contain_text("(done)")
            await expect(page.locator(".assistant").last).to_contain_text("deployed to prod")
            assert tools.deployed == ["prod"]

            # a long tool call: steer while it works, then stop it
            await page.fill("#input", "wait for it")
            await page.press("#input", "Enter")
            await expect(page.locator("#send")).to_have_text("Steer")
            await expect(page.locator("details.tool").last).to_contain_text("wait_here")
            await page.fill("#input", "actually, be quick")
            await page.press("#input", "Enter")
            await expect(page.locator(".user.steer")).to_have_text("actually, be quick")
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "chat-page-working.png"), full_page=True)

            # a reload finds the running turn and follows it again
            await page.reload()
            await page.locator("#sessions li").first.click()
            await expect(page.locator(".user").last).to_have_text("wait for it")
            await expect(page.locator("details.tool").last).to_contain_text("wait_here")
            await expect(page.locator("#send")).to_have_text("Steer")
            await page.click("#stop")
            await expect(page.locator(".status", has_text="turn interrupted")).to_have_count(1)
            await expect(page.locator("details.tool").last).to_contain_text("Interrupted")
            await expect(page.locator("#send")).to_have_text("Send")

            shot = ARTIFACTS / "chat-page.png"
            await page.screenshot(path=str(shot), full_page=True)
            shutil.copy(shot, tmp_path / "chat-page.png")
            assert shot.stat().st_size > 1000
