"""``harnessed mcp list``: start an MCP server and show its tools and resources.

The ``mcp`` extra is imported only when the command runs, so the rest of the command line works
without it.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from harnessed.mcp import ServerConnection
    from harnessed.mcp.tools import MCPTool

__all__ = ["list_servers", "register"]


def register(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="look at MCP servers")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    listing = mcp_sub.add_parser("list", help="start a server and show its tools and resources")
    listing.add_argument(
        "--server",
        action="append",
        required=True,
        help='a command line ("python -m mcp_server_time") or an http(s) URL; repeatable',
    )
    listing.add_argument("--timeout", type=float, default=30.0, help="seconds (default: 30)")
    mcp.set_defaults(handler=mcp_command)


def mcp_command(args: argparse.Namespace, console: Console) -> int:
    if args.timeout <= 0:
        console.print("[red]--timeout must be positive[/]")
        return 2
    try:
        import mcp  # noqa: F401  (the SDK: the `mcp` extra)
    except ImportError as exc:
        console.print(
            f"MCP needs the mcp extra (pip install 'harnessed[mcp]'): {exc}",
            style="red",
            markup=False,
            highlight=False,
        )
        return 2
    return asyncio.run(list_servers(args.server, console, timeout=args.timeout))


async def list_servers(specs: list[str], console: Console, *, timeout: float = 30.0) -> int:
    """Print the tools and resources of each server (a URL or a command line)."""
    from harnessed.mcp import MCPError, MCPServer, ServerConnection

    code = 0
    for spec in specs:
        try:
            server = MCPServer.parse(spec, timeout=timeout, startup_timeout=timeout)
        except (ValueError, TypeError) as exc:
            console.print(
                f"bad --server {spec!r}: {exc}", style="red", markup=False, highlight=False
            )
            code = 2
            continue
        connection = ServerConnection(server)
        try:
            await _show(connection, console)
        except MCPError as exc:
            console.print(f"{exc}", style="red", markup=False, highlight=False)
            code = 1
        finally:
            await connection.close()
    return code


async def _show(connection: ServerConnection, console: Console) -> None:
    from harnessed.mcp.tools import build_tools, exposed_names

    config = connection.config
    remote = await connection.list_tools()
    names = exposed_names({config.name: [t.name for t in remote]}, frozenset())
    tools = build_tools(connection, remote, {r: e for (_, r), e in names.items()})
    console.print(
        f"{config.name} — {config.describe()}", style="bold", markup=False, highlight=False
    )
    table = Table("tool", "kind", "arguments", "description", title=f"{len(tools)} tools")
    for tool in tools:
        table.add_row(tool.name, _kind(tool), _arguments(tool), _first_line(tool.description))
    console.print(table)
    skipped = len(remote) - len(tools)
    if skipped:
        console.print(
            f"{skipped} tool(s) skipped: their input schema is invalid",
            style="yellow",
            markup=False,
            highlight=False,
        )
    caps = connection.server_capabilities
    if caps is None or caps.resources is None:
        console.print("no resources\n")
        return
    resources = await connection.list_resources()
    templates = await connection.list_resource_templates()
    if not resources and not templates:
        console.print("no resources\n")
        return
    listing = Table("uri", "name", "type", "description", title=f"{len(resources)} resources")
    for r in resources:
        listing.add_row(r.uri, r.name, r.mime_type or "", _first_line(r.description or ""))
    for t in templates:
        listing.add_row(t.uri_template, t.name, t.mime_type or "", "(template)")
    console.print(listing)
    console.print()


def _kind(tool: MCPTool) -> str:
    if tool.read_only:
        return "read-only"
    return "destructive" if tool.destructive else "changes things"


def _arguments(tool: MCPTool) -> str:
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    return ", ".join(f"{n}{'' if n in required else '?'}" for n in properties)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 80 else line[:77] + "..."
