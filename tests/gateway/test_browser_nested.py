"""A sub-agent's approval and question on the web chat page in a real browser: the card says
which sub-agent asks, and answering it there lets the sub-agent go on."""

from __future__ import annotations

from pathlib import Path

from harnessed import HarnessAgent
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.questions import ASK_USER, AskUser
from harnessed.subagents import Subagents, SubagentSpec
from tests.gateway.helpers import make_app, uvicorn_server
from tests.gateway.test_browser import chromium  # noqa: F401 - the fixture
from tests.subagents.helpers import calls, last_user_text, spawn, tool_results
from tests.subagents.test_nested_approvals import touch, touched


def answered(request: ModelRequest) -> bool:
    """The last message of the conversation (not the harness's context) is a tool result."""
    talk = ("user", "tool")
    said = [m for m in request.messages if m.role in talk and not m.text.startswith("<")]
    return bool(said) and said[-1].role == "tool"


def lead(request: ModelRequest) -> str | ScriptedResponse:
    if answered(request):
        return "Worker: " + tool_results(request)[-1].split("\n\n[sub-agent")[0]
    return calls(spawn("worker", last_user_text(request)))


def work(request: ModelRequest) -> str | ScriptedResponse:
    if answered(request):
        return f"tool said: {tool_results(request)[-1]}"
    if "ask" in last_user_text(request):
        args = {"question": "Which file?", "choices": ["a.py", "b.py"]}
        return ScriptedResponse(tool_calls=[ScriptedToolCall(ASK_USER, args)])
    return ScriptedResponse(tool_calls=[ScriptedToolCall("touch", {"name": "web"})])


async def test_a_sub_agents_requests_are_answered_on_the_page(
    tmp_path: Path,
    chromium: str,  # noqa: F811
) -> None:
    from playwright.async_api import async_playwright, expect

    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=ScriptedModel(responder=work, name="child"))
    agent = HarnessAgent(
        "lead",
        ScriptedModel(responder=lead, chunk_size=6),
        workspace=tmp_path,
        tools=[touch],
        permission_mode="default",
        capabilities=[Subagents([spec]), AskUser()],
        shell=False,
        memory=False,
    )
    with uvicorn_server(make_app(agent)) as url:
        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path=chromium,
                args=["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            try:
                page = await browser.new_page()
                await page.goto(url + "/")
                await page.fill("#token", "alice-token-123")
                await page.dispatch_event("#token", "change")
                await expect(page.locator("#agent option")).to_have_text(["lead"])
                await page.click("#new")
                await expect(page.locator("#sessions li")).to_have_count(1)

                await page.fill("#input", "touch the web marker")
                await page.press("#input", "Enter")
                card = page.locator(".confirm").last
                await expect(card.locator(".source")).to_have_text("asked by sub-agent worker:1")
                await expect(card).to_contain_text("Allow touch?")
                await card.locator(".approve").click()
                await expect(page.locator(".assistant").last).to_have_text(
                    "Worker: tool said: touched web"
                )
                assert touched == ["web"]

                await page.fill("#input", "ask which file")
                await page.press("#input", "Enter")
                box = page.locator(".question").last
                await expect(box.locator(".source")).to_have_text("asked by sub-agent worker:2")
                await expect(box).to_contain_text("Which file?")
                await box.locator(".choice", has_text="b.py").click()
                await expect(page.locator(".assistant").last).to_have_text(
                    "Worker: tool said: The user answered: b.py"
                )
                await page.screenshot(path=str(tmp_path / "nested.png"))
            finally:
                await browser.close()
