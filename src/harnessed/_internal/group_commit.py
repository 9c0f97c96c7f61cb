"""Group commit: concurrent appends share a write and an fsync.

An fsync costs the same whatever it flushes, and so does every hand-off to a worker thread and
every database transaction. So instead of paying them per append, appends that arrive while a
batch is in progress wait for the next batch and go out together. An append that finds nothing
in progress is written at once by its own caller; the appends that arrive meanwhile go out
together after it, and so on while they keep coming. A single appender pays one round per
append; many concurrent appenders pay one per batch, so throughput grows with concurrency.

A batch may fail as a whole (its ``write`` raises: every item fails with that error) or item by
item (``write`` returns :class:`Failed` for some of them): an fsync that fails for one file
fails the appends to that file, not those of the files written beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Failed", "GroupCommit"]

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(frozen=True, slots=True)
class Failed:
    """The result of an item of a batch that failed (the rest of the batch may have not)."""

    error: BaseException


@dataclass(slots=True)
class _Queue(Generic[In, Out]):
    loop: asyncio.AbstractEventLoop
    waiting: list[tuple[In, asyncio.Future[Out]]] = field(default_factory=list)
    running: bool = False
    task: asyncio.Task[None] | None = None


class GroupCommit(Generic[In, Out]):
    """Runs ``await write(key, items) -> results`` for batches of items submitted concurrently
    under the same key, one batch at a time per key; each submitter gets its own result (or
    its own :class:`Failed` error). Use one key for everything to batch across all of it."""

    def __init__(
        self, write: Callable[[object, list[In]], Awaitable[Sequence[Out | Failed]]]
    ) -> None:
        self._write = write
        self._queues: dict[object, _Queue[In, Out]] = {}

    async def submit(self, key: object, item: In) -> Out:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(key)
        if queue is None or queue.loop is not loop:
            queue = self._queues[key] = _Queue(loop)
        if queue.running:
            future: asyncio.Future[Out] = loop.create_future()
            queue.waiting.append((item, future))
            return await future
        # Nothing in progress: write this item at once, from here (no task, no future); what
        # arrives meanwhile waits, and is written in batches by a drain task started after.
        queue.running = True
        try:
            results = await self._write(key, [item])
        finally:
            if queue.waiting:
                queue.task = loop.create_task(self._drain(key, queue))
            else:
                queue.running = False
                if self._queues.get(key) is queue:
                    del self._queues[key]
        (result,) = results
        if isinstance(result, Failed):
            raise result.error
        return result

    async def _drain(self, key: object, queue: _Queue[In, Out]) -> None:
        try:
            while True:
                if not queue.waiting:
                    # let the submitters just answered run first: one that appends again at
                    # once (a loop step's next record) joins this drain instead of a new one
                    await asyncio.sleep(0)
                    if not queue.waiting:
                        break
                batch, queue.waiting = queue.waiting, []
                try:
                    results = await self._write(key, [i for i, _ in batch])
                except BaseException as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
                for (_, future), result in zip(batch, results, strict=True):
                    if future.done():
                        continue
                    if isinstance(result, Failed):
                        future.set_exception(result.error)
                    else:
                        future.set_result(result)
        finally:
            queue.running = False
            for _, future in queue.waiting:  # only when the drain itself was cancelled
                if not future.done():
                    future.set_exception(RuntimeError("the log writer stopped before this append"))
            queue.waiting = []
            if self._queues.get(key) is queue:
                del self._queues[key]
