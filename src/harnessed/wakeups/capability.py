"""``Wakeups``: the capability that lets an agent ask to be woken later, and its
application API (:meth:`Wakeups.schedule`, :meth:`Wakeups.pending`, :meth:`Wakeups.cancel`).

Where wake-ups are kept, unless a store is given: with ``store="postgresql://..."`` in that
database (:class:`~harnessed.stores.postgres.PostgresWakeupStore`); with a local workspace in
``<workspace>/.harnessed/wakeups.sqlite3``; otherwise in process memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harnessed.capabilities.base import Capability, CapabilityHost
from harnessed.messages import Msg, new_id
from harnessed.runtime import RuntimeContext
from harnessed.tools.base import Tool
from harnessed.wakeups.spec import Wakeup, WakeupsConfig, check_note, first_due
from harnessed.wakeups.store import MemoryWakeupStore, WakeupScheduler

if TYPE_CHECKING:
    from harnessed.wakeups.dispatcher import OnWoken

__all__ = ["Wakeups", "default_wakeup_store"]


def default_wakeup_store(host: CapabilityHost) -> WakeupScheduler:
    """The wake-up store next to the agent's sessions (see the module notes)."""
    shared = getattr(host, "store", None)
    if shared is not None and type(shared).__name__ == "PostgresStore":
        from harnessed.stores.postgres import PostgresStore
        from harnessed.wakeups.postgres import PostgresWakeupStore

        if isinstance(shared, PostgresStore):  # only then is the postgres extra loaded
            return PostgresWakeupStore(shared)
    workspace = host.workspace
    if workspace is not None and workspace.data_root is not None:
        from harnessed.wakeups.sqlite import SqliteWakeupStore

        return SqliteWakeupStore(workspace.data_root / ".harnessed" / "wakeups.sqlite3")
    return MemoryWakeupStore()


class Wakeups(Capability):
    """Wake-ups: a session asks for a turn later — at a time, after a delay or on a cron
    spec — with a note saying why.

    Args:
        config: Limits and timing (:class:`WakeupsConfig`).
        store: Where wake-ups are kept (default: next to the sessions, see the module notes).
            A :class:`~harnessed.wakeups.WakeupStore` is fired by a
            :class:`~harnessed.wakeups.WakeupDispatcher`; a plain
            :class:`~harnessed.wakeups.WakeupScheduler` (a runtime with schedules of its own)
            fires them itself.
        tools: Give the model ``schedule_wakeup``, ``list_wakeups`` and ``cancel_wakeup``.
        on_woken: The outbound hook, called by whichever dispatcher fires a wake-up of this
            agent (``harnessed serve``'s too) with the wake-up and its queued turn: a channel
            awaits ``turn.result()`` and sends the reply to the session's outbound address.
        clock: Epoch seconds now.
    """

    name = "wakeups"

    def __init__(
        self,
        config: WakeupsConfig | None = None,
        *,
        store: WakeupScheduler | None = None,
        tools: bool = True,
        on_woken: OnWoken | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if config is not None and not isinstance(config, WakeupsConfig):
            raise TypeError(f"Wakeups config must be a WakeupsConfig, got {config!r}")
        if store is not None and not isinstance(store, WakeupScheduler):
            raise TypeError(f"Wakeups store must be a WakeupScheduler, got {store!r}")
        self.config = config or WakeupsConfig()
        self._store = store
        self._tools = tools
        self.on_woken = on_woken
        self.clock = clock
        self.agent_name = ""

    def setup(self, host: CapabilityHost) -> None:
        self.agent_name = host.agent_name
        if self._store is None:
            self._store = default_wakeup_store(host)
        runtime = getattr(host, "runtime", None)
        schedules = getattr(runtime, "wakeup_scheduler", None)
        if callable(schedules) and not getattr(self._store, "fired_by_runtime", False):
            # a runtime that fires wake-ups itself (Temporal): the store keeps the list
            self._store = schedules(self._store, self.config)

    @property
    def store(self) -> WakeupScheduler:
        if self._store is None:
            raise RuntimeError("the Wakeups capability is not set up (pass it to an agent)")
        return self._store

    def tools(self) -> Sequence[Tool]:
        from harnessed.wakeups.tools import wakeup_tools

        return wakeup_tools(self) if self._tools else ()

    async def close(self) -> None:
        close = getattr(self._store, "close", None)
        if callable(close):
            await close()

    # ------------------------------------------------------------- application API
    async def schedule(
        self,
        ctx: RuntimeContext,
        note: str,
        *,
        at: str | datetime | float | None = None,
        after: float | None = None,
        cron: str | None = None,
    ) -> Wakeup:
        """Wake the session of ``ctx`` later with ``note``: at a time (ISO text, datetime or
        epoch seconds), ``after`` seconds, or on a ``cron`` spec. Raises
        :class:`~harnessed.wakeups.WakeupError` (or its :class:`WakeupLimitError`) naming the
        problem."""
        ctx = ctx.resolved(self.agent_name)
        now = self.clock()
        wakeup = Wakeup(
            id=new_id("wk_")[:19],
            agent=self.agent_name,
            user_id=ctx.user_id,
            session_id=ctx.session,
            note=check_note(note, self.config),
            due_at=first_due(self.config, now, at=at, after=after, cron=cron),
            cron=cron.strip() if cron else None,
            created_at=now,
        )
        await self.store.add(wakeup, max_per_user=self.config.max_per_user)
        return wakeup

    async def pending(self, ctx: RuntimeContext, *, all_sessions: bool = False) -> list[Wakeup]:
        """The pending wake-ups of the session of ``ctx`` (or of all its user's sessions)."""
        ctx = ctx.resolved(self.agent_name)
        session = None if all_sessions else ctx.session
        return await self.store.pending(self.agent_name, ctx.user_id, session)

    async def cancel(self, ctx: RuntimeContext, wakeup_id: str) -> Wakeup | None:
        """Cancel a pending wake-up of the session of ``ctx``; ``None`` when it has none by
        that id."""
        ctx = ctx.resolved(self.agent_name)
        return await self.store.cancel(self.agent_name, ctx.user_id, ctx.session, wakeup_id)

    def woken_message(self, wakeup: Wakeup) -> Msg:
        """The input of the turn a firing of ``wakeup`` starts (for a runtime that fires
        wake-ups itself)."""
        from harnessed.wakeups.dispatcher import wakeup_message

        return wakeup_message(wakeup)

    def restore(self, data: Mapping[str, Any]) -> Wakeup:
        """The wake-up of ``data`` (``Wakeup.to_dict()``: how a runtime that fires wake-ups
        itself hands one to its ``on_woken`` hooks)."""
        return Wakeup.from_dict(data)

    def describe(self, wakeup: Wakeup) -> dict[str, Any]:
        """What the model is shown of a wake-up."""
        data = wakeup.to_dict()
        return {k: data[k] for k in ("id", "due", "cron", "note", "fired")}
