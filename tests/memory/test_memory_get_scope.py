"""memory_get("MEMORY.md") (the example its own docstring gives) misses the user's memory."""

from __future__ import annotations

from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.memory import MemoryConfig
from harnessed.models import ScriptedModel
from harnessed.tools.context import ToolContext

CTX = RuntimeContext("u1", "s1")


async def test_memory_get_memory_md_reads_the_users_curated_memory(tmp_path: Path) -> None:
    agent = HarnessAgent(
        "mem",
        ScriptedModel(responder=lambda r: "ok"),
        workspace=tmp_path,
        memory=MemoryConfig(timezone="UTC", maintenance_interval_minutes=None),
    )
    own = tmp_path / "agents" / "mem" / "users" / "u1" / "MEMORY.md"
    own.parent.mkdir(parents=True)
    own.write_text("# Memory\n- Prefers tea.\n")  # what consolidation writes for this user
    tool = agent.toolkit.get("memory_get")
    assert tool is not None
    state = await agent.load_state(CTX)
    context = ToolContext(agent.name, CTX.resolved(agent.name), state, "t1", agent.workspace)
    answer = await tool.run({"path": "MEMORY.md"}, context)
    assert "Prefers tea" in str(answer), answer
