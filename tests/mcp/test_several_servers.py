"""Several servers per agent: clashing names, a server that cannot start."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from harnessed import HarnessAgent, tool
from harnessed.mcp import MCP, MCPServer, MCPServerError
from harnessed.messages import ToolResultBlock
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from tests.mcp.conftest import start_notes_server, time_server
from tests.support.fixtures import CTX


def results(request: ModelRequest) -> list[ToolResultBlock]:
    return [r for m in request.messages for r in m.tool_results]


@pytest.fixture
def two_notes_urls() -> Iterator[tuple[str, str]]:
    first, url_a = start_notes_server()
    second, url_b = start_notes_server()
    try:
        yield url_a, url_b
    finally:
        for process in (first, second):
            process.terminate()
            process.wait(10)


async def test_clashing_names_are_prefixed_by_the_server_alias(
    two_notes_urls: tuple[str, str],
) -> None:
    @tool(read_only=True)
    def chart(kind: str) -> str:
        """A local chart tool."""
        return f"local {kind}"

    calls: list[Any] = [
        ScriptedToolCall("a_add", {"a": 1, "b": 2}),
        ScriptedToolCall("b_add", {"a": 10, "b": 20}),
        ScriptedToolCall("chart", {"kind": "pie"}),
        ScriptedToolCall("get_current_time", {"timezone": "UTC"}),
    ]
    model = ScriptedModel([ScriptedResponse(tool_calls=calls), "done"])
    url_a, url_b = two_notes_urls
    servers = [MCPServer.http(url_a, name="a"), MCPServer.http(url_b, name="b"), time_server()]
    async with HarnessAgent("n", model, tools=[chart], mcp_servers=servers) as agent:
        await agent.call("go", CTX)
        names = {t.name for t in model.requests[0].tools}
    assert {"a_add", "b_add", "a_chart", "b_chart", "chart", "get_current_time"} <= names
    assert "add" not in names
    a, b, local, clock = results(model.requests[1])
    assert '"total":3' in a.content.replace(" ", "") and '"total":30' in b.content.replace(" ", "")
    assert local.content == "local pie" and not clock.is_error


async def test_a_required_server_that_cannot_start_fails_the_call_clearly() -> None:
    broken = MCPServer.stdio(
        sys.executable, "-c", "import sys; sys.exit('missing API key')", name="broken"
    )
    agent = HarnessAgent("n", ScriptedModel(["never"]), mcp_servers=[broken])
    async with agent:
        with pytest.raises(MCPServerError, match=r"'broken'.*could not be started") as info:
            await agent.call("hi", CTX)
    assert "missing API key" in str(info.value)  # the server's own words, from its stderr
    # the input is kept in the session log; nothing half-done is
    assert [m.role for m in await agent.session_messages(CTX)] == ["user"]


async def test_an_optional_server_that_cannot_start_is_left_out() -> None:
    broken = MCPServer.stdio(
        sys.executable, "-c", "import sys; sys.exit(3)", name="broken", required=False
    )
    model = ScriptedModel(["still here"])
    capability = MCP([time_server(), broken])  # the capability itself, passed explicitly
    async with HarnessAgent("n", model, capabilities=[capability]) as agent:
        reply = await agent.call("hi", CTX)
    assert reply.text == "still here"
    assert "get_current_time" in {t.name for t in model.requests[0].tools}


async def test_a_server_that_hangs_at_start_times_out() -> None:
    hanging = MCPServer.stdio(
        sys.executable, "-c", "import time; time.sleep(60)", name="hang", startup_timeout=1.0
    )
    async with HarnessAgent("n", ScriptedModel(["never"]), mcp_servers=[hanging]) as agent:
        with pytest.raises(MCPServerError, match=r"'hang'.*did not start within 1 s"):
            await agent.call("hi", CTX)
