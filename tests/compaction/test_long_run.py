"""A long scripted run with large tool outputs stays inside the window at every request."""

from __future__ import annotations

import time

from harnessed import HarnessAgent, tool
from harnessed.context import ContextPolicy
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from harnessed.workspace import MemoryFilesystem, Workspace
from tests.compaction.helpers import assert_valid_pairs, custom, text_of
from tests.support.fixtures import CTX, call, collect

STEPS = 200
WINDOW = 32_000
LIMIT = ContextPolicy().input_limit(WINDOW)  # 27,360 tokens


@tool(read_only=True)
def inspect(item: int, size: int) -> str:
    """Inspect one item and return its (possibly very long) report.

    Args:
        item: Which item.
        size: The report's length in characters.
    """
    return text_of(size, f"item{item}")


def size_for(step: int) -> int:
    """A mix: now and then far beyond the eviction limit, usually 1-25k characters."""
    if step % 9 == 4:
        return 150_000
    return 1_000 + (step * 7_919) % 24_000


async def test_a_200_step_run_never_exceeds_the_limit_and_keeps_valid_pairs() -> None:
    steps_taken = 0

    def responder(request: ModelRequest) -> str | ScriptedResponse:
        nonlocal steps_taken
        if request.purpose == "summary":
            return "## Session intent\nInspect every item.\n## Next steps\nContinue."
        if steps_taken >= STEPS:
            return "all items inspected"
        steps_taken += 1
        calls = [call("inspect", f"s{steps_taken}", item=steps_taken, size=size_for(steps_taken))]
        if steps_taken % 10 == 0:  # parallel calls now and then
            calls.append(call("inspect", f"s{steps_taken}b", item=-steps_taken, size=3_000))
        return ScriptedResponse(tool_calls=calls)

    model = ScriptedModel(responder=responder, context_window=WINDOW, overflow_at_tokens=WINDOW)
    fs = MemoryFilesystem()
    agent = HarnessAgent(
        "longrun",
        model,
        workspace=Workspace(fs),
        tools=[inspect],
        max_iters=STEPS + 5,
        sys_prompt="You inspect items one by one.",
        subagents=False,  # the tight window is measured for the inspect tool alone
        skills=False,
        web=False,
    )
    started = time.perf_counter()
    events = await collect(agent, "Inspect items 1 to 200 and report.", CTX)
    elapsed = time.perf_counter() - started

    reasoning = [r for r in model.requests if r.purpose == "reasoning"]
    assert len(reasoning) == STEPS + 1
    for request in model.requests:
        assert model.estimate(request) <= LIMIT, model.estimate(request)
        assert_valid_pairs(request)
    assert custom(events, "overflow_recovery") == []
    ends = custom(events, "compaction_end")
    assert ends and all(e["status"] == "completed" for e in ends)
    evicted = len(await fs.glob("large_tool_results/**"))
    assert evicted >= STEPS // 9
    builds = await agent.session_log(CTX, types=["context/build"])
    assert all(b.payload["status"] == "passed" for b in builds)
    # every tool output is kept in full in the log, whatever the context did with it
    outputs = [m for m in await agent.session_messages(CTX) if m.role == "tool"]
    assert len(outputs) == STEPS + STEPS // 10
    assert max(len(m.text) for m in outputs) == 150_000
    assert elapsed < 30  # generous: a sanity bound, not a benchmark
