"""`harnessed run` in a project: its sessions and state go to the user's data directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessed.cli import main
from harnessed.cli.paths import project_data_dir
from tests.support.http_server import LocalServer, Reply


def _reply(text: str) -> Reply:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}],
    }
    return Reply(sse=[f"data: {json.dumps(body)}\n\n", "data: [DONE]\n\n"])


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_server: LocalServer) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    monkeypatch.chdir(root)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    return root


def test_run_writes_nothing_into_the_project_and_resumes_from_the_data_dir(
    project: Path, http_server: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    http_server.queue(_reply("First answer."), _reply("Second answer."))
    args = ["--model", "openai:gpt-test", "--session", "s1", "--yes"]
    assert main(["run", "say hello", *args]) == 0
    assert _files(project) == ["main.py"]
    assert main(["run", "once more", *args]) == 0
    assert _files(project) == ["main.py"]
    second = http_server.requests[1].json()["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "First answer."
    logs = project_data_dir(project) / "agents" / "harnessed" / "sessions"
    assert [p.name for p in logs.rglob("s1.log.jsonl")] == ["s1.log.jsonl"]
    capsys.readouterr()
    assert main(["sessions"]) == 0  # the listing finds them where run put them
    assert "s1" in capsys.readouterr().out
    assert _files(project) == ["main.py"]


def test_workspace_or_data_dir_say_where_the_sessions_go(
    project: Path, http_server: LocalServer, tmp_path: Path
) -> None:
    http_server.queue(_reply("In the workspace."), _reply("In the data dir."))
    args = ["--model", "openai:gpt-test", "--session", "s1", "--yes"]
    assert main(["run", "hi", "--workspace", ".", *args]) == 0  # a workspace holds its own
    assert (project / "agents" / "harnessed").is_dir()
    elsewhere = tmp_path / "elsewhere"
    assert main(["run", "hi", "--workspace", ".", "--data-dir", str(elsewhere), *args]) == 0
    assert (elsewhere / "agents" / "harnessed").is_dir()
    assert not project_data_dir(project).exists()


def test_harnessed_toml_data_dir_keeps_the_sessions_in_the_project(
    project: Path, http_server: LocalServer
) -> None:
    (project / "harnessed.toml").write_text('data_dir = ".harnessed-data"\n')
    http_server.queue(_reply("Kept here."))
    assert main(["run", "hi", "--model", "openai:gpt-test", "--yes"]) == 0
    assert (project / ".harnessed-data" / "agents" / "harnessed").is_dir()
    assert not (project / "agents").exists()
    assert not project_data_dir(project).exists()


def test_a_project_with_sessions_of_its_own_keeps_them(
    project: Path, http_server: LocalServer
) -> None:
    """Sessions an earlier version (or ``--workspace .``) kept in the project are continued."""
    http_server.queue(_reply("Kept inside."), _reply("Still inside."))
    args = ["--model", "openai:gpt-test", "--session", "s1", "--yes"]
    assert main(["run", "hi", "--workspace", ".", *args]) == 0
    assert main(["run", "again", *args]) == 0
    second = http_server.requests[1].json()["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert not project_data_dir(project).exists()
