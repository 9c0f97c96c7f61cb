"""A context window learned from a server's error is remembered for later processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessed.cli import main
from harnessed.cli.run import cli_model
from harnessed.cli.windows_cache import CACHE_FILE
from tests.cli.test_run import chunk
from tests.support.http_server import LocalServer, Reply


def test_a_learned_window_is_kept_per_server(
    http_server: LocalServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    url = http_server.url + "/v1"
    fresh = cli_model("openai:local-model", {"base_url": url})
    assert fresh.context_window_source in ("published", "unknown")  # nothing known yet
    said = {"error": {"message": "maximum context length is 4096 tokens", "type": "x"}}
    http_server.queue(
        Reply(400, said),  # like llama-cpp-python: the window is only told by an error
        Reply(sse=[chunk({"content": "Fitted."}, "stop"), "data: [DONE]\n\n"]),
    )
    args = ["--model", "openai:local-model", "--base-url", url, "--workspace", str(tmp_path)]
    main(["run", "hello", *args])
    cache = tmp_path / "cache" / "harnessed" / CACHE_FILE
    assert json.loads(cache.read_text()) == {f"{url}|local-model": 4096}

    later = cli_model("openai:local-model", {"base_url": url})  # as a new process makes it
    assert later.context_window == 4096
    other = cli_model("openai:local-model", {"base_url": "http://127.0.0.1:9/v1"})
    assert other.context_window != 4096  # another server learns its own


def test_a_garbled_cache_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    (tmp_path / "harnessed").mkdir()
    for text in ("not json", "[1, 2]", '{"http://x/v1|m": "big", "http://y/v1|m": -5}'):
        (tmp_path / "harnessed" / CACHE_FILE).write_text(text)
        model = cli_model("openai:m", {"base_url": "http://x/v1"})
        assert model.context_window_source in ("published", "unknown")
