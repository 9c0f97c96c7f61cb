"""Permission configuration on the agent: validation, custom checks, the application's guard."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessed import (
    AgentEndEvent,
    ConfirmationRequestEvent,
    HarnessAgent,
    PermissionDecision,
    PermissionRule,
    ToolContext,
    tool,
)
from harnessed.log import RecordType
from harnessed.messages import ToolUseBlock
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.state import AgentState
from harnessed.tools import Tool
from tests.support.fixtures import CTX

ran: list[str] = []


@tool
async def transfer(amount: int) -> str:
    """Move money."""
    ran.append(f"transfer {amount}")
    return "moved"


def step(*calls: ScriptedToolCall) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=calls)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"permission_mode": "ask"}, ValueError, "permission_mode must be one of"),
        ({"confirmation_timeout": 0}, ValueError, "confirmation_timeout"),
        ({"permission_rules": ["allow everything"]}, TypeError, "PermissionRule"),
        ({"permission_checks": {"transfer": "yes"}}, TypeError, "permission_checks"),
    ],
)
def test_bad_configuration_names_the_field(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        HarnessAgent("bank", ScriptedModel(), tools=[transfer], **kwargs)


async def test_a_custom_check_can_ask_even_with_permissions_off() -> None:
    async def large_amounts(call: ToolUseBlock, state: AgentState) -> PermissionDecision | None:
        if call.input.get("amount", 0) > 100:
            return PermissionDecision.ask(
                f"transfer of {call.input['amount']} EUR", details={"limit": 100}
            )
        return None

    ran.clear()
    model = ScriptedModel(
        [
            step(
                ScriptedToolCall("transfer", {"amount": 50}, id="small"),
                ScriptedToolCall("transfer", {"amount": 500}, id="large"),
            ),
            "done",
        ]
    )
    agent = HarnessAgent(
        "bank", model, tools=[transfer], permission_checks={"transfer": large_amounts}
    )
    asks = []
    async for event in agent.stream_events("pay", CTX):
        if isinstance(event, ConfirmationRequestEvent):
            asks.append(event)
            await agent.respond(CTX, event.request_id, False)
    assert [a.call.id for a in asks] == ["large"] and asks[0].details == {"limit": 100}
    assert ran == ["transfer 50"]


async def test_the_applications_guard_runs_after_plan_mode_and_permissions() -> None:
    seen: list[str] = []

    async def guard(call: ToolUseBlock, tool_: Tool, context: ToolContext) -> str | None:
        seen.append(call.id)
        return "the vault is closed today" if call.id == "b" else None

    ran.clear()
    model = ScriptedModel(
        [
            step(
                ScriptedToolCall("transfer", {"amount": 1}, id="a"),
                ScriptedToolCall("transfer", {"amount": 2}, id="b"),
                ScriptedToolCall("transfer", {"amount": 3}, id="c"),
            ),
            "ok",
        ]
    )
    agent = HarnessAgent(
        "bank",
        model,
        tools=[transfer],
        tool_guard=guard,
        permission_mode="dont_ask",
        permission_rules=[PermissionRule.allow("transfer", amount="[12]")],
    )
    await agent.call("pay", CTX)
    assert seen == ["a", "b"]  # c was refused by permissions before the guard was asked
    assert ran == ["transfer 1"]
    results = {r.tool_use_id: r for m in model.requests[1].messages for r in m.tool_results}
    assert results["b"].content == "the vault is closed today"
    assert "Permission denied" in results["c"].content


async def test_cancelling_a_waiting_call_keeps_the_step_resumable() -> None:
    ran.clear()
    model = ScriptedModel(
        [step(ScriptedToolCall("transfer", {"amount": 9}, id="t")), "after resume"]
    )
    agent = HarnessAgent("bank", model, tools=[transfer], permission_mode="default")
    asked = asyncio.Event()

    async def consume() -> None:
        async for event in agent.stream_events("pay", CTX):
            if isinstance(event, ConfirmationRequestEvent):
                asked.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(asked.wait(), 5)
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [request] = await agent.pending_confirmations(CTX)
    ends = await agent.session_log(CTX, types=[RecordType.RUN_END])
    assert ends[-1].payload["status"] == "cancelled"
    await agent.respond(CTX, request.request_id, True)
    events = [e async for e in agent.stream_events(None, CTX)]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].reply.text == "after resume"
    assert ran == ["transfer 9"]


async def test_a_destructive_tool_asks_even_with_permissions_off() -> None:
    wiped: list[str] = []

    @tool(destructive=True)
    def wipe(target: str) -> str:
        """Delete everything in a target."""
        wiped.append(target)
        return "wiped"

    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("wipe", {"target": "db"})]), "done"]
    )
    agent = HarnessAgent("ops", model, tools=[wipe])  # no permission mode, no rules
    events = [e async for e in agent.stream_events("wipe it", CTX, confirmations="park")]
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.status == "pending" and wiped == []
    [request] = await agent.pending_confirmations(CTX)
    assert "destructive" in request.reason
    await agent.respond(CTX, request.request_id, True)
    assert (await agent.call(None, CTX)).text == "done" and wiped == ["db"]
    # with a permission mode it is decided like any tool that changes things
    bypass = HarnessAgent(
        "ops",
        ScriptedModel(
            [ScriptedResponse(tool_calls=[ScriptedToolCall("wipe", {"target": "x"})]), "ok"]
        ),
        tools=[wipe],
        permission_mode="bypass",
    )
    await bypass.call("wipe x", CTX)
    assert wiped == ["db", "x"]
