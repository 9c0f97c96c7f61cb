"""`harnessed run` against a local OpenAI-compatible server speaking the real wire format."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from harnessed.cli import main
from tests.support.http_server import LocalServer, Reply


def chunk(delta: dict[str, object], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def usage_chunk(prompt: int, completion: int) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    return f"data: {json.dumps(body)}\n\n"


def test_run_streams_a_reply_and_keeps_the_session(
    http_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    http_server.queue(
        Reply(
            sse=[
                chunk({"role": "assistant", "content": "Hello "}),
                chunk({"content": "from the server."}),
                chunk({}, finish="stop"),
                usage_chunk(21, 4),
                "data: [DONE]\n\n",
            ]
        ),
        Reply(sse=[chunk({"content": "Again."}, finish="stop"), "data: [DONE]\n\n"]),
    )
    args = ["--model", "openai:gpt-test", "--workspace", str(tmp_path), "--session", "s1"]
    assert main(["run", "say hello", *args]) == 0
    out = capsys.readouterr().out
    assert "Hello from the server." in out
    assert "21 in / 4 out tokens" in out
    assert main(["run", "once more", *args]) == 0
    second = http_server.requests[1].json()["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "Hello from the server."
    assert {k.lower(): v for k, v in http_server.requests[0].headers.items()}[
        "authorization"
    ] == "Bearer sk-local"


def test_run_reports_a_provider_error(
    http_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    http_server.queue(
        Reply(
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        )
    )
    code = main(["run", "hi", "--model", "openai:gpt-test", "--workspace", str(tmp_path)])
    assert code == 1
    assert "ContextOverflowError" in capsys.readouterr().out


def tool_call_reply(command: str) -> Reply:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "execute", "arguments": json.dumps({"command": command})},
    }
    return Reply(
        sse=[
            chunk({"role": "assistant", "tool_calls": [call]}),
            chunk({}, finish="tool_calls"),
            "data: [DONE]\n\n",
        ]
    )


@pytest.mark.parametrize("approve", [True, False])
def test_run_asks_before_a_tool_runs_with_a_permission_mode(
    approve: bool,
    http_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    approvals = importlib.import_module("harnessed.cli.approvals")
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    questions: list[str] = []

    def answer(question: str) -> str:
        questions.append(question)
        return "y" if approve else ("n" if question.startswith("Allow") else "")

    monkeypatch.setattr(approvals, "ask_line", answer)
    http_server.queue(
        tool_call_reply("echo APPROVED-RAN > out.txt"),
        Reply(sse=[chunk({"content": "Finished."}, finish="stop"), "data: [DONE]\n\n"]),
    )
    args = ["--model", "openai:gpt-test", "--workspace", str(tmp_path)]
    assert main(["run", "write a file", *args, "--permission-mode", "default"]) == 0
    out = capsys.readouterr().out
    assert "approval needed" in out and "execute" in out
    assert questions and questions[0].startswith("Allow execute")
    assert (tmp_path / "out.txt").exists() is approve
    result = http_server.requests[1].json()["messages"][-1]
    assert result["role"] == "tool"
    assert ("declined" in result["content"].lower()) is not approve


def test_tokens_are_estimated_and_marked_when_the_server_reports_none(
    http_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    http_server.queue(  # like llama-cpp-python: no usage in the stream
        Reply(sse=[chunk({"content": "No usage here."}, finish="stop"), "data: [DONE]\n\n"])
    )
    args = ["--model", "openai:gpt-test", "--workspace", str(tmp_path)]
    assert main(["run", "say something", *args]) == 0
    out = capsys.readouterr().out
    assert "0 in / 0 out" not in out
    match = re.search(r"~([\d,]+) in / ~([\d,]+) out tokens \(estimated", out.replace("\n", " "))
    assert match is not None, out
    assert int(match.group(1).replace(",", "")) > 0 and int(match.group(2)) > 0
