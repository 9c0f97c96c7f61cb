"""After the process running a background task is killed, the task is resumed from its own log
when the parent session is used again — or marked FAILED with the reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessed.models.scripted import ScriptedToolCall
from harnessed.subagents import Subagents
from tests.subagents.helpers import calls
from tests.subagents.restart_app import CTX, JobReport, build

ROOT = Path(__file__).resolve().parents[2]


def run_and_kill(workspace: Path, *flags: str) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.subagents.restart_app", str(workspace), *flags],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        marks = workspace / "marks"
        while not (list(marks.glob("step-2-*")) and (marks / "parent-done").exists()):
            if proc.poll() is not None:
                raise AssertionError(f"the app exited early: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise AssertionError("the sub-agent never reached its second step")
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.fixture
def killed(tmp_path: Path) -> Path:
    run_and_kill(tmp_path)
    return tmp_path


async def test_a_running_task_is_resumed_from_its_log(killed: Path) -> None:
    probe = build(killed, [], hang=False)
    running = await probe.capability(Subagents).tasks(CTX)  # type: ignore[union-attr]
    assert [t.status.value for t in running] == ["RUNNING"]
    task_id = running[0].task_id
    await probe.close()

    script = [
        calls(ScriptedToolCall("task_output", {"task_id": task_id, "block": True, "timeout": 20})),
        "The job is done.",
    ]
    agent = build(killed, script, hang=False)
    await agent.call("how is the job going?", CTX)
    tasks = await agent.capability(Subagents).tasks(CTX)  # type: ignore[union-attr]
    assert tasks[0].status.value == "COMPLETED"
    assert tasks[0].result == "job finished after 3 steps"
    marks = sorted(
        p.name.rsplit("-", 1)[0] for p in (killed / "marks").iterdir() if p.name.startswith("step")
    )
    # step 1 ran once (before the kill; its result is in the child's log and was not repeated);
    # the step cut by the kill was answered or run again, and the job went on to step 3
    assert marks.count("step-1") == 1
    assert marks.count("step-3") == 1
    log = await agent.session_log(CTX, types=["subagent/resumed", "subagent/completed"])
    assert [r.type for r in log] == ["subagent/resumed", "subagent/completed"]
    await agent.close()


async def test_a_typed_task_resumed_after_kill_9_returns_its_typed_answer(tmp_path: Path) -> None:
    run_and_kill(tmp_path, "typed")
    probe = build(tmp_path, [], hang=False, typed=True)
    (running,) = await probe.capability(Subagents).tasks(CTX)  # type: ignore[union-attr]
    await probe.close()

    script = [
        calls(
            ScriptedToolCall(
                "task_output", {"task_id": running.task_id, "block": True, "timeout": 20}
            )
        ),
        "The job is done.",
    ]
    agent = build(tmp_path, script, hang=False, typed=True)
    await agent.call("how is the job going?", CTX)
    (task,) = await agent.capability(Subagents).tasks(CTX)  # type: ignore[union-attr]
    assert task.status.value == "COMPLETED"
    assert JobReport.model_validate(task.output) == JobReport(steps=3, ok=True)
    await agent.close()


async def test_a_task_that_cannot_be_resumed_is_marked_failed_with_the_reason(
    killed: Path,
) -> None:
    agent = build(killed, ["Noted."], hang=False, declare=False)
    await agent.call("anything new?", CTX)
    tasks = await agent.capability(Subagents).tasks(CTX)  # type: ignore[union-attr]
    assert tasks[0].status.value == "FAILED"
    assert "could not be resumed" in (tasks[0].error or "")
    assert "no longer declared" in (tasks[0].error or "")
    # the model is told at once, in the same call
    agent_model = agent.model
    reminder = [
        m
        for m in agent_model.requests[0].messages  # type: ignore[attr-defined]
        if m.metadata.get("harness") == "subagent_tasks"
    ]
    assert len(reminder) == 1 and "FAILED" in reminder[0].text
    await agent.close()


async def test_a_task_that_finished_unheard_is_completed_from_the_childs_log(
    tmp_path: Path,
) -> None:
    """The child answered, but the process stopped before the parent's records said so."""
    import asyncio

    from harnessed import HarnessAgent, RuntimeContext
    from harnessed.models import ScriptedModel
    from harnessed.subagents import SubagentSpec
    from tests.subagents.helpers import spawn

    child_model = ScriptedModel(["the answer is 42"], name="child")

    def build_agent(parent_script: list[object]) -> HarnessAgent:
        spec = SubagentSpec("oracle", "Knows.", model=child_model)
        return HarnessAgent(
            "boss",
            ScriptedModel(parent_script),  # type: ignore[arg-type]
            workspace=tmp_path,
            capabilities=[Subagents([spec])],
        )

    ctx = RuntimeContext(user_id="u", session_id="lost")
    first = build_agent([calls(spawn("oracle", "what is it?", timeout_seconds=0)), "asked"])
    await first.call("ask the oracle", ctx)
    await asyncio.sleep(0.2)
    cap = first.capability(Subagents)
    assert cap is not None and (await cap.tasks(ctx))[0].status.value == "COMPLETED"

    def forget(state):  # type: ignore[no-untyped-def]
        section = dict(state.sections["subagents"])
        section["tasks"] = [{**t, "status": "RUNNING", "result": None} for t in section["tasks"]]
        state.set_section("subagents", section)
        return [("test/forgot", {})]

    await first.change_state(ctx, forget)
    await first.close()

    second = build_agent(["The oracle says 42."])
    await second.call("what did it say?", ctx)
    tasks = await second.capability(Subagents).tasks(ctx)  # type: ignore[union-attr]
    assert [(t.status.value, t.result, t.delivered) for t in tasks] == [
        ("COMPLETED", "the answer is 42", True)
    ]
    assert len(child_model.requests) == 1  # not asked again
    await second.close()


