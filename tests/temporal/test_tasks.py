"""Background sub-agent tasks on Temporal: a workflow per task, on any of three workers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from harnessed import RuntimeContext
from harnessed.log.record import RecordType
from harnessed.runtime import SessionRef
from harnessed.subagents import Subagents
from harnessed.subagents.records import child_session_id
from tests.temporal.conftest import Workers, durable_agent, wait_for_file
from tests.temporal.test_runtime import _assert_clean, _log, _turn


async def _ended_task(agent: Any, ctx: RuntimeContext, *, timeout: float = 180.0) -> Any:
    """The session's one task record, once it has ended."""
    subagents = agent.capability(Subagents)
    deadline = time.monotonic() + timeout
    while True:
        (record,) = await subagents.tasks(ctx)
        if record.ended:
            return record
        if time.monotonic() > deadline:
            pytest.fail(f"task {record.task_id} never ended: {record}")
        await asyncio.sleep(0.1)


async def test_a_worker_killed_during_a_background_task(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    from harnessed.temporal.tasks import task_workflow_id

    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    ctx = RuntimeContext(session_id="t1")
    async with durable_agent() as agent:
        end = await _turn(agent, "spawn hang-bg1", "t1")
        assert end.status == "completed"
        assert "runs in the background as task" in end.reply.text
        # the sub-agent's tool call runs on a worker; kill that worker in the middle of it
        pid = int(await wait_for_file(marks / "effects-hang-bg1"))
        assert pid in [p.pid for p in workers.procs]
        workers.kill(pid)

        record = await _ended_task(agent, ctx)
        assert record.status.value == "COMPLETED", record
        assert record.result is not None and record.result.startswith("done: tool hang-bg1")
        assert "stopped" in record.result  # its interrupted call was answered, not run again
        assert len((marks / "effects-hang-bg1").read_text().splitlines()) == 1

        # one workflow for the task, ended once
        client = await agent.runtime.connect()
        workflow = client.get_workflow_handle(
            task_workflow_id(agent.name, "default", "t1", record.task_id)
        )
        assert await workflow.result() == "COMPLETED"

        child = child_session_id("t1", "helper", "1")
        child_log = await _log(agent, child)
        _assert_clean(child_log)
        ends = [r for r in child_log if r.type == "subagent/completed"]
        assert [r.payload["status"] for r in ends] == ["COMPLETED"]
        parent_log = await _log(agent, "t1")
        _assert_clean(parent_log)
        delivered = [r for r in parent_log if r.type == "subagent/completed"]
        assert [r.payload["task_id"] for r in delivered] == [record.task_id]

        # the parent's next turn is told
        after = await _turn(agent, "plain", "t1")
        assert after.reply.text == "done: plain"
        history = await agent.conversation.history(SessionRef(agent.name, "default", "t1"))
        told = [m for m in history if m.metadata.get("harness") == "subagent_tasks"]
        assert len(told) == 1 and record.task_id in told[0].text
        _assert_clean(await _log(agent, "t1"))
        assert [r.type for r in await _log(agent, "t1")].count(RecordType.RUN_END) == 2


async def test_task_cancel_stops_a_background_task_on_its_worker(
    workers: Workers, durable_env: dict[str, str]
) -> None:
    from temporalio.client import WorkflowExecutionStatus

    from harnessed.temporal.tasks import task_workflow_id

    marks = Path(durable_env["HARNESSED_TEST_MARKS"])
    ctx = RuntimeContext(session_id="t2")
    async with durable_agent() as agent:
        assert (await _turn(agent, "spawn hang-c1", "t2")).status == "completed"
        await wait_for_file(marks / "effects-hang-c1")  # the sub-agent's tool hangs now
        (record,) = await agent.capability(Subagents).tasks(ctx)
        end = await _turn(agent, f"cancel {record.task_id}", "t2")
        assert "is stopped and marked cancelled" in end.reply.text

        client = await agent.runtime.connect()
        workflow = client.get_workflow_handle(
            task_workflow_id(agent.name, "default", "t2", record.task_id)
        )
        deadline = time.monotonic() + 120
        while (await workflow.describe()).status != WorkflowExecutionStatus.CANCELED:
            assert time.monotonic() < deadline, "the task's workflow was never cancelled"
            await asyncio.sleep(0.1)
        (ended,) = await agent.capability(Subagents).tasks(ctx)
        assert ended.status.value == "CANCELLED"
        assert len((marks / "effects-hang-c1").read_text().splitlines()) == 1
        parent_log = await _log(agent, "t2")
        _assert_clean(parent_log)
        assert not [r for r in parent_log if r.type == "subagent/completed"]
