"""``Workspace(root, data_dir=...)``: the runtime folders live in another directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed.agent import HarnessAgent
from harnessed.models.scripted import ScriptedModel
from harnessed.runtime import RuntimeContext
from harnessed.workspace import Workspace


async def test_runtime_paths_go_to_the_data_dir_and_project_paths_stay(tmp_path: Path) -> None:
    project, data = tmp_path / "project", tmp_path / "data"
    ws = Workspace(project, data_dir=data)
    assert not data.exists()  # made with the first write
    await ws.fs.write_text("agents/a/sessions/u/s.log.jsonl", "{}\n")
    await ws.fs.write_text(".harnessed/state/x.json", "{}")
    await ws.fs.write_text("large_tool_results/a/u/r.txt", "big")
    await ws.fs.write_text("notes.md", "mine")
    assert sorted(p.name for p in project.iterdir()) == ["notes.md"]
    assert (data / "agents/a/sessions/u/s.log.jsonl").read_text() == "{}\n"
    assert await ws.fs.read_text("large_tool_results/a/u/r.txt") == "big"
    assert [i.path for i in await ws.fs.ls("")] == ["notes.md"]
    assert await ws.fs.list_tree("") == ["notes.md"]
    absolute = str(data / "agents/a/sessions/u/s.log.jsonl")
    assert ws.fs.normalize(absolute) == "agents/a/sessions/u/s.log.jsonl"
    assert ws.data_root == data.resolve() and ws.local_root == project.resolve()


def test_data_dir_needs_a_local_root(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="data_dir needs a workspace root"):
        Workspace("memory://w", data_dir=tmp_path)


def test_the_workspace_itself_as_data_dir_is_the_classic_layout(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, data_dir=tmp_path)
    assert ws.data_root == ws.local_root == tmp_path.resolve()


async def test_an_agent_keeps_its_session_and_state_in_the_data_dir(tmp_path: Path) -> None:
    project, data = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    (project / "README.md").write_text("hello\n")
    agent = HarnessAgent("a", ScriptedModel(["Done."]), workspace=Workspace(project, data_dir=data))
    ctx = RuntimeContext("u", "s")
    try:
        await agent.call("hi", ctx)
        assert [m.role for m in await agent.session_messages(ctx)] == ["user", "assistant"]
    finally:
        await agent.close()
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]
    assert list(data.rglob("s.log.jsonl"))


async def test_the_model_reaches_nothing_in_the_data_dir(tmp_path: Path) -> None:
    # another user's session log there, asked for by absolute path, workspace path and '..'
    from harnessed.models import ScriptedResponse, ScriptedToolCall

    project, data = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    (project / "README.md").write_text("hello\n")
    other = HarnessAgent("a", ScriptedModel(["ok"]), workspace=Workspace(project, data_dir=data))
    await other.call("eve's secret", RuntimeContext("eve", "x"))
    await other.close()
    [victim] = data.rglob("x.log.jsonl")
    calls = [
        ("read_file", {"path": str(victim)}),
        ("read_file", {"path": str(victim.relative_to(data))}),
        ("read_file", {"path": "../data/" + str(victim.relative_to(data))}),
        ("write_file", {"path": str(victim.relative_to(data)), "content": "x"}),
        ("write_file", {"path": str(data / ".harnessed" / "planted"), "content": "x"}),
        ("glob_files", {"pattern": "**/*.jsonl"}),
    ]
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[ScriptedToolCall(name, args, id=f"c{i}")])
            for i, (name, args) in enumerate(calls)
        ]
        + ["done"]
    )
    agent = HarnessAgent(
        "a", model, workspace=Workspace(project, data_dir=data), permission_mode="bypass"
    )
    try:
        await agent.call("go", RuntimeContext("u", "s"))
    finally:
        await agent.close()
    answers = [request.messages[-1].text for request in model.requests[1:]]
    assert all("secret" not in a for a in answers)
    assert all(a.startswith("Error:") for a in answers[:5]), answers
    assert answers[5].startswith("No files match")
    assert "eve's secret" in victim.read_text()
    assert not (data / ".harnessed" / "planted").exists()
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]
