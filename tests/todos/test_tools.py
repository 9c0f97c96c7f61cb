"""``todo_write``: whole-list replace, validation before any change, stable ids (BEHAVIOUR §6)."""

from __future__ import annotations

from typing import Any

import pytest

from harnessed import HarnessAgent, TodoItem
from harnessed.log import RecordType
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.todos import TODOS
from harnessed.todos.tools import MAX_TODOS, TodoEntry, plan_todo_list
from tests.support.fixtures import CTX


def todo_call(items: list[dict[str, Any]], id: str | None = None) -> ScriptedToolCall:
    return ScriptedToolCall("todo_write", {"todos": items}, id=id)


def task_state(request: ModelRequest) -> str:
    found = [m.text for m in request.messages if m.text.startswith("<TASK_STATE")]
    assert len(found) == 1, "expected exactly one TASK_STATE block"
    return found[0]


def result_of(request: ModelRequest, call_id: str) -> Any:
    for m in request.messages:
        for r in m.tool_results:
            if r.tool_use_id == call_id:
                return r
    raise AssertionError(f"no result for {call_id}")


def test_ids_are_kept_for_unchanged_items_and_new_items_get_new_ids() -> None:
    current = [TodoItem("t1", "read the bug report", "completed"), TodoItem("t2", "fix it")]
    entries = [
        TodoEntry(content="read the bug report", status="completed"),  # same content: t1
        TodoEntry(content="write a regression test", status="in_progress"),  # new: t3
        TodoEntry(content="fix it properly", id="t2"),  # explicit id: t2, content changed
        TodoEntry(content="release", id="custom"),
    ]
    items = plan_todo_list(current, entries)
    assert [(i.id, i.content, i.status) for i in items] == [
        ("t1", "read the bug report", "completed"),
        ("t3", "write a regression test", "in_progress"),
        ("t2", "fix it properly", "pending"),
        ("custom", "release", "pending"),
    ]


def test_every_problem_is_named_at_once() -> None:
    entries = [
        TodoEntry(content="a", status="in_progress", id="x"),
        TodoEntry(content="  ", status="in_progress"),
        TodoEntry(content="c", id="x"),
    ]
    with pytest.raises(Exception, match="not changed") as info:
        plan_todo_list([], entries)
    text = str(info.value)
    assert "items 1, 2 are all in_progress" in text
    assert "item 2 has blank content" in text
    assert "items 1 and 3 both use id 'x'" in text
    with pytest.raises(Exception, match=f"at most {MAX_TODOS}"):
        plan_todo_list([], [TodoEntry(content=f"step {i}") for i in range(MAX_TODOS + 1)])


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}],
            "at most one item may be",
        ),
        ([{"content": "   "}], "item 1 has blank content"),
        ([{"content": "a", "status": "done"}], "todos.0.status"),
        ([{"content": "a", "id": "k"}, {"content": "b", "id": "k"}], "both use id 'k'"),
        ([{"text": "a"}], "todos.0.content: required argument is missing"),
    ],
    ids=["two-in-progress", "blank", "bad-status", "duplicate-id", "wrong-shape"],
)
async def test_invalid_lists_are_rejected_and_the_state_is_unchanged(
    items: list[dict[str, Any]], message: str
) -> None:
    good = [{"content": "reproduce", "status": "in_progress"}, {"content": "fix"}]
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[todo_call(good, "ok")]),
            ScriptedResponse(tool_calls=[todo_call(items, "bad")]),
            "done",
        ]
    )
    agent = HarnessAgent("todo", model, enable_task_list=True)
    await agent.call("work", CTX)
    bad = result_of(model.requests[2], "bad")
    assert bad.is_error and message in bad.content
    state = await agent.load_state(CTX)
    assert [(t.id, t.content, t.status) for t in state.get(TODOS)] == [
        ("t1", "reproduce", "in_progress"),
        ("t2", "fix", "pending"),
    ]
    assert state.task_revision == 1  # only the good call changed the state
    assert "- [in_progress] reproduce (id: t1)" in task_state(model.requests[2])


async def test_the_current_list_is_shown_at_every_request_and_logged() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[todo_call([{"content": "one"}, {"content": "two"}])]),
            ScriptedResponse(
                tool_calls=[
                    todo_call(
                        [
                            {"content": "one", "status": "completed", "id": "t1"},
                            {"content": "two", "status": "in_progress"},
                        ]
                    )
                ]
            ),
            "finished",
        ]
    )
    agent = HarnessAgent("todo", model, enable_task_list=True)
    await agent.call("plan it", CTX)
    assert "<TASK_STATE" not in "".join(m.text for m in model.requests[0].messages)
    assert "- [pending] one (id: t1)" in task_state(model.requests[1])
    third = task_state(model.requests[2])
    assert "- [completed] one (id: t1)" in third and "- [in_progress] two (id: t2)" in third
    assert 'revision="2"' in third
    records = await agent.session_log(CTX, types=[RecordType.TASK_CHANGED])
    assert [r.payload["action"] for r in records] == ["todos", "todos"]
    assert records[-1].payload["todos"][1] == {
        "id": "t2",
        "content": "two",
        "status": "in_progress",
    }


async def test_todo_write_exists_only_when_enabled() -> None:
    model = ScriptedModel(["hi", "hi"])
    await HarnessAgent("off", model).call("x", CTX)
    assert "todo_write" not in [t.name for t in model.requests[0].tools]
    await HarnessAgent("on", model, enable_task_list=True).call("x", CTX)
    assert "todo_write" in [t.name for t in model.requests[1].tools]
