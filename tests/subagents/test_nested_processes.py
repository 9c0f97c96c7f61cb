"""A sub-agent's request forwarded to its parent's session is listed and answered from a second
process sharing the stores; the sub-agent, waiting in the first process, goes on (synchronous
and background children, approvals and questions)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent, Event
from harnessed.models import ScriptedModel
from harnessed.questions import ASK_USER, AskUser, QuestionAnswerError
from harnessed.subagents import Subagents, SubagentSpec
from tests.subagents.helpers import calls, spawn, tool_results, wait_for_tasks
from tests.subagents.nested_restart_app import CTX, build
from tests.subagents.test_nested_approvals import acting, touch, touched

ROOT = Path(__file__).resolve().parents[2]


async def answer_elsewhere(workspace: Path, session: str, approved: bool, *answer: Any) -> str:
    """Run the answering process (without blocking this one's event loop) and return what it
    printed."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    args = [json.dumps(a) for a in answer]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.subagents.nested_answer_worker",
        str(workspace),
        session,
        "yes" if approved else "no",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    return out.decode()


def boss(model: ScriptedModel, spec: SubagentSpec, workspace: Path, **kw: Any) -> HarnessAgent:
    return HarnessAgent(
        "boss",
        model,
        workspace=str(workspace),
        shell=False,
        memory=False,
        capabilities=[Subagents([spec]), *kw.pop("capabilities", [])],
        **kw,
    )


async def waiting_request(agent: HarnessAgent, ctx: RuntimeContext) -> None:
    """Wait until the background child's request is listed (an event, not a time)."""
    for _ in range(12000):
        if await agent.pending_confirmations(ctx):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the background child never asked")


async def test_a_sync_childs_approval_is_answered_from_a_second_process(tmp_path: Path) -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting("touch", {"name": "q"}))
    model = ScriptedModel([calls(spawn("worker", "touch q")), "The worker is done."])
    agent = boss(model, spec, tmp_path, tools=[touch], permission_mode="default")
    ctx = RuntimeContext("u", "sync")
    events: list[Event] = []
    said = ""
    async for event in agent.stream_events("go", ctx):
        events.append(event)
        if isinstance(event, ConfirmationRequestEvent):
            said = await answer_elsewhere(tmp_path, "sync", True)
    (asked,) = [e for e in events if isinstance(e, ConfirmationRequestEvent)]
    assert said.splitlines() == [f"worker:1 {asked.request_id} touch", "answered"]
    assert touched == ["q"]
    assert "tool said: touched q" in tool_results(model.requests[-1])[0]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"
    assert await agent.pending_confirmations(ctx) == []
    await agent.close()


async def test_a_sync_childs_decline_from_a_second_process_reaches_it(tmp_path: Path) -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting("touch", {"name": "no"}))
    model = ScriptedModel([calls(spawn("worker", "touch no")), "Declined, fine."])
    agent = boss(model, spec, tmp_path, tools=[touch], permission_mode="default")
    ctx = RuntimeContext("u", "declined")
    async for event in agent.stream_events("go", ctx):
        if isinstance(event, ConfirmationRequestEvent):
            assert (await answer_elsewhere(tmp_path, "declined", False)).endswith("answered\n")
    assert touched == []
    assert "declined" in tool_results(model.requests[-1])[0]
    await agent.close()


async def test_a_sync_childs_question_is_answered_from_a_second_process(tmp_path: Path) -> None:
    schema = {"type": "integer", "minimum": 1, "maximum": 8}
    child = acting(ASK_USER, {"question": "How many shards?", "schema": schema})
    spec = SubagentSpec("worker", "Works.", model=child)
    model = ScriptedModel([calls(spawn("worker", "ask")), "ok"])
    agent = boss(model, spec, tmp_path, capabilities=[AskUser()])
    ctx = RuntimeContext("u", "question")
    refused = said = ""
    async for event in agent.stream_events("go", ctx):
        if isinstance(event, ConfirmationRequestEvent):
            assert event.source == "worker:1"
            with pytest.raises(QuestionAnswerError):  # wrong here: still open everywhere
                await agent.respond(ctx, event.request_id, True, answer=0)
            refused = await answer_elsewhere(tmp_path, "question", True, 99)
            said = await answer_elsewhere(tmp_path, "question", True, 3)
    assert "QuestionAnswerError" in refused and "maximum" in refused
    assert said.splitlines()[-1] == "answered"
    assert "The user answered (JSON): 3" in tool_results(model.requests[-1])[0]
    await agent.close()


