"""What the HTTP server allows a client: how long a request head and body may take to arrive,
how long an idle connection stays open, how many connections are open at once and how large a
request head may be (:class:`ServerLimits`)."""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass, fields

__all__ = ["ServerLimits"]


@dataclass(frozen=True)
class ServerLimits:
    """Limits the server holds every connection to (slow or idle clients cannot pile up).

    Args:
        header_timeout: Seconds a request head may take to arrive, from the connection's
            opening or the first byte of the next request on a kept-alive connection; a head
            still incomplete then gets 408 and the connection is closed.
        body_timeout: Seconds a request body may take to arrive after its head; then 408 and
            the connection is closed (the app sees the client leave). Time in which the server
            itself holds the body back is not counted.
        keep_alive_timeout: Seconds an idle connection stays open between requests.
        max_connections: Connections open at once. A connection beyond it closes the one
            that has waited longest without a request in progress (an idle or slow client);
            when every connection is serving a request it gets 503 at once. It is lowered to
            the process's open-file limit minus ``reserved_fds`` when that is smaller.
        max_header_bytes: Largest request head (request line and headers); a larger one gets
            431 and the connection is closed.
        reserved_fds: File descriptors kept out of the connection cap, for what the agents
            open themselves (files, stores, model and tool connections, sandboxes).

    Responses that stream (server-sent events) are never cut by these timeouts: they bound
    what the client sends, not how long the server answers.
    """

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive_timeout: float = 30.0
    max_connections: int = 1000
    max_header_bytes: int = 16_384
    reserved_fds: int = 256

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if field.type == "float":
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise TypeError(f"ServerLimits.{field.name} must be a number of seconds")
                if not (value > 0 and math.isfinite(value)):
                    raise ValueError(
                        f"ServerLimits.{field.name} must be a positive number of seconds, "
                        f"got {value!r}"
                    )
            elif isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"ServerLimits.{field.name} must be an integer, got {value!r}")
        if self.max_connections < 1:
            raise ValueError(
                f"ServerLimits.max_connections must be at least 1, got {self.max_connections}"
            )
        if self.max_header_bytes < 1024:
            raise ValueError(
                f"ServerLimits.max_header_bytes must be at least 1024, got {self.max_header_bytes}"
            )
        if self.reserved_fds < 0:
            raise ValueError(
                f"ServerLimits.reserved_fds must not be negative, got {self.reserved_fds}"
            )

    def connection_cap(self, open_file_limit: int | None = None) -> int:
        """``max_connections``, lowered to fit under the open-file limit (the process's soft
        ``RLIMIT_NOFILE`` unless given) with ``reserved_fds`` left over."""
        if open_file_limit is None:
            soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
            open_file_limit = soft if soft != resource.RLIM_INFINITY else None
        if open_file_limit is None:
            return self.max_connections
        room = open_file_limit - self.reserved_fds
        if room < 1:
            raise ValueError(
                f"the open-file limit ({open_file_limit}) leaves no room for connections after "
                f"ServerLimits.reserved_fds ({self.reserved_fds}): raise it (ulimit -n) or "
                "lower reserved_fds"
            )
        return min(self.max_connections, room)
