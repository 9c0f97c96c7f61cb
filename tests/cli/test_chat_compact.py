"""``/compact`` in ``harnessed chat`` summarizes the earlier history through ``agent.compact``."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from rich.console import Console

from harnessed import CompactionConfig, HarnessAgent, RuntimeContext
from harnessed.cli.chat import ChatTerminal
from harnessed.compaction import is_summary
from harnessed.models import ModelRequest, ScriptedResponse
from harnessed.models.scripted import ScriptedModel


async def _wait_for(out: io.StringIO, needle: str, count: int = 1) -> None:
    while out.getvalue().count(needle) < count:  # the test's own timeout guards a hang
        await asyncio.sleep(0.01)


def respond(request: ModelRequest) -> ScriptedResponse:
    if request.purpose == "summary":
        return ScriptedResponse(text="## Session intent\nThe user said three things.")
    return ScriptedResponse(text=f"You said: {request.messages[-1].text}")


async def test_compact_summarizes_the_history_of_the_chat(tmp_path: Path) -> None:
    agent = HarnessAgent(
        "chatty",
        ScriptedModel(responder=respond),
        workspace=tmp_path,
        compaction=CompactionConfig(trigger_messages=1_000, keep_messages=2, keep_tokens=0),
        memory=False,
        shell=False,
    )
    ctx = RuntimeContext("default", "long")
    out = io.StringIO()
    terminal = ChatTerminal(agent, agent.session(ctx), Console(file=out, width=200), echo=True)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    chat = asyncio.create_task(terminal.run(lines))
    try:
        for i, word in enumerate(("one", "two", "three"), 1):
            lines.put_nowait(f"{word} " + "words " * 60)
            await asyncio.wait_for(_wait_for(out, "completed ·", i), 60)
        lines.put_nowait("/compact")
        await asyncio.wait_for(_wait_for(out, "summarized 4 earlier message(s)"), 60)
        assert "from 6 to 3 messages" in " ".join(out.getvalue().split())
        state = await agent.load_state(ctx)
        assert is_summary(state.history[0]) and len(state.history) == 3
        lines.put_nowait("/compact")  # nothing new before the last exchange
        await asyncio.wait_for(_wait_for(out, "nothing to summarize"), 60)
        lines.put_nowait("four")
        await asyncio.wait_for(_wait_for(out, "You said: four"), 60)
        lines.put_nowait("/quit")
        assert await asyncio.wait_for(chat, 60) == 0
    finally:
        if not chat.done():
            chat.cancel()
        await agent.close()
