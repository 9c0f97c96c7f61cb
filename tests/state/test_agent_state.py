"""Tests for AgentState and its parts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessed.contract import TASK, TaskContextState
from harnessed.messages import Msg, ThinkingBlock, ToolUseBlock
from harnessed.permissions import PERMISSIONS
from harnessed.plan import PLAN, PlanState
from harnessed.runtime import SessionRef
from harnessed.state import AgentState, StateSection
from harnessed.state.parked import PARKED
from harnessed.todos import TODOS, TodoItem


def make_state() -> AgentState:
    state = AgentState.new(SessionRef("agent", "user", "session"))
    state.append(
        Msg.user("hello"),
        Msg.assistant([ThinkingBlock("hmm", signature="s"), ToolUseBlock("c1", "ls", {"p": "."})]),
        Msg.tool_result("c1", "a.txt", name="ls"),
    )
    state.put(TODOS, (TodoItem("1", "list files", "in_progress"),))
    state.put(PLAN, PlanState(active=True, plan_file="plan.md"))
    state.put(TASK, TaskContextState.begin("ls", "list").add_requirement("constraint", "all files"))
    state.put(PERMISSIONS, {"mode": "auto"})
    state.metadata["k"] = {"v": [1, 2]}
    state.version = 7
    return state


def test_key_and_new() -> None:
    key = SessionRef("a", "u", "s")
    state = AgentState.new(key)
    assert state.key == key
    assert (state.version, state.task_revision, state.history_revision) == (0, 0, 0)
    assert state.history == [] and state.get(TODOS) == () and state.get(TASK) is None
    assert state.sections == {}


def test_to_dict_from_dict_round_trip() -> None:
    state = make_state()
    data = state.to_dict()
    again = AgentState.from_dict(json.loads(json.dumps(data)))
    assert again.to_dict() == data
    assert again.history == state.history
    assert again.get(TODOS) == state.get(TODOS)
    assert again.get(PLAN) == state.get(PLAN)
    assert again.get(TASK) == state.get(TASK)
    assert set(data) == {
        "agent_id",
        "user_id",
        "session_id",
        "version",
        "task_revision",
        "history_revision",
        "log_seq",
        "history",
        "metadata",
        "sections",
    }  # no field of any feature: they are sections
    assert set(data["sections"]) == {"todos", "plan", "task", "permissions"}
    assert (again.version, again.task_revision, again.history_revision) == (7, 4, 1)


def test_from_dict_defaults_and_missing_fields() -> None:
    state = AgentState.from_dict({"agent_id": "a", "user_id": "u", "session_id": "s"})
    assert state.key == SessionRef("a", "u", "s")
    assert state.get(PLAN) == PlanState() and state.version == 0
    with pytest.raises(ValueError, match="session_id"):
        AgentState.from_dict({"agent_id": "a", "user_id": "u"})


def test_revisions_bump_on_each_change() -> None:
    state = AgentState.new(SessionRef("a", "u", "s"))
    state.append(Msg.user("one"))
    state.replace_history([Msg.user("two")])
    assert (state.history_revision, state.task_revision) == (2, 0)
    state.put(TODOS, ())
    state.put(PLAN, PlanState())
    state.put(TASK, None)
    state.put(PERMISSIONS, {})
    assert (state.history_revision, state.task_revision) == (2, 4)
    assert state.version == 0  # only stores change the storage version


def test_setters_copy_their_input() -> None:
    state = AgentState.new(SessionRef("a", "u", "s"))
    permissions: dict[str, Any] = {"rules": [{"allow": True}]}
    todos = [TodoItem("1", "do it")]
    history = [Msg.user("hi")]
    state.put(PERMISSIONS, permissions)
    state.put(TODOS, tuple(todos))
    state.replace_history(history)
    permissions["rules"][0]["allow"] = False
    todos.clear()
    history.clear()
    assert state.get(PERMISSIONS) == {"rules": [{"allow": True}]}
    assert len(state.get(TODOS)) == 1 and len(state.history) == 1


def test_copy_is_independent() -> None:
    state = make_state()
    clone = state.copy()
    assert clone.to_dict() == state.to_dict()
    clone.append(Msg.user("more"))
    task = clone.get(TASK)
    assert task is not None
    clone.put(TASK, task.reject("r1"))
    clone.metadata["k"]["v"].append(3)
    clone.put(PERMISSIONS, {"mode": "ask"})
    assert len(state.history) == 3
    original = state.get(TASK)
    assert original is not None and original.requirements[0].status == "confirmed"
    assert state.metadata == {"k": {"v": [1, 2]}}
    assert state.get(PERMISSIONS) == {"mode": "auto"}


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


def test_a_section_value_is_read_only() -> None:
    state = make_state()
    with pytest.raises(TypeError):
        state.get(PERMISSIONS)["mode"] = "ask"  # type: ignore[index]
    assert state.get(PERMISSIONS) == {"mode": "auto"}


def _old_format() -> dict[str, Any]:
    """A state file as written before typed sections: the features were top-level fields and
    the parked step sat in ``permissions["pending"]``."""
    step = {
        "message": Msg.assistant([ToolUseBlock("c9", "deploy", {})]).to_dict(),
        "requests": [{"request_id": "perm_1", "call": {"id": "c9", "name": "deploy", "input": {}}}],
        "parked_at": "2026-01-01T00:00:00Z",
    }
    return {
        "agent_id": "a",
        "user_id": "u",
        "session_id": "s",
        "version": 3,
        "task_revision": 5,
        "history_revision": 0,
        "log_seq": 12,
        "history": [],
        "todos": [{"id": "t1", "content": "ship", "status": "in_progress"}],
        "plan": {"active": True, "plan_file": "plans/PLAN.md"},
        "task": TaskContextState.begin("t", "ship it").to_dict(),
        "permissions": {"mode": "accept_edits", "rules": [], "pending": step},
        "metadata": {"k": 1},
        "sections": {"skills": {"loaded": ["a"]}},
    }


def test_a_state_of_the_format_before_sections_is_migrated_on_load() -> None:
    state = AgentState.from_dict(_old_format())
    assert state.get(TODOS) == (TodoItem("t1", "ship", "in_progress"),)
    assert state.get(PLAN) == PlanState(True, "plans/PLAN.md")
    task = state.get(TASK)
    assert task is not None and task.objective == "ship it"
    assert state.get(PERMISSIONS) == {"mode": "accept_edits", "rules": []}
    parked = state.get(PARKED)
    assert parked is not None and [r.request_id for r in parked.requests] == ["perm_1"]
    assert state.sections["skills"] == {"loaded": ["a"]}  # other sections untouched
    assert (state.version, state.task_revision, state.log_seq) == (3, 5, 12)
    again = state.to_dict()  # saved again: the new format only
    assert "todos" not in again and "permissions" not in again
    assert AgentState.from_dict(again).to_dict() == again


def test_an_old_field_never_overrides_a_section_and_empty_ones_are_dropped() -> None:
    data = _old_format()
    data["sections"] = {"todos": [{"id": "n", "content": "newer"}]}
    data["plan"] = {"active": False, "plan_file": None}
    data["permissions"] = {"pending": None}
    state = AgentState.from_dict(data)
    assert [t.content for t in state.get(TODOS)] == ["newer"]
    assert set(state.sections) == {"todos", "task"}


def test_a_typed_section_is_decoded_once_until_written() -> None:
    calls: list[Any] = []

    def decode(data: Any) -> tuple[int, ...]:
        calls.append(data)
        return tuple(data)

    numbers = StateSection("numbers", decode=decode, encode=list, default=tuple)
    state = AgentState.new(SessionRef("a", "u", "s"))
    assert state.get(numbers) == () and calls == []
    state.set_section("numbers", [1, 2])  # written untyped: read again
    assert state.get(numbers) == (1, 2) and state.get(numbers) == (1, 2)
    assert len(calls) == 1
    state.put(numbers, (3,))
    assert state.get(numbers) == (3,) and state.get(numbers) == (3,)
    assert len(calls) == 2 and state.sections["numbers"] == [3]
    with pytest.raises(ValueError, match="non-empty"):
        StateSection("", decode=decode, encode=list, default=tuple)


def test_legacy_task_data_loads() -> None:
    data = make_state().to_dict()
    del data["sections"]["task"]
    data["task"] = {"objective": "tests pass", "requirements": ["no skips"], "verify": None}
    state = AgentState.from_dict(data)
    task = state.get(TASK)
    assert task is not None
    assert (task.task_id, task.objective) == ("task", "tests pass")
    assert [(r.text, r.status) for r in task.requirements] == [("no skips", "confirmed")]
    assert task.metadata == {"verify": None}
    state.put(TASK, task)
    assert AgentState.from_dict(state.to_dict()).get(TASK) == task


def test_legacy_task_without_objective_is_kept_in_its_section() -> None:
    data = make_state().to_dict()
    del data["sections"]["task"]
    data["task"] = {"requirements": ["x"], "owner": "ops"}
    state = AgentState.from_dict(data)
    assert state.get(TASK) is None
    assert state.sections["task"] == {"requirements": ["x"], "owner": "ops"}
    assert AgentState.from_dict(state.to_dict()).sections["task"] == state.sections["task"]


def test_malformed_typed_task_is_an_error() -> None:
    data = make_state().to_dict()
    data["sections"]["task"] = {"task_id": "t", "objective": "  "}
    state = AgentState.from_dict(data)
    with pytest.raises(ValueError, match="objective"):
        state.get(TASK)
