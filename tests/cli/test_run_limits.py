"""`harnessed run` with usage limits and the cost in its footer, against a local
OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessed.cli import main
from tests.support.http_server import LocalServer, Reply


def chunk(delta: dict[str, object], finish: str | None = None, model: str = "gpt-4.1-mini") -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def usage(prompt: int, completion: int, cached: int = 0) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1-mini",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }
    return f"data: {json.dumps(body)}\n\n"


def list_files_call() -> Reply:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "list_files", "arguments": "{}"},
    }
    return Reply(
        sse=[
            chunk({"role": "assistant", "tool_calls": [call]}),
            chunk({}, finish="tool_calls"),
            usage(1_200, 20, cached=1_024),
            "data: [DONE]\n\n",
        ]
    )


def test_run_stops_at_max_requests_and_shows_what_it_cost(
    http_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    http_server.queue(list_files_call(), list_files_call())
    args = ["--model", "openai:gpt-4.1-mini", "--workspace", str(tmp_path), "--session", "s1"]
    assert main(["run", "look around", *args, "--max-requests", "1"]) == 6
    out = capsys.readouterr().out
    assert len(http_server.requests) == 1
    assert "requests reached" in out
    footer = next(line for line in out.splitlines() if "model request(s)" in line)
    assert "limit" in footer and "1,200 in, 1,024 cached / 20 out tokens" in footer
    assert "$0.0" in footer  # gpt-4.1-mini has a known price
    # inspect shows the session's spending and each request's cached prefix
    assert main(["inspect", "--workspace", str(tmp_path), "--session", "s1"]) == 0
    shown = capsys.readouterr().out
    assert "spent: 1 model request(s), 1,200 in (1,024 cached) / 20 out tokens, $0.0" in shown
    assert "cached" in shown
    assert "provider's cache: read 1,024, wrote 0" in shown  # as the provider reported it


@pytest.mark.parametrize("flag", ["--max-requests", "--max-cost", "--session-max-cost"])
def test_a_limit_flag_must_be_positive(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    code = main(["run", "hi", "--workspace", str(tmp_path), flag, "0"])
    assert code == 2
    assert flag.split()[0] in capsys.readouterr().out
