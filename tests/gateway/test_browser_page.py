"""The web chat page as a person uses it, at phone (390 px) and desktop (1280 px) widths:
Markdown rendered safely, approval cards with a diff, declined calls shown as declined, the
activity line and the token/context meter, resume after an interrupt, sessions with titles
and times, the agent remembered, typed text kept when no token is set. Screenshots are saved
under test-artifacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessed import HarnessAgent
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from tests.gateway.browser import browser_page
from tests.gateway.helpers import Tools, make_app, uvicorn_server
from tests.gateway.test_browser import ARTIFACTS, chromium  # noqa: F401  (a fixture)

MARKDOWN = (
    "# Plan\n\nSome **bold** words and `inline code`.\n\n* first point\n* second point\n\n"
    "```python\nprint('hi')\n```\n\n"
    '<img src=x onerror="window.pwned=1"> [bad](javascript:window.pwned=2) '
    "[docs](https://example.com/docs)"
)


def respond(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"Finished: {last.text[:60]}")
    text = last.text
    if text.startswith("markdown"):
        return ScriptedResponse(text=MARKDOWN)
    if text.startswith("edit"):
        call = ScriptedToolCall("edit_file", {"path": "notes.txt", "old": "alpha", "new": "beta"})
        return ScriptedResponse(tool_calls=[call])
    if text.startswith("deploy "):
        return ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": text[7:]})])
    if text.startswith("wait"):
        return ScriptedResponse(tool_calls=[ScriptedToolCall("wait_here", {"label": text})])
    return ScriptedResponse(text=f"You said: {text}")


def agent(workspace: Path, tools: Tools, name: str) -> HarnessAgent:
    return HarnessAgent(
        name,
        ScriptedModel(responder=respond, chunk_size=8),
        workspace=workspace,
        tools=tools.all,
        shell=False,
        memory=False,
        permission_mode="default",
    )


async def _no_sideways_scroll(page: Any) -> None:
    width = await page.evaluate("document.documentElement.clientWidth")
    scroll = await page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"the page scrolls sideways: {scroll} > {width}"


async def _reachable(page: Any, selector: str) -> None:
    """Wholly on screen (waits for a drawer's slide to end), and so clickable."""
    from playwright.async_api import expect

    await expect(page.locator(selector).first).to_be_in_viewport(ratio=1)
    box = await page.locator(selector).first.bounding_box()
    size = page.viewport_size
    assert box is not None, f"{selector} is not shown"
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"] + 0.5, f"{selector}: {box}"


async def _send(page: Any, text: str) -> None:
    await page.fill("#input", text)
    await page.press("#input", "Enter")


async def test_the_page_at_desktop_and_phone_widths(tmp_path: Path, chromium: str) -> None:  # noqa: F811
    from playwright.async_api import expect

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    tools = Tools()
    app = make_app(agent(workspace, tools, "helper"), agent(tmp_path / "other", Tools(), "other"))
    ARTIFACTS.mkdir(exist_ok=True)
    with uvicorn_server(app) as url:
        async with browser_page(chromium, viewport={"width": 1280, "height": 800}) as page:
            await page.goto(url + "/")

            # no token: the typed text stays, and the page says what is missing
            await _send(page, "hello")
            await expect(page.locator(".status.error")).to_contain_text("token")
            await expect(page.locator("#input")).to_have_value("hello")

            await page.fill("#token", "alice-token-123")
            await page.dispatch_event("#token", "change")
            await expect(page.locator("#agent option")).to_have_text(["helper", "other"])
            await expect(page.locator(".status.error")).to_have_count(0)  # not stale
            await page.click("#new")
            await expect(page.locator("#sessions li")).to_have_count(1)

            # Markdown is rendered; markup and script links in it are not
            await _send(page, "markdown please")
            reply = page.locator(".assistant").last
            await expect(reply.locator("h3")).to_have_text("Plan")
            await expect(reply.locator("strong")).to_have_text("bold")
            await expect(reply.locator("li")).to_have_count(2)
            await expect(reply.locator("pre code")).to_have_text("print('hi')")
            await expect(reply.locator("a")).to_have_count(1)
            assert await reply.locator("a").get_attribute("href") == "https://example.com/docs"
            assert await reply.locator("img").count() == 0
            await expect(reply).to_contain_text('<img src=x onerror="window.pwned=1">')
            assert await page.evaluate("window.pwned") is None
            await expect(page.locator(".status").last).to_have_text("done")

            # an edit asks first, with a diff of what it would change
            await _send(page, "edit the notes")
            card = page.locator(".confirm").last
            await expect(card.locator(".diff .del")).to_have_text("- alpha")
            await expect(card.locator(".diff .add")).to_have_text("+ beta")
            await card.locator(".approve").click()
            await expect(page.locator("details.tool").last).to_contain_text("(done)")
            assert (workspace / "notes.txt").read_text() == "beta\n"
            await expect(page.locator("#send")).to_have_text("Send")  # the turn ended

            # a declined call is shown as declined, not as a failure
            await _send(page, "deploy prod")
            await expect(page.locator(".confirm")).to_have_count(2, timeout=10_000)
            await page.locator(".confirm .decline").last.click()
            declined = page.locator("details.tool").last
            await expect(declined).to_contain_text("(declined)")
            await expect(declined).to_have_class("tool declined")
            assert tools.deployed == []
            await expect(page.locator("#send")).to_have_text("Send")

            # the meter counts tokens and shows how full the context is
            await expect(page.locator("#meter")).to_contain_text("tokens")
            await expect(page.locator("#meter")).to_contain_text("context")

            # while a tool works the activity line says so; an interrupt offers Resume
            await _send(page, "wait for it")
            await expect(page.locator("#activity")).to_contain_text("running wait_here")
            await page.click("#stop")
            resume = page.locator(".status button.resume")
            await expect(resume).to_be_visible()
            await expect(page.locator("#activity")).to_have_text("")
            tools.release.set()
            await resume.click()
            await expect(page.locator(".assistant").last).to_contain_text("Finished")
            await expect(page.locator("details.tool").last).to_contain_text("(interrupted)")
            await page.screenshot(path=str(ARTIFACTS / "chat-page-1280-turns.png"))

            # sessions have titles and times
            session = page.locator("#sessions li").first
            await page.reload()
            await expect(session.locator(".title")).to_have_text("markdown please")
            await expect(session.locator(".when")).not_to_have_text("new")
            await session.click()
            await expect(page.locator(".assistant h3")).to_have_text("Plan")
            await _no_sideways_scroll(page)
            await page.screenshot(path=str(ARTIFACTS / "chat-page-1280.png"), full_page=True)

            # the agent chosen is remembered across reloads
            await page.select_option("#agent", "other")
            await page.reload()
            await expect(page.locator("#agent")).to_have_value("other")
            await page.select_option("#agent", "helper")

            # a phone: no sideways scroll, every control on screen, sessions in a drawer
            await page.set_viewport_size({"width": 390, "height": 844})
            await page.reload()
            await expect(page.locator("#menu")).to_be_visible()
            for control in ("#input", "#send", "#menu"):
                await _reachable(page, control)
            await page.click("#menu")
            for control in ("#token", "#agent", "#new", "#sessions li"):
                await _reachable(page, control)
            await page.locator("#sessions li").first.click()
            await expect(page.locator(".assistant h3")).to_have_text("Plan")
            await _reachable(page, "#send")  # the drawer closed again
            await _no_sideways_scroll(page)
            await page.screenshot(path=str(ARTIFACTS / "chat-page-390.png"), full_page=False)
