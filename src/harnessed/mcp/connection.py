"""One live connection to an MCP server: started on demand, shared, restarted after a crash.

The SDK's :class:`mcp.Client` must be entered and left in one task, so each connection has an
*owner* task that holds it open until :meth:`ServerConnection.close`; calls from any session
are sent through it concurrently (the protocol matches answers to requests by id).

A connection that broke (the stdio process died, the HTTP server went away) is noticed by the
call that hits it, which fails with a clear error; the next call starts a new connection. Every
request has a deadline (``MCPServer.timeout``), so nothing waits on a dead peer for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from typing import IO, Any, Literal, TypeVar

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp.shared.exceptions import MCPError as SDKError
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from harnessed.mcp.config import MCPServer
from harnessed.mcp.errors import MCPCallError, MCPServerError, MCPTimeoutError
from mcp import Client, StdioServerParameters

__all__ = ["ChangeKind", "ServerConnection"]

logger = logging.getLogger(__name__)

ChangeKind = Literal["tools", "resources"]
_T = TypeVar("_T")
_STDERR_TAIL = 1_500
_CLIENT_INFO = types.Implementation(name="harnessed", version="0.1.0")


class ServerConnection:
    """The connection to one configured server (see the module docstring)."""

    def __init__(
        self,
        config: MCPServer,
        on_change: Callable[[ChangeKind], None] | None = None,
        watch: Sequence[str] = (),
    ) -> None:
        self.config = config
        self._on_change = on_change
        self._watch = tuple(dict.fromkeys(watch))
        """Resource URIs to subscribe to: while the server honours the subscription, a read
        is answered from the last one until the server says the resource was updated."""
        self._watched: frozenset[str] = frozenset()
        self._resource_revisions: dict[str, int] = {}
        self._resources: dict[str, tuple[tuple[int, int], types.ReadResourceResult]] = {}
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broken = False
        self._stderr: IO[str] | None = None
        self.starts = 0
        """How many times the server was started (or connected); 2+ means it was restarted."""
        self.tools_revision = 0
        """Bumped each time the server says its tool list changed."""
        self.resources_revision = 0
        """Bumped each time the server says its resources changed."""
        self._tools: tuple[int, list[types.Tool]] | None = None

    # ---------------------------------------------------------------- lifecycle
    @property
    def alive(self) -> bool:
        client = self._client
        if client is None or self._broken or self._owner is None or self._owner.done():
            return False
        # The SDK marks its dispatcher closed when the peer hung up (a dead stdio process);
        # seeing it here lets the next call restart instead of failing.
        try:
            dispatcher = getattr(client.session, "_dispatcher", None)
        except RuntimeError:  # the client is being closed
            return False
        return not bool(getattr(dispatcher, "_closed", False))

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version (``None`` before the server was started)."""
        return self._client.protocol_version if self._client is not None else None

    @property
    def server_capabilities(self) -> types.ServerCapabilities | None:
        """What the connected server offers (``None`` before it was started)."""
        return self._client.server_capabilities if self._client is not None else None

    async def client(self) -> Client:
        """The connected client, starting (or restarting) the server when needed."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or the agent moved to a new event loop
            self._forget()
            self._loop, self._lock = loop, asyncio.Lock()
        if self.alive:
            assert self._client is not None
            return self._client
        assert self._lock is not None
        async with self._lock:
            if self.alive:
                assert self._client is not None
                return self._client
            await self._shutdown()
            return await self._start()

    async def _start(self) -> Client:
        self._broken = False
        self._stop = asyncio.Event()
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(
            self._own(ready, self._stop), name=f"mcp-server-{self.config.name}"
        )
        try:
            async with asyncio.timeout(self.config.startup_timeout):
                client = await asyncio.shield(ready)
        except TimeoutError:
            await self._shutdown(cancel=True)  # still in the handshake: nothing to finish
            raise MCPServerError(
                f"MCP server {self.config.name!r} ({self.config.describe()}) did not start within "
                f"{self.config.startup_timeout:g} s{self._stderr_note()}"
            ) from None
        except MCPServerError:
            await self._shutdown()
            raise
        except asyncio.CancelledError:
            await self._shutdown(cancel=True)
            raise
        self._client = client
        self.starts += 1
        self._tools = None
        return client

    async def _own(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Hold the SDK client open (entered and left in this one task) until told to stop."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._make_client(stack))
                async with anyio.create_task_group() as group:
                    if self._can_listen(client):
                        # Subscribed before the first call, so no change is missed.
                        await group.start(self._listen, client, stop)
                    ready.set_result(client)
                    await stop.wait()
                    group.cancel_scope.cancel()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:
            error = _leaf(exc)
            if not ready.done():
                ready.set_exception(
                    MCPServerError(
                        f"MCP server {self.config.name!r} ({self.config.describe()}) could not "
                        f"be started: {type(error).__name__}: {error}{self._stderr_note()}"
                    )
                )
            else:
                logger.warning(
                    "MCP server %r: connection ended with %s: %s",
                    self.config.name,
                    type(error).__name__,
                    error,
                )
        finally:
            if self._owner is asyncio.current_task():  # not a replaced, older connection
                self._broken = True

    def _make_client(self, stack: contextlib.AsyncExitStack) -> Client:
        config = self.config
        common: dict[str, Any] = {
            "read_timeout_seconds": config.startup_timeout,
            "client_info": _CLIENT_INFO,
            "message_handler": self._on_message,
            "cache": None,  # the tool list is cached here, refreshed on change notifications
            "mode": config.protocol,
        }
        if config.command is not None:
            if self._stderr is not None:
                self._stderr.close()
            # kept open for the connection's life (closed by close()): its tail explains crashes
            self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                "w+", encoding="utf-8", errors="replace"
            )
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) if config.env is not None else None,
                cwd=config.cwd,
            )
            return Client(stdio_client(params, errlog=self._stderr), **common)
        assert config.url is not None
        http = httpx2.AsyncClient(
            headers=dict(config.headers or {}),
            timeout=httpx2.Timeout(config.startup_timeout, read=max(300.0, config.timeout)),
        )
        stack.push_async_callback(http.aclose)
        return Client(streamable_http_client(config.url, http_client=http), **common)

    @staticmethod
    def _can_listen(client: Client) -> bool:
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False  # older servers notify through message_handler instead
        caps = client.server_capabilities
        return bool(
            (caps.tools is not None and caps.tools.list_changed)
            or (
                caps.resources is not None
                and (caps.resources.list_changed or caps.resources.subscribe)
            )
        )

    async def _listen(
        self,
        client: Client,
        stop: asyncio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        subscribed = False
        try:
            async with client.listen(
                tools_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=self._watch,
            ) as subscription:
                subscribed = True
                honored = subscription.honored
                self._watched = (
                    frozenset(honored.resource_subscriptions or ()) if honored else (frozenset())
                )
                task_status.started()
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._changed("tools")
                    elif isinstance(event, ResourceUpdated):
                        self._changed("resources", event.uri)
                    elif isinstance(event, ResourcesListChanged):
                        self._changed("resources")
            ended = "the server closed it"
        except Exception as exc:
            ended = f"{type(exc).__name__}: {exc}"
        finally:
            self._watched = frozenset()  # nothing is cached without a live subscription
            if not subscribed:  # calls go on without change notifications
                with contextlib.suppress(RuntimeError):
                    task_status.started()
        if not subscribed:
            logger.debug("MCP server %r: no change subscription (%s)", self.config.name, ended)
        elif not stop.is_set():
            # The server went away or restarted. Changes are not replayed, so the next call
            # connects again: a new subscription and a fresh tool list.
            self._broken = True
            logger.info("MCP server %r: change subscription ended (%s)", self.config.name, ended)

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/tools/list_changed":
            self._changed("tools")
        elif method in ("notifications/resources/list_changed", "notifications/resources/updated"):
            self._changed("resources")

    def _changed(self, kind: ChangeKind, uri: str | None = None) -> None:
        if kind == "tools":
            self.tools_revision += 1
        else:
            self.resources_revision += 1
            if uri is not None:
                self._resource_revisions[uri] = self._resource_revisions.get(uri, 0) + 1
            else:  # the list changed: any cached read may be stale
                self._resources.clear()
        if self._on_change is not None:
            try:
                self._on_change(kind)
            except Exception:
                logger.exception("MCP server %r: change handler raised", self.config.name)

    async def close(self) -> None:
        """Stop the server (or end the HTTP session). Safe to call more than once."""
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            self._forget()
            return
        await self._shutdown()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def _shutdown(self, *, cancel: bool = False) -> None:
        owner, self._owner, self._client = self._owner, None, None
        if owner is None:
            return
        if self._stop is not None:
            self._stop.set()
        if cancel:
            owner.cancel()
        # asyncio.wait never raises the owner's outcome; it stops a server within its own
        # bounded shutdown (stdin closed, then terminated, then killed).
        _, running = await asyncio.wait({owner}, timeout=10)
        if running:
            owner.cancel()
            await asyncio.wait({owner}, timeout=5)

    def _forget(self) -> None:
        """Drop state that belongs to another (finished) event loop."""
        self._owner = self._client = self._stop = self._lock = None
        self._loop = None
        self._tools = None

    # ------------------------------------------------------------------ requests
    async def request(self, what: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """Send one request with the server's deadline; errors name the server and the request."""
        client = await self.client()
        timeout = self.config.timeout
        try:
            async with asyncio.timeout(timeout + 1.0):  # the SDK's own deadline fires first
                return await send(client)
        except TimeoutError:
            raise self._timeout(what) from None
        except SDKError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise self._timeout(what) from None
            if exc.code == CONNECTION_CLOSED:
                raise self._broke(what, exc) from None
            raise MCPCallError(
                f"MCP server {self.config.name!r} refused {what}: {exc.message or exc}"
            ) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            raise self._broke(what, exc) from None
        except httpx2.HTTPError as exc:
            raise self._broke(what, exc) from None

    def _timeout(self, what: str) -> MCPTimeoutError:
        return MCPTimeoutError(
            f"MCP server {self.config.name!r} did not finish {what} within "
            f"{self.config.timeout:g} s (its timeout); the request was abandoned"
        )

    def _broke(self, what: str, exc: BaseException) -> MCPServerError:
        self._broken = True
        restart = (
            "it will be restarted at the next call"
            if self.config.transport == "stdio"
            else "it will be reconnected at the next call"
        )
        return MCPServerError(
            f"MCP server {self.config.name!r} lost its connection during {what} "
            f"({type(exc).__name__}: {exc}); the server may have crashed, {restart}"
            f"{self._stderr_note()}"
        )

    def _stderr_note(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0, 2)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL * 4))
            tail = self._stderr.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f". Its last output on stderr:\n{tail}" if tail else ""

    async def list_tools(self) -> list[types.Tool]:
        """The server's tools, fetched once and again after it says the list changed."""
        await self.client()
        cached = self._tools
        revision = self.tools_revision
        if cached is not None and cached[0] == revision:
            return cached[1]

        async def fetch(client: Client, cursor: str | None) -> tuple[list[types.Tool], str | None]:
            page = await client.list_tools(cursor=cursor)
            return page.tools, page.next_cursor

        tools = await self._all_pages("tools/list", fetch)
        self._tools = (revision, tools)
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        timeout = self.config.timeout

        async def send(client: Client) -> types.CallToolResult:
            return await client.call_tool(name, arguments, read_timeout_seconds=timeout)

        return await self.request(f"the call to tool {name!r}", send)

    async def list_resources(self) -> list[types.Resource]:
        async def fetch(
            client: Client, cursor: str | None
        ) -> tuple[list[types.Resource], str | None]:
            page = await client.list_resources(cursor=cursor)
            return page.resources, page.next_cursor

        return await self._all_pages("resources/list", fetch)

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        async def fetch(
            client: Client, cursor: str | None
        ) -> tuple[list[types.ResourceTemplate], str | None]:
            page = await client.list_resource_templates(cursor=cursor)
            return page.resource_templates, page.next_cursor

        return await self._all_pages("resources/templates/list", fetch)

    async def _all_pages(
        self,
        what: str,
        fetch: Callable[[Client, str | None], Awaitable[tuple[list[_T], str | None]]],
    ) -> list[_T]:
        """Every page of a listing (at most 100: a server that pages for ever cannot hang us)."""

        async def walk(client: Client) -> list[_T]:
            found: list[_T] = []
            cursor: str | None = None
            for _ in range(100):
                items, cursor = await fetch(client, cursor)
                found.extend(items)
                if cursor is None:
                    break
            return found

        return await self.request(what, walk)

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Read a resource; a watched one (see ``watch``) is read again only after the server
        said it was updated (or the connection was renewed)."""
        await self.client()
        key = (self.starts, self._resource_revisions.get(uri, 0))
        cached = self._resources.get(uri) if uri in self._watched else None
        if cached is not None and cached[0] == key:
            return cached[1]

        async def send(client: Client) -> types.ReadResourceResult:
            return await client.read_resource(uri)

        result = await self.request(f"reading resource {uri!r}", send)
        if uri in self._watched:
            self._resources[uri] = (key, result)
        return result


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
