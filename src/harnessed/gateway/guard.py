"""Connection guards for uvicorn: every connection of the HTTP channel is held to the server's
:class:`~harnessed.gateway.limits_server.ServerLimits`.

uvicorn bounds the time between requests on a kept-alive connection, but nothing else a
client sends: a connection that sends its request head one byte at a time (or nothing at all),
or a body that never ends, stays open for ever, and a few hundred of them use up the process's
file descriptors, after which nobody is served. The guard, one per connection, gives the
head and the body a deadline each, refuses a head over the size limit with 431 (before
the parser has buffered more than that), and keeps the number of open connections under a
cap: a connection beyond it replaces the connection that has waited longest without a
request in progress, or gets 503 when every connection is serving one.

The guard hooks into uvicorn's protocols at four points: the bytes received, the end of a
request head, the end of a request body, and the end of a response. :class:`GuardedH11Protocol`
(here) and ``GuardedHttpToolsProtocol`` (:mod:`harnessed.gateway.guard_httptools`) are uvicorn's
two HTTP/1.1 protocols with those hooks. A guard only times what the client sends: once a
head is in, the response takes as long as it takes (a turn's event stream runs for minutes).
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, Protocol

import h11
import uvicorn
from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from harnessed.gateway.limits_server import ServerLimits

__all__ = ["ConnectionGuard", "GuardedConfig", "GuardedH11Protocol", "limits_of"]

_log = logging.getLogger("harnessed.gateway")


class GuardedConfig(uvicorn.Config):
    """A uvicorn config that carries the :class:`ServerLimits` its guarded protocols read."""

    def __init__(self, app: Any, *, limits: ServerLimits, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.limits = limits


def limits_of(config: uvicorn.Config) -> ServerLimits:
    """The limits of a server's config (the defaults for a plain uvicorn config)."""
    return config.limits if isinstance(config, GuardedConfig) else _DEFAULT_LIMITS


_DEFAULT_LIMITS = ServerLimits()


class _Cycle(Protocol):
    """What the guard uses of a uvicorn request/response cycle."""

    response_started: bool
    response_complete: bool
    disconnected: bool
    message_event: asyncio.Event


class _Connection(Protocol):
    """What the guard uses of a uvicorn HTTP protocol object."""

    @property
    def transport(self) -> asyncio.Transport: ...
    @property
    def flow(self) -> FlowControl: ...
    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...
    @property
    def cycle(self) -> _Cycle | None: ...


