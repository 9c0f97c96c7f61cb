"""Server and resource configurations: validation that names the field, and naming rules."""

from __future__ import annotations

import sys

import pytest

from harnessed import HarnessAgent
from harnessed.mcp import MCP, MCPResource, MCPServer
from harnessed.mcp.tools import exposed_names
from harnessed.models import ScriptedModel


def test_stdio_and_http_constructors_derive_a_name() -> None:
    assert MCPServer.stdio(sys.executable, "-m", "mcp_server_time").name == "mcp_server_time"
    assert MCPServer.stdio("npx", "-y", "@modelcontextprotocol/server-memory").name == (
        "server-memory"
    )
    assert MCPServer.stdio("npx", "-y", "@scope/server-x@1.2.0").name == "server-x"
    assert MCPServer.stdio("uvx", "mcp-server-fetch==1.0").name == "mcp-server-fetch"
    assert MCPServer.stdio("/usr/bin/my-server").name == "my-server"
    assert MCPServer.http("https://docs.example.com/mcp").name == "docs"
    assert MCPServer.http("http://127.0.0.1:8000/mcp").name == "mcp"
    parsed = MCPServer.parse("python -m mcp_server_git --repository '/tmp/a b'", timeout=5)
    assert parsed.command == "python" and parsed.args[-1] == "/tmp/a b" and parsed.timeout == 5
    assert MCPServer.parse("https://x.example/mcp").transport == "http"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name", "command": "x"}, "MCPServer.name"),
        ({"name": "s"}, "exactly one of 'command'"),
        ({"name": "s", "command": "x", "url": "http://h/mcp"}, "exactly one of 'command'"),
        ({"name": "s", "url": "ftp://h/mcp"}, "url must be an http"),
        ({"name": "s", "url": "http://h/mcp", "args": ("a",)}, "args, env and cwd"),
        ({"name": "s", "command": "x", "headers": {"a": "b"}}, "headers are for HTTP"),
        ({"name": "s", "command": "x", "timeout": 0}, "MCPServer.timeout"),
        ({"name": "s", "command": "x", "startup_timeout": -1}, "MCPServer.startup_timeout"),
        ({"name": "s", "command": " "}, "command must be"),
        ({"name": "s", "command": "x", "protocol": "2099"}, "protocol must be"),
    ],
)
def test_bad_server_configurations_name_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MCPServer(**kwargs)  # type: ignore[arg-type]


def test_bad_resources_and_duplicate_servers_are_refused() -> None:
    with pytest.raises(ValueError, match=r"MCPResource\.uri"):
        MCPResource(" ")
    with pytest.raises(ValueError, match="max_chars"):
        MCPResource("a://b", max_chars=5)
    a = MCPServer.stdio("a")
    b = MCPServer.stdio("b")
    with pytest.raises(ValueError, match="two MCP servers are named 'a'"):
        MCP([a, a])
    with pytest.raises(ValueError, match="needs server="):
        MCP([a, b], resources=["x://y"])
    with pytest.raises(ValueError, match="names server 'c'"):
        MCP([a, b], resources=[MCPResource("x://y", server="c")])
    with pytest.raises(ValueError, match="not a valid template"):
        MCP([a], resources=["x://{a b}"]).context_sources()
    with pytest.raises(ValueError, match="mcp_resources needs mcp_servers"):
        HarnessAgent("x", ScriptedModel([]), mcp_resources=["x://y"])
    with pytest.raises(ValueError, match="not both"):
        HarnessAgent("x", ScriptedModel([]), capabilities=[MCP([a])], mcp_servers=[b])


def test_names_are_prefixed_only_when_they_clash() -> None:
    names = exposed_names(
        {"git": ["status", "log", "read"], "fs": ["read", "list.dir"], "web": ["fetch"]},
        taken=frozenset({"log"}),
        always_prefix=frozenset({"web"}),
    )
    assert names == {
        ("git", "status"): "status",
        ("git", "log"): "git_log",  # clashes with a local tool
        ("git", "read"): "git_read",  # clashes with another server's tool
        ("fs", "read"): "fs_read",
        ("fs", "list.dir"): "list_dir",  # made safe for model APIs
        ("web", "fetch"): "web_fetch",  # the server always prefixes
    }
    long = exposed_names({"s": ["x" * 80, "x" * 70]}, frozenset())
    assert all(len(n) <= 64 for n in long.values()) and len(set(long.values())) == 2
