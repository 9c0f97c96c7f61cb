"""``POST /v1/sessions/{id}/compact``: the earlier history summarized on request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from harnessed import CompactionConfig
from tests.gateway.helpers import ALICE, BOB, Tools, make_agent, make_app, sse


@pytest.fixture
def tools() -> Tools:
    return Tools()


@pytest.fixture
async def client(tmp_path: Path, tools: Tools) -> AsyncIterator[httpx.AsyncClient]:
    keep_two = CompactionConfig(trigger_messages=1_000, keep_messages=2, keep_tokens=0)
    app = make_app(make_agent(tmp_path, tools, compaction=keep_two))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


async def _say(client: httpx.AsyncClient, sid: str, text: str) -> list[tuple[str, object]]:
    r = await client.post(f"/v1/sessions/{sid}/messages", json={"text": text}, headers=ALICE)
    assert r.status_code == 200, r.text
    return sse(r.text)


async def test_compact_summarizes_the_earlier_history(
    client: httpx.AsyncClient, tools: Tools
) -> None:
    r = await client.post("/v1/sessions", json={"session_id": "long"}, headers=ALICE)
    assert r.status_code == 201, r.text
    r = await client.post("/v1/sessions/long/compact", headers=ALICE)
    assert r.status_code == 200 and r.json()["status"] == "unchanged"
    for word in ("one", "two", "three"):
        await _say(client, "long", word + " " + "words " * 80)
    r = await client.post("/v1/sessions/long/compact", headers=BOB)
    assert r.status_code == 404  # another user's session does not exist for Bob
    r = await client.post("/v1/sessions/long/compact", headers=ALICE)
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["status"] == "compacted" and report["summarized_messages"] == 4
    assert (report["messages_before"], report["messages_after"]) == (6, 3)
    assert report["tokens_before"] > 0 and report["tokens_after"] > 0  # estimates
    history = (await client.get("/v1/sessions/long/messages", headers=ALICE)).json()
    assert len(history["messages"]) == 6  # every original message is still there

    running = asyncio.create_task(_say(client, "long", "wait for me"))
    await asyncio.wait_for(asyncio.to_thread(tools.started.wait, 30), 40)
    r = await client.post("/v1/sessions/long/compact", headers=ALICE)
    assert r.status_code == 409 and "running" in r.json()["detail"]
    tools.release.set()
    frames = await asyncio.wait_for(running, 30)
    assert frames[-1][1] == {**frames[-1][1], "status": "completed"}