async def test_a_typed_task_that_finished_unheard_keeps_its_typed_answer(tmp_path: Path) -> None:
    import asyncio

    from harnessed import HarnessAgent, RuntimeContext
    from harnessed.models import ScriptedModel
    from harnessed.models.scripted import ScriptedResponse
    from harnessed.output import FINAL_TOOL
    from harnessed.subagents import SubagentSpec
    from tests.subagents.helpers import spawn

    answer = ScriptedResponse(tool_calls=[ScriptedToolCall(FINAL_TOOL, {"steps": 1, "ok": True})])
    child_model = ScriptedModel([answer], name="child")

    def build_agent(parent_script: list[object]) -> HarnessAgent:
        spec = SubagentSpec("oracle", "Knows.", model=child_model, output_type=JobReport)
        return HarnessAgent(
            "boss",
            ScriptedModel(parent_script),  # type: ignore[arg-type]
            workspace=tmp_path,
            capabilities=[Subagents([spec])],
        )

    ctx = RuntimeContext(user_id="u", session_id="lost-typed")
    first = build_agent([calls(spawn("oracle", "report", timeout_seconds=0)), "asked"])
    await first.call("ask the oracle", ctx)
    cap = first.capability(Subagents)
    assert cap is not None
    for _ in range(2000):  # the background child answers: wait for its record
        if (await cap.tasks(ctx))[0].status.value == "COMPLETED":
            break
        await asyncio.sleep(0.01)

    def forget(state):  # type: ignore[no-untyped-def]
        section = dict(state.sections["subagents"])
        section["tasks"] = [
            {**t, "status": "RUNNING", "result": None, "output": None} for t in section["tasks"]
        ]
        state.set_section("subagents", section)
        return [("test/forgot", {})]

    await first.change_state(ctx, forget)
    await first.close()

    second = build_agent(["It reported."])
    await second.call("what did it report?", ctx)
    (task,) = await second.capability(Subagents).tasks(ctx)  # type: ignore[union-attr]
    assert task.status.value == "COMPLETED"
    assert task.output == {"steps": 1, "ok": True}
    assert len(child_model.requests) == 1  # not asked again
    await second.close()
