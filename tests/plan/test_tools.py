"""Plan mode: what runs while planning, the plan file, and approval to leave (BEHAVIOUR §6)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harnessed import HarnessAgent
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent, Event
from harnessed.log import RecordType
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from harnessed.plan import PLAN as PLAN_STATE
from harnessed.plan import PlanState
from harnessed.workspace import MemoryFilesystem, Workspace
from tests.support.fixtures import CTX, call

PLAN = "agents/planner/users/u/plans/PLAN.md"  # the plan is in the caller's own scope


def result(request: ModelRequest, call_id: str) -> Any:
    for m in request.messages:
        for r in m.tool_results:
            if r.tool_use_id == call_id:
                return r
    raise AssertionError(f"no result for {call_id}")


def runtime_state(request: ModelRequest) -> str:
    text = next(m.text for m in request.messages if "<RUNTIME_STATE>" in m.text)
    return text[text.index("<RUNTIME_STATE>") :]


def planner(tmp_path: Path, model: ScriptedModel, **kw: Any) -> HarnessAgent:
    return HarnessAgent(
        "planner", model, workspace=tmp_path, enable_plan_mode=True, enable_task_list=True, **kw
    )


async def test_plan_mode_blocks_changes_but_allows_reading_and_planning(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("plan_enter", "enter")]),
            ScriptedResponse(
                tool_calls=[
                    call("read_file", "read", path="app.py"),
                    call("write_file", "write", path="app.py", content="broken"),
                    call("execute", "exec", command="touch made.txt"),
                    call("plan_write", "plan", content="# Plan\n1. change app.py\n"),
                    call("todo_write", "todo", todos=[{"content": "change app.py"}]),
                ]
            ),
            "planned",
        ]
    )
    agent = planner(tmp_path, model)
    await agent.call("improve the app", CTX)
    after = model.requests[2]
    assert "print('hi')" in result(after, "read").content
    for blocked in ("write", "exec"):
        r = result(after, blocked)
        assert r.is_error and r.content.startswith("Blocked in plan mode")
    assert not result(after, "plan").is_error and not result(after, "todo").is_error
    assert (tmp_path / "app.py").read_text() == "print('hi')\n"
    assert not (tmp_path / "made.txt").exists()
    assert (tmp_path / PLAN).read_text() == "# Plan\n1. change app.py\n"
    runtime = runtime_state(after)
    assert "mode: PLAN" in runtime and f"plan file: {PLAN}" in runtime
    assert "mode: PLAN" in runtime_state(model.requests[1])  # shown at every request
    state = await agent.load_state(CTX)
    assert state.get(PLAN_STATE) == PlanState(active=True, plan_file=PLAN)
    records = await agent.session_log(CTX, types=[RecordType.PLAN_CHANGED])
    assert [r.payload["action"] for r in records] == ["enter", "write"]


async def collect_answering(
    agent: HarnessAgent, text: str | None, approve: bool, feedback: str | None = None
) -> list[Event]:
    events: list[Event] = []
    async for event in agent.stream_events(text, CTX):
        events.append(event)
        if isinstance(event, ConfirmationRequestEvent):
            # a web handler answers from elsewhere while the run waits
            async def answer(request_id: str = event.request_id) -> None:
                await asyncio.sleep(0.02)
                await agent.respond(CTX, request_id, approve, feedback=feedback)

            asyncio.get_running_loop().create_task(answer())
    return events


async def test_plan_exit_waits_for_approval_then_building_may_start(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[call("plan_enter"), call("plan_write", content="# Plan\nedit a.txt")]
            ),
            ScriptedResponse(tool_calls=[call("plan_exit", "exit")]),
            ScriptedResponse(tool_calls=[call("write_file", "w", path="a.txt", content="done")]),
            "built",
        ]
    )
    agent = planner(tmp_path, model)
    events = await collect_answering(agent, "plan then build", approve=True)
    asks = [e for e in events if isinstance(e, ConfirmationRequestEvent)]
    assert len(asks) == 1 and asks[0].call.name == "plan_exit"
    assert asks[0].details["plan"] == "# Plan\nedit a.txt"
    assert asks[0].details["plan_file"] == PLAN
    assert "approve the plan" in asks[0].reason
    assert "approved the plan" in result(model.requests[2], "exit").content
    assert "mode: BUILD" in runtime_state(model.requests[2])
    assert not result(model.requests[3], "w").is_error
    assert (tmp_path / "a.txt").read_text() == "done"
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"


async def test_a_declined_plan_keeps_plan_mode(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("plan_enter"), call("plan_write", content="# v1")]),
            ScriptedResponse(tool_calls=[call("plan_exit", "exit")]),
            "I will revise it",
        ]
    )
    agent = planner(tmp_path, model)
    await collect_answering(agent, "plan", approve=False, feedback="add a rollback step")
    declined = result(model.requests[2], "exit")
    assert declined.is_error
    assert "did not approve the plan" in declined.content
    assert "add a rollback step" in declined.content
    assert "mode: PLAN" in runtime_state(model.requests[2])
    assert (await agent.load_state(CTX)).get(PLAN_STATE).active


async def test_plan_exit_in_call_ends_pending_and_resumes_after_the_answer(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("plan_enter"), call("plan_write", content="# P")]),
            ScriptedResponse(tool_calls=[call("plan_exit", "exit")]),
            "building now",
        ]
    )
    agent = planner(tmp_path, model)
    reply = await agent.call("plan", CTX)
    assert reply.metadata["harness"] == "pending_confirmation"
    [pending] = await agent.pending_confirmations(CTX)
    assert pending.call.name == "plan_exit"
    assert (await agent.load_state(CTX)).get(PLAN_STATE).active  # still planning until approved
    await agent.respond(CTX, pending.request_id, True)
    assert (
        (await agent.load_state(CTX)).get(PLAN_STATE).active
    )  # the answer alone changes nothing yet
    reply = await agent.call(None, CTX)
    assert reply.text == "building now"
    assert not (await agent.load_state(CTX)).get(PLAN_STATE).active


async def test_plan_exit_needs_plan_mode_and_a_plan(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("plan_exit", "early")]),
            ScriptedResponse(tool_calls=[call("plan_enter"), call("plan_exit", "empty")]),
            "ok",
        ]
    )
    agent = planner(tmp_path, model)
    await agent.call("go", CTX)  # nothing to approve: no confirmation is asked
    assert "not in plan mode" in result(model.requests[1], "early").content
    assert "no plan yet" in result(model.requests[2], "empty").content


async def test_application_can_enter_and_leave_plan_mode(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("write_file", "w", path="x", content="y")]), "ok"]
    )
    agent = planner(tmp_path, model)
    plan = await agent.enter_plan_mode(CTX)
    assert plan == PlanState(True, PLAN)
    await agent.call("write x", CTX)
    assert result(model.requests[1], "w").content.startswith("Blocked in plan mode")
    assert (await agent.exit_plan_mode(CTX)) == PlanState(False, PLAN)
    records = await agent.session_log(CTX, types=[RecordType.PLAN_CHANGED])
    assert [(r.payload["action"], r.payload["by"]) for r in records] == [
        ("enter", "application"),
        ("exit", "application"),
    ]


async def test_plan_write_goes_through_the_workspace_filesystem() -> None:
    fs = MemoryFilesystem()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("plan_write", content="# remote plan")]), "ok"]
    )
    agent = HarnessAgent("remote", model, workspace=Workspace(fs), enable_plan_mode=True)
    await agent.call("plan", CTX)
    assert await fs.read_text("agents/remote/users/u/plans/PLAN.md") == "# remote plan"


def test_plan_mode_needs_a_workspace() -> None:
    with pytest.raises(ValueError, match="enable_plan_mode needs a workspace"):
        HarnessAgent("p", ScriptedModel(), enable_plan_mode=True)


async def test_enter_plan_mode_needs_it_enabled() -> None:
    with pytest.raises(RuntimeError, match="enable_plan_mode=True"):
        await HarnessAgent("p", ScriptedModel()).enter_plan_mode(CTX)


async def test_entering_and_leaving_in_one_step_still_needs_approval(tmp_path: Path) -> None:
    (tmp_path / PLAN).parent.mkdir(parents=True)
    (tmp_path / PLAN).write_text("# an old plan")
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("plan_enter"), call("plan_exit", "exit")]), "ok"]
    )
    agent = planner(tmp_path, model)
    events = [e async for e in agent.stream_events("sneak", CTX)]
    assert not any(isinstance(e, ConfirmationRequestEvent) for e in events)
    refused = result(model.requests[1], "exit")
    assert refused.is_error and "needs the user's approval" in refused.content
    assert (await agent.load_state(CTX)).get(PLAN_STATE).active


async def test_a_call_plan_mode_refuses_is_never_put_to_the_user(tmp_path: Path) -> None:
    """Plan mode's refusal reaches the approval gate (``Permissions.add_refusal``): with a
    permission mode that would ask, a changing call in plan mode is refused, not asked about."""
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("plan_enter")]),
            ScriptedResponse(tool_calls=[call("write_file", "w", path="app.py", content="x")]),
            "planned",
        ]
    )
    agent = planner(tmp_path, model, permission_mode="default", confirmation_timeout=5)
    events = [e async for e in agent.stream_events("change app.py", CTX)]
    assert not any(isinstance(e, ConfirmationRequestEvent) for e in events)
    refused = result(model.requests[2], "w")
    assert refused.is_error and "Blocked in plan mode" in refused.content
    assert not (tmp_path / "app.py").exists()
