"""A question on the web chat page in a real browser: a wrong answer is shown as an error and
can be corrected; the picked answer reaches the model."""

from __future__ import annotations

from pathlib import Path

from harnessed import HarnessAgent
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.questions import ASK_USER, AskUser
from tests.gateway.browser import browser_page, sign_in, start_session
from tests.gateway.helpers import make_app, uvicorn_server
from tests.gateway.test_browser import chromium  # noqa: F401 - the fixture

SCHEMA = {"type": "integer", "minimum": 1, "maximum": 9}


def respond(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(f"Got it: {last.text}")
    if last.text.startswith("pick"):
        args = {"question": "Which color?", "choices": ["red", "blue"]}
    else:
        args = {"question": "How many?", "schema": SCHEMA}
    return ScriptedResponse(tool_calls=[ScriptedToolCall(ASK_USER, args)])


async def test_questions_are_answered_on_the_page(tmp_path: Path, chromium: str) -> None:  # noqa: F811
    from playwright.async_api import expect

    agent = HarnessAgent(
        "helper",
        ScriptedModel(responder=respond, chunk_size=6),
        workspace=tmp_path,
        capabilities=[AskUser()],
        shell=False,
        memory=False,
    )
    with uvicorn_server(make_app(agent)) as url:
        async with browser_page(chromium) as page:
            await sign_in(page, url)
            await start_session(page, "helper")

            await page.fill("#input", "pick a color")
            await page.press("#input", "Enter")
            await expect(page.locator(".question").last).to_contain_text("Which color?")
            await page.locator(".question .choice", has_text="blue").click()
            await expect(page.locator(".assistant").last).to_have_text(
                "Got it: The user answered: blue"
            )

            await page.fill("#input", "count them")
            await page.press("#input", "Enter")
            box = page.locator(".question").last
            await expect(box).to_contain_text("How many?")
            await box.locator("input.answer").fill("42")
            await box.locator(".approve").click()
            await expect(page.locator(".status.error").last).to_contain_text("maximum")
            await box.locator("input.answer").fill("7")
            await box.locator(".approve").click()
            await expect(page.locator(".assistant").last).to_have_text(
                "Got it: The user answered (JSON): 7"
            )
