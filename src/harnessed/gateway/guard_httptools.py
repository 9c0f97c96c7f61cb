"""uvicorn's httptools protocol held to the server's limits (needs ``httptools``; see
:mod:`harnessed.gateway.guard` for what the guard does)."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from harnessed.gateway.guard import ConnectionGuard, limits_of

__all__ = ["GuardedHttpToolsProtocol"]


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol held to the config's limits (``--http
    harnessed.gateway.guard_httptools:GuardedHttpToolsProtocol`` for a plain uvicorn)."""

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

    def on_headers_complete(self) -> None:
        self.guard.head_done()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.guard.body_done()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.guard.response_done()
