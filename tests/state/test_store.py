"""Tests for the agent state stores (in-memory and JSON files)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harnessed.contract.state import TASK, TaskContextState
from harnessed.messages import Msg, TextBlock, ThinkingBlock, ToolUseBlock
from harnessed.permissions import PERMISSIONS
from harnessed.plan import PLAN, PlanState
from harnessed.runtime import SessionRef
from harnessed.state import (
    AgentState,
    AgentStateStore,
    InMemoryStateStore,
    JsonFileStateStore,
    StateConflictError,
)
from harnessed.state.parked import PARKED
from harnessed.state.store import StateCorruptedError
from harnessed.stores import FilesystemStateStore
from harnessed.todos import TODOS, TodoItem
from harnessed.workspace import MemoryFilesystem
from tests.support.postgres import postgres_store

KEY = SessionRef("agent", "user", "session")


@pytest.fixture(params=["memory", "json", "workspace", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AgentStateStore]:
    if request.param == "memory":
        yield InMemoryStateStore()
    elif request.param == "json":
        yield JsonFileStateStore(tmp_path / "states")
    elif request.param == "workspace":
        yield FilesystemStateStore(MemoryFilesystem())
    else:
        async for pg in postgres_store():
            yield pg.state_store()


def rich_state(key: SessionRef = KEY) -> AgentState:
    state = AgentState.new(key)
    state.append(
        Msg.user("Fix the failing test, please."),
        Msg.assistant(
            [
                ThinkingBlock("Look at the test first.", signature="sig-123"),
                TextBlock("Reading it."),
                ToolUseBlock("call_1", "read_file", {"path": "tests/x.py", "opts": {"n": 3}}),
            ]
        ),
        Msg.tool_result("call_1", "def test(): ...", name="read_file"),
        Msg.tool_result("call_2", "boom", is_error=True, name="run"),
    )
    state.put(
        TODOS,
        (
            TodoItem("1", "read the test", "completed"),
            TodoItem("2", "fix it"),
        ),
    )
    state.put(PLAN, PlanState(active=True, plan_file="plans/fix.md"))
    state.put(
        TASK,
        TaskContextState.begin("fix", "tests pass")
        .add_requirement("constraint", "no skips")
        .record("pytest", "failed", details="1 failed"),
    )
    state.put(PERMISSIONS, {"mode": "ask", "rules": [{"tool": "bash", "allow": False}]})
    state.metadata.update({"model": "m-1", "nested": {"list": [1, 2.5, "x", None, True]}})
    return state


def test_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    assert isinstance(InMemoryStateStore(), AgentStateStore)
    assert isinstance(JsonFileStateStore(tmp_path), AgentStateStore)


async def test_missing_state_loads_as_none(store: AgentStateStore) -> None:
    assert await store.load(KEY) is None
    assert await store.list_sessions("agent", "user") == []
    assert await store.delete(KEY) is False


async def test_round_trip_keeps_everything(store: AgentStateStore) -> None:
    state = rich_state()
    await store.save(state)
    loaded = await store.load(KEY)
    assert loaded is not None
    assert loaded.to_dict() == state.to_dict()
    assert loaded.history == state.history
    assert loaded.history[1].thinking == "Look at the test first."
    assert loaded.history[1].tool_uses[0].input == {"path": "tests/x.py", "opts": {"n": 3}}
    assert loaded.history[3].tool_results[0].is_error is True
    assert loaded.get(TODOS) == state.get(TODOS)
    assert loaded.get(PLAN) == PlanState(True, "plans/fix.md")
    assert loaded.get(TASK) == state.get(TASK)
    assert (loaded.task_revision, loaded.history_revision) == (4, 1)


class _OldFormat(AgentState):
    """Saves itself as a state of the format before typed sections (features as top-level
    fields, the parked step in ``permissions["pending"]``), through each store's own writes."""

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        sections = data.pop("sections")
        data["todos"] = sections.pop("todos")
        data["plan"] = sections.pop("plan")
        data["task"] = sections.pop("task")
        data["permissions"] = {**sections.pop("permissions"), "pending": sections.pop("parked")}
        data["sections"] = sections
        return data


