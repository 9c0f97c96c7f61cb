"""A plain ``agent.call`` holds its session's turn lease (BEHAVIOUR §13): it waits for a
session's running turn and the other way round, in one process without deadlock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnessed import HarnessAgent, tool
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from harnessed.runtime import SessionRef
from harnessed.sessions import SessionBusyError
from tests.support.fixtures import CTX


def _agent(tmp_path: Path, gate_open: asyncio.Event, started: asyncio.Event) -> HarnessAgent:
    @tool
    async def hold(text: str) -> str:
        """Wait until the test lets go."""
        started.set()
        await gate_open.wait()
        return f"held {text}"

    def reply(request: ModelRequest) -> ScriptedResponse:
        last = request.messages[-1]
        if last.role == "user":
            return ScriptedResponse(tool_calls=[ScriptedToolCall("hold", {"text": last.text})])
        return ScriptedResponse(text=f"done: {last.text}")

    return HarnessAgent(
        "a",
        ScriptedModel(responder=reply),
        workspace=tmp_path,
        tools=[hold],
        shell=False,
        memory=False,
    )


async def test_a_call_holds_the_lease_while_it_runs(tmp_path: Path) -> None:
    let_go, started = asyncio.Event(), asyncio.Event()
    agent = _agent(tmp_path, let_go, started)
    call = asyncio.create_task(agent.call("first", CTX))
    await asyncio.wait_for(started.wait(), 10)
    with pytest.raises(SessionBusyError):
        await agent.turn_gate.acquire(SessionRef("a", "u", "s").token, wait=False)
    other = await agent.turn_gate.acquire(SessionRef("a", "u", "other").token, wait=False)
    await agent.turn_gate.release(other)  # another session is not held
    let_go.set()
    assert (await asyncio.wait_for(call, 10)).text == "done: held first"
    lease = await agent.turn_gate.acquire(SessionRef("a", "u", "s").token, wait=False)
    await agent.turn_gate.release(lease)  # given back at the end
    await agent.close()


@pytest.mark.parametrize("first", ["call", "turn"])
async def test_calls_and_session_turns_queue_behind_each_other(tmp_path: Path, first: str):
    let_go, started = asyncio.Event(), asyncio.Event()
    agent = _agent(tmp_path, let_go, started)
    session = agent.session(CTX)
    if first == "call":
        running = asyncio.create_task(agent.call("one", CTX))
        await asyncio.wait_for(started.wait(), 10)
        queued = asyncio.create_task(session.submit("two"))
    else:
        turn = await session.submit("one")
        running = asyncio.create_task(turn.result())
        await asyncio.wait_for(started.wait(), 10)
        queued = asyncio.create_task(agent.call("two", CTX))
    await asyncio.sleep(0.3)
    assert not running.done()
    let_go.set()
    await asyncio.wait_for(running, 10)
    second = await asyncio.wait_for(queued, 10)
    if first == "call":
        await asyncio.wait_for(second.result(), 10)
    texts = [m.text for m in await agent.session_messages(CTX)]
    assert texts.index("done: held one") < texts.index("two")  # one ran to its end first
    await agent.close()


async def test_a_failed_call_gives_the_lease_back(tmp_path: Path) -> None:
    agent = HarnessAgent("a", ScriptedModel([]), workspace=tmp_path, shell=False, memory=False)
    with pytest.raises(Exception, match="script"):
        await agent.call("nothing scripted", CTX)
    lease = await agent.turn_gate.acquire(SessionRef("a", "u", "s").token, wait=False)
    await agent.turn_gate.release(lease)
    await agent.close()


async def test_a_call_longer_than_a_third_of_the_lease_keeps_it_renewed(tmp_path: Path) -> None:
    from harnessed.sessions import FileTurnGate

    let_go, started = asyncio.Event(), asyncio.Event()
    agent = _agent(tmp_path, let_go, started)
    agent.turn_gate = FileTurnGate(tmp_path / "turns", lease_seconds=0.3, poll_interval=0.02)
    call = asyncio.create_task(agent.call("long", CTX))
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(1.0)  # more than three lease lengths: only renewals keep it
    with pytest.raises(SessionBusyError):
        await agent.turn_gate.acquire(SessionRef("a", "u", "s").token, wait=False)
    let_go.set()
    assert (await asyncio.wait_for(call, 10)).text == "done: held long"
    await agent.close()
