"""Serving the HTTP channel with uvicorn under :class:`ServerLimits` (what ``harnessed serve``
runs): ``serve(create_app(...))``, or ``server_config(app)`` for a ``uvicorn.Server`` of your
own."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from harnessed.gateway.guard import GuardedConfig, GuardedH11Protocol
from harnessed.gateway.limits_server import ServerLimits

__all__ = ["guarded_protocol", "serve", "server_config"]

_log = logging.getLogger("harnessed.gateway")


def guarded_protocol() -> type[asyncio.Protocol]:
    """The guarded HTTP/1.1 protocol: httptools' when it is installed (faster), else h11's."""
    try:
        from harnessed.gateway.guard_httptools import GuardedHttpToolsProtocol
    except ImportError:
        return GuardedH11Protocol
    return GuardedHttpToolsProtocol


def server_config(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ServerLimits | None = None,
    **uvicorn_options: Any,
) -> GuardedConfig:
    """A uvicorn config serving ``app`` with every connection held to ``limits`` (the
    defaults of :class:`ServerLimits` unless given); other options go to ``uvicorn.Config``.

    Raises:
        ValueError: The open-file limit leaves no room for connections.
    """
    limits = limits or ServerLimits()
    cap = limits.connection_cap()
    if cap < limits.max_connections:
        _log.warning(
            "serving at most %d connections (max_connections %d does not fit the open-file "
            "limit with %d descriptors reserved; raise it with ulimit -n)",
            cap,
            limits.max_connections,
            limits.reserved_fds,
        )
    uvicorn_options.setdefault("http", guarded_protocol())
    uvicorn_options.setdefault("ws", "none")  # the channel has no websocket routes
    return GuardedConfig(app, limits=limits, host=host, port=port, **uvicorn_options)


def serve(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ServerLimits | None = None,
    **uvicorn_options: Any,
) -> None:
    """Run ``app`` with uvicorn until it is stopped, under ``limits``."""
    import uvicorn

    uvicorn.Server(server_config(app, host=host, port=port, limits=limits, **uvicorn_options)).run()