async def test_a_background_childs_approval_is_answered_from_a_second_process(
    tmp_path: Path,
) -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting("touch", {"name": "bg"}))
    model = ScriptedModel(
        [calls(spawn("worker", "touch bg", timeout_seconds=0)), "Started it in the background."]
    )
    agent = boss(model, spec, tmp_path, tools=[touch], permission_mode="default")
    ctx = RuntimeContext("u", "bg")
    events = [e async for e in agent.stream_events("go", ctx)]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"
    await waiting_request(agent, ctx)
    said = await answer_elsewhere(tmp_path, "bg", True)
    assert said.startswith("worker:1 ") and said.endswith("touch\nanswered\n")
    await wait_for_tasks(agent, ctx, 1)
    assert touched == ["bg"]
    assert await agent.pending_confirmations(ctx) == []
    await agent.close()


async def test_a_background_childs_question_is_answered_from_a_second_process(
    tmp_path: Path,
) -> None:
    child = acting(ASK_USER, {"question": "Which region?", "choices": ["eu", "us"]})
    spec = SubagentSpec("worker", "Works.", model=child)
    model = ScriptedModel([calls(spawn("worker", "ask", timeout_seconds=0)), "Started."])
    agent = boss(model, spec, tmp_path, capabilities=[AskUser()])
    ctx = RuntimeContext("u", "bgq")
    _ = [e async for e in agent.stream_events("go", ctx)]
    await waiting_request(agent, ctx)
    said = await answer_elsewhere(tmp_path, "bgq", True, "us")
    assert said.splitlines()[-1] == "answered"
    await wait_for_tasks(agent, ctx, 1)
    (task,) = await agent.capability(Subagents).tasks(ctx)  # type: ignore[union-attr]
    assert task.result is not None and "The user answered: us" in task.result
    await agent.close()


def run_until_asked_then_kill(workspace: Path) -> str:
    """Run the app until its background sub-agent's request is open, kill -9 it; returns the
    request id."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.subagents.nested_restart_app", str(workspace)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not (asked := list((workspace / "marks").glob("asked-*"))):
            if proc.poll() is not None:
                raise AssertionError(f"the app exited early: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise AssertionError("the sub-agent never asked")
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return asked[0].name.removeprefix("asked-")


async def test_after_kill_9_the_old_request_is_closed_when_the_parent_runs_again(
    tmp_path: Path,
) -> None:
    old = run_until_asked_then_kill(tmp_path)
    probe = build(tmp_path, [])
    # the killed process cannot close it: listed until the parent session runs again
    assert [r.request_id for r in await probe.pending_confirmations(CTX)] == [old]
    await probe.close()

    agent = build(tmp_path, ["The deploy is under way."])
    _ = [e async for e in agent.stream_events("how is the deploy?", CTX)]
    assert await agent.pending_confirmations(CTX) == []
    said = await answer_elsewhere(tmp_path, CTX.session, True)
    assert said == "nothing waiting\n"
    # the resumed task learns that its call did not finish (the log cannot tell that it
    # never started: it waited for approval), and the call never ran
    await wait_for_tasks(agent, CTX, 1)
    (task,) = await agent.capability(Subagents).tasks(CTX)  # type: ignore[union-attr]
    assert task.result is not None and "interrupted" in task.result
    assert not (tmp_path / "marks" / "deployed-web").exists()
    await agent.close()
