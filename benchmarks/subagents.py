"""What does delegating to a sub-agent cost, and how do many background children behave?

Prints two tables (real ``agent.call`` with the default stores: a local workspace with
JSONL session logs, the SQLite search index and JSON state files):

1. a sync ``agent_spawn`` round trip with a scripted child: the tool's wall time, the child's
   own model time, the overhead beyond it (target: at most 5 ms), and for comparison the same
   child called directly with ``agent.call`` (its own loop, state and log);
2. one step spawning N background children (``timeout_seconds=0``) whose model takes 0.5 s:
   how long the spawning step takes, how long until every child has finished, and the
   reminder the parent gets at its next step.

    python benchmarks/subagents.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext, Subagents, SubagentSpec
from harnessed.events import ToolResultEvent
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.models.base import ModelEvent

ROUNDS = 30


class TimedModel:
    """A scripted child model that adds up the time spent inside its own stream."""

    def __init__(self, reply: str, delay: float = 0.0) -> None:
        self.inner = ScriptedModel(responder=lambda _r: reply, name="child", delay=delay)
        self.seconds = 0.0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def context_window(self) -> int | None:
        return None

    @property
    def max_output_tokens(self) -> int | None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        started = time.perf_counter()
        try:
            async for event in self.inner.stream(request):
                yield event
        finally:
            self.seconds += time.perf_counter() - started


def spawn(task: str, timeout: float) -> ScriptedToolCall:
    return ScriptedToolCall(
        "agent_spawn", {"agent_id": "child", "task": task, "timeout_seconds": timeout}
    )


async def sync_round_trip(root: Path) -> tuple[list[float], list[float], list[float]]:
    child_model = TimedModel("checked: fine")
    spec = SubagentSpec("child", "Checks things.", system_prompt="You check.", model=child_model)
    parent_model = ScriptedModel(name="parent")
    agent = HarnessAgent("bench", parent_model, workspace=root, capabilities=[Subagents([spec])])
    # the same agent a spec builds (no memory; the parent's stores), called directly
    direct = HarnessAgent(
        "direct",
        child_model,
        sys_prompt="You check.",
        workspace=root / "direct",
        file_tools=False,
        shell=False,
        memory=False,
        memory_tools=False,
    )
    walls: list[float] = []
    overheads: list[float] = []
    directs: list[float] = []
    for i in range(ROUNDS):
        ctx = RuntimeContext(user_id="u", session_id=f"s{i}")
        parent_model.add(ScriptedResponse(tool_calls=[spawn(f"check {i}", 30)]), "ok")
        child_model.seconds = 0.0
        duration = 0.0
        async for event in agent.stream_events("go", ctx):
            if isinstance(event, ToolResultEvent) and event.source is None:
                duration = event.duration_ms
        walls.append(duration)
        overheads.append(duration - child_model.seconds * 1000)
        child_model.seconds = 0.0
        started = time.perf_counter()
        await direct.call(f"check {i}", RuntimeContext(user_id="u", session_id=f"d{i}"))
        directs.append((time.perf_counter() - started) * 1000 - child_model.seconds * 1000)
    await agent.close()
    await direct.close()
    return walls[3:], overheads[3:], directs[3:]  # the first rounds warm caches up


async def many_background(root: Path, n: int) -> tuple[float, float, int]:
    child_model = TimedModel("done", delay=0.5)
    spec = SubagentSpec("child", "Works.", model=child_model)
    parent_model = ScriptedModel(
        [ScriptedResponse(tool_calls=[spawn(f"job {i}", 0) for i in range(n)]), "started"],
        name="parent",
        responder=lambda _r: "noted",  # later requests, summaries included
    )
    agent = HarnessAgent("many", parent_model, workspace=root, capabilities=[Subagents([spec])])
    cap = agent.capability(Subagents)
    assert cap is not None
    ctx = RuntimeContext(user_id="u", session_id="many")
    started = time.perf_counter()
    step = 0.0
    async for event in agent.stream_events("start them all", ctx):
        if isinstance(event, ToolResultEvent) and event.source is None:
            step = time.perf_counter() - started
    while True:
        tasks = await cap.tasks(ctx)
        if len(tasks) == n and all(t.ended for t in tasks):
            break
        await asyncio.sleep(0.05)
    finished = time.perf_counter() - started
    await agent.call("any news?", ctx)
    reminder = next(
        m
        for r in parent_model.requests
        for m in r.messages
        if m.metadata.get("harness") == "subagent_tasks"
    )
    await agent.close()
    return step, finished, reminder.text.count("COMPLETED")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        walls, overheads, directs = await sync_round_trip(Path(tmp) / "sync")
        print("sync agent_spawn round trip (scripted child, default stores)")
        print(f"{'':>28} | {'median ms':>9} | {'p90 ms':>7}")
        print("-" * 52)
        for label, values in (
            ("spawn tool wall time", walls),
            ("overhead beyond child model", overheads),
            ("direct child call (no model)", directs),
        ):
            p90 = statistics.quantiles(values, n=10)[-1]
            print(f"{label:>28} | {statistics.median(values):>9.2f} | {p90:>7.2f}")
        extra = statistics.median(overheads) - statistics.median(directs)
        print(f"spawn cost beyond the child's own call: {extra:.2f} ms (median)")

        print("\nbackground children on one agent (child model takes 0.5 s)")
        print(f"{'children':>8} | {'spawn step s':>12} | {'all done s':>10} | {'listed':>6}")
        print("-" * 48)
        for n in (10, 100):
            step, done, listed = await many_background(Path(tmp) / f"bg{n}", n)
            print(f"{n:>8} | {step:>12.2f} | {done:>10.2f} | {listed:>6}")


if __name__ == "__main__":
    asyncio.run(main())
