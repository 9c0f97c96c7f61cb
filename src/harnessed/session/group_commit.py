"""Group commit: concurrent appends to one file (or database) share a write and an fsync.

An fsync costs milliseconds whatever it flushes, so instead of one fsync per append, appends
that arrive while a write is in progress wait for the next one and go out together: one
``write`` and one ``fsync`` for the whole group. A single appender pays one fsync per append;
many concurrent appenders pay one per group, so throughput grows with concurrency.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["GroupCommit"]

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(slots=True)
class _Queue(Generic[In, Out]):
    loop: asyncio.AbstractEventLoop
    waiting: list[tuple[In, asyncio.Future[Out]]] = field(default_factory=list)
    running: bool = False
    task: asyncio.Task[None] | None = None


class GroupCommit(Generic[In, Out]):
    """Runs ``await write(key, items) -> results`` for groups of items submitted concurrently
    under the same key, one group at a time per key; each submitter gets its own result."""

    def __init__(self, write: Callable[[object, list[In]], Awaitable[list[Out]]]) -> None:
        self._write = write
        self._queues: dict[object, _Queue[In, Out]] = {}

    async def submit(self, key: object, item: In) -> Out:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(key)
        if queue is None or queue.loop is not loop:
            queue = self._queues[key] = _Queue(loop)
        future: asyncio.Future[Out] = loop.create_future()
        queue.waiting.append((item, future))
        if not queue.running:
            queue.running = True
            queue.task = loop.create_task(self._drain(key, queue))
        return await future

    async def _drain(self, key: object, queue: _Queue[In, Out]) -> None:
        try:
            while queue.waiting:
                group, queue.waiting = queue.waiting, []
                try:
                    results = await self._write(key, [i for i, _ in group])
                except BaseException as exc:
                    for _, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
                for (_, future), result in zip(group, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            queue.running = False
            for _, future in queue.waiting:  # only when the drain itself was cancelled
                if not future.done():
                    future.set_exception(RuntimeError("the log writer stopped before this append"))
            queue.waiting = []
            if self._queues.get(key) is queue:
                del self._queues[key]
