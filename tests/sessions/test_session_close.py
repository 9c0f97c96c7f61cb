"""Closing a session while its worker waits in the event loop's line (a checkpoint) drops
the queued turn cleanly: the lease is given back, the worker survives, and turns submitted
after the close run (and the closed one does not)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from harnessed import RuntimeContext
from harnessed.run import DEFAULT_TIME_SLICE, checkpoint, set_time_slice
from tests.sessions.helpers import ScriptedModel, make_agent

CTX = RuntimeContext("u1", "s1")


@pytest.fixture(autouse=True)
def short_slice() -> Iterator[None]:
    set_time_slice(0.001)
    yield
    set_time_slice(DEFAULT_TIME_SLICE)


async def hog() -> None:
    """Use up this pass's slice, so the next checkpoint waits in line."""
    await checkpoint()
    end = time.perf_counter() + 0.003
    while time.perf_counter() < end:
        pass


async def test_closing_while_the_worker_waits_in_line_gives_the_lease_back() -> None:
    agent = make_agent(ScriptedModel(["one", "two"]))
    session = agent.session(CTX)
    busy = asyncio.create_task(hog())
    turn = await session.submit("first")
    await asyncio.sleep(0)  # the worker started and waits in line behind the hog
    assert turn.status == "queued"
    await session.close()
    await busy
    with pytest.raises(asyncio.CancelledError):
        await turn.result()
    lease = await asyncio.wait_for(session.gate.acquire(session.gate_key, wait=False), 2)
    await session.gate.release(lease)  # nobody held it
    again = await session.submit("again")
    assert (await asyncio.wait_for(again.result(), 5)).status == "completed"


async def test_a_turn_submitted_while_closing_runs_and_the_closed_one_does_not() -> None:
    agent = make_agent(ScriptedModel(["reply B"]))
    session = agent.session(CTX)
    busy = asyncio.create_task(hog())
    closed = await session.submit("A (closed)")
    await asyncio.sleep(0)
    closing = asyncio.create_task(session.close())
    await asyncio.sleep(0)  # close() dropped the queue and waits for the worker
    after = await session.submit("B (after the close)")
    await closing
    await busy
    end = await asyncio.wait_for(after.result(), 5)
    assert end.reply.text == "reply B"
    assert closed.status == "cancelled"
    assert [m.text for m in await session.history()] == ["B (after the close)", "reply B"]
