"""Wake-ups in the embedded default (a local workspace, its SQLite file) with real processes:
two ``harnessed serve`` processes racing for the same due wake-ups fire each exactly once, and
a wake-up scheduled before a restart fires once after it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.wakeups import SqliteWakeupStore
from tests.support.serve_process import AUTH, frames, serve_process

SESSIONS = 8


def wake(note: str, after: float) -> str:
    return "wake me " + json.dumps({"note": note, "after_seconds": after})


def woken(messages: list[object]) -> tuple[list[str], list[str]]:
    """The wake-up inputs and the replies to them in a session's messages."""
    inputs = [m.text for m in messages if m.role == "user" and "wakeup" in m.metadata]  # type: ignore[attr-defined]
    replies = [m.text for m in messages if m.role == "assistant" and m.text.startswith("woken: ")]  # type: ignore[attr-defined]
    return inputs, replies


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("SERVE_APP_WORKSPACE", str(ws))
    monkeypatch.setenv("SERVE_APP_SIGNALS", str(tmp_path))
    return ws


def reader() -> HarnessAgent:
    from tests.support.serve_app import agent

    return agent()


async def settled(ws: Path, urls: list[str], sessions: list[str]) -> None:
    """Until no wake-up is pending and no server runs a turn of these sessions."""
    store = SqliteWakeupStore(ws / ".harnessed" / "wakeups.sqlite3")
    try:
        while True:
            busy = bool(await store.pending("served", "alice"))
            for url in urls:
                async with httpx.AsyncClient(base_url=url, headers=AUTH) as client:
                    for s in sessions:
                        view = (await client.get(f"/v1/sessions/{s}")).json()
                        busy = busy or view["running_turn"] is not None
            if not busy:
                return
            await asyncio.sleep(0.1)
    finally:
        await store.close()


async def all_woken(agent: HarnessAgent, sessions: list[str]) -> None:
    while True:
        done = 0
        for s in sessions:
            _, replies = woken(await agent.session_messages(RuntimeContext("alice", s)))
            done += bool(replies)
        if done == len(sessions):
            return
        await asyncio.sleep(0.1)


async def test_two_servers_fire_each_wakeup_the_model_scheduled_exactly_once(
    workspace: Path,
) -> None:
    env: dict[str, str] = {}
    sessions = [f"s{i}" for i in range(SESSIONS)]
    agent = reader()
    async with serve_process(env) as url_a, serve_process(env) as url_b:
        async with httpx.AsyncClient(base_url=url_a, headers=AUTH, timeout=60) as a:
            for s in sessions:  # the model schedules one wake-up in each session
                assert (await a.post("/v1/sessions", json={"session_id": s})).status_code == 201
                r = await a.post(f"/v1/sessions/{s}/messages", json={"text": wake(f"note {s}", 2)})
                end = [f for f in [x async for x in frames(r)] if f[1] == "agent_end"]
                assert "scheduled for" in end[0][2]["reply"]["content"][0]["text"]
        # both servers poll the same file every 0.1 s: each due wake-up is raced for
        await asyncio.wait_for(all_woken(agent, sessions), 120)
        await asyncio.wait_for(settled(workspace, [url_a, url_b], sessions), 120)
    for s in sessions:
        inputs, replies = woken(await agent.session_messages(RuntimeContext("alice", s)))
        assert len(inputs) == 1 and inputs[0].endswith(f"note {s}")
        assert replies == [f"woken: note {s}"]
    await agent.close()


async def test_a_wakeup_scheduled_before_a_restart_fires_once_after_it(workspace: Path) -> None:
    ctx = RuntimeContext("alice", "later")
    agent = reader()  # an application process with no dispatcher: schedules, then stops
    reply = await agent.call(wake("remind me after the restart", 1), ctx)
    assert "scheduled for" in reply.text
    await agent.close()
    for _ in range(2):  # started, stopped, started again: still once
        async with serve_process({}) as url:
            agent = reader()
            await asyncio.wait_for(all_woken(agent, ["later"]), 120)
            await asyncio.wait_for(settled(workspace, [url], ["later"]), 120)
            await agent.close()
    agent = reader()
    inputs, replies = woken(await agent.session_messages(ctx))
    assert len(inputs) == 1 and replies == ["woken: remind me after the restart"]
    await agent.close()
