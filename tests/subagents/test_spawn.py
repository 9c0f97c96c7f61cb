"""agent_spawn: sync answers, timeout promotion, background delivery, events, usage."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Awaitable, Callable
from pathlib import Path

from harnessed import CallContext, Capability, HarnessAgent, RuntimeContext
from harnessed.events import AgentEndEvent, CustomEvent, ModelCallEndEvent, ToolResultEvent
from harnessed.models import ScriptedModel
from harnessed.models.scripted import ScriptedToolCall
from harnessed.subagents import Subagents, SubagentSpec
from tests.subagents.helpers import (
    Rendezvous,
    calls,
    child_model,
    parent,
    spawn,
    tool_results,
    wait_for_tasks,
)
from tests.support.fixtures import collect


def reviewer(
    reply: str = "Looks right.",
    delay: float = 0.0,
    wait_for: Callable[[], Awaitable[object]] | None = None,
) -> SubagentSpec:
    return SubagentSpec(
        "reviewer",
        "Reviews a change.",
        system_prompt="You review.",
        model=child_model(reply, delay, wait_for),
    )


async def test_sync_spawn_returns_the_childs_answer_and_links_both_logs() -> None:
    model = ScriptedModel([calls(spawn("reviewer", "Check the fix in login.py")), "Done."])
    agent = parent(model, reviewer("The fix is correct."))
    ctx = RuntimeContext(user_id="u1", session_id="s1")
    events = await collect(agent, "Fix the login bug", ctx)

    result = next(e for e in events if isinstance(e, ToolResultEvent) and e.source is None)
    assert not result.result.is_error
    assert result.result.content.startswith("The fix is correct.")
    assert "reviewer:1" in result.result.content
    # the child's events are in the parent's stream, tagged with their source
    child_ends = [e for e in events if isinstance(e, AgentEndEvent) and e.source == "reviewer:1"]
    assert len(child_ends) == 1
    assert child_ends[0].session_id == "s1:reviewer:1"
    assert events[-1].source is None and isinstance(events[-1], AgentEndEvent)

    tasks = await agent.capability(Subagents).tasks(ctx)
    assert [(t.status.value, t.delivered, t.background) for t in tasks] == [
        ("COMPLETED", True, False)
    ]
    parent_log = await agent.session_log(ctx, types=["subagent/spawned", "subagent/completed"])
    assert [r.type for r in parent_log] == ["subagent/spawned", "subagent/completed"]
    assert parent_log[0].payload["child_session"] == "s1:reviewer:1"
    child_ctx = RuntimeContext(user_id="u1", session_id="s1:reviewer:1")
    child_log = await agent.session_log(child_ctx)
    assert child_log[0].type == "subagent/spawned"
    assert child_log[0].payload["parent_session"] == "s1"
    assert child_log[-1].type == "subagent/completed"
    messages = await agent.session_messages(child_ctx)
    assert messages[0].text == "Check the fix in login.py"
    await agent.close()


async def test_child_usage_is_added_to_the_parent() -> None:
    model = ScriptedModel([calls(spawn("reviewer", "Check it")), "Done."])
    agent = parent(model, reviewer())
    ctx = RuntimeContext(session_id="usage")
    events = await collect(agent, "go", ctx)
    child_usage = sum(
        e.usage.input_tokens
        for e in events
        if isinstance(e, ModelCallEndEvent) and e.source and e.usage is not None
    )
    assert child_usage > 0
    done = next(e for e in events if isinstance(e, CustomEvent) and e.name == "subagent_completed")
    assert done.data["input_tokens"] == child_usage
    assert done.data["session_input_tokens"] == child_usage
    # the parent's next request reports what its sub-agents used
    manifest = agent.last_manifest(ctx)
    assert manifest is not None
    assert manifest.delegated_usage["input_tokens"] == child_usage
    assert manifest.to_dict()["delegated_usage"]["input_tokens"] == child_usage
    await agent.close()


async def test_sync_spawn_that_times_out_is_promoted_and_delivered_later() -> None:
    model = ScriptedModel(
        [
            calls(spawn("reviewer", "Slow check", timeout_seconds=0.2)),
            calls(ScriptedToolCall("task_list", {})),
            "Waiting for the review.",
        ]
    )
    release = asyncio.Event()  # the child outlasts the 0.2 s wait, whatever the machine's load
    agent = parent(model, reviewer("Slow but fine.", wait_for=release.wait))
    ctx = RuntimeContext(session_id="promote")
    events = await collect(agent, "go", ctx)
    release.set()
    result = next(e for e in events if isinstance(e, ToolResultEvent) and e.source is None)
    assert "background as task" in result.result.content
    tasks = await agent.capability(Subagents).tasks(ctx)
    assert tasks[0].background
    await wait_for_tasks(agent, ctx, 1)  # the child finishes after the parent's call
    tasks = await agent.capability(Subagents).tasks(ctx)
    assert [(t.status.value, t.delivered) for t in tasks] == [("COMPLETED", False)]

    model.add("Thanks, noted.")
    await agent.call("any news?", ctx)
    reminder = [
        m for m in model.requests[-1].messages if m.metadata.get("harness") == "subagent_tasks"
    ]
    assert len(reminder) == 1
    assert "Slow but fine." in reminder[0].text
    tasks = await agent.capability(Subagents).tasks(ctx)
    assert tasks[0].delivered
    await agent.close()


async def test_background_spawn_reminder_and_task_output() -> None:
    model = ScriptedModel(
        [
            calls(spawn("reviewer", "Review in the background", timeout_seconds=0)),
            "Started it.",
        ]
    )
    release = asyncio.Event()
    agent = parent(model, reviewer("All good.", wait_for=release.wait))
    ctx = RuntimeContext(session_id="bg")
    await agent.call("go", ctx)  # returns while the child still waits: it runs in the background
    assert [t.status.value for t in await agent.capability(Subagents).tasks(ctx)] == ["RUNNING"]
    release.set()
    task_id = (await agent.capability(Subagents).tasks(ctx))[0].task_id
    model.add(
        calls(ScriptedToolCall("task_output", {"task_id": task_id, "block": True, "timeout": 5})),
        "It said all good.",
    )
    events = await collect(agent, "what did it say?", ctx)
    output = next(e for e in events if isinstance(e, ToolResultEvent) and e.source is None)
    assert '"status": "COMPLETED"' in output.result.content
    assert "All good." in output.result.content
    # task_output delivered it: no reminder follows
    assert not any(
        m.metadata.get("harness") == "subagent_tasks" for m in model.requests[-1].messages
    )
    await agent.close()


async def test_one_reminder_lists_at_most_ten_and_the_rest_follow() -> None:
    spawns = [spawn("reviewer", f"part {i}", timeout_seconds=0) for i in range(12)]
    model = ScriptedModel([calls(*spawns), "Started twelve."])
    release = asyncio.Event()  # none may finish during the first call
    agent = parent(model, reviewer("ok", wait_for=release.wait))
    ctx = RuntimeContext(session_id="many")
    await agent.call("go", ctx)
    release.set()
    await wait_for_tasks(agent, ctx, 12)
    model.add(calls(ScriptedToolCall("task_list", {})), "Seen them all.")
    await agent.call("news?", ctx)
    first, second = model.requests[-2], model.requests[-1]
    reminders = [m for m in first.messages if m.metadata.get("harness") == "subagent_tasks"]
    assert len(reminders) == 1
    assert reminders[0].text.count("COMPLETED") == 10
    assert "and 2 more" in reminders[0].text
    later = [m for m in second.messages if m.metadata.get("harness") == "subagent_tasks"]
    assert len(later) == 2 and later[1].text.count("COMPLETED") == 2
    tasks = await agent.capability(Subagents).tasks(ctx)
    assert all(t.delivered for t in tasks)
    await agent.close()


async def test_reminder_is_not_marked_delivered_when_the_step_fails() -> None:
    model = ScriptedModel([calls(spawn("reviewer", "bg", timeout_seconds=0)), "ok"])
    release = asyncio.Event()  # it finishes after the first call, not during it
    agent = parent(model, reviewer("finished", wait_for=release.wait))
    ctx = RuntimeContext(session_id="fail")
    await agent.call("go", ctx)
    release.set()
    await wait_for_tasks(agent, ctx, 1)
    model.add(RuntimeError("provider down"))
    with contextlib.suppress(RuntimeError):
        await agent.call("news?", ctx)
    tasks = await agent.capability(Subagents).tasks(ctx)
    assert [(t.status.value, t.delivered) for t in tasks] == [("COMPLETED", False)]
    model.add("Got it.")
    await agent.call("again", ctx)
    assert any(m.metadata.get("harness") == "subagent_tasks" for m in model.requests[-1].messages)
    assert (await agent.capability(Subagents).tasks(ctx))[0].delivered
    await agent.close()


class Snapshot(Capability):
    """Keeps what the live state held of the sub-agents before each model request."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    async def before_model_request(self, call: CallContext) -> None:
        self.seen.append(copy.deepcopy(call.state.sections.get("subagents")))


async def test_three_spawns_of_one_step_run_in_parallel(tmp_path: Path) -> None:
    model = ScriptedModel(
        [calls(*(spawn("reviewer", f"check {i}") for i in range(3))), "All three done."]
    )
    snapshot = Snapshot()
    agent = HarnessAgent(
        "boss",
        model,
        workspace=tmp_path,  # durable stores: the spawns really interleave
        # each child answers only once all three are inside their model call at once: run one
        # after another, the first would wait in vain (and time out)
        capabilities=[Subagents([reviewer("fine", wait_for=Rendezvous(3).arrive)]), snapshot],
    )
    await agent.call("go", RuntimeContext(session_id="par"))
    results = tool_results(model.requests[-1])
    assert len(results) == 3 and all(r.startswith("fine") for r in results)
    # every spawn of the step is in the live state (none overwrote another's record)
    live = snapshot.seen[-1]
    assert isinstance(live, dict)
    assert sorted(t["label"] for t in live["tasks"]) == ["1", "2", "3"]
    assert all(t["status"] == "COMPLETED" and t["delivered"] for t in live["tasks"])
    await agent.close()
