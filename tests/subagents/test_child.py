"""What a sub-agent inherits and how its failures, cancellation and depth are handled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.events import (
    AgentEndEvent,
    ConfirmationRequestEvent,
    CustomEvent,
    ToolResultEvent,
)
from harnessed.models import ScriptedModel
from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedResponse, ScriptedToolCall
from harnessed.permissions import PermissionRule
from harnessed.subagents import Subagents, SubagentSpec
from tests.subagents.helpers import calls, child_model, last_user_text, parent, spawn, tool_results
from tests.support.fixtures import collect

touched: list[str] = []


@tool
def touch(name: str) -> str:
    """Create a marker (changes things)."""
    touched.append(name)
    return f"touched {name}"


def acting_child(tool_name: str, args: dict[str, object]) -> ScriptedModel:
    """A child that calls one tool and then reports what the tool said."""

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        results = tool_results(request)
        if results:
            return f"tool said: {results[-1]}"
        return ScriptedResponse(tool_calls=[ScriptedToolCall(tool_name, args)])

    return ScriptedModel(responder=respond, name="child")


async def test_child_failure_is_an_error_result_and_the_parent_continues() -> None:
    broken = SubagentSpec(
        "broken", "Fails.", model=ScriptedModel([RuntimeError("provider exploded")])
    )
    model = ScriptedModel([calls(spawn("broken", "try")), "I will do it myself."])
    agent = parent(model, broken)
    ctx = RuntimeContext(session_id="f")
    reply = await agent.call("go", ctx)
    assert reply.text == "I will do it myself."
    result = model.requests[-1].messages[-2].tool_results[0]
    assert result.is_error
    assert "sub-agent broken:1 failed" in result.content
    assert "RuntimeError: provider exploded" in result.content
    tasks = await agent.capability(Subagents).tasks(ctx)
    assert tasks[0].status.value == "FAILED" and "provider exploded" in (tasks[0].error or "")
    await agent.close()


async def test_deny_rules_are_inherited() -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting_child("touch", {"name": "x"}))
    model = ScriptedModel([calls(spawn("worker", "touch x")), "ok"])
    agent = parent(
        model,
        spec,
        tools=[touch],
        permission_mode="bypass",
        permission_rules=[PermissionRule.deny("touch")],
    )
    await agent.call("go", RuntimeContext(session_id="deny"))
    assert touched == []
    answer = tool_results(model.requests[-1])[0]
    assert "tool said: Permission denied" in answer
    await agent.close()


async def test_session_deny_rules_of_the_parent_are_inherited_too() -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting_child("touch", {"name": "y"}))
    model = ScriptedModel([calls(spawn("worker", "touch y")), "ok"])
    agent = parent(model, spec, tools=[touch], permission_mode="bypass")
    ctx = RuntimeContext(session_id="sdeny")
    await agent.set_permission_rules(ctx, [PermissionRule.deny("touch", name="y")])
    await agent.call("go", ctx)
    assert touched == []
    await agent.close()


async def test_plan_mode_is_inherited(tmp_path: Path) -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting_child("touch", {"name": "z"}))
    model = ScriptedModel([calls(spawn("worker", "touch z")), "ok"])
    agent = parent(model, spec, tools=[touch], workspace=tmp_path, enable_plan_mode=True)
    ctx = RuntimeContext(session_id="plan")
    await agent.enter_plan_mode(ctx)
    await agent.call("go", ctx)
    assert touched == []
    assert "tool said: Blocked in plan mode" in tool_results(model.requests[-1])[0]
    await agent.close()


async def test_without_restrictions_the_child_acts() -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting_child("touch", {"name": "w"}))
    model = ScriptedModel([calls(spawn("worker", "touch w")), "ok"])
    agent = parent(model, spec, tools=[touch])
    await agent.call("go", RuntimeContext(session_id="free"))
    assert touched == ["w"]
    await agent.close()


async def test_depth_limit() -> None:
    """Every level spawns the next: the fourth level is refused with a clear error."""

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        results = tool_results(request)
        if results:
            return f"level below said: {results[-1][:200]}"
        return ScriptedResponse(tool_calls=[spawn("general-purpose", "go deeper")])

    model = ScriptedModel(responder=respond)
    agent = HarnessAgent("boss", model, capabilities=[Subagents()])
    reply = await agent.call("start", RuntimeContext(session_id="deep"))
    assert "depth limit reached" in reply.text
    assert "at depth 3 of 3" in reply.text
    sessions = {s.session_id for s in await agent.sessions()}
    assert "deep:general-purpose:1:general-purpose:1:general-purpose:1" in sessions
    assert not any(s.count("general-purpose") > 3 for s in sessions)
    await agent.close()


async def test_users_children_are_isolated() -> None:
    spec = SubagentSpec(
        "echo", "Echoes.", model=child_model(lambda r: "secret of " + last_user_text(r))
    )

    def script() -> ScriptedModel:
        async def respond(request: ModelRequest) -> str | ScriptedResponse:
            results = tool_results(request)
            if not results:
                who = request.messages[1].text
                return ScriptedResponse(
                    tool_calls=[spawn("echo", who, label="same", timeout_seconds=0)]
                )
            return "started"

        return ScriptedModel(responder=respond)

    agent = parent(script(), spec)
    alice = RuntimeContext(user_id="alice", session_id="s")
    bob = RuntimeContext(user_id="bob", session_id="s")
    await asyncio.gather(agent.call("alice-data", alice), agent.call("bob-data", bob))
    await asyncio.sleep(0.2)
    cap = agent.capability(Subagents)
    alice_tasks, bob_tasks = await cap.tasks(alice), await cap.tasks(bob)
    assert len(alice_tasks) == len(bob_tasks) == 1
    assert alice_tasks[0].result and "alice-data" in alice_tasks[0].result
    assert bob_tasks[0].result and "bob-data" in bob_tasks[0].result
    # same label and parent session id, still separate sessions per user
    alice_child = await agent.session_messages(
        RuntimeContext(user_id="alice", session_id="s:echo:same")
    )
    assert [m.text for m in alice_child if m.role == "user"] == ["alice-data"]
    # bob cannot read alice's task
    agent.model.add(  # type: ignore[attr-defined]
        calls(ScriptedToolCall("task_output", {"task_id": alice_tasks[0].task_id})), "no"
    )
    events = await collect(agent, "peek", bob)
    result = next(e for e in events if isinstance(e, ToolResultEvent) and e.source is None)
    assert result.result.is_error and "no task" in result.result.content
    await agent.close()


async def test_cancel_stops_the_child_at_its_next_safe_point() -> None:
    steps: list[str] = []
    release = asyncio.Event()

    @tool(read_only=True)
    async def slow_step(n: int) -> str:
        """One slow step."""
        steps.append(f"step {n}")
        await release.wait()
        return f"step {n} done"

    def respond(request: ModelRequest) -> ScriptedResponse:
        n = len(tool_results(request))
        return ScriptedResponse(tool_calls=[ScriptedToolCall("slow_step", {"n": n})])

    spec = SubagentSpec("looper", "Loops.", model=ScriptedModel(responder=respond), max_iters=50)
    model = ScriptedModel([calls(spawn("looper", "loop", timeout_seconds=0)), "started"])
    agent = parent(model, spec, tools=[slow_step])
    ctx = RuntimeContext(session_id="cancel")
    await agent.call("go", ctx)
    await asyncio.sleep(0.1)
    assert steps == ["step 0"]
    task_id = (await agent.capability(Subagents).tasks(ctx))[0].task_id
    model.add(calls(ScriptedToolCall("task_cancel", {"task_id": task_id})), "cancelling")
    await agent.call("stop it", ctx)
    assert "stops at its next safe point" in tool_results(model.requests[-1])[-1]
    release.set()  # the step in flight completes; no further step starts
    await asyncio.sleep(0.2)
    assert steps == ["step 0"]
    tasks = await agent.capability(Subagents).tasks(ctx)
    assert tasks[0].status.value == "CANCELLED"
    child_messages = await agent.session_messages(RuntimeContext(session_id="cancel:looper:1"))
    # the step in flight was committed whole: its call has its result
    assert child_messages[-2].tool_results[0].content == "step 0 done"
    await agent.close()


async def test_agent_send_continues_the_same_session() -> None:
    def respond(request: ModelRequest) -> str:
        users = [
            m.text for m in request.messages if m.role == "user" and not m.text.startswith("<")
        ]
        return " then ".join(users)

    spec = SubagentSpec("notes", "Keeps notes.", model=ScriptedModel(responder=respond))
    model = ScriptedModel(
        [
            calls(spawn("notes", "first", label="n")),
            calls(ScriptedToolCall("agent_send", {"agent": "n", "message": "second"})),
            "done",
        ]
    )
    agent = parent(model, spec)
    await agent.call("go", RuntimeContext(session_id="send"))
    results = tool_results(model.requests[-1])
    assert results[1].startswith("first then second")
    await agent.close()


async def test_isolated_workspace_keeps_the_parents_files_out(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("parent only")

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        results = tool_results(request)
        if len(results) == 0:
            return ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("write_file", {"path": "scratch.txt", "content": "mine"})
                ]
            )
        if len(results) == 1:
            return ScriptedResponse(
                tool_calls=[ScriptedToolCall("read_file", {"path": "secret.txt"})]
            )
        return f"read: {results[-1][:80]}"

    spec = SubagentSpec(
        "sandboxed", "Works alone.", model=ScriptedModel(responder=respond), workspace="isolated"
    )
    model = ScriptedModel([calls(spawn("sandboxed", "work")), "ok"])
    agent = parent(model, spec, workspace=tmp_path)
    await agent.call("go", RuntimeContext(session_id="iso"))
    answer = tool_results(model.requests[-1])[0]
    assert "parent only" not in answer
    assert not (tmp_path / "scratch.txt").exists()
    assert list(tmp_path.glob(".harnessed/subagent-workspaces/**/scratch.txt"))
    await agent.close()


async def test_a_spec_with_an_unusable_model_is_an_error_result() -> None:
    spec = SubagentSpec("odd", "Odd.", model="nosuchprovider:x")
    model = ScriptedModel([calls(spawn("odd", "try")), "ok"])
    agent = parent(model, spec)
    await agent.call("go", RuntimeContext())
    result = tool_results(model.requests[-1])[0]
    assert "sub-agent 'odd': its model cannot be used" in result
    await agent.close()


async def test_closing_the_parents_stream_cancels_its_sync_child() -> None:
    started = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        started.set()
        await asyncio.sleep(30)
        return "too late"

    spec = SubagentSpec("slow", "Slow.", model=ScriptedModel(responder=slow))
    model = ScriptedModel([calls(spawn("slow", "take your time", timeout_seconds=60)), "ok"])
    agent = parent(model, spec)
    ctx = RuntimeContext(session_id="closed")
    stream = agent.stream_events("go", ctx)
    async for _event in stream:
        if started.is_set():
            break
    await stream.aclose()
    for _ in range(50):
        tasks = await agent.capability(Subagents).tasks(ctx)  # type: ignore[union-attr]
        if tasks and tasks[0].ended:
            break
        await asyncio.sleep(0.05)
    assert [t.status.value for t in tasks] == ["CANCELLED"]
    await agent.close()


async def test_a_child_whose_policy_is_fail_fails_its_task_and_asks_nobody() -> None:
    touched.clear()
    spec = SubagentSpec(
        "worker", "Works.", model=acting_child("touch", {"name": "q"}), on_approval="fail"
    )
    model = ScriptedModel([calls(spawn("worker", "touch q")), "I will ask the user myself."])
    agent = parent(model, spec, tools=[touch], permission_mode="default")
    events = await collect(agent, "go", RuntimeContext(session_id="ask"))
    assert touched == []
    assert not any(isinstance(e, ConfirmationRequestEvent) for e in events)
    needs = [
        e for e in events if isinstance(e, CustomEvent) and e.name == "subagent_needs_approval"
    ]
    assert [(e.source, e.data["tool"]) for e in needs] == [("worker:1", "touch")]
    result = tool_results(model.requests[-1])[0]
    assert "sub-agent worker:1 failed" in result and "cannot ask for" in result
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"
    await agent.close()
