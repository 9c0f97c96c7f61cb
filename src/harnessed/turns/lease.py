"""Holding a session's turn lease while work runs, renewed in the background.

The key names the session the same way wherever a turn starts (:class:`AgentSession`'s turns
and plain ``agent.call`` / ``stream_events``), so they exclude each other across processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from harnessed.turns.gate import LeaseLostError, TurnGate, TurnLease

__all__ = ["keep_renewed", "turn_lease"]

logger = logging.getLogger(__name__)


async def keep_renewed(
    gate: TurnGate, lease: TurnLease, on_lost: Callable[[], None], *, wait_first: bool = True
) -> None:
    """Renew ``lease`` every third of its length until cancelled (the first time at once with
    ``wait_first=False``); ``on_lost`` runs (once) if another holder took it over meanwhile. A
    renewal that fails otherwise is retried."""
    while True:
        if wait_first:
            await asyncio.sleep(gate.lease_seconds / 3)
        wait_first = True
        try:
            lease = await gate.renew(lease)
        except LeaseLostError:
            on_lost()
            return
        except Exception:
            logger.warning("could not renew the turn lease of %s", lease.session, exc_info=True)


class _Renewal:
    """Renews a lease from a third of its length on. Most work ends sooner: until then it is
    one timer, not a task (a plain ``agent.call`` takes a lease every time)."""

    def __init__(self, gate: TurnGate, lease: TurnLease, on_lost: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[None] | None = None
        self._args = (gate, lease, on_lost)
        self._timer = self._loop.call_later(gate.lease_seconds / 3, self._start)

    def _start(self) -> None:
        self._task = self._loop.create_task(keep_renewed(*self._args, wait_first=False))

    def stop(self) -> None:
        self._timer.cancel()
        if self._task is not None:
            self._task.cancel()


@contextlib.asynccontextmanager
async def turn_lease(
    gate: TurnGate, key: str, on_lost: Callable[[], None]
) -> AsyncIterator[TurnLease]:
    """Wait for the session's lease, keep it renewed inside, give it back at the end."""
    lease = await gate.acquire(key)
    renewal = _Renewal(gate, lease, on_lost)
    try:
        yield lease
    finally:
        renewal.stop()
        try:  # given back even when the work was cancelled; if that fails, it expires
            await asyncio.shield(gate.release(lease))
        except Exception:
            logger.warning("could not release the turn lease of %s", key, exc_info=True)
