"""A 300-step task with large tool outputs: what does keeping the history in budget cost?

A scripted agent inspects 300 items, one tool call per step (two every tenth step); reports
range from 1,000 to 25,000 characters, and every ninth is 150,000 characters. The same task runs
twice per window size:

* harnessed: the defaults (eviction of large results, pruning, summaries);
* naive: all of that turned off, so every request sends the whole history — until the history
  no longer fits the window and the run stops.

Prints, per run: steps completed, model requests, total input tokens sent (reasoning requests
and summary requests), the largest request, and how many compactions, evictions and prunes
happened. Token counts are harnessed's estimator (what ScriptedModel reports as usage).

    python benchmarks/long_horizon.py
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass

from harnessed import CustomEvent, HarnessAgent, RuntimeContext, tool
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.workspace import MemoryFilesystem, Workspace

STEPS = 300
WINDOWS = (32_000, 128_000)
SUMMARY = (
    "## Session intent\nInspect every item and report anomalies.\n"
    "## Decisions and findings\nItems so far were healthy.\n"
    "## Artifacts\nReports of large items are saved under large_tool_results/.\n"
    "## Next steps\nContinue with the next item."
)


def report(item: int, size: int) -> str:
    lines: list[str] = []
    total = 0
    n = 0
    while total < size:
        line = f"item {item} check {n:05d}: latency={n * 7919 % 997}ms status=ok node=n{n % 17}\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)[:size]


@tool(read_only=True)
def inspect(item: int, size: int) -> str:
    """Inspect one item and return its report.

    Args:
        item: Which item.
        size: The report's length in characters.
    """
    return report(item, size)


def size_for(step: int) -> int:
    if step % 9 == 4:
        return 150_000
    return 1_000 + (step * 7_919) % 24_000


@dataclass
class Outcome:
    name: str
    window: int
    steps: int
    requests: int
    reasoning_tokens: int
    summary_tokens: int
    peak: int
    compactions: int
    evictions: int
    prunes: int
    seconds: float
    stopped: str


async def run(window: int, naive: bool) -> Outcome:
    taken = 0

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        nonlocal taken
        if request.purpose == "summary":
            return SUMMARY
        if taken >= STEPS:
            return "All items inspected; no anomalies."
        taken += 1
        calls = [ScriptedToolCall("inspect", {"item": taken, "size": size_for(taken)})]
        if taken % 10 == 0:
            calls.append(ScriptedToolCall("inspect", {"item": -taken, "size": 3_000}))
        return ScriptedResponse(tool_calls=calls)

    model = ScriptedModel(responder=respond, context_window=window, overflow_at_tokens=window)
    off: dict[str, object] = (
        {"compaction": None, "tool_result_eviction": None, "prune": None} if naive else {}
    )
    agent = HarnessAgent(
        "bench",
        model,
        workspace=Workspace(MemoryFilesystem()),
        tools=[inspect],
        max_iters=STEPS + 5,
        sys_prompt="You inspect items one by one and report anomalies.",
        **off,  # type: ignore[arg-type]
    )
    transforms: Counter[str] = Counter()
    compactions = 0
    stopped = "finished"
    started = time.perf_counter()
    try:
        async for event in agent.stream_events(
            f"Inspect items 1 to {STEPS}.", RuntimeContext("u", "bench")
        ):
            if isinstance(event, CustomEvent) and event.name == "context_build":
                if event.data["purpose"] == "reasoning":
                    transforms.update(event.data["context_manifest"]["transforms"])
            elif isinstance(event, CustomEvent) and event.name == "compaction_end":
                compactions += event.data["status"] == "completed"
    except Exception as exc:  # the naive run ends when the history no longer fits
        stopped = type(exc).__name__
    seconds = time.perf_counter() - started
    reasoning = [model.estimate(r) for r in model.requests if r.purpose == "reasoning"]
    summary = [model.estimate(r) for r in model.requests if r.purpose == "summary"]
    completed = taken if stopped == "finished" else max(taken - 1, 0)
    return Outcome(
        name="naive" if naive else "harnessed",
        window=window,
        steps=completed,
        requests=len(model.requests),
        reasoning_tokens=sum(reasoning),
        summary_tokens=sum(summary),
        peak=max(reasoning + summary, default=0),
        compactions=compactions,
        evictions=transforms["tool_result_offload"],
        prunes=transforms["tool_output_prune"],
        seconds=seconds,
        stopped=stopped,
    )


async def main() -> None:
    header = (
        f"{'run':<10} {'window':>7} {'steps':>6} {'requests':>8} {'input tokens':>13} "
        f"{'(summaries)':>12} {'peak req':>9} {'compact':>8} {'evict':>6} {'prune':>6} "
        f"{'secs':>6}  stopped"
    )
    print(header)
    print("-" * len(header))
    for window in WINDOWS:
        for naive in (False, True):
            o = await run(window, naive)
            total = o.reasoning_tokens + o.summary_tokens
            print(
                f"{o.name:<10} {o.window:>7,} {o.steps:>6} {o.requests:>8} {total:>13,} "
                f"{o.summary_tokens:>12,} {o.peak:>9,} {o.compactions:>8} {o.evictions:>6} "
                f"{o.prunes:>6} {o.seconds:>6.2f}  {o.stopped}"
            )
    print(
        "\ninput tokens = all requests (reasoning + summary); (summaries) = the summary "
        "requests' share;\nevict / prune = requests whose preparation evicted / pruned "
        "something; steps = tool steps completed of "
        f"{STEPS}"
    )


if __name__ == "__main__":
    asyncio.run(main())
