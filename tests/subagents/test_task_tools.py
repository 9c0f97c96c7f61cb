"""The task tools' answers and their errors; the task record state machine."""

from __future__ import annotations

import json

import pytest

from harnessed import RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.models.scripted import ScriptedToolCall
from harnessed.subagents import Subagents, SubagentSpec, TaskRecord, TaskStatus, child_session_id
from tests.subagents.helpers import calls, child_model, parent, spawn, tool_results


def test_record_moves_only_forward() -> None:
    record = TaskRecord("t1", "a", "1", child_session_id("s", "a", "1"), "do it")
    running = record.moved(TaskStatus.RUNNING)
    assert running.started_at is not None
    done = running.moved(TaskStatus.COMPLETED, result="ok")
    assert done.ended and done.finished_at is not None
    with pytest.raises(ValueError, match="cannot go from COMPLETED to RUNNING"):
        done.moved(TaskStatus.RUNNING)
    with pytest.raises(ValueError, match="cannot go from RUNNING to PENDING"):
        running.moved(TaskStatus.PENDING)
    assert TaskRecord.from_dict(done.to_dict()) == done
    assert done.agent_key == "a:1" and done.child_session == "s:a:1"


async def test_tool_errors_name_the_problem() -> None:
    spec = SubagentSpec("helper", "Helps.", model=child_model("ok"))
    model = ScriptedModel(
        [
            calls(
                spawn("helper", "x", timeout_seconds=601),
                spawn("helper", "   "),
                spawn("helper", "x", label="!!!"),
                ScriptedToolCall("task_list", {"status": "done"}),
                ScriptedToolCall("task_output", {"task_id": "task_nope"}),
                ScriptedToolCall("task_cancel", {"task_id": "task_nope"}),
                ScriptedToolCall("agent_send", {"agent": "nobody", "message": "hi"}),
            ),
            "ok",
        ]
    )
    agent = parent(model, spec)
    await agent.call("go", RuntimeContext())
    results = tool_results(model.requests[-1])
    assert "timeout_seconds must be from 0 to 600 seconds, got 601" in results[0]
    assert "task must not be blank" in results[1]
    assert "label '!!!' has no letters or digits" in results[2]
    assert "status must be one of PENDING, RUNNING, COMPLETED, FAILED, CANCELLED" in results[3]
    assert "no task 'task_nope' in this conversation" in results[4]
    assert "no task 'task_nope' in this conversation" in results[5]
    assert "cannot send to 'nobody': no such session; sessions: none yet" in results[6]
    await agent.close()


async def test_task_list_filters_and_cancel_of_an_ended_task() -> None:
    failing = SubagentSpec("bad", "Fails.", model=ScriptedModel([RuntimeError("no")]))
    good = SubagentSpec("good", "Works.", model=child_model("fine"))
    model = ScriptedModel(
        [
            calls(spawn("good", "a"), spawn("bad", "b")),
            calls(ScriptedToolCall("task_list", {"status": "failed"})),
            "ok",
        ]
    )
    agent = parent(model, failing, good)
    ctx = RuntimeContext(session_id="lists")
    await agent.call("go", ctx)
    listed = json.loads(tool_results(model.requests[-1])[-1])
    assert [t["agent_key"] for t in listed] == ["bad:1"]
    assert listed[0]["status"] == "FAILED" and "RuntimeError: no" in listed[0]["error"]
    tasks = await agent.capability(Subagents).tasks(ctx)  # type: ignore[union-attr]
    good_id = next(t for t in tasks if t.agent_id == "good").task_id
    model.add(calls(ScriptedToolCall("task_cancel", {"task_id": good_id})), "ok")
    await agent.call("cancel it", ctx)
    assert "already ended (COMPLETED)" in tool_results(model.requests[-1])[-1]
    await agent.close()
