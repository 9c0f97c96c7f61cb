"""Cooperative time slicing: agent runs that share an event loop take turns with everything
else on it.

asyncio runs every callback that is ready before it looks at its sockets again. When two
hundred turns become ready together (their requests or their model answers arrived in the same
instant), one pass of the loop does all their work, and a request that arrives meanwhile waits
for all of it: a server under load answers new requests late while the work of accepted ones
goes on. So runs pass checkpoints: when a session's turn starts, before each event a run
yields, and before the work a run hands to a task (preparing a request, running tools). The
first checkpoint of a pass of the loop opens a slice of time; until it ends a checkpoint costs
a clock read. After it, runs wait in line and go on in order, a batch per pass (sized so that
a batch takes about a slice), and the loop reads its sockets between batches. Like Tokio's
cooperative budget, this changes the order of the work, not its amount.

:func:`set_time_slice` sets the slice for the process (``None`` turns the checkpoints off).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections import deque
from time import perf_counter

__all__ = ["DEFAULT_TIME_SLICE", "checkpoint", "set_time_slice", "time_slice"]

DEFAULT_TIME_SLICE = 0.002
"""Seconds of run work per pass of the event loop before runs wait in line."""

_MAX_BATCH = 4096


class _Share:
    """The checkpoint line of one event loop."""

    __slots__ = (
        "batch",
        "bounced",
        "deadline",
        "fitted",
        "fresh",
        "front",
        "queue",
        "scheduled",
    )

    def __init__(self) -> None:
        self.queue: deque[asyncio.Future[None]] = deque()
        self.front: deque[asyncio.Future[None]] = deque()
        """Runs let through whose slice had ended before they ran: first in line again."""
        self.deadline: float | None = None
        """When the open slice ends (``None``: none is open)."""
        self.fresh = False
        """The next run let through opens a new slice (a batch gets a whole one)."""
        self.scheduled = False
        self.batch = 16
        """How many runs one pass lets through (what fitted in the last slice)."""
        self.fitted = 0
        self.bounced = 0

    async def wait(self, slice_: float) -> None:
        if self.queue or self.front:  # nobody overtakes the line
            await self._line_up(slice_, self.queue)
            return
        now = perf_counter()
        if self.deadline is None:  # the first checkpoint of this pass opens its slice
            self._open(now, slice_)
        elif now >= self.deadline:
            await self._line_up(slice_, self.queue)

    def _open(self, now: float, slice_: float) -> None:
        self.deadline = now + slice_
        asyncio.get_running_loop().call_soon(self._close_slice)

    def _close_slice(self) -> None:
        self.deadline = None

    async def _line_up(self, slice_: float, line: deque[asyncio.Future[None]]) -> None:
        while True:
            waiter = asyncio.get_running_loop().create_future()
            line.append(waiter)
            if not self.scheduled:
                self.scheduled = True
                asyncio.get_running_loop().call_soon(self._release)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._release_one()  # the place it was given passes to the next in line
                raise
            now = perf_counter()
            if self.fresh or self.deadline is None:
                self.fresh = False
                self._open(now, slice_)
            elif now >= self.deadline:  # the batch used the slice up before this one ran
                self.bounced += 1
                line = self.front
                continue
            self.fitted += 1
            return

    def _release(self) -> None:
        """A later pass of the loop (it read its sockets meanwhile): the next batch goes on,
        as many as fitted in the last slice (twice as many when all of them fitted)."""
        self.scheduled = False
        if self.fitted or self.bounced:
            self.batch = max(1, self.fitted) if self.bounced else min(_MAX_BATCH, 2 * self.batch)
            self.fitted = self.bounced = 0
        woken = 0
        while woken < self.batch and self._release_one():
            woken += 1
        if woken:
            self.fresh = True
        if woken or self.queue or self.front:  # the next pass counts this batch, goes on
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._release)

    def _release_one(self) -> bool:
        while self.front or self.queue:
            waiter = (self.front or self.queue).popleft()
            if not waiter.done():
                waiter.set_result(None)
                return True
        return False


_shares: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Share] = weakref.WeakKeyDictionary()
_slice: float | None = DEFAULT_TIME_SLICE


def set_time_slice(seconds: float | None) -> None:
    """Set how long runs may keep an event loop busy before they wait in line (default
    :data:`DEFAULT_TIME_SLICE`; process-wide). ``None`` turns checkpoints off: every run
    goes on as soon as it can, as plain asyncio does."""
    global _slice
    if seconds is not None and not (
        isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and math.isfinite(seconds)
        and seconds > 0
    ):
        raise ValueError(
            f"the time slice must be a positive number of seconds or None, got {seconds!r}"
        )
    _slice = None if seconds is None else float(seconds)


def time_slice() -> float | None:
    """The time slice in effect (``None``: checkpoints are off)."""
    return _slice


async def checkpoint() -> None:
    """Let other work on this event loop go first if runs have used up the current slice."""
    slice_ = _slice
    if slice_ is None:
        return
    loop = asyncio.get_running_loop()
    share = _shares.get(loop)
    if share is None:
        share = _shares[loop] = _Share()
    await share.wait(slice_)
