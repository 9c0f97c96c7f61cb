"""Closing a stream_events iterator (client disconnect) while tools run: the tools ran (side
effects), but their records queued in memory are dropped — no assistant message with the call,
no tool_execution, no run end in the session log."""

from __future__ import annotations

import asyncio

from harnessed import HarnessAgent, tool
from harnessed.events import ToolCallEvent, ToolResultEvent
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from tests.support.fixtures import CTX


async def test_closing_the_stream_mid_step_keeps_the_log_complete() -> None:
    ran: list[str] = []
    gate = asyncio.Event()

    @tool
    async def charge(amount: int) -> str:
        """Charge the card."""
        ran.append(f"charged {amount}")
        return "ok"

    @tool
    async def email() -> str:
        """Send the receipt (slow)."""
        await gate.wait()
        return "sent"

    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("charge", {"amount": 5}, id="t1"),
                    ScriptedToolCall("email", {}, id="t2"),
                ]
            ),
            "done",
        ]
    )
    agent = HarnessAgent("a", model, tools=[charge, email])
    stream = agent.stream_events("pay", CTX)
    async for event in stream:
        if isinstance(event, ToolResultEvent):
            break  # the client disconnects while 'email' is still running
    await stream.aclose()
    assert ran == ["charged 5"]  # the side effect happened
    records = await agent.session_log(CTX)
    types = [r.type for r in records]
    assert "tool/execution" in types, f"the card was charged but the log does not say so: {types}"
    assert any(r.message is not None and r.message.tool_uses for r in records), types
    assert "run/end" in types, types


async def test_aclose_mid_step_records_run_end() -> None:
    gate = asyncio.Event()

    @tool
    async def slow() -> str:
        """Slow."""
        await gate.wait()
        return "x"

    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("slow", {}, id="t1")]), "done"]
    )
    agent = HarnessAgent("a", model, tools=[slow])
    stream = agent.stream_events("go", CTX)
    async for event in stream:
        if isinstance(event, ToolCallEvent):
            break  # the client disconnects
    await stream.aclose()
    records = await agent.session_log(CTX)
    types = [r.type for r in records]
    assert "run/end" in types, f"run started but its end was never recorded: {types}"
    # the model's message was cut off mid-stream: a partial message is not logged as if whole
