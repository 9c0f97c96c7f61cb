"""End to end against a real uvicorn server on a free port: events arrive while the turn is
still running (keep-alives included), and a second connection interrupts it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.gateway.helpers import ALICE, Tools, make_agent, make_app, uvicorn_server


async def test_sse_streams_live_over_a_real_server(tmp_path: Path) -> None:
    tools = Tools()
    agent = make_agent(tmp_path, tools)
    with uvicorn_server(make_app(agent, keepalive=0.1)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            r = await client.post("/v1/sessions", json={"session_id": "live"}, headers=ALICE)
            assert r.status_code == 201
            seen: list[str] = []
            keepalives = 0
            async with client.stream(
                "POST", "/v1/sessions/live/messages", json={"text": "wait here"}, headers=ALICE
            ) as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                async for line in stream.aiter_lines():
                    if line.startswith(": keep-alive"):
                        keepalives += 1
                        if keepalives == 2:  # the tool is still blocked: stop it from outside
                            assert tools.started.is_set() and "tool_call" in seen
                            r = await client.post("/v1/sessions/live/interrupt", headers=ALICE)
                            assert r.json()["interrupted"] is True
                    elif line.startswith("event: "):
                        seen.append(line[7:])
                    elif line.startswith("data: ") and seen[-1] == "agent_end":
                        end = json.loads(line[6:])
            assert seen[:2] == ["turn", "agent_start"] and seen[-1] == "agent_end"
            assert end["status"] == "interrupted" and keepalives >= 2
            history = (await client.get("/v1/sessions/live/messages", headers=ALICE)).json()
            assert "Interrupted" in history["messages"][-1]["content"][0]["content"]