class _Registry:
    """The guards of one server: which are open, and which wait without a request in progress
    (oldest first)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: set[ConnectionGuard] = set()  # every connection under the cap
        self.idle: dict[ConnectionGuard, None] = {}
        self.lingering: dict[ConnectionGuard, None] = {}  # answered, half-closed (under the cap)
        self.refused = 0  # refused connections lingering (outside the cap, at most MAX_REFUSED)


# a connection closed with an error answer stays half-open this long for its client to read
# the answer (closing at once while the client still sends would reset the connection and lose
# it); of the connections refused at the cap at most this many linger, the rest close at once
LINGER_SECONDS = 1.0
MAX_REFUSED = 64

_registries: weakref.WeakKeyDictionary[ServerState, _Registry] = weakref.WeakKeyDictionary()


def _registry(server_state: ServerState, limits: ServerLimits) -> _Registry:
    registry = _registries.get(server_state)
    if registry is None:
        registry = _registries[server_state] = _Registry(limits.connection_cap())
    return registry


def error_response(status: int, detail: str) -> bytes:
    """A complete ``Connection: close`` response with a JSON ``detail`` (the app's shape)."""
    body = json.dumps({"detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class ConnectionGuard:
    """The limits of one connection: deadlines for the head and the body, the head's size,
    its place under the server's connection cap."""

    __slots__ = (
        "__weakref__",
        "awaiting_head",
        "head_bytes",
        "heads",
        "limits",
        "lingering",
        "owner",
        "reading_body",
        "refused",
        "registry",
        "timer",
    )

    def __init__(self, owner: _Connection, limits: ServerLimits, server_state: ServerState):
        self.owner = owner
        self.limits = limits
        self.registry = _registry(server_state, limits)
        self.awaiting_head = True  # no request head has begun since the last one ended
        self.head_bytes = 0  # bytes received of the head being read
        self.heads = 0  # request heads received
        self.reading_body = False  # a head is in, its body is not
        self.timer: asyncio.TimerHandle | None = None
        self.lingering = False  # answered and half-closed: what the client sends is dropped
        self.refused = False  # lingering after a refusal at the cap

    # ------------------------------------------------------------------ hooks
    def connected(self) -> None:
        """The connection opened: take a place under the cap (or refuse), start the head's
        clock (a client that connects and sends nothing is a slow head too)."""
        registry = self.registry
        if len(registry.open) >= registry.cap:
            # a connection that is done, or waits without a request in progress, makes room
            victim = next(iter(registry.lingering), None) or next(iter(registry.idle), None)
            if victim is None:
                self._close(503, "the server has too many open connections; try again later")
                return
            victim._release()
            victim.owner.transport.close()
        registry.open.add(self)
        registry.idle[self] = None
        self._arm(self.limits.header_timeout, self._head_timed_out)

    def received(self, data: bytes, feed: Callable[[bytes], None]) -> None:
        """Bytes from the client: ``feed`` gives them to the parser, the head's part at most
        up to the size limit."""
        if self.lingering:
            return
        if self.awaiting_head and data:
            if self.head_bytes == 0 and not self._busy():  # a head begins: its clock starts
                self._arm(self.limits.header_timeout, self._head_timed_out)
            room = self.limits.max_header_bytes - self.head_bytes
            if len(data) > room:
                heads = self.heads
                if room > 0:
                    self.head_bytes += room
                    feed(data[:room])
                if self.heads == heads:  # the head did not end within the limit
                    self._close(
                        431,
                        f"the request head is larger than the limit of "
                        f"{self.limits.max_header_bytes} bytes",
                    )
                    return
                if not self.owner.transport.is_closing():
                    self.received(data[room:], feed)
                return
            self.head_bytes += len(data)
        feed(data)
        if self.reading_body and self.timer is None and not self.owner.transport.is_closing():
            self._arm(self.limits.body_timeout, self._body_timed_out)

    def head_done(self) -> None:
        """The parser has a complete request head: its clock stops, the body's may start."""
        self.awaiting_head = False
        self.head_bytes = 0
        self.heads += 1
        self.reading_body = True
        self.registry.idle.pop(self, None)
        self._cancel()

    def body_done(self) -> None:
        """The request is complete: nothing more is timed until the next head begins."""
        self.reading_body = False
        self.awaiting_head = True
        self.head_bytes = 0
        self._cancel()
        if not self._busy() and not self.lingering:
            # answered before its body ended (413, 401): uvicorn arms no keep-alive timer
            # once the body is drained, so the connection would stay open, idle, for ever
            self.registry.idle[self] = None
            self._arm(self.limits.keep_alive_timeout, self._idle_timed_out)

    def response_done(self) -> None:
        """A response ended: the connection waits for its next request (idle, so it can
        make room for a new connection at the cap)."""
        if self.lingering or not self.awaiting_head or self._busy():
            return
        if self.owner.transport.is_closing():
            return
        self.registry.idle.pop(self, None)
        self.registry.idle[self] = None  # to the end: the newest idle one
        if self.head_bytes and self.timer is None:  # part of a pipelined head is waiting
            self._arm(self.limits.header_timeout, self._head_timed_out)

    def lost(self) -> None:
        self._release()

    # ------------------------------------------------------------------ deadlines
    def _head_timed_out(self) -> None:
        self.timer = None
        if self.awaiting_head and not self._busy():
            self._close(408, "the request head did not arrive in time")

    def _idle_timed_out(self) -> None:
        self.timer = None
        if self.awaiting_head and self.head_bytes == 0 and not self._busy():
            self._close(None, "")

    def _body_timed_out(self) -> None:
        self.timer = None
        if not self.reading_body:
            return
        if self.owner.flow.read_paused:  # the app holds the body back, not the client
            self._arm(self.limits.body_timeout, self._body_timed_out)
            return
        self._close(408, "the request body did not arrive in time")

    # ------------------------------------------------------------------ helpers
    def _busy(self) -> bool:
        cycle = self.owner.cycle
        return cycle is not None and not cycle.response_complete

    def _arm(self, delay: float, callback: Callable[[], None]) -> None:
        self._cancel()
        self.timer = self.owner.loop.call_later(delay, callback)

    def _cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _release(self) -> None:
        """Out of the server's books (the connection is closed or closing)."""
        self._cancel()
        registry = self.registry
        registry.open.discard(self)
        registry.idle.pop(self, None)
        registry.lingering.pop(self, None)
        if self.refused:
            self.refused = False
            registry.refused -= 1

    def _close(self, status: int | None, detail: str) -> None:
        """Close the connection, with an error response when no response has begun (the app
        of a request in progress learns that its client left)."""
        transport = self.owner.transport
        if transport.is_closing():
            self._release()
            return
        cycle = self.owner.cycle
        if self.awaiting_head:  # between requests: answer unless a response still runs
            answer = not self._busy()
        else:  # the request of this head: answer unless the app has begun to
            answer = cycle is None or not cycle.response_started
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app's later writes go nowhere
            cycle.message_event.set()
        if status is not None and answer:
            transport.write(error_response(status, detail))
            _log.debug("closed a connection: %s %s", status, detail)
            registry = self.registry
            counted = self in registry.open
            if transport.can_write_eof() and (counted or registry.refused < MAX_REFUSED):
                # half-close: the client reads the answer, then its end of file (or the
                # linger's end) closes the connection
                transport.write_eof()
                self._cancel()
                registry.idle.pop(self, None)
                if counted:
                    registry.lingering[self] = None
                else:
                    self.refused = True
                    registry.refused += 1
                self.lingering = True
                self.timer = self.owner.loop.call_later(LINGER_SECONDS, transport.close)
                return
        self._release()
        transport.close()


class _HookedConnection(h11.Connection):
    """h11's connection telling the guard where a request head and a request end."""

    def __init__(self, guard: ConnectionGuard, max_incomplete_event_size: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_incomplete_event_size)
        self._guard = guard

    def next_event(self) -> Any:
        event = super().next_event()
        if isinstance(event, h11.Request):
            self._guard.head_done()
        elif isinstance(event, h11.EndOfMessage):
            self._guard.body_done()
        return event


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol held to the config's :class:`ServerLimits` (``--http
    harnessed.gateway.guard:GuardedH11Protocol`` gives a plain uvicorn the defaults)."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        limits = limits_of(config)
        self.guard = ConnectionGuard(self, limits, server_state)
        # the guard never lets the parser hold more of a head than the limit
        self.conn = _HookedConnection(
            self.guard, max(limits.max_header_bytes, DEFAULT_MAX_INCOMPLETE_EVENT_SIZE)
        )
        # uvicorn types it int; the timer takes any number of seconds
        self.timeout_keep_alive = limits.keep_alive_timeout  # type: ignore[assignment]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.guard.connected()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.lost()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.guard.received(data, super().data_received)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.guard.response_done()
