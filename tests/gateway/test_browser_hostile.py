"""The web chat page shows hostile text as text (Playwright driving Debian's Chromium): markup
and ``javascript:`` links in model replies, tool names, tool arguments, tool results, approval
requests, error messages, replayed history and tool-call ids never run or become elements."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import httpx

from harnessed import HarnessAgent
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from tests.gateway.browser import browser_page, sign_in, start_session
from tests.gateway.helpers import ALICE, Tools, make_app, uvicorn_server
from tests.gateway.test_browser import chromium  # noqa: F401  (the fixture)

# each piece would set window.__pwned if the page ever parsed it as markup or followed it
EVIL = (
    "<img src=x onerror=\"window.__pwned='img'\">"
    "<script>window.__pwned='script'</script>"
    '<a href="javascript:window.__pwned=\'link\'" id="evil-link">click me</a>'
    "<svg onload=\"window.__pwned='svg'\"></svg>"
    "<iframe src=\"javascript:parent.__pwned='iframe'\"></iframe>"
    "<details open ontoggle=\"window.__pwned='toggle'\"></details>"
    "</pre></summary></details></div><b onmouseover=\"window.__pwned='hover'\">bold</b>"
    " [md](javascript:window.__pwned='md') "
)
# ids the model chooses, named like the properties every object has
HOSTILE_IDS = ["__proto__", "constructor", "toString", EVIL]


def respond(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text="Finished: " + last.text + EVIL)
    text = last.text
    if text == "reply":
        return ScriptedResponse(text=EVIL)
    if text == "approve":
        return ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": EVIL})])
    if text == "unknown tool":
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall(EVIL, {EVIL: EVIL}, id=call_id) for call_id in HOSTILE_IDS]
        )
    if text == "fail":
        raise RuntimeError("the model failed: " + EVIL)
    return ScriptedResponse(text="You said: " + text)


async def assert_inert(page: Any) -> None:
    """Nothing ran, and nothing the page shows is markup from the messages."""
    assert await page.evaluate("window.__pwned") is None
    assert await page.evaluate("window.__violations") == []
    found = await page.evaluate(
        """() => {
            const bad = [];
            for (const el of document.querySelectorAll("*")) {
                for (const attr of el.attributes) {
                    const value = attr.value.trim().toLowerCase();
                    if (attr.name.startsWith("on")) bad.push(el.tagName + " " + attr.name);
                    if (value.startsWith("javascript:")) bad.push(el.tagName + " " + attr.name);
                }
            }
            for (const tag of ["img", "script", "a", "svg", "iframe", "b"]) {
                for (const el of document.querySelectorAll("#log " + tag + ", #sessions " + tag)) {
                    bad.push("element " + el.tagName);
                }
            }
            return bad;
        }"""
    )
    assert found == []


async def test_hostile_text_never_runs_in_the_chat_page(chromium: str) -> None:  # noqa: F811
    from playwright.async_api import expect

    tools = Tools()
    workspace = Path(tempfile.mkdtemp(prefix="hostile-page-"))
    agent = HarnessAgent(
        "helper",
        ScriptedModel(responder=respond, chunk_size=7),
        workspace=workspace,
        tools=tools.all,
        shell=False,
        memory=False,
        permission_mode="default",
    )
    with uvicorn_server(make_app(agent)) as url:
        async with httpx.AsyncClient(base_url=url) as client:  # the page's defences
            page_response = await client.get("/")
            policy = page_response.headers["content-security-policy"]
            assert (
                "script-src 'self'" in policy
                and "'unsafe-inline'" not in policy.split("style-src")[0]
            )
            assert page_response.headers["x-content-type-options"] == "nosniff"
            r = await client.post("/v1/sessions", json={"session_id": EVIL}, headers=ALICE)
            assert r.status_code == 422  # a session id never holds markup
        async with browser_page(chromium) as page:
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.add_init_script(
                "window.__violations = [];"
                "document.addEventListener('securitypolicyviolation',"
                " (e) => window.__violations.push(e.violatedDirective));"
            )
            await sign_in(page, url)
            await start_session(page, "helper")

            # a streamed reply made of markup
            await page.fill("#input", "reply")
            await page.press("#input", "Enter")
            await expect(page.locator(".status").last).to_have_text("done")
            await expect(page.locator(".assistant").last).to_have_text(EVIL)
            await page.locator(".assistant").last.hover()
            await page.locator(".assistant").last.click()
            await assert_inert(page)

            # markup in a tool's arguments, its approval request and its result
            await page.fill("#input", "approve")
            await page.press("#input", "Enter")
            confirm = page.locator(".confirm").last
            await expect(confirm).to_contain_text("<script>window.__pwned='script'</script>")
            await assert_inert(page)
            await confirm.locator(".approve").click()
            await expect(page.locator("details.tool").last).to_contain_text("(done)")
            await page.locator("details.tool summary").last.click()  # unfold the result
            await expect(page.locator("details.tool pre").last).to_have_text("deployed to " + EVIL)
            await expect(page.locator(".status").last).to_have_text("done")
            assert tools.deployed == [EVIL]
            await assert_inert(page)

            # unknown tools named with markup, under ids like __proto__ and constructor
            await page.fill("#input", "unknown tool")
            await page.press("#input", "Enter")
            await expect(page.locator(".status").last).to_have_text("done")
            results = page.locator("details.tool.error")
            await expect(results).to_have_count(len(HOSTILE_IDS))
            for i in range(len(HOSTILE_IDS)):
                await expect(results.nth(i).locator("pre")).to_contain_text("Unknown tool")
            await assert_inert(page)

            # an error whose message is markup
            await page.fill("#input", "fail")
            await page.press("#input", "Enter")
            await expect(page.locator(".status.error").last).to_contain_text(
                "the model failed: " + EVIL[:30]
            )
            await assert_inert(page)

            # the same history, replayed from the server after a reload
            await page.reload()
            await page.locator("#sessions li").first.click()
            await expect(page.locator("details.tool.error")).to_have_count(len(HOSTILE_IDS))
            await expect(page.locator(".assistant").first).to_have_text(EVIL)
            for box in await page.locator("details.tool").all():
                await box.locator("summary").click()
            await assert_inert(page)
            assert errors == []


def test_the_page_script_has_no_markup_sinks() -> None:
    """The page builds every element itself and sets text, never markup (a second line
    behind the browser test: a new sink is caught even where no test drives it)."""
    script = (Path(__file__).parents[2] / "src/harnessed/gateway/static/chat.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