async def test_a_state_saved_before_typed_sections_loads_migrated(store: AgentStateStore) -> None:
    rich = rich_state()
    old = _OldFormat.from_dict(rich.to_dict())
    step = {
        "message": Msg.assistant([ToolUseBlock("c9", "deploy", {})]).to_dict(),
        "requests": [
            {
                "request_id": "perm_1",
                "call": {"id": "c9", "name": "deploy"},
                "created_at": "2026-01-01T00:00:00Z",
            }
        ],
        "parked_at": "2026-01-01T00:00:00Z",
    }
    old.set_section("parked", step)
    old.set_section("memory", {"notes": 2})
    await store.save(old)
    loaded = await store.load(KEY)
    assert loaded is not None
    assert loaded.get(TODOS) == rich.get(TODOS)
    assert loaded.get(PLAN) == PlanState(True, "plans/fix.md")
    assert loaded.get(TASK) == rich.get(TASK)
    assert loaded.get(PERMISSIONS) == rich.get(PERMISSIONS)
    parked = loaded.get(PARKED)
    assert parked is not None and parked.requests[0].call.name == "deploy"
    assert loaded.sections["memory"] == {"notes": 2}
    loaded.metadata["again"] = True
    await store.save(loaded)  # saved again in the new format, read the same
    again = await store.load(KEY)
    assert again is not None and again.get(PARKED) == parked and again.get(TASK) == rich.get(TASK)


async def test_load_returns_independent_copies(store: AgentStateStore) -> None:
    original = rich_state()
    await store.save(original)
    first = await store.load(KEY)
    assert first is not None
    task = first.get(TASK)
    assert task is not None
    first.put(TASK, task.reject("r1"))
    first.get(PERMISSIONS)["rules"][0]["allow"] = True  # a read-only mapping's nested data
    first.metadata["nested"]["list"].clear()
    first.append(Msg.user("more"))
    first.put(TODOS, ())
    second = await store.load(KEY)
    assert second is not None
    assert second.to_dict() == original.to_dict()
    assert second is not first


async def test_saved_state_is_not_affected_by_later_changes(store: AgentStateStore) -> None:
    state = rich_state()
    await store.save(state)
    saved_task = state.get(TASK)
    assert saved_task is not None
    state.put(TASK, saved_task.with_subject_version("2"))
    state.metadata["nested"]["list"].append("also changed")
    loaded = await store.load(KEY)
    assert loaded is not None
    assert loaded.get(TASK) == saved_task
    assert saved_task.verifications[0].outcome == "failed"
    assert loaded.metadata["nested"]["list"] == [1, 2.5, "x", None, True]


async def test_new_store_object_reads_what_another_wrote(tmp_path: Path) -> None:
    state = rich_state()
    await JsonFileStateStore(tmp_path).save(state)
    other = JsonFileStateStore(str(tmp_path))  # as if in a fresh process
    loaded = await other.load(KEY)
    assert loaded is not None
    assert loaded.to_dict() == state.to_dict()
    assert await other.list_sessions("agent", "user") == ["session"]


async def test_versions_bump_on_each_save(store: AgentStateStore) -> None:
    state = AgentState.new(KEY)
    assert state.version == 0
    await store.save(state)
    assert state.version == 1
    await store.save(state)
    assert state.version == 2
    loaded = await store.load(KEY)
    assert loaded is not None
    assert loaded.version == 2
    loaded.append(Msg.user("hi"))
    await store.save(loaded)
    assert loaded.version == 3


async def test_stale_writer_conflicts_and_first_writer_wins(store: AgentStateStore) -> None:
    await store.save(AgentState.new(KEY))
    first = await store.load(KEY)
    second = await store.load(KEY)
    assert first is not None and second is not None
    first.append(Msg.user("from first"))
    second.append(Msg.user("from second"))
    await store.save(first)
    with pytest.raises(StateConflictError) as info:
        await store.save(second)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert "'agent'" in message and "'user'" in message and "'session'" in message
    assert "version 1" in message and "version is 2" in message
    assert (info.value.key, info.value.expected, info.value.stored) == (KEY, 1, 2)
    assert str(pickle.loads(pickle.dumps(info.value))) == message  # survives process borders
    assert second.version == 1  # unchanged by the failed save
    stored = await store.load(KEY)
    assert stored is not None
    assert [m.text for m in stored.history] == ["from first"]
    assert stored.version == 2


async def test_saving_a_new_state_over_an_existing_one_conflicts(store: AgentStateStore) -> None:
    original = rich_state()
    await store.save(original)
    with pytest.raises(StateConflictError):
        await store.save(AgentState.new(KEY))
    stored = await store.load(KEY)
    assert stored is not None
    assert stored.to_dict() == original.to_dict()


async def test_saving_a_deleted_state_conflicts(store: AgentStateStore) -> None:
    state = AgentState.new(KEY)
    await store.save(state)
    assert await store.delete(KEY) is True
    with pytest.raises(StateConflictError):
        await store.save(state)
    assert await store.load(KEY) is None


