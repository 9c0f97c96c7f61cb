"""End to end: the task list survives summary compaction (issues 4 and 7 together)."""

from __future__ import annotations

from collections.abc import Callable

from harnessed import CompactionConfig, HarnessAgent, tool
from harnessed.context import tool_pair_problems
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from tests.support.fixtures import CTX

TODOS = [
    {"content": "reproduce the login bug", "status": "completed"},
    {"content": "write a failing test", "status": "in_progress"},
    {"content": "fix the session cookie", "status": "pending"},
]


@tool(read_only=True)
def inspect_logs(part: int) -> str:
    """Read one part of the server logs."""
    return f"log part {part}: " + "GET /login 500 " * 20


def make_responder() -> Callable[[ModelRequest], ScriptedResponse]:
    steps = 0

    def respond(request: ModelRequest) -> ScriptedResponse:
        nonlocal steps
        if request.purpose == "summary":
            return ScriptedResponse("## Session intent\nFix the login bug.\n## Next steps\nGo on.")
        steps += 1
        if steps == 1:
            return ScriptedResponse(tool_calls=[ScriptedToolCall("todo_write", {"todos": TODOS})])
        if steps == 30:
            return ScriptedResponse("Done reading the logs.")
        return ScriptedResponse(tool_calls=[ScriptedToolCall("inspect_logs", {"part": steps})])

    return respond


def task_state(request: ModelRequest) -> str:
    blocks = [m.text for m in request.messages if m.text.startswith("<TASK_STATE")]
    assert len(blocks) == 1
    return blocks[0]


async def test_the_first_todo_write_is_summarized_away_but_the_list_stays_visible() -> None:
    model = ScriptedModel(responder=make_responder())
    agent = HarnessAgent(
        "fixer",
        model,
        tools=[inspect_logs],
        enable_task_list=True,
        max_iters=60,
        compaction=CompactionConfig(trigger_messages=10, keep_messages=4, keep_tokens=0),
    )
    reply = await agent.call("Fix the login bug; keep a task list.", CTX)
    assert reply.text == "Done reading the logs."
    reasoning = [r for r in model.requests if r.purpose == "reasoning"]
    summaries = [r for r in model.requests if r.purpose == "summary"]
    assert summaries, "the run was long enough to be summarized"

    def has_original_todo_write(request: ModelRequest) -> bool:
        return any(c.name == "todo_write" for m in request.messages for c in m.tool_uses)

    after = [r for r in reasoning if not has_original_todo_write(r)]
    assert len(after) >= 5, "many requests were sent after the todo_write was summarized away"
    for request in reasoning[1:]:
        state = task_state(request)
        for item in TODOS:
            assert f"[{item['status']}] {item['content']}" in state
        assert tool_pair_problems([m for m in request.messages if m.role != "system"]) == []
    # the stored history was compacted, the session log still has the original call
    stored = (await agent.load_state(CTX)).history
    assert not any(c.name == "todo_write" for m in stored for c in m.tool_uses)
    logged = await agent.session_messages(CTX)
    assert any(c.name == "todo_write" for m in logged for c in m.tool_uses)
