"""The docs' "Writing a capability" example works as written: its code block is run as is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.readme import README, marked_example

MARKER = "<!-- example: tests/capabilities/test_capability_example.py -->"


def example_code() -> str:
    return marked_example(MARKER)


def test_the_audit_log_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(example_code(), str(README), "exec"), namespace)

    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "Order A7 has shipped."
    entries = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["user"] == "u1" and entry["session"] == "s1" and entry["run"].startswith("run_")
    assert entry["tool"] == "order_status" and entry["input"] == {"order_id": "A7"}
    assert entry["error"] is False
    assert printed[-1] == "{'calls': 1}"

    # the capability's instruction reached the model; its count is in the saved state
    model, agent = namespace["model"], namespace["agent"]
    system = model.requests[0].messages[0].text
    assert "Every tool call you make is recorded in an audit log." in system
    assert namespace["state"].sections == {"audit_log": {"calls": 1}}
    # and its custom event went to the session log with the step
    import asyncio

    records = asyncio.run(agent.session_log(namespace["ctx"], types=["custom"]))
    assert [r.payload["name"] for r in records] == ["audited"]
    assert records[0].payload["data"] == {"tool": "order_status", "calls": 1}
