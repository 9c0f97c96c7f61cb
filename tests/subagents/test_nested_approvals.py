"""A sub-agent's confirmation requests and questions in the parent's stream, tagged with their
source and answered by the parent's respond; per sub-agent, deny or fail instead."""

from __future__ import annotations

import asyncio
from typing import Any

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent, CustomEvent, Event
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.questions import ASK_USER, AskUser
from harnessed.subagents import Subagents, SubagentSpec
from tests.subagents.helpers import calls, parent, spawn, tool_results, wait_for_tasks

touched: list[str] = []


@tool
def touch(name: str) -> str:
    """Create a marker (changes things)."""
    touched.append(name)
    return f"touched {name}"


def acting(tool_name: str, args: dict[str, Any]) -> ScriptedModel:
    def respond(request: ModelRequest) -> str | ScriptedResponse:
        results = tool_results(request)
        if results:
            return f"tool said: {results[-1]}"
        return ScriptedResponse(tool_calls=[ScriptedToolCall(tool_name, args)])

    return ScriptedModel(responder=respond, name="child")


async def answer_all(
    agent: Any, text: str, ctx: RuntimeContext, approved: bool = True, **answer: Any
) -> list[Event]:
    events: list[Event] = []
    async for event in agent.stream_events(text, ctx):
        events.append(event)
        if isinstance(event, ConfirmationRequestEvent):
            await agent.respond(ctx, event.request_id, approved, **answer)
    return events


async def test_a_childs_request_is_answered_by_the_parent_and_the_child_goes_on() -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting("touch", {"name": "q"}))
    model = ScriptedModel([calls(spawn("worker", "touch q")), "The worker is done."])
    agent = parent(model, spec, tools=[touch], permission_mode="default")
    ctx = RuntimeContext(session_id="nested")
    listed: list[Any] = []
    events: list[Event] = []
    async for event in agent.stream_events("go", ctx):
        events.append(event)
        if isinstance(event, ConfirmationRequestEvent):
            listed = await agent.pending_confirmations(ctx)
            await agent.respond(ctx, event.request_id, True)
    (asked,) = [e for e in events if isinstance(e, ConfirmationRequestEvent)]
    assert asked.source == "worker:1" and asked.call.name == "touch"
    assert [(p.request_id, p.details["source"]) for p in listed] == [(asked.request_id, "worker:1")]
    assert touched == ["q"]
    assert "tool said: touched q" in tool_results(model.requests[-1])[0]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"
    assert await agent.pending_confirmations(ctx) == []
    (task,) = await agent.capability(Subagents).tasks(ctx)  # type: ignore[union-attr]
    assert task.status.value == "COMPLETED"
    await agent.close()


async def test_a_childs_question_is_answered_through_the_parent() -> None:
    child = acting(ASK_USER, {"question": "Which file?", "choices": ["a.py", "b.py"]})
    spec = SubagentSpec("worker", "Works.", model=child)
    model = ScriptedModel([calls(spawn("worker", "ask which file")), "ok"])
    agent = HarnessAgent("boss", model, capabilities=[Subagents([spec]), AskUser()])
    ctx = RuntimeContext(session_id="q")
    events = await answer_all(agent, "go", ctx, answer="b.py")
    (asked,) = [e for e in events if isinstance(e, ConfirmationRequestEvent)]
    assert asked.source == "worker:1" and asked.details["question"] == "Which file?"
    assert "The user answered: b.py" in tool_results(model.requests[-1])[0]
    await agent.close()


async def test_a_nested_grandchilds_request_reaches_the_top_and_is_answered_there() -> None:
    touched.clear()
    leaf = SubagentSpec("leaf", "Leaf.", model=acting("touch", {"name": "deep"}))

    def middle(request: ModelRequest) -> str | ScriptedResponse:
        results = tool_results(request)
        if results:
            return f"leaf said: {results[-1]}"
        return calls(spawn("leaf", "touch deep"))

    mid = SubagentSpec("mid", "Middle.", model=ScriptedModel(responder=middle, name="mid"))
    model = ScriptedModel([calls(spawn("mid", "delegate")), "all done"])
    agent = parent(model, mid, leaf, tools=[touch], permission_mode="default")
    ctx = RuntimeContext(session_id="deep")
    events = await answer_all(agent, "go", ctx)
    (asked,) = [e for e in events if isinstance(e, ConfirmationRequestEvent)]
    assert asked.source == "mid:1/leaf:1"
    assert touched == ["deep"]
    assert "touched deep" in tool_results(model.requests[-1])[0]
    await agent.close()


async def test_a_deny_policy_declines_at_once_and_the_task_completes() -> None:
    touched.clear()
    spec = SubagentSpec(
        "worker", "Works.", model=acting("touch", {"name": "q"}), on_approval="deny"
    )
    model = ScriptedModel([calls(spawn("worker", "touch q")), "fine"])
    agent = parent(model, spec, tools=[touch], permission_mode="default")
    ctx = RuntimeContext(session_id="deny")
    events = [e async for e in agent.stream_events("go", ctx)]  # nobody answers
    assert touched == []
    assert not any(isinstance(e, ConfirmationRequestEvent) for e in events)
    assert any(isinstance(e, CustomEvent) and e.name == "subagent_needs_approval" for e in events)
    result = tool_results(model.requests[-1])[0]
    assert "tool said:" in result and "on_approval policy is deny" in result
    await agent.close()


async def test_a_parent_called_with_call_cannot_wait_so_the_task_fails() -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting("touch", {"name": "q"}))
    model = ScriptedModel([calls(spawn("worker", "touch q")), "I will ask myself."])
    agent = parent(model, spec, tools=[touch], permission_mode="default")
    result = await agent.call("go", RuntimeContext(session_id="park"))
    assert result.status == "completed" and touched == []
    assert "cannot ask for" in tool_results(model.requests[-1])[0]
    await agent.close()


async def test_a_background_childs_request_waits_and_is_answered_after_the_turn() -> None:
    touched.clear()
    spec = SubagentSpec("worker", "Works.", model=acting("touch", {"name": "bg"}))
    model = ScriptedModel(
        [calls(spawn("worker", "touch bg", timeout_seconds=0)), "Started it in the background."]
    )
    agent = parent(model, spec, tools=[touch], permission_mode="default")
    ctx = RuntimeContext(session_id="bg")
    events = [e async for e in agent.stream_events("go", ctx)]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"
    for _ in range(2000):  # the child asks in the background: wait for its request
        waiting = await agent.pending_confirmations(ctx)
        if waiting:
            break
        await asyncio.sleep(0.01)
    (request,) = waiting
    assert request.details["source"] == "worker:1" and request.call.name == "touch"
    await agent.respond(ctx, request.request_id, True)
    await wait_for_tasks(agent, ctx, 1)
    assert touched == ["bg"]
    await agent.close()
