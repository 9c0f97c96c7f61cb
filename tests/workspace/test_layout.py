"""Workspace: choosing the backend, the fixed layout, and runtime data by isolation scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed.workspace import (
    FsspecFilesystem,
    LocalFilesystem,
    MemoryFilesystem,
    Workspace,
)

IDS = {"agent_id": "fixer", "user_id": "alice", "session_id": "s1"}


def test_root_kinds(tmp_path: Path) -> None:
    local = Workspace(tmp_path / "ws")
    assert isinstance(local.fs, LocalFilesystem)
    assert local.local_root == (tmp_path / "ws").resolve() and local.local_root.is_dir()
    assert Workspace(str(tmp_path / "ws")).local_root == local.local_root
    from_url = Workspace(f"file://{tmp_path}/ws2")
    assert isinstance(from_url.fs, LocalFilesystem) and (tmp_path / "ws2").is_dir()
    memory = MemoryFilesystem()
    assert Workspace(memory).fs is memory and Workspace(memory).local_root is None
    remote = Workspace("memory://layout-test")
    assert isinstance(remote.fs, FsspecFilesystem) and remote.local_root is None
    assert local.scope == "user"


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="scope"):
        Workspace(tmp_path, scope="team")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="storage_options"):
        Workspace(tmp_path, storage_options={"key": "x"})
    with pytest.raises(TypeError, match="root"):
        Workspace(42)  # type: ignore[arg-type]


def test_fixed_layout() -> None:
    ws = Workspace(MemoryFilesystem())
    assert (ws.AGENTS_MD, ws.MEMORY_MD, ws.MEMORY_DIR) == ("AGENTS.md", "MEMORY.md", "memory")
    assert (ws.KNOWLEDGE_DIR, ws.PLANS_DIR, ws.PLAN_FILE) == ("knowledge", "plans", "plans/PLAN.md")
    assert ws.skill_file("pdf-tools") == "skills/pdf-tools/SKILL.md"
    assert ws.subagent_file("reviewer") == "subagents/reviewer.md"
    assert ws.sessions_dir("fixer", "alice") == "agents/fixer/sessions/alice"
    assert ws.session_log_path("fixer", "alice", "s1") == (
        "agents/fixer/sessions/alice/s1.log.jsonl"
    )


def test_ids_cannot_escape_their_directory() -> None:
    ws = Workspace(MemoryFilesystem())
    assert ws.sessions_dir("fixer", "../../etc") == "agents/fixer/sessions/%2E%2E%2F..%2Fetc"
    assert ws.sessions_dir("fixer", "..") == "agents/fixer/sessions/%2E%2E"
    assert ws.skill_file("a/b") == "skills/a%2Fb/SKILL.md"
    with pytest.raises(ValueError, match="user_id"):
        ws.sessions_dir("fixer", "")


EXPECTED = {
    "global": {
        "memory": "memory",
        "memory_file": "MEMORY.md",
        "sessions": "sessions",
        "large_tool_results": "large_tool_results",
    },
    "agent": {
        "memory": "agents/fixer/memory",
        "memory_file": "agents/fixer/MEMORY.md",
        "sessions": "agents/fixer/sessions",
        "large_tool_results": "large_tool_results/fixer",
    },
    "user": {
        "memory": "agents/fixer/users/alice/memory",
        "memory_file": "agents/fixer/users/alice/MEMORY.md",
        "sessions": "agents/fixer/sessions/alice",
        "large_tool_results": "large_tool_results/fixer/alice",
    },
    "session": {
        "memory": "agents/fixer/users/alice/sessions/s1/memory",
        "memory_file": "agents/fixer/users/alice/sessions/s1/MEMORY.md",
        "sessions": "agents/fixer/sessions/alice/s1",
        "large_tool_results": "large_tool_results/fixer/alice/s1",
    },
}


@pytest.mark.parametrize("scope", list(EXPECTED))
def test_runtime_locations_per_scope(scope: str) -> None:
    ws = Workspace(MemoryFilesystem(), scope=scope)  # type: ignore[arg-type]
    expected = EXPECTED[scope]
    for kind in ("memory", "sessions", "large_tool_results"):
        assert ws.runtime_dir(kind, **IDS) == expected[kind], kind
    assert ws.memory_file(**IDS) == expected["memory_file"]
    assert ws.large_tool_results_dir(**IDS) == expected["large_tool_results"]


def _dirs(ws: Workspace, **ids: str) -> set[str]:
    return {ws.runtime_dir(k, **ids) for k in ("memory", "sessions", "large_tool_results")}


def test_user_scope_separates_users_but_not_sessions() -> None:
    ws = Workspace(MemoryFilesystem())
    alice = _dirs(ws, agent_id="a", user_id="alice", session_id="s1")
    bob = _dirs(ws, agent_id="a", user_id="bob", session_id="s1")
    for mine in alice:
        assert not any(theirs == mine or theirs.startswith(mine + "/") for theirs in bob)
        assert not any(mine.startswith(theirs + "/") for theirs in bob)
    assert alice == _dirs(ws, agent_id="a", user_id="alice", session_id="s2")


def test_session_agent_and_global_scopes() -> None:
    session = Workspace(MemoryFilesystem(), scope="session")
    assert _dirs(session, agent_id="a", user_id="u", session_id="s1").isdisjoint(
        _dirs(session, agent_id="a", user_id="u", session_id="s2")
    )
    agent = Workspace(MemoryFilesystem(), scope="agent")
    assert _dirs(agent, agent_id="a", user_id="u1") == _dirs(agent, agent_id="a", user_id="u2")
    assert _dirs(agent, agent_id="a").isdisjoint(_dirs(agent, agent_id="b"))
    shared = Workspace(MemoryFilesystem(), scope="global")
    assert _dirs(shared) == _dirs(shared, agent_id="a", user_id="u", session_id="s")


def test_missing_ids_are_named() -> None:
    with pytest.raises(ValueError, match="user_id is required for isolation scope 'user'"):
        Workspace(MemoryFilesystem()).runtime_dir("memory", agent_id="a")
    with pytest.raises(ValueError, match="session_id"):
        Workspace(MemoryFilesystem(), scope="session").memory_file(agent_id="a", user_id="u")
    with pytest.raises(ValueError, match="runtime kind"):
        Workspace(MemoryFilesystem()).runtime_dir("cache", agent_id="a", user_id="u")  # type: ignore[arg-type]
