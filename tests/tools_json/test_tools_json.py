"""The workspace as configuration: ``tools.json`` (allow / deny after every capability, MCP
servers, ``${ENV}``) and per-user ``AGENTS.md``, from a workspace alone."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext, ToolResultEvent
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.models.base import ModelRequest
from harnessed.tools_json import parse_tools_json
from tests.mcp.conftest import NOTES_SERVER

ALICE = RuntimeContext("alice", "s1")
BOB = RuntimeContext("bob", "s1")


def call(name: str, /, **arguments: object) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, arguments)])


def names(request: ModelRequest) -> set[str]:
    return {t.name for t in request.tools}


def write_tools_json(root: Path, data: object) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "tools.json").write_text(json.dumps(data))


async def test_deny_wins_over_allow_and_a_denied_call_is_refused(tmp_path: Path) -> None:
    write_tools_json(tmp_path, {"allow": ["*_file", "glob_*", "agent_*"], "deny": ["write_*"]})
    model = ScriptedModel([call("write_file", path="x.txt", content="no"), "done"])
    agent = HarnessAgent("dev", model, workspace=tmp_path, memory=False, shell=False)
    events = [e async for e in agent.stream_events("go", ALICE)]
    await agent.close()
    offered = names(model.requests[0])
    assert {"read_file", "edit_file", "glob_files", "agent_spawn"} <= offered
    assert not offered & {"write_file", "grep_files", "list_files", "memory_search"}
    refused = [e.result for e in events if isinstance(e, ToolResultEvent)]
    assert refused[0].is_error and "tools.json" in refused[0].content
    assert not (tmp_path / "x.txt").exists()


async def test_mcp_servers_declared_there_with_env_substitution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("NOTES_SCRIPT", str(NOTES_SERVER))
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    write_tools_json(
        tmp_path,
        {
            "deny": ["fail", "chart"],
            "mcpServers": {
                "notes": {
                    "command": sys.executable,
                    "args": ["${NOTES_SCRIPT}", "--stdio"],
                    "env": {"TOKEN": "${NOT_SET_ANYWHERE}"},
                }
            },
        },
    )
    model = ScriptedModel([call("add", a=2, b=3), "five"])
    with caplog.at_level(logging.WARNING, logger="harnessed.tools_json"):
        agent = HarnessAgent("dev", model, workspace=tmp_path, memory=False, shell=False)
    assert "NOT_SET_ANYWHERE" in caplog.text  # a missing variable is warned about
    try:
        events = [e async for e in agent.stream_events("add them", ALICE)]
    finally:
        await agent.close()
    offered = names(model.requests[0])
    assert "add" in offered and "fail" not in offered and "chart" not in offered
    results = [e.result.content for e in events if isinstance(e, ToolResultEvent)]
    assert "5" in results[0]


def test_bad_files_are_errors_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"tools\.json is not valid JSON"):
        parse_tools_json("{nope")
    with pytest.raises(ValueError, match="'deny' must be a list"):
        parse_tools_json('{"deny": "execute"}')
    write_tools_json(tmp_path, {"mcpServers": {"x": {"url": "ftp://nowhere"}}})
    with pytest.raises(ValueError, match=r"mcpServers\.x"):
        HarnessAgent("dev", ScriptedModel(["ok"]), workspace=tmp_path)


async def test_a_users_own_agents_md_overrides_the_shared_one(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Shared rules: be brief.")
    own = tmp_path / "agents" / "dev" / "users" / "alice"
    own.mkdir(parents=True)
    (own / "AGENTS.md").write_text("Alice's rules: answer in French.")
    model = ScriptedModel(["oui", "ok"])
    agent = HarnessAgent("dev", model, workspace=tmp_path, memory=False, shell=False)
    await agent.call("hi", ALICE)
    await agent.call("hi", BOB)
    await agent.close()
    alice, bob = (r.messages[0].text for r in model.requests)
    assert "answer in French" in alice and "be brief" not in alice
    assert "be brief" in bob and "French" not in bob


async def test_a_users_own_subagents_override_the_shared_ones(tmp_path: Path) -> None:
    (tmp_path / "subagents").mkdir()
    (tmp_path / "subagents" / "reviewer.md").write_text(
        "---\ndescription: Reviews changes.\n---\nYou review. Sign as SHARED.\n"
    )
    own = tmp_path / "agents" / "dev" / "users" / "alice" / "subagents"
    own.mkdir(parents=True)
    (own / "reviewer.md").write_text(
        "---\ndescription: Reviews changes the way Alice likes.\n---\nYou review. Sign as ALICE.\n"
    )

    async def respond(request: ModelRequest) -> ScriptedResponse | str:
        system = request.messages[0].text
        for who in ("ALICE", "SHARED"):
            if f"Sign as {who}" in system:
                return f"signed {who}"
        if any(m.tool_results for m in request.messages):
            return "done"
        return call("agent_spawn", agent_id="reviewer", task="review it")

    model = ScriptedModel(responder=respond)
    agent = HarnessAgent("dev", model, workspace=tmp_path, memory=False, shell=False)
    answers = {}
    for ctx in (ALICE, BOB):
        events = [e async for e in agent.stream_events("review", ctx)]
        answers[ctx.user_id] = [e.result.content for e in events if isinstance(e, ToolResultEvent)]
    await agent.close()
    assert "signed ALICE" in answers["alice"][0]
    assert "signed SHARED" in answers["bob"][0]


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_the_model_cannot_write_tools_json(tmp_path: Path, tool: str) -> None:
    """tools.json declares MCP servers, which run on the host outside any sandbox: a file edit
    the permission mode lets through must not become a host command at the next start."""
    ws = tmp_path / "ws"
    ws.mkdir()
    write_tools_json(ws, {"allow": ["*"]})
    planted = json.dumps({"mcpServers": {"x": {"command": "sh", "args": ["-c", "id"]}}})
    args = (
        {"path": "tools.json", "content": planted}
        if tool == "write_file"
        else {"path": "tools.json", "old": '"allow"', "new": '"deny"'}
    )
    model = ScriptedModel([call(tool, **args), "done"])
    agent = HarnessAgent(
        "a", model, workspace=ws, memory=False, permission_mode="bypass", subagents=False
    )
    await agent.call("plant it", RuntimeContext("u", "s"))
    (result,) = [m for m in model.requests[1].messages if m.tool_results]
    assert result.tool_results[0].is_error
    assert "read-only" in result.tool_results[0].content
    assert json.loads((ws / "tools.json").read_text()) == {"allow": ["*"]}
