"""The flush before compaction reads only the newest 12k tokens of the prefix, measured on
raw tool output, so facts early in the prefix are summarized away without ever being
flushed to memory."""

from __future__ import annotations

from pathlib import Path

from harnessed import CompactionConfig, HarnessAgent, Msg, RuntimeContext
from harnessed.memory import MemoryConfig
from harnessed.messages import ToolUseBlock
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.runtime import SessionRef
from harnessed.state import AgentState, InMemoryStateStore

CTX = RuntimeContext("u1", "s1")


async def test_compaction_flush_sees_the_whole_prefix(tmp_path: Path) -> None:
    flush_prompts: list[str] = []

    def memory_answer(request: ModelRequest) -> str:
        flush_prompts.append(request.messages[-1].text)
        return "NOTHING"

    def main_answer(request: ModelRequest) -> str:
        if request.purpose == "summary":
            return "## Session intent\nreview logs"
        return "ok"

    history = [Msg.user("My name is Zoltan and I always want metric units.")]
    for i in range(3):
        history.append(Msg.assistant([ToolUseBlock(f"c{i}", "fetch", {"q": str(i)})]))
        history.append(Msg.tool_result(f"c{i}", f"row {i} value=ok\n" * 2_000, name="fetch"))
    history.append(Msg.assistant("I read the three logs."))
    store = InMemoryStateStore()
    state = AgentState.new(SessionRef("mem", CTX.user_id, CTX.session_id))
    state.append(*history)
    await store.save(state)
    agent = HarnessAgent(
        "mem",
        ScriptedModel(responder=main_answer),
        workspace=tmp_path,
        state_store=store,
        compaction=CompactionConfig(trigger_messages=8, keep_messages=2, keep_tokens=0),
        memory=MemoryConfig(
            model=ScriptedModel(responder=memory_answer),
            timezone="UTC",
            maintenance_interval_minutes=None,
        ),
    )
    await agent.call("thanks, anything else?", CTX)
    await agent.close()
    assert flush_prompts, "no flush before compaction"
    assert any("Zoltan" in p for p in flush_prompts), "the prefix's first message was never flushed"
