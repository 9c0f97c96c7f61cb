"""Where wake-ups wait: the protocols, and a store in process memory.

Two sides, so that a runtime that has schedules of its own (Temporal) implements only the
first:

* :class:`WakeupScheduler` — add, list and cancel (what the tools and the application API
  use);
* :class:`WakeupStore` — also *claim* the due ones and *settle* them after firing (what the
  embedded :class:`~harnessed.wakeups.WakeupDispatcher` uses). A claim is a lease: the due
  wake-up is the claimer's until ``now + claim_seconds``; a process that dies holding it leaves
  it to another after that. Two processes claiming at once never get the same wake-up.

Back ends: :class:`MemoryWakeupStore` (here), :class:`~harnessed.wakeups.SqliteWakeupStore`
(a local workspace; every process on it agrees) and
:class:`~harnessed.stores.postgres.PostgresWakeupStore` (many servers on one database).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Protocol, runtime_checkable

from harnessed.wakeups.spec import Wakeup, WakeupLimitError

__all__ = ["MemoryWakeupStore", "WakeupScheduler", "WakeupStore", "limit_message"]


def limit_message(user_id: str, limit: int) -> str:
    return (
        f"user {user_id!r} already has {limit} pending wake-ups (the most allowed); "
        "cancel one first"
    )


@runtime_checkable
class WakeupScheduler(Protocol):
    """Adds, lists and cancels wake-ups."""

    async def add(self, wakeup: Wakeup, *, max_per_user: int) -> None:
        """Keep ``wakeup``; raises :class:`WakeupLimitError` when its user (with its agent)
        has ``max_per_user`` pending already."""
        ...

    async def pending(
        self, agent: str, user_id: str, session_id: str | None = None
    ) -> list[Wakeup]:
        """The user's pending wake-ups (of one session, or of all), soonest first."""
        ...

    async def cancel(
        self, agent: str, user_id: str, session_id: str, wakeup_id: str
    ) -> Wakeup | None:
        """Drop a pending wake-up of that session; ``None`` when it has no such one."""
        ...


@runtime_checkable
class WakeupStore(WakeupScheduler, Protocol):
    """A :class:`WakeupScheduler` whose due wake-ups a dispatcher claims and settles."""

    async def claim(
        self, agents: Collection[str], holder: str, now: float, claim_seconds: float, limit: int
    ) -> list[Wakeup]:
        """Up to ``limit`` wake-ups of ``agents`` due at ``now`` that nobody holds (or whose
        claim ran out), now held by ``holder`` until ``now + claim_seconds``."""
        ...

    async def settle(self, wakeup: Wakeup, holder: str, next_due: float | None) -> bool:
        """After ``wakeup`` fired: drop it (``next_due`` ``None``) or make it due again then,
        one firing later, unclaimed. ``False`` (nothing changed) when ``holder`` no longer
        holds that firing's claim (it ran out and another process took it)."""
        ...

    async def release(self, wakeup: Wakeup, holder: str) -> None:
        """Give a claim back unfired (the process is stopping): due again at once."""
        ...

    async def next_due(self, agents: Collection[str]) -> float | None:
        """When the soonest pending wake-up of ``agents`` is due, or its claim runs out
        (``None``: none pending)."""
        ...

    async def close(self) -> None:
        """Release what the store holds."""
        ...


class MemoryWakeupStore:
    """Wake-ups in this process's memory (an agent without a workspace); gone on restart."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[Wakeup, str, float]] = {}
        """id -> (wake-up, holder, claimed until)."""

    def __repr__(self) -> str:
        return f"MemoryWakeupStore({len(self._items)} pending)"

    async def add(self, wakeup: Wakeup, *, max_per_user: int) -> None:
        mine = [w for w, _, _ in self._items.values() if _same_user(w, wakeup)]
        if len(mine) >= max_per_user:
            raise WakeupLimitError(limit_message(wakeup.user_id, max_per_user))
        self._items[wakeup.id] = (wakeup, "", 0.0)

    async def pending(
        self, agent: str, user_id: str, session_id: str | None = None
    ) -> list[Wakeup]:
        found = [
            w
            for w, _, _ in self._items.values()
            if w.agent == agent
            and w.user_id == user_id
            and (session_id is None or w.session_id == session_id)
        ]
        return sorted(found, key=lambda w: (w.due_at, w.id))

    async def cancel(
        self, agent: str, user_id: str, session_id: str, wakeup_id: str
    ) -> Wakeup | None:
        item = self._items.get(wakeup_id)
        if item is None:
            return None
        w = item[0]
        if (w.agent, w.user_id, w.session_id) != (agent, user_id, session_id):
            return None
        del self._items[wakeup_id]
        return w

    async def claim(
        self, agents: Collection[str], holder: str, now: float, claim_seconds: float, limit: int
    ) -> list[Wakeup]:
        due = sorted(
            (w for w, _, until in self._items.values() if w.agent in agents and w.due_at <= now
             and until <= now),
            key=lambda w: (w.due_at, w.id),
        )[:limit]  # fmt: skip
        for w in due:
            self._items[w.id] = (w, holder, now + claim_seconds)
        return due

    async def settle(self, wakeup: Wakeup, holder: str, next_due: float | None) -> bool:
        item = self._items.get(wakeup.id)
        if item is None or item[1] != holder or item[0].fired != wakeup.fired:
            return False
        if next_due is None:
            del self._items[wakeup.id]
        else:
            self._items[wakeup.id] = (
                replace(item[0], due_at=next_due, fired=wakeup.fired + 1),
                "",
                0.0,
            )
        return True

    async def release(self, wakeup: Wakeup, holder: str) -> None:
        item = self._items.get(wakeup.id)
        if item is not None and item[1] == holder:
            self._items[wakeup.id] = (item[0], "", 0.0)

    async def next_due(self, agents: Collection[str]) -> float | None:
        times = [max(w.due_at, until) for w, _, until in self._items.values() if w.agent in agents]
        return min(times, default=None)

    async def close(self) -> None:
        return None


def _same_user(a: Wakeup, b: Wakeup) -> bool:
    return a.agent == b.agent and a.user_id == b.user_id
