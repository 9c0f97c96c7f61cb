"""`harnessed mcp list` against real servers."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from harnessed.cli import main
from tests.cli.test_run import chunk
from tests.mcp.conftest import notes_url  # noqa: F401 (fixture)
from tests.support.http_server import LocalServer, Reply


def test_lists_the_tools_of_a_stdio_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    command = shlex.join([sys.executable, "-m", "mcp_server_time"])
    assert main(["mcp", "list", "--server", command]) == 0
    out = capsys.readouterr().out
    assert "mcp_server_time" in out and "2 tools" in out
    assert "get_current_time" in out and "convert_time" in out
    assert "read-only" in out and "timezone" in out
    assert "no resources" in out


def test_lists_tools_resources_and_templates_of_an_http_server(
    notes_url: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["mcp", "list", "--server", notes_url]) == 0
    out = capsys.readouterr().out
    assert "delete_all_notes" in out and "destructive" in out
    assert "notes://readme" in out and "notes://{user_id}/today" in out and "(template)" in out


def test_a_server_that_cannot_start_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    command = shlex.join([sys.executable, "-c", "import sys; sys.exit('no such server here')"])
    assert main(["mcp", "list", "--server", command, "--timeout", "10"]) == 1
    out = capsys.readouterr().out
    assert "could not be started" in out and "no such server here" in out
    assert main(["mcp", "list", "--server", "/nonexistent/mcp-server-x"]) == 1
    assert "could not be started" in capsys.readouterr().out


def test_run_gives_the_agent_an_mcp_server(
    http_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`harnessed run --mcp ...` against an OpenAI-compatible server: the model sees the
    server's tools, calls one, and gets its result."""
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_current_time", "arguments": '{"timezone": "Europe/Rome"}'},
    }
    http_server.queue(
        Reply(
            sse=[
                chunk({"role": "assistant", "tool_calls": [call]}),
                chunk({}, finish="tool_calls"),
                "data: [DONE]\n\n",
            ]
        ),
        Reply(sse=[chunk({"content": "It is late."}, finish="stop"), "data: [DONE]\n\n"]),
    )
    server = shlex.join([sys.executable, "-m", "mcp_server_time"])
    args = ["--model", "openai:gpt-test", "--workspace", str(tmp_path), "--mcp", server]
    assert main(["run", "what time is it in Rome?", *args]) == 0
    assert "It is late." in capsys.readouterr().out
    first = http_server.requests[0].json()
    assert "get_current_time" in {t["function"]["name"] for t in first["tools"]}
    result = http_server.requests[1].json()["messages"][-1]
    assert result["role"] == "tool" and "Europe/Rome" in result["content"]
