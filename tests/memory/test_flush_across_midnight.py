"""A flush that straddles midnight writes a ledger that consolidation never reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harnessed import HarnessAgent, Msg, RuntimeContext
from harnessed.memory import MemoryConfig
from harnessed.models import ModelRequest, ScriptedModel

CTX = RuntimeContext("u1", "s1")


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


async def test_facts_flushed_across_midnight_are_consolidated(tmp_path: Path) -> None:
    clock = Clock(datetime(2025, 3, 14, 23, 59, 50, tzinfo=UTC))
    agent: HarnessAgent

    async def memory_answer(request: ModelRequest) -> str:
        prompt = request.messages[-1].text
        if "Current MEMORY.md" in prompt:  # consolidation: keep old + add every entry bullet
            current = re.search(r"<memory>\n(.*?)\n</memory>", prompt, re.S)[1]
            entries = re.search(r"<entries>\n(.*?)\n</entries>", prompt, re.S)[1]
            old = "" if current == "(empty)" else current + "\n"
            bullets = "\n".join(b for b in entries.splitlines() if b.startswith("- "))
            return "# Memory\n" + old + bullets
        # a flush: meanwhile the clock passes midnight, the user saves a note and
        # maintenance/consolidation runs
        assert agent.memory is not None
        clock.now += timedelta(seconds=30)
        await agent.memory.save(CTX, "The user prefers tea.")
        await agent.memory.consolidate(CTX)
        return "- The user's dog is called Rex."

    memory_model = ScriptedModel(responder=memory_answer)
    agent = HarnessAgent(
        "mem",
        ScriptedModel(responder=lambda r: "ok"),
        workspace=tmp_path,
        memory=MemoryConfig(model=memory_model, timezone="UTC", maintenance_interval_minutes=None),
    )
    assert agent.memory is not None
    agent.memory.clock = clock
    result = await agent.memory.flush_messages([Msg.user("My dog is called Rex.")], CTX)
    assert result.status == "written"

    await agent.memory.consolidate(CTX)
    memory_md = tmp_path / "agents" / "mem" / "users" / "u1" / "MEMORY.md"
    text = memory_md.read_text()
    assert "tea" in text
    assert "Rex" in text, (result.path, text)
