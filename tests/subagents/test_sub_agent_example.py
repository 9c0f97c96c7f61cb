"""The docs' sub-agent example works as written: its code block is run as is."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.readme import README, marked_example

MARKER = "<!-- example: tests/subagents/test_sub_agent_example.py -->"


def example_code() -> str:
    return marked_example(MARKER)


def test_the_sub_agent_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(example_code(), str(README), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert "reviewer:1: APPROVED: the loop now reaches the end." in printed
    assert "lead: The fix is approved; the changelog review runs in the background." in printed
    assert "Both reviews approved the change." in printed
    assert printed[-2:] == ["reviewer:1 COMPLETED True", "reviewer:2 COMPLETED True"]
    # the background outcome reached the model as one reminder
    model = namespace["model"]
    reminders = [
        m
        for r in model.requests
        for m in r.messages
        if m.metadata.get("harness") == "subagent_tasks"
    ]
    assert reminders and "reviewer:2" in reminders[-1].text
