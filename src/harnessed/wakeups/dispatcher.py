"""Firing due wake-ups: :class:`WakeupDispatcher` and :func:`fire_wakeup`.

The process that serves the agents runs a dispatcher (``harnessed serve`` does; an
application runs :meth:`WakeupDispatcher.run` in its own loop, or calls
:meth:`WakeupDispatcher.run_due` when it likes). Each pass claims the due wake-ups of its
agents from their stores, starts one turn per wake-up in its session and settles it (dropped,
or a cron wake-up moved to its next time).

Exactly once, twice over: a claim gives a due wake-up to one process only (until its claim
runs out), and the turn is submitted with the firing's idempotency key, kept in the session
log, so even a process that lost its claim mid-way (it hung past ``claim_seconds``) cannot
start a second turn for the same firing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from harnessed.messages import Msg, new_id
from harnessed.runtime import RuntimeContext
from harnessed.wakeups.spec import Wakeup, iso, next_cron
from harnessed.wakeups.store import WakeupStore

if TYPE_CHECKING:
    from harnessed.sessions.deps import SessionHost
    from harnessed.sessions.turn import Turn
    from harnessed.turns.ended import TurnView
    from harnessed.wakeups.capability import Wakeups

__all__ = ["OnWoken", "WakeupDispatcher", "fire_wakeup", "wakeup_message"]

logger = logging.getLogger(__name__)

OnWoken = Callable[["Wakeup", "TurnView"], Awaitable[None]]
"""Called with each woken turn once it is queued (a channel awaits ``turn.result()`` and sends
the reply to the session's outbound address); its errors are logged. A dispatcher gives the
live :class:`~harnessed.sessions.Turn`; on Temporal the worker calls it after the turn ended,
with an :class:`~harnessed.turns.ended.EndedTurn` (the same read API; its events are the end
only)."""


def wakeup_message(wakeup: Wakeup) -> Msg:
    """The input of a woken turn: the note, saying that it is a wake-up and when it was due
    (the same text for the same firing, whichever process fires it)."""
    how = f"on the schedule {wakeup.cron!r}" if wakeup.cron else "once"
    text = (
        f"[Wake-up {wakeup.id}: you asked to be woken {how}; this one was due at "
        f"{iso(wakeup.due_at)}.]\n{wakeup.note}"
    )
    return Msg.user(
        text,
        metadata={"wakeup": {"id": wakeup.id, "fired": wakeup.fired, "due_at": wakeup.due_at}},
    )


async def fire_wakeup(agent: SessionHost, wakeup: Wakeup) -> Turn:
    """Start the woken turn of ``wakeup`` in its session (queued behind a running turn). The
    same firing returns the turn already started, here or in another process."""
    session = agent.session(RuntimeContext(wakeup.user_id, wakeup.session_id))
    return await session.submit(wakeup_message(wakeup), wakeup.firing_key)


def _capability(agent: SessionHost) -> Wakeups | None:
    from harnessed.wakeups.capability import Wakeups

    find = getattr(agent, "capability", None)
    return find(Wakeups) if callable(find) else None


class WakeupDispatcher:
    """Fires the due wake-ups of ``agents`` (those with a :class:`Wakeups` capability whose
    store is a :class:`~harnessed.wakeups.WakeupStore`; other agents are left out).

    Args:
        agents: The agents this process serves.
        on_woken: An outbound hook for every agent's wake-ups (see :data:`OnWoken`), besides
            the one of each agent's :class:`Wakeups` capability.
        batch: The most wake-ups one pass claims per agent.
        clock: Epoch seconds now (tests pass a clock of their own).
    """

    def __init__(
        self,
        agents: Iterable[SessionHost],
        *,
        on_woken: OnWoken | None = None,
        batch: int = 20,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(batch, int) or batch < 1:
            raise ValueError(f"WakeupDispatcher batch must be at least 1, got {batch!r}")
        self.holder = new_id("wd_")
        """This dispatcher's name in claims."""
        self.on_woken = on_woken
        self.batch = batch
        self.clock = clock
        self._served: list[tuple[SessionHost, Wakeups, WakeupStore]] = []
        for agent in agents:
            capability = _capability(agent)
            if capability is None:
                continue
            store = capability.store
            if isinstance(store, WakeupStore):
                self._served.append((agent, capability, store))
        self._task: asyncio.Task[None] | None = None
        self._hooks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        names = [agent.name for agent, _, _ in self._served]
        return f"WakeupDispatcher({names!r})"

    @property
    def active(self) -> bool:
        """Whether any of the agents has wake-ups to fire."""
        return bool(self._served)

    async def run_due(self) -> list[Turn]:
        """One pass: fire every wake-up due now; returns the turns started (or found already
        started for that firing)."""
        turns: list[Turn] = []
        for agent, capability, store in self._served:
            now = self.clock()
            claimed = await store.claim(
                {agent.name}, self.holder, now, capability.config.claim_seconds, self.batch
            )
            for wakeup in claimed:
                turn = await self._fire(agent, capability, store, wakeup, now)
                if turn is not None:
                    turns.append(turn)
        return turns

    async def _fire(
        self,
        agent: SessionHost,
        capability: Wakeups,
        store: WakeupStore,
        wakeup: Wakeup,
        now: float,
    ) -> Turn | None:
        try:
            turn = await fire_wakeup(agent, wakeup)
        except Exception:  # its claim runs out and another pass tries again
            logger.exception("could not fire wake-up %s of %r", wakeup.id, agent.name)
            return None
        next_due = None
        if wakeup.cron is not None:
            try:
                next_due = next_cron(wakeup.cron, max(now, wakeup.due_at), capability.config.tz)
            except Exception:  # pragma: no cover - the spec was checked when it was added
                logger.exception("wake-up %s: cron spec %r failed", wakeup.id, wakeup.cron)
        if not await store.settle(wakeup, self.holder, next_due):
            logger.warning("wake-up %s: its claim ran out before it was settled", wakeup.id)
        for on_woken in (capability.on_woken, self.on_woken):
            if on_woken is not None:
                hook = asyncio.create_task(self._woken(on_woken, wakeup, turn))
                self._hooks.add(hook)
                hook.add_done_callback(self._hooks.discard)
        return turn

    @staticmethod
    async def _woken(on_woken: OnWoken, wakeup: Wakeup, turn: Turn) -> None:
        try:
            await on_woken(wakeup, turn)
        except Exception:
            logger.exception("the on_woken hook failed for wake-up %s", wakeup.id)

    async def run(self) -> None:
        """Fire due wake-ups until cancelled: a pass, then a sleep until the next one is due
        (at most ``poll_seconds`` of the agents' configs, so wake-ups added by other processes
        are seen)."""
        if not self._served:
            return
        poll = min(c.config.poll_seconds for _, c, _ in self._served)
        while True:
            try:
                await self.run_due()
                wait = poll
                for agent, _, store in self._served:
                    due = await store.next_due({agent.name})
                    if due is not None:
                        wait = min(wait, max(0.0, due - self.clock()))
            except Exception:  # a store that is down: try again later
                logger.exception("wake-up pass failed")
                wait = poll
            await asyncio.sleep(max(wait, 0.01))

    def start(self) -> asyncio.Task[None]:
        """Run :meth:`run` in a background task of the running loop (once)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name="wakeup-dispatcher")
        return self._task

    async def stop(self) -> None:
        """Stop the background task and wait for the outbound hooks."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._hooks:
            await asyncio.gather(*self._hooks, return_exceptions=True)
