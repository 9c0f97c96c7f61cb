"""`harnessed run` and `harnessed demo --subagents` show sub-agent work indented under the
parent's."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessed.cli import main
from tests.cli.test_run import chunk
from tests.support.http_server import LocalServer, Reply


def call_reply(name: str, arguments: dict[str, object]) -> Reply:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return Reply(
        sse=[
            chunk({"role": "assistant", "tool_calls": [call]}),
            chunk({}, finish="tool_calls"),
            "data: [DONE]\n\n",
        ]
    )


def text_reply(text: str) -> Reply:
    return Reply(sse=[chunk({"content": text}, finish="stop"), "data: [DONE]\n\n"])


@pytest.fixture
def server(http_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> LocalServer:
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    return http_server


def declare(workspace: Path, name: str, front_matter: str, prompt: str) -> None:
    (workspace / "subagents").mkdir(exist_ok=True)
    (workspace / "subagents" / f"{name}.md").write_text(f"---\n{front_matter}\n---\n{prompt}")


def test_run_shows_the_sub_agent_indented(
    server: LocalServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    http_server = server
    declare(
        tmp_path, "counter", "description: Counts files.\ntools: [list_files]", "You count files."
    )
    http_server.queue(
        call_reply("agent_spawn", {"agent_id": "counter", "task": "Count the files."}),
        text_reply("There are 3 files."),
        text_reply("The helper found 3 files."),
    )
    code = main(
        ["run", "how many files?", "--model", "openai:gpt-test", "--workspace", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "  │ ▸ sub-agent counter:1" in out
    assert "  │ counter:1 There are 3 files." in out
    assert "The helper found 3 files." in out
    child_request = http_server.requests[1].json()
    assert "You count files." in child_request["messages"][0]["content"]
    assert [t["function"]["name"] for t in child_request["tools"]][:1] == ["list_files"]


def test_a_sub_agents_request_nobody_can_answer_is_declined_and_the_run_goes_on(
    server: LocalServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # input has ended: nobody can answer
    http_server = server
    declare(
        tmp_path, "writer", "description: Writes notes.\ntools: [write_file]", "You write notes."
    )
    http_server.queue(
        call_reply("agent_spawn", {"agent_id": "writer", "task": "Write notes.md."}),
        call_reply("write_file", {"path": "notes.md", "content": "hi"}),
        text_reply("I was not allowed to write."),
        text_reply("The writer could not write; I will ask you instead."),
    )
    code = main(["run", "take notes", "--model", "openai:gpt-test", "--workspace", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out  # the parent's run completed
    assert "write_file" in out
    assert not (tmp_path / "notes.md").exists()
    child_followup = http_server.requests[2].json()["messages"]
    declined = next(m for m in child_followup if m["role"] == "tool")
    assert "Nobody could answer in the terminal" in declined["content"]
    parent_followup = http_server.requests[3].json()["messages"]
    result = next(m for m in parent_followup if m["role"] == "tool")
    assert "I was not allowed to write." in result["content"]


def test_demo_with_a_reviewer_sub_agent(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harnessed.cli.main",
            "demo",
            "--subagents",
            "--workspace",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "▸ sub-agent reviewer:1" in out
    assert "reviewer:1 ✓ execute all 2 checks passed" in out
    assert "the reviewer says: APPROVED" in " ".join(out.split())  # Markdown wraps lines
    assert (tmp_path / "subagents" / "reviewer.md").exists()
