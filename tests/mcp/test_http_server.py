"""Our SDK-built server over streamable HTTP: results, errors, timeouts, list changes,
resources as context, eviction, and many sessions sharing one connection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.context import ContextSourceError
from harnessed.mcp import MCPResource, MCPServer
from harnessed.messages import ImageBlock, Msg, ToolResultBlock
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from tests.mcp.conftest import mcp_of, start_notes_server

CTX = RuntimeContext("u1", "s")


def ask(name: str, **args: Any) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, args)])


def results(request: ModelRequest) -> list[ToolResultBlock]:
    return [r for m in request.messages for r in m.tool_results]


def result_messages(request: ModelRequest) -> list[Msg]:
    return [m for m in request.messages if m.tool_results]


def notes(url: str, **options: Any) -> MCPServer:
    return MCPServer.http(url, name="notes", **options)


async def test_text_structured_embedded_and_error_results(notes_url: str) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("add", {"a": 2, "b": 40}),
                    ScriptedToolCall("note_file", {"name": "readme"}),
                    ScriptedToolCall("fail", {"message": "the disk is on fire"}),
                    ScriptedToolCall("add", {"a": "two", "b": 1}),
                ]
            ),
            "done",
        ]
    )
    async with HarnessAgent("n", model, mcp_servers=[notes(notes_url)]) as agent:
        await agent.call("go", CTX)
    added, embedded, failed, invalid = results(model.requests[1])
    assert json.loads(added.content) == {"total": 42, "terms": 2} and not added.is_error
    assert "Here is note readme:" in embedded.content
    assert "[resource notes://file/readme (text/plain)]" in embedded.content
    assert "The notes server keeps short notes." in embedded.content
    assert failed.is_error and "the disk is on fire" in failed.content
    assert invalid.is_error and "Invalid arguments for tool 'add'" in invalid.content
    assert "a: 'two' is not of type 'integer'" in invalid.content


async def test_image_results_reach_the_model_as_image_blocks(notes_url: str) -> None:
    model = ScriptedModel([ask("chart"), "a chart"])
    async with HarnessAgent("n", model, mcp_servers=[notes(notes_url)]) as agent:
        await agent.call("draw", CTX)
        (message,) = result_messages(model.requests[1])
        (result,) = message.tool_results
        assert "[image 1: image/png" in result.content
        (image,) = result.images
        assert isinstance(image, ImageBlock) and image.media_type == "image/png"
        assert image.data is not None and len(image.data) > 40
        # kept in the session log too, exactly
        stored = [r for m in await agent.session_messages(CTX) for r in m.tool_results]
        assert stored[0].images == result.images


async def test_a_slow_tool_times_out_with_a_clear_error(notes_url: str) -> None:
    model = ScriptedModel([ask("slow", seconds=600), ask("add", a=1, b=1), "ok"])
    server = notes(notes_url, timeout=1.0)
    async with HarnessAgent("n", model, mcp_servers=[server]) as agent:
        started = asyncio.get_running_loop().time()
        await agent.call("wait", CTX)
        elapsed = asyncio.get_running_loop().time() - started
    (timed_out,) = results(model.requests[1])
    assert timed_out.is_error
    assert "'notes' did not finish the call to tool 'slow' within 1 s" in timed_out.content
    assert elapsed < 300  # the 600 s tool was cut off, on however loaded a machine
    (after,) = results(model.requests[2])[-1:]
    assert not after.is_error  # the connection is still good after a timeout


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_tool_list_changes_are_picked_up(notes_url: str, protocol: str) -> None:
    """Announced over a subscriptions/listen stream (2026) or as a plain notification (2025)."""
    model = ScriptedModel([ask("enable_extra"), "enabled", ask("extra_tool", word="hi"), "used it"])
    server = notes(notes_url, protocol=protocol)
    async with HarnessAgent("n", model, mcp_servers=[server]) as agent:
        connection = mcp_of(agent).connections["notes"]
        await agent.call("enable", CTX)
        assert "extra_tool" not in {t.name for t in model.requests[0].tools}
        for _ in range(100):  # the server announced the change; the refresh runs at once
            if agent.toolkit.get("extra_tool") is not None:
                break
            await asyncio.sleep(0.05)
        assert connection.tools_revision >= 1
        legacy = connection.protocol_version not in ("2026-07-28",)
        assert legacy == (protocol == "legacy")
        await agent.call("use it", CTX)
    assert "extra_tool" in {t.name for t in model.requests[2].tools}
    (used,) = results(model.requests[3])[-1:]
    assert used.content == "HI" and not used.is_error


async def test_resources_become_reference_material_with_manifest(notes_url: str) -> None:
    model = ScriptedModel(["first", "second", ask("bump"), "bumped", "fourth"])
    agent = HarnessAgent(
        "n",
        model,
        mcp_servers=[notes(notes_url)],
        mcp_resources=[
            "notes://readme",
            MCPResource("notes://{user_id}/today", id="today", priority=5),
            MCPResource("notes://counter", id="counter"),
        ],
    )
    async with agent:
        await agent.call("hello", CTX)
        manifest = agent.last_manifest(CTX)
        await agent.call("again", CTX)
        await agent.call("change the counter", CTX)
        connection = mcp_of(agent).connections["notes"]
        for _ in range(100):  # the server announces the update on the subscription stream
            if connection.resources_revision:
                break
            await asyncio.sleep(0.05)
        await agent.call("and now?", CTX)
    first = model.requests[0]
    text = "\n".join(m.text for m in first.messages)
    assert "The notes server keeps short notes." in text
    assert "Today's notes for u1: buy milk." in text
    assert "MCP resource notes://u1/today (server 'notes')" in text
    assert manifest is not None
    items = {i.source_id: i for i in manifest.items}
    assert {"mcp.notes-readme", "mcp.today", "mcp.counter"} <= set(items)
    assert all(items[s].placement == "reference" for s in ("mcp.today", "mcp.counter"))
    assert items["mcp.today"].priority == 5

    def shown(request: ModelRequest) -> str:
        return "\n".join(m.text for m in request.messages)

    # a fixed resource is subscribed to: read once, and again only after the server's update
    assert "read 1 times" in shown(model.requests[1])
    assert "read 1 times" in shown(model.requests[2])
    assert "read 2 times" in shown(model.requests[4])


async def test_an_unreadable_resource_is_left_out_or_fails_when_required(notes_url: str) -> None:
    model = ScriptedModel(["fine"])
    agent = HarnessAgent(
        "n", model, mcp_servers=[notes(notes_url)], mcp_resources=["notes://missing"]
    )
    async with agent:
        await agent.call("hi", CTX)
        manifest = agent.last_manifest(CTX)
        assert manifest is not None
        assert any(
            t.startswith("source_unavailable:source/mcp.notes-missing/")
            for t in manifest.transforms
        )
    strict = HarnessAgent(
        "n",
        ScriptedModel(["never"]),
        mcp_servers=[notes(notes_url)],
        mcp_resources=[MCPResource("notes://missing", required=True)],
    )
    async with strict:
        with pytest.raises(ContextSourceError, match="notes://missing"):
            await strict.call("hi", CTX)


async def test_a_template_variable_missing_from_the_context_is_named(notes_url: str) -> None:
    agent = HarnessAgent(
        "n",
        ScriptedModel(["never"]),
        mcp_servers=[notes(notes_url)],
        mcp_resources=[MCPResource("notes://{team}/today", required=True)],
    )
    async with agent:
        with pytest.raises(ContextSourceError, match="needs team"):
            await agent.call("hi", CTX)
        reply = await agent.call("hi", RuntimeContext("u1", "s2", extras={"team": "blue"}))
    assert reply is not None


async def test_large_results_are_evicted_like_any_other(notes_url: str, tmp_path: Path) -> None:
    model = ScriptedModel([ask("big", chars=200_000), "read it"])
    agent = HarnessAgent(
        "n", model, workspace=tmp_path / "ws", mcp_servers=[notes(notes_url)], shell=False
    )
    async with agent:
        await agent.call("big one", CTX)
    (shown,) = results(model.requests[1])
    assert len(shown.content) < 20_000 and "large_tool_results" in shown.content
    stored = await agent.session_messages(CTX)
    full = [r for m in stored for r in m.tool_results]
    assert len(full[0].content) == 200_000  # the session log keeps the original


async def test_hundred_concurrent_sessions_share_one_server(notes_url: str) -> None:
    def responder(request: ModelRequest) -> ScriptedResponse | str:
        done = results(request)
        if done:
            return done[-1].content
        user = next(m.text for m in request.messages if m.role == "user")
        n = int(user.split()[-1])
        return ScriptedResponse(tool_calls=[ScriptedToolCall("add", {"a": n, "b": 1000})])

    model = ScriptedModel(responder=responder)
    async with HarnessAgent("n", model, mcp_servers=[notes(notes_url)]) as agent:
        replies = await asyncio.gather(
            *(agent.call(f"add {i}", RuntimeContext("u", f"s{i}")) for i in range(100))
        )
        assert mcp_of(agent).connections["notes"].starts == 1
    for i, reply in enumerate(replies):
        assert json.loads(reply.text)["total"] == i + 1000


async def test_a_restarted_http_server_is_reconnected_at_the_next_call() -> None:
    process, url = start_notes_server()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    model = ScriptedModel([ask("add", a=1, b=1), "one", ask("add", a=2, b=2), "two"])
    try:
        async with HarnessAgent("n", model, mcp_servers=[notes(url, timeout=120)]) as agent:
            await agent.call("first", CTX)
            process.kill()  # a crash: the open connections just drop
            process.wait(10)
            process, _ = start_notes_server(port)  # the server is back, as a new process
            await agent.call("second", CTX)
            assert mcp_of(agent).connections["notes"].starts == 2
    finally:
        process.terminate()
        process.wait(10)
    (after,) = results(model.requests[3])[-1:]
    assert not after.is_error and '"total":4' in after.content.replace(" ", "")
