"""`harnessed inspect`: the per-request budget breakdown of a recorded session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harnessed import ContextPolicy, HarnessAgent, RuntimeContext
from harnessed.cli import main
from harnessed.models import ScriptedModel


async def run_session(workspace: Path) -> None:
    (workspace / "MEMORY.md").write_text("- the user prefers short answers\n" * 200)
    agent = HarnessAgent(
        "inspected",
        ScriptedModel(["first", "second"], context_window=10_000),
        sys_prompt="You answer briefly.",
        workspace=workspace,
        context_policy=ContextPolicy(max_input_tokens=1_500),
        memory_tools=False,  # the budget leaves room for the file tools only
        subagents=False,
        web=False,
    )
    ctx = RuntimeContext("u1", "s1")
    await agent.call("hello", ctx)
    await agent.call("again", ctx)


def test_inspect_shows_each_request_with_its_breakdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(run_session(tmp_path))
    monkeypatch.setenv("COLUMNS", "140")
    args = ["inspect", "--workspace", str(tmp_path), "--agent", "inspected", "--user", "u1"]
    code = main([*args, "--session", "s1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "last 2 request(s)" in out
    assert "/1,500" in out  # used / limit against the capped limit
    assert "omitted_for_budget:workspace/MEMORY.md" in out
    for column in ("system", "state", "refs", "history", "tools", "budget"):
        assert column in out


def test_inspect_json_gives_the_manifests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(run_session(tmp_path))
    args = ["inspect", "--workspace", str(tmp_path), "--agent", "inspected", "--user", "u1"]
    assert main([*args, "--session", "s1", "--json", "--last", "1"]) == 0
    manifests = json.loads(capsys.readouterr().out)
    assert len(manifests) == 1
    manifest = manifests[0]
    assert manifest["validation"] == "passed" and manifest["input_limit"] == 1_500
    assert set(manifest["breakdown"]) == {"system", "state", "references", "history", "tools"}
    assert sum(manifest["breakdown"].values()) == pytest.approx(
        manifest["estimated_input_tokens"], abs=5
    )


def test_inspect_an_unknown_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--workspace", str(tmp_path), "--session", "nope"]) == 1
    assert "no requests recorded" in capsys.readouterr().out
    assert main(["inspect", "--workspace", str(tmp_path / "missing")]) == 2


def test_inspect_show_gives_each_tools_schema_cost_and_the_total(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harnessed.cli.recording import last_request_path, request_to_dict
    from harnessed.workspace import Workspace

    model = ScriptedModel(["ok"])

    async def one_call() -> None:
        agent = HarnessAgent("shown", model, workspace=tmp_path, memory=False, shell=False)
        await agent.call("hello", RuntimeContext("u1", "s1"))
        await agent.close()

    asyncio.run(one_call())
    kept = tmp_path / last_request_path(Workspace(tmp_path), "shown", "u1", "s1")
    kept.write_text(json.dumps(request_to_dict("scripted", model.requests[0])))
    args = ["inspect", "--workspace", str(tmp_path), "--agent", "shown", "--user", "u1"]
    assert main([*args, "--session", "s1", "--show"]) == 0
    out = capsys.readouterr().out
    assert "tokens of schemas" in out
    assert "read_file (~" in out and "agent_spawn (~" in out
