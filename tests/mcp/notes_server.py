"""A small MCP server built with the SDK's MCPServer, served over streamable HTTP.

The tests start it as a separate process on a socket they bound to a free loopback port
(``--fd``), so it is a real server on a real connection. It has tools for every kind of result
(text, structured, image, embedded resource, errors), a slow tool, a destructive tool, a tool
that adds another tool and announces the change, and resources (fixed, templated, changing).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import socket

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import EmbeddedResource, TextContent, TextResourceContents, ToolAnnotations
from pydantic import BaseModel

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("notes", instructions="Notes for tests.", log_level="WARNING")
NOTES: dict[str, str] = {"readme": "The notes server keeps short notes."}
CALLS = {"counter": 0}


class Sum(BaseModel):
    total: int
    terms: int


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b, terms=2)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def chart() -> Image:
    """Draw a (tiny) chart."""
    return Image(data=PNG, format="png")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def note_file(name: str) -> list[TextContent | EmbeddedResource]:
    """Return a note as an embedded resource."""
    return [
        TextContent(type="text", text=f"Here is note {name}:"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri=f"notes://file/{name}", mime_type="text/plain", text=NOTES.get(name, "")
            ),
        ),
    ]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def big(chars: int) -> str:
    """A long text."""
    return ("0123456789abcdef" * (chars // 16 + 1))[:chars]


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def write_note(name: str, text: str) -> str:
    """Write a note (changes data, never deletes it)."""
    NOTES[name] = text
    return f"wrote {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_all_notes() -> str:
    """Delete every note."""
    NOTES.clear()
    return "deleted"


def extra_tool(word: str) -> str:
    """A tool that appears only after enable_extra was called."""
    return word.upper()


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
async def enable_extra(ctx: Context) -> str:
    """Add the tool extra_tool and tell clients the tool list changed."""
    if "extra_tool" not in {t.name for t in await server.list_tools()}:
        server.add_tool(extra_tool, annotations=ToolAnnotations(read_only_hint=True))
    if ctx.protocol_version in ("2026-07-28",):
        await ctx.notify_tools_changed()  # to subscriptions/listen streams
    else:
        await ctx.session.send_tool_list_changed()  # a plain notification (2025-era sessions)
    return "extra_tool is now available"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
async def bump(ctx: Context) -> str:
    """Tell subscribers that notes://counter changed."""
    await ctx.notify_resource_updated("notes://counter")
    return "bumped"


@server.resource("notes://readme", mime_type="text/plain")
def readme() -> str:
    return NOTES.get("readme", "")


@server.resource("notes://{user_id}/today", mime_type="text/plain")
def today(user_id: str) -> str:
    return f"Today's notes for {user_id}: buy milk."


@server.resource("notes://counter", mime_type="text/plain")
def counter() -> str:
    CALLS["counter"] += 1
    return f"read {CALLS['counter']} times"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, help="a listening socket to serve HTTP on")
    parser.add_argument("--stdio", action="store_true", help="serve over stdin/stdout instead")
    args = parser.parse_args()
    if args.stdio:
        server.run("stdio")
        return
    # socket(fileno=...) sees the real family (AF_INET): uvicorn's own fd= option assumes a Unix
    # socket, which leaves Nagle's algorithm on and adds ~40 ms to every response.
    sock = socket.socket(fileno=args.fd)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
