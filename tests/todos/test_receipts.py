"""Superseded todo receipts and a task list that survives summarization (BEHAVIOUR §6)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harnessed import HarnessAgent, Msg
from harnessed.context import (
    PROJECTION_KEY,
    HistoryBudget,
    HistoryOutcome,
    group_boundaries,
    tool_pair_problems,
)
from harnessed.messages import ToolResultBlock, ToolUseBlock
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.todos import TODOS
from tests.context.helpers import noop
from tests.support.fixtures import CTX


def todos(*items: tuple[str, str]) -> ScriptedToolCall:
    return ScriptedToolCall(
        "todo_write", {"todos": [{"content": c, "status": s} for c, s in items]}
    )


def todo_results(request: ModelRequest) -> list[ToolResultBlock]:
    return [r for m in request.messages for r in m.tool_results if r.name == "todo_write"]


def todo_calls(request: ModelRequest) -> list[ToolUseBlock]:
    return [c for m in request.messages for c in m.tool_uses if c.name == "todo_write"]


def task_state(request: ModelRequest) -> str:
    return next(m.text for m in request.messages if m.text.startswith("<TASK_STATE"))


async def test_older_receipts_are_shown_as_superseded_and_the_history_is_untouched() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[todos(("explore the repo", "in_progress"))]),
            ScriptedResponse(
                tool_calls=[todos(("explore the repo", "completed"), ("fix it", "in_progress"))]
            ),
            ScriptedResponse(tool_calls=[ScriptedToolCall("todo_write", {"todos": "oops"})]),
            "done",
        ]
    )
    agent = HarnessAgent("rc", model, enable_task_list=True)
    await agent.call("go", CTX)
    last = model.requests[3]
    results = todo_results(last)
    calls = todo_calls(last)
    assert len(results) == len(calls) == 3
    assert results[0].content.startswith("[superseded") and "TASK_STATE" in results[0].content
    assert calls[0].input == {"superseded": "see TASK_STATE"}
    assert results[1].content.startswith("Task list saved")  # the latest successful one
    assert calls[1].input["todos"][1]["content"] == "fix it"
    assert results[2].is_error and "todos" in results[2].content  # a later failure stays
    marked = [m for m in last.messages if m.metadata.get(PROJECTION_KEY) == "superseded_receipt"]
    assert len(marked) == 2  # the first call and its result
    assert tool_pair_problems([m for m in last.messages if m.role != "system"][:-1]) == []

    stored = await agent.load_state(CTX)
    stored_results = [r for m in stored.history for r in m.tool_results]
    assert not any(r.content.startswith("[superseded") for r in stored_results)
    assert not any(m.metadata.get(PROJECTION_KEY) for m in stored.history)


class PrefixSummarizer:
    """A stand-in for the compaction issue's summarizer: once the history is longer than
    ``trigger`` messages, the prefix before a safe cut becomes one summary message."""

    def __init__(self, trigger: int, keep: int) -> None:
        self.trigger, self.keep = trigger, keep
        self.summarized: list[list[str]] = []

    async def __call__(self, history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        if len(history) <= self.trigger:
            return HistoryOutcome(history)
        cut = max(b for b in group_boundaries(history) if b <= len(history) - self.keep)
        if cut <= 1:
            return HistoryOutcome(history)
        prefix = history[:cut]
        self.summarized.append([m.id for m in prefix])
        summary = Msg.user(
            f"[summary of {len(prefix)} earlier messages: the agent explored and planned]",
            metadata={"harness": "summary"},
        )
        return HistoryOutcome([summary, *history[cut:]], ("history_compaction",))


async def test_a_long_run_keeps_the_full_current_list_after_the_first_receipt_is_summarized() -> (
    None
):
    steps: list[Any] = [
        ScriptedResponse(
            tool_calls=[todos(("map the code", "in_progress"), ("write the fix", "pending"))]
        )
    ]
    steps += [ScriptedResponse(tool_calls=[ScriptedToolCall("noop")]) for _ in range(6)]
    steps.append(
        ScriptedResponse(
            tool_calls=[
                todos(
                    ("map the code", "completed"),
                    ("write the fix", "in_progress"),
                    ("run the tests", "pending"),
                )
            ]
        )
    )
    steps += [ScriptedResponse(tool_calls=[ScriptedToolCall("noop")]) for _ in range(8)]
    steps.append("all done")
    model = ScriptedModel(steps)
    agent = HarnessAgent("long", model, tools=[noop], enable_task_list=True, max_iters=30)
    summarizer = PrefixSummarizer(trigger=8, keep=4)
    agent.compiler.compactor = summarizer
    await agent.call("fix the bug", CTX)

    first_call_id = todo_calls(model.requests[1])[0].id
    summarized_at = next(
        i for i, r in enumerate(model.requests) if first_call_id not in _call_ids(r) and i > 0
    )
    assert summarizer.summarized, "the history was never summarized"
    for index, request in enumerate(model.requests[1:], start=1):
        state = task_state(request)
        if index < 8:
            assert "- [in_progress] map the code (id: t1)" in state
            assert "- [pending] write the fix (id: t2)" in state
        else:
            assert "- [completed] map the code (id: t1)" in state
            assert "- [in_progress] write the fix (id: t2)" in state
            assert "- [pending] run the tests (id: t3)" in state
        if index >= summarized_at:
            assert first_call_id not in _call_ids(request)
            assert any("[summary of" in m.text for m in request.messages)
    stored = await agent.load_state(CTX)
    assert [t.status for t in stored.get(TODOS)] == ["completed", "in_progress", "pending"]
    assert stored.history[0].metadata.get("harness") == "summary"
    log = await agent.session_messages(CTX)  # the log still has the first receipt in full
    assert any(
        r.tool_use_id == first_call_id and r.content.startswith("Task list saved")
        for m in log
        for r in m.tool_results
    )


def _call_ids(request: ModelRequest) -> set[str]:
    return {c.id for m in request.messages for c in m.tool_uses}


def test_markers_are_never_longer_than_what_they_replace() -> None:
    from harnessed.runtime import SessionRef
    from harnessed.state import AgentState
    from harnessed.todos.receipts import SupersededTodoReceipts

    short = Msg.assistant([ToolUseBlock("a", "todo_write", {"todos": []})])  # 13 chars
    history = [
        Msg.user("hi"),
        short,
        Msg.tool_result("a", "ok", name="todo_write"),
        Msg.assistant([ToolUseBlock("b", "todo_write", {"todos": [{"content": "x" * 200}]})]),
        Msg.tool_result("b", "saved " + "y" * 200, name="todo_write"),
    ]
    shown = SupersededTodoReceipts()(history, AgentState.new(SessionRef("a", "u", "s")))
    assert shown[1] is short and shown[2] is history[2]  # tiny originals stay as they are
    assert shown[4] is history[4]
    assert len(json.dumps(shown[1].to_dict())) <= len(json.dumps(history[1].to_dict()))


def _todo_pair(call_id: str, n: int, *, ok: bool = True) -> list[Msg]:
    todos = [{"content": f"item {k} " + "x" * 40, "status": "pending"} for k in range(n)]
    return [
        Msg.assistant([ToolUseBlock(call_id, "todo_write", {"todos": todos})]),
        Msg.tool_result(
            call_id, f"Task list saved: {n} items " + "y" * 80, name="todo_write", is_error=not ok
        ),
    ]


def test_the_view_follows_appends_replacements_and_sessions() -> None:
    from harnessed.runtime import SessionRef
    from harnessed.state import AgentState
    from harnessed.todos.receipts import SupersededTodoReceipts

    view = SupersededTodoReceipts()
    state = AgentState.new(SessionRef("a", "u", "s"))
    other = AgentState.new(SessionRef("a", "u", "other"))
    read = [
        Msg.assistant([ToolUseBlock("r", "read_file", {"path": "a"})]),
        Msg.tool_result("r", "old text", name="read_file"),
    ]
    history = [Msg.user("go"), *_todo_pair("a", 2), *read, *_todo_pair("b", 3)]

    def superseded(shown: Sequence[Msg]) -> list[str]:
        return [
            r.tool_use_id for m in shown for r in m.tool_results if r.content.startswith("[sup")
        ]

    assert superseded(view(history, state)) == ["a"]
    assert superseded(view(history, state)) == ["a"]  # remembered, same answer
    assert superseded(view(history[:3], other)) == []  # another session, its own memory

    grown = [*history, *_todo_pair("c", 1, ok=False)]  # a failed call supersedes nothing
    assert superseded(view(grown, state)) == ["a"]
    grown += _todo_pair("d", 1)
    shown = view(grown, state)
    assert superseded(shown) == ["a", "b", "c"]
    assert shown[-1] is grown[-1]

    evicted = list(grown)  # eviction replaced a message before the latest receipt
    evicted[4] = Msg.tool_result("r", "new text", name="read_file")
    shown = view(evicted, state)
    assert shown[4] is evicted[4] and superseded(shown) == ["a", "b", "c"]

    compacted = [Msg.user("[summary]"), *grown[-2:]]
    assert superseded(view(compacted, state)) == []
    assert tool_pair_problems(view(grown, state)) == []
