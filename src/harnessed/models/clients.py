"""One SDK client per event loop.

An ``httpx`` connection pool belongs to the event loop that opened its connections. A server
that keeps connections alive (every real one does) leaves them pooled after an answer, and a
second ``asyncio.run`` — or a second ``agent.call_sync`` — would try to reuse a connection
whose loop is closed (``RuntimeError: Event loop is closed``). :class:`PerLoop` gives each
running loop its own client and forgets clients whose loop is gone.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

__all__ = ["PerLoop", "close_client", "keep_open"]

C = TypeVar("C")


class PerLoop(Generic[C]):
    """Clients made by ``factory``, one per running event loop, closed with ``close``."""

    def __init__(self, factory: Callable[[], C], close: Callable[[C], Awaitable[None]]) -> None:
        self._factory = factory
        self._close = close
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, C] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> C:
        """The client of the running loop, made on first use."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._factory()
        return client

    async def aclose(self) -> None:
        """Close the running loop's client; clients of other loops are only forgotten (their
        loops are closed, or will close their connections themselves)."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        client = self._clients.pop(loop, None) if loop is not None else None
        self._clients.clear()
        if client is not None:
            await self._close(client)


async def close_client(client: Any) -> None:
    """Close an SDK client (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``)."""
    await client.close()


async def keep_open(client: Any) -> None:
    """For a client the application passed in: it is the application's to close."""
