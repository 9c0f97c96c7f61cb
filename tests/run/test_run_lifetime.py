"""A finished run is freed by reference counting: nothing it made refers back to it in a
cycle, so a busy server does not keep every run (and its state) until a full collection."""

from __future__ import annotations

import gc
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models.scripted import ScriptedModel
from harnessed.run import AgentRun


async def test_finished_runs_leave_no_reference_cycles(tmp_path: Path) -> None:
    agent = HarnessAgent("a", ScriptedModel(responder=lambda r: "fine"), workspace=tmp_path)
    ctx = RuntimeContext("u", "s")
    await agent.call("warm up", ctx)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds goes to gc.garbage
    try:
        for i in range(5):
            await agent.call(f"message {i}", ctx)
            async for _ in agent.stream_events(f"streamed {i}", ctx):
                pass
        gc.collect()
        runs = [o for o in gc.garbage if isinstance(o, AgentRun)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    await agent.close()
    assert runs == []
