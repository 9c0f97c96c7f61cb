"""End to end: after real eviction and summary compaction, the session tools still return the
original full text (issues 4 and 5 together)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harnessed import CompactionConfig, HarnessAgent, RuntimeContext, tool
from harnessed.compaction import is_summary
from harnessed.messages import ToolResultBlock, ToolUseBlock
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.tools.context import ToolContext

CTX = RuntimeContext("alice", "s1")
BIG = "".join(f"row {i:06d} status=ok checksum=BIGROWMARKER{i}\n" for i in range(2_500))
assert len(BIG) > 80_000


@tool
def dump_table() -> str:
    """Dump the whole orders table."""
    return BIG


def make_responder() -> Callable[[ModelRequest], ScriptedResponse]:
    steps = 0

    def respond(request: ModelRequest) -> ScriptedResponse:
        nonlocal steps
        if request.purpose == "summary":
            return ScriptedResponse("## Session intent\nAudit the orders table.")
        steps += 1
        if steps == 1:
            return ScriptedResponse(
                "The secret word is PELICAN-42.", [ScriptedToolCall("dump_table")]
            )
        if steps < 14:
            return ScriptedResponse(tool_calls=[ScriptedToolCall("dump_table")])
        return ScriptedResponse("Audit done.")

    return respond


async def call_tool(agent: HarnessAgent, name: str, **args: object) -> str:
    tool_ = agent.toolkit.get(name)
    assert tool_ is not None
    state = await agent.load_state(CTX)
    context = ToolContext(agent.name, CTX.resolved(agent.name), state, "t1", agent.workspace)
    return str(await tool_.run(args, context))


async def test_session_tools_return_the_originals_after_eviction_and_summaries(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(responder=make_responder())
    agent = HarnessAgent(
        "auditor",
        model,
        tools=[dump_table],
        workspace=tmp_path,
        max_iters=30,
        compaction=CompactionConfig(trigger_messages=8, keep_messages=4, keep_tokens=0),
    )
    assert (await agent.call("Audit the orders table.", CTX)).text == "Audit done."

    reasoning = [r for r in model.requests if r.purpose == "reasoning"]
    # the model never saw the full table after its first step: eviction replaced it
    for request in reasoning[1:]:
        assert all("BIGROWMARKER2400" not in m.text for m in request.messages)
    # and the opening exchange was summarized away
    stored = (await agent.load_state(CTX)).history
    assert is_summary(stored[0])
    assert not any("PELICAN-42" in m.text for m in stored)

    # session_history returns the original, full tool output and the summarized message
    history = await call_tool(agent, "session_history", session_id="s1", last_n=200)
    assert "PELICAN-42" in history
    assert history.count("BIGROWMARKER2499") == 13  # every dump, in full
    logged = await agent.session_messages(CTX)
    results = [b for m in logged for b in m.content if isinstance(b, ToolResultBlock)]
    assert results and all(r.content == BIG for r in results)
    assert sum(isinstance(b, ToolUseBlock) for m in logged for b in m.content) == 13

    # session_search finds text that exists only in summarized / evicted messages
    found = await call_tool(agent, "session_search", query="PELICAN-42")
    assert "PELICAN-42" in found and "s1" in found
    found = await call_tool(agent, "session_search", query="BIGROWMARKER1234")
    assert "BIGROWMARKER1234" in found

    # another user sees none of it
    bob = RuntimeContext("bob", "b1")
    state = await agent.load_state(bob)
    search = agent.toolkit.get("session_search")
    assert search is not None
    context = ToolContext(agent.name, bob.resolved(agent.name), state, "t2", agent.workspace)
    answer = str(await search.run({"query": "PELICAN-42"}, context))
    assert answer.startswith("No message in your sessions matches")
