"""A sub-agent's approval and question on the web chat page in a real browser: the card says
which sub-agent asks, and answering it there lets the sub-agent go on."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.questions import ASK_USER, AskUser
from harnessed.subagents import Subagents, SubagentSpec
from tests.gateway.browser import browser_page, sign_in, start_session
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
    said = last_user_text(request)
    if answered(request):
        if said.startswith("background"):
            return "Started it in the background."
        return "Worker: " + tool_results(request)[-1].split("\n\n[sub-agent")[0]
    if said.startswith("background"):
        return calls(spawn("worker", said, timeout_seconds=0))
    return calls(spawn("worker", said))


def work(request: ModelRequest) -> str | ScriptedResponse:
    if answered(request):
        return f"tool said: {tool_results(request)[-1]}"
    if "ask" in last_user_text(request):
        args = {"question": "Which file?", "choices": ["a.py", "b.py"]}
        return ScriptedResponse(tool_calls=[ScriptedToolCall(ASK_USER, args)])
    name = "db" if "db" in last_user_text(request) else "web"
    return ScriptedResponse(tool_calls=[ScriptedToolCall("touch", {"name": name})])


async def test_a_sub_agents_requests_are_answered_on_the_page(
    tmp_path: Path,
    chromium: str,  # noqa: F811
) -> None:
    from playwright.async_api import expect

    touched.clear()
    released = threading.Event()  # set by the test, waited for in the server's thread

    async def held(request: ModelRequest) -> str | ScriptedResponse:
        if "background" in last_user_text(request):
            await asyncio.to_thread(released.wait)  # it asks only once its turn is over
        return work(request)

    spec = SubagentSpec("worker", "Works.", model=ScriptedModel(responder=held, name="child"))
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
        async with browser_page(chromium) as page:
            await sign_in(page, url)
            await start_session(page, "lead")

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

            # a background sub-agent asks after the turn ended, and after the page's look
            # for waiting requests at the turn's end (begun when "done" shows; the test
            # waits for it to finish): the idle page finds the request by itself (it looks
            # again every few seconds), it is answered there, and the sub-agent goes on
            await expect(page.locator("#send")).to_have_text("Send")  # the last turn is over
            statuses = await page.locator(".status").count()
            await page.fill("#input", "background: touch the db marker")
            await page.press("#input", "Enter")
            await expect(page.locator(".status")).to_have_count(statuses + 1)
            await expect(page.locator(".status").last).to_have_text("done")
            await page.wait_for_function("() => waitingCheck === null")
            released.set()
            card = page.locator(".confirm").last
            await expect(card.locator(".source")).to_have_text(
                "asked by sub-agent worker:3", timeout=60_000
            )
            # shown once, after the two earlier requests (an approval and a question)
            await expect(page.locator(".confirm")).to_have_count(3)
            await card.locator(".approve").click()
            await expect(card.locator(".answer")).to_have_text("approved")
            for _ in range(6000):
                if "db" in touched:
                    break
                await asyncio.sleep(0.01)
            assert touched == ["web", "db"]
            await page.screenshot(path=str(tmp_path / "nested.png"))


async def test_a_step_left_waiting_is_answered_on_the_page_and_resumed(
    tmp_path: Path,
    chromium: str,  # noqa: F811
) -> None:
    """A call that ended with status pending (answered nowhere yet): opening the session shows
    its request; once answered, Resume lets the turn go on."""
    from playwright.async_api import expect

    touched.clear()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("touch", {"name": "parked"})]), "Done."]
    )
    agent = HarnessAgent(
        "lead",
        model,
        workspace=tmp_path,
        tools=[touch],
        permission_mode="default",
        shell=False,
        memory=False,
    )
    ctx = RuntimeContext("alice", "waiting")
    first = await agent.call("touch the parked marker", ctx)
    assert first.status == "pending"
    with uvicorn_server(make_app(agent)) as url:
        async with browser_page(chromium) as page:
            await sign_in(page, url)
            await page.locator("#sessions li", has_text="waiting").click()
            card = page.locator(".confirm").last
            await expect(card).to_contain_text("Allow touch?")
            await expect(card.locator(".source")).to_have_count(0)  # the agent's own
            await card.locator(".approve").click()
            await page.locator(".status .resume").click()
            await expect(page.locator(".assistant").last).to_have_text("Done.")
            assert touched == ["parked"]
