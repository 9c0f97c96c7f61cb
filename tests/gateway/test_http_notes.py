"""Two server processes on one workspace (two apps over two agent objects): a turn started
through one is steered and interrupted through the other."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.gateway.helpers import ALICE, Tools, make_agent, make_app, sse


def client_of(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_steer_and_interrupt_reach_a_turn_of_another_server(tmp_path: Path) -> None:
    tools = Tools()
    one, two = make_agent(tmp_path, tools), make_agent(tmp_path, Tools())
    async with client_of(make_app(one)) as first, client_of(make_app(two)) as second:
        r = await first.post("/v1/sessions", json={"session_id": "shared"}, headers=ALICE)
        assert r.status_code in (200, 201), r.text
        url = "/v1/sessions/shared"
        r = await second.post(f"{url}/steer", json={"text": "x"}, headers=ALICE)
        assert r.status_code == 409 and "no turn is running" in r.json()["detail"]
        assert (await second.post(f"{url}/interrupt", headers=ALICE)).json() == {
            "interrupted": False,
            "turn_id": None,
        }

        async def say() -> list[tuple[str, dict[str, object]]]:
            r = await first.post(f"{url}/messages", json={"text": "wait here"}, headers=ALICE)
            return sse(r.text)

        running = asyncio.create_task(say())
        while not tools.started.is_set():
            await asyncio.sleep(0.01)
        assert (await second.get(url, headers=ALICE)).json()["running_turn"] is None
        r = await second.post(f"{url}/steer", json={"text": "use the back door"}, headers=ALICE)
        assert r.status_code == 202, r.text
        steered = r.json()
        assert steered["turn_id"] is None and steered["message_id"].startswith("msg_")
        r = await second.post(f"{url}/interrupt", headers=ALICE)
        assert r.status_code == 202 and r.json() == {"interrupted": True, "turn_id": None}
        frames = await asyncio.wait_for(running, 10)
        assert frames[-1][0] == "agent_end" and frames[-1][1]["status"] == "interrupted"
        history = (await second.get(f"{url}/messages", headers=ALICE)).json()["messages"]
        ids = [m["id"] for m in history]
        assert ids.count(steered["message_id"]) == 1  # kept once, for the resumed turn
        tools.release.set()
        r = await second.post(f"{url}/resume", headers=ALICE)
        assert sse(r.text)[-1][1]["status"] == "completed"
    await one.close()
    await two.close()
