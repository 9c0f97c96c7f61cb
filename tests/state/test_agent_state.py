"""Tests for AgentState and its parts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessed.contract import TaskContextState
from harnessed.messages import Msg, ThinkingBlock, ToolUseBlock
from harnessed.runtime import SessionRef
from harnessed.state import AgentState, PlanState, TodoItem


def make_state() -> AgentState:
    state = AgentState.new(SessionRef("agent", "user", "session"))
    state.append(
        Msg.user("hello"),
        Msg.assistant([ThinkingBlock("hmm", signature="s"), ToolUseBlock("c1", "ls", {"p": "."})]),
        Msg.tool_result("c1", "a.txt", name="ls"),
    )
    state.set_todos([TodoItem("1", "list files", "in_progress")])
    state.set_plan(PlanState(active=True, plan_file="plan.md"))
    state.set_task(TaskContextState.begin("ls", "list").add_requirement("constraint", "all files"))
    state.set_permissions({"mode": "auto"})
    state.metadata["k"] = {"v": [1, 2]}
    state.version = 7
    return state


def test_key_and_new() -> None:
    key = SessionRef("a", "u", "s")
    state = AgentState.new(key)
    assert state.key == key
    assert (state.version, state.task_revision, state.history_revision) == (0, 0, 0)
    assert state.history == [] and state.todos == [] and state.task is None


def test_to_dict_from_dict_round_trip() -> None:
    state = make_state()
    data = state.to_dict()
    again = AgentState.from_dict(json.loads(json.dumps(data)))
    assert again.to_dict() == data
    assert again.history == state.history
    assert again.todos == state.todos
    assert again.plan == state.plan
    assert (again.version, again.task_revision, again.history_revision) == (7, 4, 1)


def test_from_dict_defaults_and_missing_fields() -> None:
    state = AgentState.from_dict({"agent_id": "a", "user_id": "u", "session_id": "s"})
    assert state.key == SessionRef("a", "u", "s")
    assert state.plan == PlanState() and state.version == 0
    with pytest.raises(ValueError, match="session_id"):
        AgentState.from_dict({"agent_id": "a", "user_id": "u"})


def test_revisions_bump_on_each_change() -> None:
    state = AgentState.new(SessionRef("a", "u", "s"))
    state.append(Msg.user("one"))
    state.replace_history([Msg.user("two")])
    assert (state.history_revision, state.task_revision) == (2, 0)
    state.set_todos([])
    state.set_plan(PlanState())
    state.set_task(None)
    state.set_permissions({})
    assert (state.history_revision, state.task_revision) == (2, 4)
    assert state.version == 0  # only stores change the storage version


def test_setters_copy_their_input() -> None:
    state = AgentState.new(SessionRef("a", "u", "s"))
    permissions: dict[str, Any] = {"rules": [{"allow": True}]}
    todos = [TodoItem("1", "do it")]
    history = [Msg.user("hi")]
    state.set_permissions(permissions)
    state.set_todos(todos)
    state.replace_history(history)
    permissions["rules"][0]["allow"] = False
    todos.clear()
    history.clear()
    assert state.permissions == {"rules": [{"allow": True}]}
    assert len(state.todos) == 1 and len(state.history) == 1


def test_copy_is_independent() -> None:
    state = make_state()
    clone = state.copy()
    assert clone.to_dict() == state.to_dict()
    clone.append(Msg.user("more"))
    assert clone.task is not None
    clone.set_task(clone.task.reject("r1"))
    clone.metadata["k"]["v"].append(3)
    clone.permissions["mode"] = "ask"
    assert len(state.history) == 3
    assert state.task is not None and state.task.requirements[0].status == "confirmed"
    assert state.metadata == {"k": {"v": [1, 2]}}
    assert state.permissions == {"mode": "auto"}


def test_todo_item_round_trip_and_default_status() -> None:
    item = TodoItem("1", "write tests", "completed")
    assert TodoItem.from_dict(item.to_dict()) == item
    assert TodoItem.from_dict({"id": 2, "content": "x"}) == TodoItem("2", "x", "pending")


@pytest.mark.parametrize("content", ["", "   ", "\n\t"])
def test_todo_item_rejects_blank_content(content: str) -> None:
    with pytest.raises(ValueError, match="blank"):
        TodoItem("1", content)


@pytest.mark.parametrize("status", ["done", "", "PENDING", None])
def test_todo_item_rejects_bad_status(status: Any) -> None:
    with pytest.raises(ValueError, match="status"):
        TodoItem("1", "task", status)
    with pytest.raises(ValueError, match="status"):
        TodoItem.from_dict({"id": "1", "content": "task", "status": status})


def test_plan_state_round_trip() -> None:
    plan = PlanState(active=True, plan_file="p.md")
    assert PlanState.from_dict(plan.to_dict()) == plan
    assert PlanState.from_dict({}) == PlanState(False, None)


@pytest.mark.parametrize(
    "args", [("", "u", "s"), ("a", "", "s"), ("a", "u", ""), (None, "u", "s"), ("a", 1, "s")]
)
def test_state_key_rejects_empty_or_non_string_ids(args: tuple[Any, Any, Any]) -> None:
    with pytest.raises(ValueError, match="SessionRef"):
        SessionRef(*args)


def test_state_key_is_hashable_and_frozen() -> None:
    key = SessionRef("a", "u", "s")
    assert {key: 1}[SessionRef("a", "u", "s")] == 1
    with pytest.raises(AttributeError):
        key.agent_id = "b"  # type: ignore[misc]


def test_legacy_task_data_loads() -> None:
    data = make_state().to_dict()
    data["task"] = {"objective": "tests pass", "requirements": ["no skips"], "verify": None}
    state = AgentState.from_dict(data)
    assert state.task is not None
    assert (state.task.task_id, state.task.objective) == ("task", "tests pass")
    assert [(r.text, r.status) for r in state.task.requirements] == [("no skips", "confirmed")]
    assert state.task.metadata == {"verify": None}
    assert AgentState.from_dict(state.to_dict()).task == state.task


def test_legacy_task_without_objective_is_kept_in_metadata() -> None:
    data = make_state().to_dict()
    data["task"] = {"requirements": ["x"], "owner": "ops"}
    state = AgentState.from_dict(data)
    assert state.task is None
    assert state.metadata["legacy_task"] == {"requirements": ["x"], "owner": "ops"}


def test_malformed_typed_task_is_an_error() -> None:
    data = make_state().to_dict()
    data["task"] = {"task_id": "t", "objective": "  "}
    with pytest.raises(ValueError, match="objective"):
        AgentState.from_dict(data)


def test_set_task_accepts_a_mapping() -> None:
    state = AgentState.new(SessionRef("a", "u", "s"))
    task = TaskContextState.begin("t", "ship it")
    state.set_task(task.to_dict())
    assert state.task == task
