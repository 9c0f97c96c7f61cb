"""What does a long run cost once providers cache the repeated prefix of each request?

The shape of ``long_horizon.py`` (one tool call per step, two every tenth; reports of 1,000 to
25,000 characters, every ninth 150,000), run for 120 steps at a 32k and a 128k window, with:

* today: the transforms as they were before the cost work (pruning whenever 20k tokens of old
  output are prunable, a little at every few steps; summaries of a separate transcript; results
  written out only over 80,000 characters);
* today np: today's transforms with pruning off (the issue measured 1.37 M units for it at
  128k, against 1.78 M for today);
* harnessed: the current defaults (pruning in rare, large batches; summaries written in
  context, repeating the cached prefix, with memory's flush asked for in the same request; see
  docs/cost.md);
* transcript: the defaults, but summaries of a separate transcript
  (``CompactionConfig(in_context=False)``);
* share off: the defaults but ``ToolResultEvictionConfig(max_window_share=None)``: only results
  over 80,000 characters are written out, whatever the window (the default writes out any result
  over a tenth of the input limit, which is the same 80,000 characters at a 200k window);
* prune off: eviction and summaries, no pruning;
* naive: nothing at all — every request sends the whole history until it no longer fits.

For each reasoning request the prefix it shares with the previous one (tool schemas, system
message, then the history, as far as they are the same) is what a provider's cache can serve.
Printed: input tokens (reasoning + summary requests), the cacheable share of the reasoning
requests' input, prefix breaks (requests that did not repeat the whole stable prefix of the one
before), requests over the window, and the cache-priced cost in input-token units: a cache read
costs 0.1, a cache write 1.25 (the stable prefix beyond what was shared), anything else 1.0 (the
transient tail, and transcript summary and memory requests, which are not cached; a summary in
context is priced against the reasoning request it repeats). The cost is given all in and for
the reasoning requests alone (what the issue measured). Token counts are harnessed's estimator;
output tokens are not priced.

    python benchmarks/prompt_cache.py
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from long_horizon import SUMMARY, inspect, size_for

from harnessed import HarnessAgent, RuntimeContext
from harnessed.compaction import CompactionConfig, PruneConfig, ToolResultEvictionConfig
from harnessed.context.prefix import equal_prefix
from harnessed.messages import Msg
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.models.base import ToolSchema
from harnessed.workspace import MemoryFilesystem, Workspace

STEPS = 120
WINDOWS = (32_000, 128_000)
READ, WRITE = 0.1, 1.25

TODAY = PruneConfig(cache_aware=False)
"""Pruning as it was: a pass whenever 20k tokens of old output are prunable."""
SHARE_OFF = ToolResultEvictionConfig(max_window_share=None)
"""Results written out only over 80,000 characters, whatever the window, as they were."""
TRANSCRIPT = CompactionConfig(in_context=False)
"""Summaries of a separate transcript (no cached prefix), as they were."""
CONFIGS: dict[str, dict[str, Any]] = {
    "today": {"prune": TODAY, "compaction": TRANSCRIPT, "tool_result_eviction": SHARE_OFF},
    "today np": {"prune": None, "compaction": TRANSCRIPT, "tool_result_eviction": SHARE_OFF},
    "harnessed": {},
    "transcript": {"compaction": TRANSCRIPT},
    "share off": {"tool_result_eviction": SHARE_OFF},
    "prune off": {"prune": None},
    "naive": {"compaction": None, "tool_result_eviction": None, "prune": None},
}


@dataclass
class Outcome:
    name: str
    window: int
    steps: int
    reasoning: int
    summaries: int
    cacheable: int
    breaks: int
    over_window: int
    cost: float
    reasoning_cost: float
    stopped: str


class Sizes:
    """Token counts of messages and schemas (the estimator ScriptedModel reports with)."""

    def __init__(self, model: ScriptedModel) -> None:
        self.estimator = model.estimator
        self._known: dict[int, tuple[object, int]] = {}

    def of(self, item: Msg | ToolSchema) -> int:
        known = self._known.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        if isinstance(item, Msg):
            size = self.estimator.count_message(item)
        else:
            size = self.estimator.count_text(f"{item.name} {item.description}")
            size += self.estimator.count_text(str(dict(item.parameters)))
        self._known[id(item)] = (item, size)
        return size


async def run(window: int, name: str) -> Outcome:
    taken = 0

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        nonlocal taken
        if request.purpose == "summary":
            if "<memory_facts>" in request.messages[-1].text:  # memory's flush folded in
                return f"{SUMMARY}\n<memory_facts>\nNOTHING\n</memory_facts>"
            return SUMMARY
        if taken >= STEPS:
            return "All items inspected; no anomalies."
        taken += 1
        # Fixed call ids (a provider's are random): the runs differ only by their settings.
        calls = [
            ScriptedToolCall("inspect", {"item": taken, "size": size_for(taken)}, f"call_{taken}")
        ]
        if taken % 10 == 0:
            calls.append(
                ScriptedToolCall("inspect", {"item": -taken, "size": 3_000}, f"call_{taken}b")
            )
        return ScriptedResponse(tool_calls=calls)

    model = ScriptedModel(responder=respond, context_window=window, overflow_at_tokens=window)
    agent = HarnessAgent(
        "bench",
        model,
        workspace=Workspace(MemoryFilesystem()),
        tools=[inspect],
        max_iters=STEPS + 5,
        sys_prompt="You inspect items one by one and report anomalies.",
        **CONFIGS[name],
    )
    stopped = "finished"
    try:
        await agent.call(f"Inspect items 1 to {STEPS}.", RuntimeContext("u", "bench"))
    except Exception as exc:  # the naive run ends when the history no longer fits
        stopped = type(exc).__name__
    sizes = Sizes(model)
    out = Outcome(
        name,
        window,
        taken if stopped == "finished" else taken - 1,
        0,
        0,
        0,
        0,
        0,
        0.0,
        0.0,
        stopped,
    )
    previous: tuple[tuple[ToolSchema, ...], tuple[Msg, ...]] | None = None
    for request in model.requests:
        total = sum(map(sizes.of, request.messages)) + sum(map(sizes.of, request.tools))
        out.over_window += total > window
        summary = request.purpose == "summary"
        if summary and not request.cache_points:  # a transcript: nothing of it is cached
            out.summaries += total
            out.cost += total
            continue
        stable = request.messages[: request.cache_points[-1]]
        prefix = sum(map(sizes.of, request.tools)) + sum(map(sizes.of, stable))
        shared = 0
        if previous is not None and previous[0] == request.tools:
            count = equal_prefix(previous[1], stable)
            shared = sum(map(sizes.of, request.tools)) + sum(map(sizes.of, stable[:count]))
            out.breaks += count < len(previous[1]) and not summary
        elif previous is not None:
            out.breaks += not summary
        out.cost += READ * shared + WRITE * (prefix - shared) + (total - prefix)
        if summary:  # in context: it repeats the last reasoning request's prefix
            out.summaries += total
            continue
        out.reasoning += total
        out.reasoning_cost += READ * shared + WRITE * (prefix - shared) + (total - prefix)
        previous = (request.tools, stable)
        out.cacheable += shared
    return out


async def main() -> None:
    header = (
        f"{'run':<10} {'window':>7} {'steps':>6} {'input tokens':>13} {'(summaries)':>12} "
        f"{'cacheable':>10} {'breaks':>7} {'over':>5} {'cost units':>11} {'vs today':>9} "
        f"{'(reasoning)':>12} {'vs today':>9}  stopped"
    )
    print(header)
    print("-" * len(header))
    for window in WINDOWS:
        today: Outcome | None = None
        for name in CONFIGS:
            o = await run(window, name)
            today = o if name == "today" else today
            assert today is not None
            share = o.cacheable / o.reasoning if o.reasoning else 0.0
            versus = f"{(o.cost / today.cost - 1) * 100:+.1f}%"
            alone = f"{(o.reasoning_cost / today.reasoning_cost - 1) * 100:+.1f}%"
            print(
                f"{o.name:<10} {o.window:>7,} {o.steps:>6} {o.reasoning + o.summaries:>13,} "
                f"{o.summaries:>12,} {share:>10.1%} {o.breaks:>7} {o.over_window:>5} "
                f"{o.cost:>11,.0f} {versus:>9} {o.reasoning_cost:>12,.0f} {alone:>9}  {o.stopped}"
            )
    print(
        f"\n{STEPS} steps of the long_horizon shape; cacheable = share of reasoning-request input "
        "repeating the previous request's prefix;\nbreaks = requests that did not repeat the "
        "previous stable prefix whole; over = requests larger than the window;\ncost units = "
        f"input tokens priced {READ}x for a cache read, {WRITE}x for a cache write, 1x otherwise;\n"
        "(reasoning) = the cost of the reasoning requests alone (no summary or memory requests)"
    )


if __name__ == "__main__":
    asyncio.run(main())