async def test_concurrent_saves_exactly_one_wins(store: AgentStateStore) -> None:
    await store.save(AgentState.new(KEY))
    base = await store.load(KEY)
    assert base is not None
    copies = []
    for i in range(16):
        copy = base.copy()
        copy.metadata["writer"] = i
        copies.append(copy)
    results = await asyncio.gather(*(store.save(c) for c in copies), return_exceptions=True)
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1
    assert all(isinstance(r, StateConflictError) for r in results if r is not None)
    stored = await store.load(KEY)
    assert stored is not None
    assert stored.version == 2
    assert stored.metadata["writer"] == winners[0]


def _child(root: str, writer: int, barrier: Any) -> None:
    """Runs in a spawned process: load, wait until the sibling has loaded too, then save."""

    async def main() -> int:
        store = JsonFileStateStore(root)
        state = await store.load(KEY)
        assert state is not None
        state.metadata["writer"] = writer
        barrier.wait(timeout=30)
        try:
            await store.save(state)
        except StateConflictError:
            return 3
        return 0

    raise SystemExit(asyncio.run(main()))


async def test_cross_process_conflict_exactly_one_wins(tmp_path: Path) -> None:
    store = JsonFileStateStore(tmp_path)
    await store.save(AgentState.new(KEY))
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_child, args=(str(tmp_path), i, barrier)) for i in range(2)]
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            await asyncio.to_thread(proc.join, 60)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    codes = [proc.exitcode for proc in procs]
    assert codes in ([0, 3], [3, 0])  # 0: saved, 3: got StateConflictError
    winner = next(i for i, proc in enumerate(procs) if proc.exitcode == 0)
    stored = await store.load(KEY)
    assert stored is not None
    assert stored.version == 2
    assert stored.metadata["writer"] == winner


def _create_check_delete(root: str, rounds: int, results: Any) -> None:
    """Runs in a spawned process: race to create the state; a winner checks it is the owner."""

    async def main() -> tuple[int, int]:
        store = JsonFileStateStore(root)
        wins = anomalies = 0
        for round_ in range(rounds):
            state = AgentState.new(KEY)
            state.metadata["owner"] = f"{os.getpid()}-{round_}"
            try:
                await store.save(state)
            except StateConflictError:
                continue
            wins += 1
            loaded = await store.load(KEY)
            if loaded is None or loaded.metadata["owner"] != state.metadata["owner"]:
                anomalies += 1  # another process also "created" it: the lock failed
            if not await store.delete(KEY):
                anomalies += 1
        return wins, anomalies

    results.put(asyncio.run(main()))


