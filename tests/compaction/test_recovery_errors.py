"""Overflow recovery whose summary fails reports a wrong cause."""

from __future__ import annotations

import pytest

from harnessed import CompactionConfig, ContextOverflowError, HarnessAgent, Msg
from harnessed.messages import ToolUseBlock
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.models.errors import ModelError
from harnessed.runtime import SessionRef
from harnessed.state import AgentState, InMemoryStateStore
from tests.support.fixtures import CTX


def history(steps: int) -> list[Msg]:
    out = [Msg.user("Please look through the service logs.")]
    for i in range(steps):
        out.append(Msg.assistant([ToolUseBlock(f"c{i}", "fetch", {"q": f"c{i}"})]))
        out.append(Msg.tool_result(f"c{i}", f"line {i} " * 40, name="fetch"))
    return out


async def test_overflow_error_names_the_failed_summary_not_a_large_last_group() -> None:
    def answer(request: ModelRequest) -> str:
        if request.purpose == "summary":
            raise ModelError("summary backend is down (503)", provider="scripted")
        return "done"

    model = ScriptedModel(responder=answer, context_window=200_000, overflow_at_tokens=1_500)
    store = InMemoryStateStore()
    state = AgentState.new(SessionRef("agent", CTX.user_id, CTX.session_id))
    state.append(*history(12))
    await store.save(state)
    agent = HarnessAgent(
        "agent", model, state_store=store, compaction=CompactionConfig(trigger_messages=10_000)
    )
    with pytest.raises(ContextOverflowError) as caught:
        await agent.call("why?", CTX)
    message = str(caught.value)
    # The last group is just the short user input: it is not "too large". The real cause
    # (the forced summary failed) must be named.
    assert "last message group alone is too large" not in message
    assert "summary" in message.lower()
