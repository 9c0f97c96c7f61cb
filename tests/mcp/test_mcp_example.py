"""The docs' MCP example works as written: its code block is run as is, in a git repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.readme import README, marked_example

MARKER = "<!-- example: tests/mcp/test_mcp_example.py -->"


def example_code() -> str:
    return marked_example(MARKER)


def test_the_mcp_example_runs_as_written(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(git_repo)  # the git server serves the current directory
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(example_code(), str(README), "exec"), namespace)
    printed = json.loads(capsys.readouterr().out)
    assert printed["timezone"] == "Asia/Tokyo" and "datetime" in printed
    tools = {t.name for t in namespace["model"].requests[0].tools}
    assert {"get_current_time", "git_status", "git_log"} <= tools
