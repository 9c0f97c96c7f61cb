"""``MCP``: the capability that gives an agent the tools and resources of MCP servers.

Servers start at the first call (``before_call``; all at once, concurrently) and are shared by
every session of the agent. Their tools join the agent's toolkit then, and again whenever a
server says its tool list changed (the new list is fetched at once in the background, and at
the latest before the next model request). Resources are context sources. ``close()`` stops
the servers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from harnessed.capabilities.base import CallContext, Capability, CapabilityHost, SourceSpec
from harnessed.capabilities.sources import SourceFailurePolicy
from harnessed.mcp.config import MCPResource, MCPServer
from harnessed.mcp.connection import ChangeKind, ServerConnection
from harnessed.mcp.errors import MCPError, MCPServerError
from harnessed.mcp.resources import MCPResourceSource
from harnessed.mcp.tools import MCPTool, build_tools, exposed_names
from harnessed.tools.toolkit import Toolkit

__all__ = ["MCP"]

logger = logging.getLogger(__name__)


class MCP(Capability):
    """Tools and resources of MCP servers for one agent (``HarnessAgent(mcp_servers=...)``
    builds it; or pass ``capabilities=[MCP(...)]``).

    Args:
        servers: :class:`MCPServer` configurations, or strings (a URL or a command line).
        resources: Resources shown to the model as reference material (:class:`MCPResource`,
            or a URI string when the agent has exactly one server).
    """

    name = "mcp"

    def __init__(
        self,
        servers: Sequence[MCPServer | str],
        resources: Sequence[MCPResource | str] = (),
    ) -> None:
        configs = [s if isinstance(s, MCPServer) else MCPServer.parse(s) for s in servers]
        if not configs:
            raise ValueError("MCP needs at least one server")
        names = [c.name for c in configs]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"two MCP servers are named {name!r}; give one another name=")
        self.resources = tuple(self._resource(r, names) for r in resources)
        self.connections: dict[str, ServerConnection] = {
            config.name: ServerConnection(
                config,
                on_change=functools.partial(self._changed, config.name),
                watch=[  # fixed URIs are subscribed to and read again only when updated
                    r.uri
                    for r in self.resources
                    if (r.server or names[0]) == config.name and not r.is_template
                ],
            )
            for config in configs
        }
        self._toolkit: Toolkit | None = None
        self._registered: dict[str, MCPTool] = {}
        self._synced: dict[str, tuple[int, int]] = {}
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._refresh_task: asyncio.Task[None] | None = None

    @staticmethod
    def _resource(resource: MCPResource | str, servers: Sequence[str]) -> MCPResource:
        if isinstance(resource, str):
            resource = MCPResource(resource)
        if not isinstance(resource, MCPResource):
            raise TypeError(f"mcp_resources must hold MCPResource or URI strings, got {resource!r}")
        if resource.server is None:
            if len(servers) != 1:
                raise ValueError(
                    f"MCPResource {resource.uri!r} needs server= (the agent has "
                    f"{len(servers)} MCP servers: {', '.join(servers)})"
                )
        elif resource.server not in servers:
            raise ValueError(
                f"MCPResource {resource.uri!r} names server {resource.server!r}, which is not "
                f"configured (servers: {', '.join(servers)})"
            )
        return resource

    # ------------------------------------------------------------- capability
    def setup(self, host: CapabilityHost) -> None:
        """Keep the agent's toolkit: the MCP tools are added to it at the first call."""
        self._toolkit = host.toolkit

    def context_sources(self) -> list[SourceSpec]:
        """One source per chosen resource; ``required`` ones fail the request when unreadable,
        the others are left out of it (and the manifest says so)."""
        specs: list[SourceSpec] = []
        seen: set[str] = set()
        for resource in self.resources:
            server = resource.server or next(iter(self.connections))
            block_id = resource.block_id
            if block_id in seen:
                raise ValueError(
                    f"two MCP resources would both be shown as {block_id!r}; give one an id="
                )
            seen.add(block_id)
            source = MCPResourceSource(
                resource, functools.partial(self.connections.__getitem__, server)
            )
            specs.append(
                SourceSpec(
                    id=f"mcp.{block_id}"[:100],
                    source=source,
                    timeout=self.connections[server].config.timeout + 5.0,
                    on_failure=(
                        SourceFailurePolicy.FAIL if resource.required else SourceFailurePolicy.OMIT
                    ),
                )
            )
        return specs

    async def before_call(self, call: CallContext) -> None:
        """Start the servers that are not running and bring the toolkit up to date."""
        if not self._up_to_date():
            await self.start()

    async def before_model_request(self, call: CallContext) -> None:
        """A tool list that changed during the call is fetched before the next request (and a
        server that stopped is started again)."""
        if self._up_to_date():
            return
        try:
            await self.start()
        except MCPError as exc:  # its tools answer with a clear error; the call goes on
            logger.warning("MCP: %s", exc)

    # --------------------------------------------------------------- public API
    def tools(self) -> list[MCPTool]:
        """The MCP tools currently in the agent's toolkit."""
        return list(self._registered.values())

    async def start(self) -> None:
        """Start (or restart) every server and put its current tools in the toolkit.

        A ``required`` server that cannot start raises :class:`MCPServerError`; an optional
        one is left out (logged) and tried again at the next call.
        """
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        async with self._lock:
            if self._up_to_date():
                return
            names = list(self.connections)
            results = await asyncio.gather(
                *(self.connections[n].list_tools() for n in names), return_exceptions=True
            )
            listed: dict[str, Any] = {}
            for name, result in zip(names, results, strict=True):
                config = self.connections[name].config
                if isinstance(result, BaseException):
                    if isinstance(result, asyncio.CancelledError):
                        raise result
                    if config.required:
                        raise (
                            result
                            if isinstance(result, MCPServerError)
                            else MCPServerError(
                                f"MCP server {name!r} could not list its tools: {result}"
                            )
                        )
                    logger.warning("MCP server %r is left out of this call: %s", name, result)
                    continue
                wanted = set(config.tools) if config.tools is not None else None
                listed[name] = [t for t in result if wanted is None or t.name in wanted]
            self._install(listed)

    def _up_to_date(self) -> bool:
        if self._toolkit is None:
            return True
        for name, connection in self.connections.items():
            if not connection.alive:
                return False
            if self._synced.get(name) != (connection.starts, connection.tools_revision):
                return False
        return True

    def _install(self, listed: Mapping[str, Any]) -> None:
        """Replace the MCP tools in the toolkit with ``listed`` (no await: atomic for calls)."""
        toolkit = self._toolkit
        if toolkit is None:
            return
        taken = frozenset(n for n in toolkit.names if n not in self._registered)
        always = frozenset(n for n, c in self.connections.items() if c.config.prefix_tools)
        names = exposed_names(
            {server: [t.name for t in tools] for server, tools in listed.items()}, taken, always
        )
        fresh: dict[str, MCPTool] = {}
        for server, tools in listed.items():
            mine = {remote: exposed for (s, remote), exposed in names.items() if s == server}
            for tool in build_tools(self.connections[server], tools, mine):
                fresh[tool.name] = tool
        for name in self._registered:
            toolkit.remove(name)
        for tool in fresh.values():
            toolkit.add(tool)
        self._registered = fresh
        for server in listed:
            connection = self.connections[server]
            self._synced[server] = (connection.starts, connection.tools_revision)
        for server in set(self.connections) - set(listed):
            self._synced.pop(server, None)

    def _changed(self, server: str, kind: ChangeKind) -> None:
        if kind != "tools" or self._toolkit is None:
            return
        task = self._refresh_task
        if task is not None and not task.done():
            return  # a refresh is already on its way; it reads the newest revision

        async def refresh() -> None:
            try:
                await self.start()
            except Exception as exc:
                logger.warning("MCP: refreshing the tools of %r failed: %s", server, exc)

        self._refresh_task = asyncio.get_running_loop().create_task(refresh())

    async def close(self) -> None:
        """Stop every server (safe to call more than once)."""
        task = self._refresh_task
        if task is not None and not task.done():
            task.cancel()
        await asyncio.gather(*(c.close() for c in self.connections.values()))
