"""A sub-agent's request forwarded to its parent's session is listed and answered from a second
process sharing the stores; the sub-agent, waiting in the first process, goes on (synchronous
and background children, approvals and questions)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from harnessed import HarnessAgent, RuntimeContext
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent, Event
from harnessed.models import ScriptedModel
from harnessed.questions import ASK_USER, AskUser
from harnessed.subagents import Subagents, SubagentSpec
from tests.subagents.helpers import calls, spawn, tool_results, wait_for_tasks
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
