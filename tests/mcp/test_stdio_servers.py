"""The reference servers from PyPI over stdio: tools in the agent, permissions, restarts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessed import HarnessAgent
from harnessed.events import AgentEndEvent
from harnessed.messages import ToolResultBlock
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.permissions import PermissionRule
from tests.mcp.conftest import (
    children_running,
    git_server,
    mcp_of,
    notes_stdio_server,
    time_server,
)
from tests.support.fixtures import CTX


def ask(name: str, **args: Any) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, args)])


def results(request: ModelRequest) -> list[ToolResultBlock]:
    return [r for m in request.messages for r in m.tool_results]


async def test_time_server_tools_reach_the_model_and_answer() -> None:
    model = ScriptedModel([ask("get_current_time", timezone="Europe/Paris"), "done"])
    async with HarnessAgent("clock", model, mcp_servers=[time_server()]) as agent:
        reply = await agent.call("What time is it in Paris?", CTX)
        assert reply.text == "done"
        first = model.requests[0]
        schemas = {t.name: t for t in first.tools}
        assert {"get_current_time", "convert_time"} <= set(schemas)
        # the server's schema is passed through
        assert schemas["get_current_time"].parameters["required"] == ["timezone"]
        tool = agent.toolkit.get("get_current_time")
        assert tool is not None and tool.read_only
        (result,) = results(model.requests[1])
        assert not result.is_error
        data = json.loads(result.content)
        assert data["timezone"] == "Europe/Paris" and "datetime" in data


async def test_server_errors_and_bad_arguments_become_error_results() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("get_current_time", {"timezone": "Mars/Olympus"}),
                    ScriptedToolCall("get_current_time", {"zone": "UTC"}),
                ]
            ),
            "ok",
        ]
    )
    async with HarnessAgent("clock", model, mcp_servers=[time_server()]) as agent:
        await agent.call("time?", CTX)
    bad_zone, bad_args = results(model.requests[1])
    assert bad_zone.is_error and "Mars/Olympus" in bad_zone.content
    assert bad_args.is_error
    assert "Invalid arguments for tool 'get_current_time'" in bad_args.content
    assert "'timezone' is a required property" in bad_args.content


async def test_server_starts_at_first_call_and_close_stops_it() -> None:
    agent = HarnessAgent("clock", ScriptedModel(["hi"]), mcp_servers=[time_server()])
    assert children_running("mcp_server_time") == []  # nothing started at construction
    await agent.call("hello", CTX)
    assert len(children_running("mcp_server_time")) == 1
    await agent.close()
    deadline = time.monotonic() + 10
    while children_running("mcp_server_time") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert children_running("mcp_server_time") == []


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout


async def test_git_server_reads_and_commits_in_a_test_repository(git_repo: Path) -> None:
    (git_repo / "notes.txt").write_text("new file\n")
    model = ScriptedModel(
        [
            ask("git_status", repo_path=str(git_repo)),
            ask("git_add", repo_path=str(git_repo), files=["notes.txt"]),
            ask("git_commit", repo_path=str(git_repo), message="add notes"),
            ask("git_log", repo_path=str(git_repo), max_count=5),
            "committed",
        ]
    )
    servers = [git_server(git_repo, confirm_destructive=False)]
    async with HarnessAgent("git", model, mcp_servers=servers) as agent:
        await agent.call("commit notes.txt", CTX)
    status = results(model.requests[1])[-1]
    assert "notes.txt" in status.content and not status.is_error
    log = results(model.requests[4])[-1]
    assert "add notes" in log.content and "first commit" in log.content
    assert "add notes" in _git(git_repo, "log", "--oneline")


async def test_destructive_git_reset_asks_before_it_runs(git_repo: Path) -> None:
    (git_repo / "README.md").write_text("changed\n")
    _git(git_repo, "add", "README.md")
    model = ScriptedModel([ask("git_reset", repo_path=str(git_repo)), "reset done"])
    async with HarnessAgent("git", model, mcp_servers=[git_server(git_repo)]) as agent:
        events = [e async for e in agent.stream_events("unstage", CTX, confirmations="park")]
        end = events[-1]
        assert isinstance(end, AgentEndEvent) and end.status == "pending"
        [request] = await agent.pending_confirmations(CTX)
        assert request.call.name == "git_reset" and "destructive" in request.reason
        assert "README.md" in _git(git_repo, "diff", "--cached", "--name-only")  # not run
        await agent.respond(CTX, request.request_id, True)
        reply = await agent.call(None, CTX)
    assert reply.text == "reset done"
    assert _git(git_repo, "diff", "--cached", "--name-only") == ""  # approved, then run
    # read-only tools of the same server never ask
    assert agent.toolkit.get("git_status") is not None
    assert not agent.toolkit.get("git_status").destructive


async def test_a_deny_rule_blocks_a_destructive_mcp_tool(git_repo: Path) -> None:
    _git(git_repo, "checkout", "-q", "-b", "feature")
    model = ScriptedModel(
        [
            ask("git_reset", repo_path=str(git_repo)),
            ask("git_status", repo_path=str(git_repo)),
            "ok",
        ]
    )
    agent = HarnessAgent(
        "git",
        model,
        mcp_servers=[git_server(git_repo)],
        permission_mode="bypass",
        permission_rules=[PermissionRule.deny("git_reset")],
    )
    async with agent:
        await agent.call("reset", CTX)
    (denied,) = results(model.requests[1])
    assert denied.is_error and "Permission denied" in denied.content
    (status,) = results(model.requests[2])[-1:]
    assert not status.is_error  # read-only tools still run


async def test_plan_mode_blocks_changing_and_destructive_mcp_tools_not_read_only_ones(
    git_repo: Path, tmp_path: Path
) -> None:
    (git_repo / "x.txt").write_text("x\n")
    (git_repo / "README.md").write_text("staged change\n")
    _git(git_repo, "add", "README.md")
    repo = str(git_repo)
    model = ScriptedModel(
        [
            ask("plan_enter"),
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("git_add", {"repo_path": repo, "files": ["x.txt"]}),
                    ScriptedToolCall("git_reset", {"repo_path": repo}),
                    ScriptedToolCall("git_status", {"repo_path": repo}),
                ]
            ),
            "planned",
        ]
    )
    agent = HarnessAgent(
        "git",
        model,
        workspace=tmp_path / "ws",
        enable_plan_mode=True,
        mcp_servers=[git_server(git_repo)],
    )
    async with agent:
        reply = await agent.call("plan it", CTX)
        assert await agent.pending_confirmations(CTX) == []  # blocked, never asked
    assert reply.text == "planned"
    added, reset, status = results(model.requests[2])[-3:]
    assert added.is_error and "Blocked in plan mode" in added.content
    assert reset.is_error and "Blocked in plan mode" in reset.content
    assert not status.is_error and "x.txt" in status.content
    staged = _git(git_repo, "diff", "--cached", "--name-only")
    assert "x.txt" not in staged and "README.md" in staged  # neither ran


async def test_a_killed_server_is_restarted_at_the_next_call(
    kill_server: Callable[[str], int],
) -> None:
    model = ScriptedModel(
        [
            ask("get_current_time", timezone="UTC"),
            "first",
            ask("get_current_time", timezone="Asia/Tokyo"),
            "second",
        ]
    )
    async with HarnessAgent("clock", model, mcp_servers=[time_server()]) as agent:
        connection = mcp_of(agent).connections["time"]
        await agent.call("one", CTX)
        first_pid = kill_server("mcp_server_time")
        await asyncio.sleep(0.2)
        await agent.call("two", CTX)
        assert connection.starts == 2
        assert children_running("mcp_server_time") not in ([], [first_pid])
    (result,) = results(model.requests[3])[-1:]
    assert not result.is_error and "Asia/Tokyo" in result.content


async def test_a_server_killed_during_a_call_fails_that_call_clearly_never_hangs(
    kill_server: Callable[[str], int],
) -> None:
    model = ScriptedModel(
        [ask("slow", seconds=60), "after the crash", ask("add", a=2, b=3), "restarted"]
    )
    server = notes_stdio_server(timeout=30)
    async with HarnessAgent("notes", model, mcp_servers=[server]) as agent:
        await mcp_of(agent).start()

        async def kill_soon() -> None:
            await asyncio.sleep(1.0)
            kill_server("notes_server.py")

        killer = asyncio.create_task(kill_soon())
        started = time.monotonic()
        await agent.call("be slow", CTX)
        elapsed = time.monotonic() - started
        await killer
        (failed,) = results(model.requests[1])[-1:]
        assert failed.is_error
        assert "'notes' lost its connection" in failed.content
        assert "restarted at the next call" in failed.content
        assert elapsed < 10  # not the 30 s timeout, and certainly not the 60 s sleep
        await agent.call("again", CTX)
        assert mcp_of(agent).connections["notes"].starts == 2
    (ok,) = results(model.requests[3])[-1:]
    assert not ok.is_error and '"total":5' in ok.content.replace(" ", "")


async def test_only_the_chosen_tools_of_a_server_are_given() -> None:
    model = ScriptedModel(["ok"])
    servers = [time_server(tools=["convert_time"], prefix_tools=True)]
    async with HarnessAgent("clock", model, mcp_servers=servers) as agent:
        await agent.call("hi", CTX)
    names = {t.name for t in model.requests[0].tools}
    assert "time_convert_time" in names
    assert not any("get_current_time" in n for n in names)
