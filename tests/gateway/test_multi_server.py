"""Two ``harnessed serve`` processes on one PostgreSQL store, as behind a load balancer: a turn
started on one is listed by the other and streamed by it from its first event to ``agent_end``
— the same frames, nothing missing or doubled — while it really runs (its tool waits for the
test's signal)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from harnessed.stores.postgres import PostgresStore
from tests.gateway import test_browser
from tests.gateway.browser import browser_page
from tests.support.postgres import postgres_store
from tests.support.serve_process import AUTH, Frame, frames, serve_process

chromium = test_browser.chromium  # the fixture: Debian's Chromium for Playwright


@pytest.fixture
async def pg() -> AsyncIterator[PostgresStore]:
    async for store in postgres_store():
        await store.upgrade()  # once, before the servers start
        yield store


async def until(path: Path) -> None:
    while not path.exists():
        await asyncio.sleep(0.02)


async def test_a_turn_on_one_server_is_listed_and_streamed_by_another(
    pg: PostgresStore, tmp_path: Path
) -> None:
    env = {"SERVE_APP_SCHEMA": pg.schema, "SERVE_APP_SIGNALS": str(tmp_path)}
    async with (
        serve_process(env) as url_a,
        serve_process(env) as url_b,
        httpx.AsyncClient(base_url=url_a, headers=AUTH, timeout=60) as a,
        httpx.AsyncClient(base_url=url_b, headers=AUTH, timeout=60) as b,
    ):
        r = await a.post("/v1/sessions", json={"session_id": "shared"})
        assert r.status_code == 201, r.text
        assert (await b.get("/v1/sessions/shared")).json()["running_turn"] is None

        on_a: list[Frame] = []
        turn_id: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def talk_to_a() -> None:
            body = {"text": "wait one"}
            async with a.stream("POST", "/v1/sessions/shared/messages", json=body) as response:
                assert response.status_code == 200
                async for frame in frames(response):
                    if frame[1] == "turn":
                        turn_id.set_result(frame[2]["turn_id"])
                    on_a.append(frame)

        talking = asyncio.create_task(talk_to_a())
        turn = await asyncio.wait_for(turn_id, 60)
        await asyncio.wait_for(until(tmp_path / "started-one"), 60)  # the turn really runs

        view = (await b.get("/v1/sessions/shared")).json()
        assert view["running_turn"] == turn
        listed = (await b.get("/v1/sessions")).json()["sessions"]
        assert [s["running_turn"] for s in listed if s["session_id"] == "shared"] == [turn]

        on_b: list[Frame] = []
        seen_tool_call = asyncio.Event()

        async def follow_on_b() -> None:
            async with b.stream("GET", f"/v1/sessions/shared/turns/{turn}/events") as response:
                assert response.status_code == 200
                async for frame in frames(response):
                    on_b.append(frame)
                    if frame[1] == "tool_call":
                        seen_tool_call.set()

        following = asyncio.create_task(follow_on_b())
        await asyncio.wait_for(seen_tool_call.wait(), 60)  # B has caught up with the replay
        assert not following.done()  # ... and follows live: the turn waits for the signal
        (tmp_path / "release-one").touch()
        await asyncio.wait_for(asyncio.gather(talking, following), 60)

        assert on_a[0][1] == on_b[0][1] == "turn" and on_b[0][2]["turn_id"] == turn
        assert on_a[-1][1] == "agent_end" and on_a[-1][2]["status"] == "completed"
        assert on_b[1:] == on_a[1:]  # every event, once, in order, with the same ids
        types = [event for _, event, _ in on_b]
        assert types[1] == "agent_start" and types.count("agent_end") == 1
        assert "text_delta" in types and "tool_result" in types
        ids = [int(i) for i, _, _ in on_b[1:] if i is not None]
        assert ids == list(range(1, len(on_b)))

        # ended: nothing runs anywhere, and a late reader on B still gets the whole turn
        assert (await b.get("/v1/sessions/shared")).json()["running_turn"] is None
        r = await b.get(f"/v1/sessions/shared/turns/{turn}/events")
        replay = [f async for f in frames(r)]
        assert replay[1:] == on_a[1:]

        # the turn belongs to its session: under another session of the same user it is
        # unknown, like a turn that never was
        assert (await a.post("/v1/sessions", json={"session_id": "other"})).status_code == 201
        assert (await b.get(f"/v1/sessions/other/turns/{turn}/events")).status_code == 404
        assert (await b.get("/v1/sessions/shared/turns/run_nonexistent/events")).status_code == 404


async def test_the_chat_page_of_one_server_follows_a_turn_of_another(
    pg: PostgresStore, tmp_path: Path, chromium: str
) -> None:
    """A reload that the load balancer sends elsewhere: the page, served by B, finds the
    turn running on A and shows it to its end."""
    from playwright.async_api import expect

    env = {"SERVE_APP_SCHEMA": pg.schema, "SERVE_APP_SIGNALS": str(tmp_path)}
    async with (
        serve_process(env) as url_a,
        serve_process(env) as url_b,
        httpx.AsyncClient(base_url=url_a, headers=AUTH, timeout=60) as a,
    ):
        assert (await a.post("/v1/sessions", json={"session_id": "paged"})).status_code == 201

        async def talk_to_a() -> None:
            r = await a.post("/v1/sessions/paged/messages", json={"text": "wait two"})
            assert [f async for f in frames(r)][-1][1] == "agent_end"

        talking = asyncio.create_task(talk_to_a())
        await asyncio.wait_for(until(tmp_path / "started-two"), 60)
        async with browser_page(chromium) as page:
            await page.goto(url_b + "/")
            await page.fill("#token", AUTH["Authorization"].removeprefix("Bearer "))
            await page.dispatch_event("#token", "change")
            await page.locator("#sessions li").first.click()
            await expect(page.locator(".user").last).to_have_text("wait two")
            await expect(page.locator("details.tool").last).to_contain_text("wait_for_signal")
            await expect(page.locator("#send")).to_have_text("Steer")  # running, here too
            (tmp_path / "release-two").touch()
            await expect(page.locator(".assistant").last).to_contain_text(
                "All done after the tool said: released two"
            )
            await expect(page.locator("#send")).to_have_text("Send")
        await asyncio.wait_for(talking, 60)
