"""Wake-ups on Temporal: fired by the server once, with two workers listening."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from harnessed import RuntimeContext
from harnessed.log.record import RecordType
from harnessed.runtime import SessionRef
from harnessed.wakeups import Wakeups
from tests.temporal.conftest import Workers, durable_agent, wait_for_file
from tests.temporal.test_runtime import _assert_clean, _log, _turn


@pytest.fixture
def worker_count() -> int:
    return 2


async def _runs_ended(agent: Any, session: str, count: int, *, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        records = await _log(agent, session)
        if sum(r.type == RecordType.RUN_END for r in records) >= count:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"session {session} never had {count} ended turns")
        await asyncio.sleep(0.1)


async def test_a_wakeup_the_model_scheduled_fires_once_with_two_workers(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    from harnessed.temporal.wakeups import TemporalWakeupScheduler, wakeup_workflow_id

    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    ctx = RuntimeContext(session_id="w1")
    async with durable_agent() as agent:
        wakeups = agent.capability(Wakeups)
        assert isinstance(wakeups.store, TemporalWakeupScheduler)
        end = await _turn(agent, "wake k1", "w1")
        assert end.status == "completed"
        assert "scheduled for" in end.reply.text

        # the woken turn does what the note says, on a worker
        pid = int(await wait_for_file(marks / "effects-woke-k1"))
        assert pid in [p.pid for p in workers.procs]
        await _runs_ended(agent, "w1", 2)
        history = await agent.conversation.history(SessionRef(agent.name, "default", "w1"))
        woken = [m for m in history if "wakeup" in m.metadata]
        assert len(woken) == 1 and woken[0].text.endswith("tool woke-k1")
        assert history[-1].text.startswith("done: tool woke-k1 effect woke-k1 made")
        records = await _log(agent, "w1")
        _assert_clean(records)
        assert sum(r.type == RecordType.RUN_END for r in records) == 2
        assert len((marks / "effects-woke-k1").read_text().splitlines()) == 1

        # its one firing is over and it left the session's list
        wakeup_id = woken[0].metadata["wakeup"]["id"]
        client = await agent.runtime.connect()
        firing = client.get_workflow_handle(
            wakeup_workflow_id(agent.name, "default", "w1", wakeup_id)
        )
        assert await firing.result() == "fired"
        assert await wakeups.pending(ctx) == []


async def test_wakeups_on_temporal_are_listed_and_cancelled_per_session(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    from harnessed.temporal.wakeups import wakeup_workflow_id

    ctx = RuntimeContext(session_id="w2")
    async with durable_agent() as agent:
        wakeups = agent.capability(Wakeups)
        client = await agent.runtime.connect()
        once = await wakeups.schedule(ctx, "look again", after=3600)
        daily = await wakeups.schedule(ctx, "the morning report", cron="0 9 * * *")
        await wakeups.schedule(RuntimeContext(session_id="other"), "elsewhere", after=3600)

        listed = await wakeups.pending(ctx)
        assert {w.id for w in listed} == {once.id, daily.id}
        shown = next(w for w in listed if w.id == daily.id)
        assert time.gmtime(shown.due_at)[3:6] == (9, 0, 0)  # the schedule's next time

        delayed = client.get_workflow_handle(
            wakeup_workflow_id(agent.name, "default", "w2", once.id)
        )
        schedule = client.get_schedule_handle(
            wakeup_workflow_id(agent.name, "default", "w2", daily.id)
        )
        assert (await delayed.describe()).status == WorkflowExecutionStatus.RUNNING
        await schedule.describe()

        assert (await wakeups.cancel(ctx, once.id)) is not None
        assert (await wakeups.cancel(ctx, daily.id)) is not None
        assert await wakeups.cancel(ctx, daily.id) is None
        assert await wakeups.pending(ctx) == []
        assert [w.note for w in await wakeups.pending(ctx, all_sessions=True)] == ["elsewhere"]
        assert (await delayed.describe()).status == WorkflowExecutionStatus.TERMINATED
        with pytest.raises(RPCError) as gone:
            await schedule.describe()
        assert gone.value.status == RPCStatusCode.NOT_FOUND


async def test_a_wakeup_temporal_cannot_take_is_not_kept(tmp_path: Path) -> None:
    from harnessed import HarnessAgent
    from harnessed.models.scripted import ScriptedModel
    from harnessed.temporal import TemporalRuntime, TemporalUnavailableError
    from tests.support.fixtures import free_port

    runtime = TemporalRuntime(f"127.0.0.1:{free_port()}", task_queue="nowhere")
    async with HarnessAgent(
        "offline",
        ScriptedModel(["hi"]),
        workspace=tmp_path,
        memory=False,
        runtime=runtime,
        capabilities=[Wakeups()],
    ) as agent:
        wakeups = agent.capability(Wakeups)
        ctx = RuntimeContext(session_id="w3")
        with pytest.raises(TemporalUnavailableError, match="cannot reach"):
            await wakeups.schedule(ctx, "later", after=60)
        assert await wakeups.pending(ctx) == []
