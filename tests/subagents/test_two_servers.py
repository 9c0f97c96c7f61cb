"""Two servers on the same stores (a local workspace, or PostgreSQL): a background task one of
them runs is not resumed by the other when the parent session is used there; once its process
has stopped, it is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.subagents import Subagents, SubagentSpec, TaskFinished
from tests.subagents.helpers import calls, spawn
from tests.support.postgres import postgres_store

CTX = RuntimeContext(user_id="u1", session_id="main")
RESUMED = "subagent/resumed"


class Worker:
    """The sub-agent's model: its first answer waits for :attr:`release`."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.requests = 0

    async def answer(self, request: ModelRequest) -> str:
        self.requests += 1
        self.started.set()
        await self.release.wait()
        return "the report is written"


@pytest.fixture(params=["workspace", "postgres"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """What both servers are built on: a local workspace, or one PostgreSQL schema."""
    if request.param == "workspace":
        yield {"workspace": tmp_path}
        return
    async for store in postgres_store():
        await store.upgrade()
        yield {"store": store}


def server(stores: dict[str, Any], worker: Worker, script: list[object]) -> HarnessAgent:
    """One server's agent: its own objects (task board, model), the shared stores."""
    spec = SubagentSpec("writer", "Writes reports.", model=ScriptedModel(responder=worker.answer))
    return HarnessAgent(
        "boss",
        ScriptedModel(script),  # type: ignore[arg-type]
        capabilities=[Subagents([spec])],
        memory=False,
        **stores,
    )


def task_finished(agent: HarnessAgent) -> asyncio.Event:
    """Set once a task of ``agent``'s sessions ended and ``agent`` saved that."""
    finished = asyncio.Event()

    def heard(news: TaskFinished) -> None:
        finished.set()

    subagents = agent.capability(Subagents)
    assert subagents is not None
    subagents.on_task_finished(heard)
    return finished


async def statuses(agent: HarnessAgent) -> list[str]:
    subagents = agent.capability(Subagents)
    assert subagents is not None
    return [t.status.value for t in await subagents.tasks(CTX)]


async def test_a_task_running_on_another_server_is_left_to_it(stores: dict[str, Any]) -> None:
    worker = Worker()
    a = server(stores, worker, [calls(spawn("writer", "write it", timeout_seconds=0)), "On it."])
    finished = task_finished(a)
    await a.call("write the report in the background", CTX)
    await worker.started.wait()  # server A's task runs, holding its sub-agent session's lease

    b = server(stores, worker, ["Still working on it.", "It is done."])
    reply = await b.call("how is it going?", CTX)
    assert reply.text == "Still working on it."
    assert await b.session_log(CTX, types=[RESUMED]) == []  # B did not start it a second time
    assert await statuses(b) == ["RUNNING"]

    worker.release.set()
    await finished.wait()  # A's task ended and A saved it
    await b.call("and now?", CTX)
    assert await statuses(b) == ["COMPLETED"]
    assert worker.requests == 1  # the sub-agent ran once
    assert await b.session_log(CTX, types=[RESUMED]) == []
    await a.close()
    await b.close()


async def test_a_task_whose_server_stopped_is_resumed_by_the_other(
    stores: dict[str, Any],
) -> None:
    worker = Worker()
    a = server(stores, worker, [calls(spawn("writer", "write it", timeout_seconds=0)), "On it."])
    await a.call("write the report in the background", CTX)
    await worker.started.wait()
    await a.close()  # server A stops: the task stays running in the records, its lease is free

    worker.release.set()
    b = server(stores, worker, ["Resuming it."])
    finished = task_finished(b)
    subagents = b.capability(Subagents)
    assert subagents is not None
    await b.call("how is it going?", CTX)
    [resumed] = await b.session_log(CTX, types=[RESUMED])
    [task] = await subagents.tasks(CTX)
    assert resumed.payload["task_id"] == task.task_id
    await finished.wait()  # B ran it to its end
    assert await statuses(b) == ["COMPLETED"]
    assert worker.requests == 2  # started in A (stopped there), run again in B
    await b.close()
