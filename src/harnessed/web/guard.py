"""Which addresses ``web_fetch`` may connect to, enforced where connections are made.

The check runs in the HTTP client's network backend, for every TCP connection: the host name
is resolved here, every address of the answer is checked, and the connection goes to a checked
address (never resolved again by someone else). A redirect opens a new connection, so it is
checked the same way; a name that resolves to a private address is refused even when it looks
public. Proxies from the environment are not used (they would connect on our behalf,
unchecked).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import httpcore

from harnessed.web.policy import BlockedAddressError, NetworkPolicy

__all__ = ["BlockedAddressError", "GuardedBackend", "NetworkPolicy"]


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the policy's check before every TCP connection."""

    def __init__(self, policy: NetworkPolicy) -> None:
        self.policy = policy
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            ipaddress.ip_address(host.strip("[]"))
            answers = [host.strip("[]")]
        except ValueError:
            loop = asyncio.get_running_loop()
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            answers = [str(info[4][0]) for info in infos]
        allowed = self.policy.check(host, answers)
        last: Exception | None = None
        for address in allowed:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddressError("web_fetch does not connect to local sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
