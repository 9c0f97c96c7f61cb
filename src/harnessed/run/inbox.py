"""The events a run queues while work is in progress (tool results, custom events, approvals),
and a cheap way to wait for the next one.

An :class:`asyncio.Queue` read with a getter task and :func:`asyncio.wait` each time costs a
task, callbacks and an extra loop turn per wait; a call waits like that for every request it
prepares. Here a waiter is one future, woken by the next event or by the work it runs beside
ending (:meth:`EventInbox.wake`). Used on the event loop only (other threads hand their events
over with ``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

__all__ = ["EventInbox"]

E = TypeVar("E")


class EventInbox(Generic[E]):
    """A FIFO of events with one waiter at a time."""

    def __init__(self) -> None:
        self._items: deque[E] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: E) -> None:
        self._items.append(item)
        self.wake()

    def get_nowait(self) -> E:
        return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def wake(self, *_: object) -> None:
        """End the current wait (a new event, or the work beside it finished)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Until an event is queued or :meth:`wake` is called (at once if one is queued)."""
        if self._items:
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None