async def test_cross_process_create_and_delete_stay_serialized(tmp_path: Path) -> None:
    """Delete removes the lock file; writers racing with that must still exclude each other."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    args = (str(tmp_path), 60, results)
    procs = [ctx.Process(target=_create_check_delete, args=args) for _ in range(3)]
    try:
        for proc in procs:
            proc.start()
        outcomes = [await asyncio.to_thread(results.get, True, 60) for _ in procs]
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    assert sum(wins for wins, _ in outcomes) > 0
    assert [anomalies for _, anomalies in outcomes] == [0, 0, 0]


@pytest.mark.parametrize("odd", ["a/b", "..", ".", "ü s", "%2E", ".hidden", "x.json.lock", "\\"])
async def test_odd_ids_stay_inside_root_and_list_back(tmp_path: Path, odd: str) -> None:
    root = tmp_path / "root"
    store = JsonFileStateStore(root)
    key = SessionRef(odd, odd, odd)
    state = AgentState.new(key)
    state.append(Msg.user(f"id {odd}"))
    await store.save(state)
    path = store.path_for(key)
    assert path.is_file()
    assert path.resolve().is_relative_to(root.resolve())
    assert len(path.relative_to(root).parts) == 3
    for _, dirs, files in os.walk(root):
        assert all(not name.startswith(".") for name in dirs)
        assert all(not name.startswith(".") for name in files)
    assert await store.list_sessions(odd, odd) == [odd]
    loaded = await JsonFileStateStore(root).load(key)
    assert loaded is not None
    assert loaded.key == key
    assert loaded.history[0].text == f"id {odd}"


async def test_odd_session_ids_of_one_user_list_back_exactly(store: AgentStateStore) -> None:
    sessions = ["a/b", "..", "ü s", "plain", "a%2Fb", "A"]
    for session in sessions:
        await store.save(AgentState.new(SessionRef("agent", "user", session)))
    assert await store.list_sessions("agent", "user") == sorted(sessions)


async def test_list_sessions_only_lists_that_users_sessions(store: AgentStateStore) -> None:
    for agent, user, session in [
        ("agent", "alice", "s2"),
        ("agent", "alice", "s1"),
        ("agent", "bob", "s3"),
        ("other", "alice", "s4"),
    ]:
        await store.save(AgentState.new(SessionRef(agent, user, session)))
    assert await store.list_sessions("agent", "alice") == ["s1", "s2"]
    assert await store.list_sessions("agent", "bob") == ["s3"]
    assert await store.list_sessions("other", "alice") == ["s4"]
    assert await store.list_sessions("other", "bob") == []


async def test_delete(store: AgentStateStore) -> None:
    other = SessionRef("agent", "user", "other")
    await store.save(rich_state())
    await store.save(AgentState.new(other))
    assert await store.delete(KEY) is True
    assert await store.load(KEY) is None
    assert await store.delete(KEY) is False
    assert await store.list_sessions("agent", "user") == ["other"]
    assert await store.load(other) is not None
    again = rich_state()
    await store.save(again)  # a deleted state can be created anew from version 0
    assert again.version == 1


async def test_json_store_leaves_no_temp_or_lock_files_behind(tmp_path: Path) -> None:
    store = JsonFileStateStore(tmp_path)
    state = rich_state()
    for _ in range(3):
        await store.save(state)
    directory = store.path_for(KEY).parent
    assert sorted(os.listdir(directory)) == ["session.json", "session.json.lock"]
    await store.delete(KEY)
    assert os.listdir(directory) == []


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[1, 2]", b'{"agent_id": "agent"}', b"\xff\xfe", b'{"version": "two"}'],
)
async def test_corrupted_file_gives_a_clear_error(tmp_path: Path, content: bytes) -> None:
    store = JsonFileStateStore(tmp_path)
    await store.save(AgentState.new(KEY))
    path = store.path_for(KEY)
    path.write_bytes(content)
    with pytest.raises(StateCorruptedError, match="agent state file") as info:
        await store.load(KEY)
    assert str(path) in str(info.value)
    with pytest.raises(StateCorruptedError) as info:
        await store.save(AgentState.new(KEY))
    assert str(path) in str(info.value)
    assert path.read_bytes() == content  # never overwritten


async def test_file_holding_another_key_is_rejected(tmp_path: Path) -> None:
    store = JsonFileStateStore(tmp_path)
    other = SessionRef("agent", "user", "other")
    await store.save(AgentState.new(KEY))
    store.path_for(other).write_bytes(store.path_for(KEY).read_bytes())
    with pytest.raises(StateCorruptedError, match="expected"):
        await store.load(other)


async def test_foreign_files_are_not_listed(tmp_path: Path) -> None:
    store = JsonFileStateStore(tmp_path)
    await store.save(AgentState.new(KEY))
    directory = store.path_for(KEY).parent
    for name in ["notes.txt", "%FF.json", "a%2f.json", ".hidden.json"]:
        (directory / name).write_text("{}")
    assert await store.list_sessions("agent", "user") == ["session"]


async def test_too_long_ids_are_refused_clearly(tmp_path: Path) -> None:
    store = JsonFileStateStore(tmp_path)
    with pytest.raises(ValueError, match="too long"):
        await store.save(AgentState.new(SessionRef("agent", "user", "ü" * 120)))


@pytest.mark.parametrize("todos", [3, 2_000], ids=["small file", "large file"])
async def test_json_store_loads_small_and_large_files_alike(tmp_path: Path, todos: int) -> None:
    """Small state files are read where they are asked for, large ones in a worker thread:
    the result is the same, and a directory where the file should be is a clear error."""
    store = JsonFileStateStore(tmp_path)
    state = AgentState.new(KEY)
    state.put(TODOS, tuple(TodoItem(f"step {i}: " + "x" * 40, "pending") for i in range(todos)))
    await store.save(state)
    large = store.path_for(KEY).stat().st_size > 64 << 10
    assert large is (todos > 100)
    loaded = await store.load(KEY)
    assert loaded is not None and loaded.get(TODOS) == state.get(TODOS) and loaded.version == 1


async def test_json_store_load_of_a_directory_is_an_error_not_none(tmp_path: Path) -> None:
    store = JsonFileStateStore(tmp_path)
    store.path_for(KEY).mkdir(parents=True)
    with pytest.raises(OSError):
        await store.load(KEY)
