"""How long does preparing one model request take, by history length?

Prints a table: for 10, 100, 1,000 and 10,000 history messages, the time to prepare a request
cold (first preparation, nothing cached) and warm (the next step: one new message appended),
without and with three dynamic context sources, and warm for a default ``HarnessAgent`` with a
workspace (eviction, pruning and compaction checks on; summaries not triggered).

    python benchmarks/prepare_overhead.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time

from harnessed import CompactionConfig, HarnessAgent
from harnessed.capabilities.sources import SourceSet
from harnessed.context import ContextBlock, ContextCompiler, ContextRequest, PrepareInfo
from harnessed.messages import Msg, ToolUseBlock
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state import AgentState

SIZES = (10, 100, 1_000, 10_000)
WARM_ROUNDS = 20


def history(n: int, rng: random.Random) -> list[Msg]:
    words = [
        "the",
        "build",
        "failed",
        "because",
        "a",
        "test",
        "expected",
        "four",
        "but",
        "got",
        "six",
        "in",
        "module",
        "calc",
    ]
    out: list[Msg] = [Msg.user("Please fix the failing tests in the project.")]
    while len(out) < n:
        call_id = f"c{len(out)}"
        text = " ".join(rng.choice(words) for _ in range(rng.randint(10, 60)))
        out.append(
            Msg.assistant([ToolUseBlock(call_id, "read_file", {"path": f"src/m{len(out)}.py"})])
        )
        out.append(Msg.tool_result(call_id, text * rng.randint(1, 8), name="read_file"))
    return out[:n] if out[n - 1].role != "assistant" else out[: n - 1]


async def source(request: ContextRequest) -> list[ContextBlock]:
    return [
        ContextBlock.runtime("status", f"build #{len(request.call_id)} is red"),
        ContextBlock.reference("guide", "Run the tests before and after every change."),
    ]


def compiler(with_sources: bool) -> ContextCompiler:
    sources = SourceSet()
    if with_sources:
        for name in ("build", "tickets", "guide"):
            sources.add(name, source)
    return ContextCompiler(
        sys_prompt="You fix bugs.", instructions={"rules": "Be careful."}, sources=sources
    )


async def measure(n: int, with_sources: bool) -> tuple[float, float]:
    rng = random.Random(n)
    model = ScriptedModel(context_window=50_000_000)
    state = AgentState.new(SessionRef("bench", "u", "s"))
    state.replace_history(history(n, rng))
    prepare = compiler(with_sources)
    ctx = RuntimeContext("u", "s", "r")

    def info(i: int) -> PrepareInfo:
        return PrepareInfo("bench", ctx, model, f"mc{i}", i, run_cache={})

    draft = ModelRequest(messages=())
    started = time.perf_counter()
    await prepare(state, draft, info(0))
    cold = time.perf_counter() - started
    warm: list[float] = []
    for i in range(1, WARM_ROUNDS + 1):
        state.append(Msg.user(f"step {i}: keep going"))
        started = time.perf_counter()
        await prepare(state, draft, info(i))
        warm.append(time.perf_counter() - started)
    return cold * 1000, statistics.median(warm) * 1000


async def measure_agent(n: int) -> float:
    """Warm preparation by a default agent (the compiler with all history transforms)."""
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel(context_window=50_000_000)
        agent = HarnessAgent(
            "bench", model, workspace=tmp, compaction=CompactionConfig(trigger_messages=10**9)
        )
        ctx = RuntimeContext("u", "s", "r").resolved("bench")
        state = await agent.load_state(ctx)
        state.replace_history(history(n, random.Random(n)))
        cache: dict[str, object] = {}  # one call: workspace files are read once

        def info(i: int) -> PrepareInfo:
            return PrepareInfo("bench", ctx, model, f"mc{i}", i, run_cache=cache)

        draft = ModelRequest(messages=())
        await agent.prepare(state, draft, info(0))
        warm: list[float] = []
        for i in range(1, WARM_ROUNDS + 1):
            state.append(Msg.user(f"step {i}: keep going"))
            started = time.perf_counter()
            await agent.prepare(state, draft, info(i))
            warm.append(time.perf_counter() - started)
        await agent.close()
        return statistics.median(warm) * 1000


async def main() -> None:
    print(
        f"{'messages':>9} | {'cold ms':>8} | {'warm ms':>8} | {'cold+src':>9} | {'warm+src':>9}"
        f" | {'warm agent':>10}"
    )
    print("-" * 68)
    for n in SIZES:
        cold, warm = await measure(n, False)
        cold_s, warm_s = await measure(n, True)
        agent_warm = await measure_agent(n)
        print(
            f"{n:>9,} | {cold:>8.2f} | {warm:>8.2f} | {cold_s:>9.2f} | {warm_s:>9.2f}"
            f" | {agent_warm:>10.2f}"
        )
    print(
        f"\nwarm = median of {WARM_ROUNDS} preparations, each after appending one message; "
        "sources = 3 async sources returning 2 blocks each; warm agent = a default HarnessAgent "
        "with a workspace (eviction, pruning and compaction checks on)"
    )


if __name__ == "__main__":
    asyncio.run(main())
