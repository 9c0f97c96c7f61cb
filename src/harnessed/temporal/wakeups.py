"""Wake-ups on Temporal: fired by the Temporal server, once, on whichever worker is free.

With ``runtime=TemporalRuntime(...)`` the :class:`~harnessed.wakeups.Wakeups` capability keeps
its wake-ups through :class:`TemporalWakeupScheduler`:

* a **cron** wake-up is a Temporal schedule (``client.create_schedule``) whose action starts
  the wake-up workflow at each time of the spec;
* a **once** wake-up (at a time, or after a delay) is the wake-up workflow started with a
  ``start_delay``: the server holds it and starts it when it is due. A schedule could do it
  too (a calendar spec of one time and ``remaining_actions=1``), but its times are whole
  seconds and a time that passed before the schedule was created never fires — a wake-up a
  second ahead on a busy machine would be lost; a delayed start cannot be too late.

Either way one firing is one workflow run, so it fires once however many workers listen.
The wake-up workflow (:class:`WakeupWorkflow`) reads the wake-up (a cancelled one does
nothing), starts the session's turn workflow as a child that outlives it (waiting while
another turn of the session runs), then, for a once wake-up, drops it from the list.

The list — which wake-ups a session has, the bound per user — stays in the capability's
store (SQLite or PostgreSQL next to the sessions): Temporal's listing of schedules and
workflows is eventually consistent and cannot be filtered by session without custom search
attributes, while the store answers at once and counts exactly. The store's dispatcher does
not fire them: :class:`TemporalWakeupScheduler` is a ``WakeupScheduler``, not a
``WakeupStore``, so ``WakeupDispatcher`` leaves the agent alone.
"""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from temporalio.service import RPCError, RPCStatusCode

from harnessed.temporal.schema import WAKEUP_WORKFLOW, WakeupFiring

if TYPE_CHECKING:
    from harnessed.temporal.runtime import TemporalRuntime

__all__ = ["TemporalWakeupScheduler", "wakeup_workflow_id"]


class WakeupBook(Protocol):
    """Where the wake-ups are listed (a ``WakeupScheduler``: add, pending, cancel)."""

    async def add(self, wakeup: Any, *, max_per_user: int) -> None: ...

    async def pending(
        self, agent: str, user_id: str, session_id: str | None = None
    ) -> list[Any]: ...

    async def cancel(
        self, agent: str, user_id: str, session_id: str, wakeup_id: str
    ) -> Any | None: ...


def wakeup_workflow_id(agent: str, user_id: str, session_id: str, wakeup_id: str) -> str:
    """The id of a once wake-up's workflow, and of a cron wake-up's schedule (whose runs get
    the time appended by Temporal)."""
    return f"harnessed-wakeup/{json.dumps([agent, user_id, session_id, wakeup_id])}"


class TemporalWakeupScheduler:
    """A ``WakeupScheduler`` whose wake-ups Temporal fires (see the module notes).

    Args:
        runtime: The agent's Temporal runtime (its client and task queue).
        book: The store the wake-ups are listed in (and bounded per user).
        timezone: The IANA zone cron specs are read in.
    """

    fired_by_runtime = True
    """The wake-ups capability wraps its store once (not a scheduler that wraps one)."""

    def __init__(self, runtime: TemporalRuntime, book: WakeupBook, timezone: str = "UTC") -> None:
        self.runtime = runtime
        self.book = book
        self.timezone = timezone

    def __repr__(self) -> str:
        return f"TemporalWakeupScheduler({self.runtime.task_queue!r}, {self.book!r})"

    async def add(self, wakeup: Any, *, max_per_user: int) -> None:
        await self.book.add(wakeup, max_per_user=max_per_user)
        try:
            await self._fire_later(wakeup)
        except BaseException:
            await self.book.cancel(wakeup.agent, wakeup.user_id, wakeup.session_id, wakeup.id)
            raise

    async def pending(self, agent: str, user_id: str, session_id: str | None = None) -> list[Any]:
        """The listed wake-ups; a cron one with its next time and firings from its schedule."""
        found = await self.book.pending(agent, user_id, session_id)
        if not any(w.cron for w in found):
            return found
        client = await self.runtime.connect()
        shown = []
        for wakeup in found:
            if wakeup.cron:
                key = wakeup_workflow_id(agent, wakeup.user_id, wakeup.session_id, wakeup.id)
                try:
                    info = (await client.get_schedule_handle(key).describe()).info
                except RPCError:
                    info = None  # not created yet, or gone: as listed
                if info is not None and info.next_action_times:
                    wakeup = dataclasses.replace(
                        wakeup,
                        due_at=info.next_action_times[0].timestamp(),
                        fired=info.num_actions,
                    )
            shown.append(wakeup)
        return sorted(shown, key=lambda w: (w.due_at, w.id))

    async def cancel(self, agent: str, user_id: str, session_id: str, wakeup_id: str) -> Any | None:
        found = await self.book.cancel(agent, user_id, session_id, wakeup_id)
        if found is None:
            return None
        client = await self.runtime.connect()
        key = wakeup_workflow_id(agent, user_id, session_id, wakeup_id)
        try:
            if found.cron:
                await client.get_schedule_handle(key).delete()
            else:
                await client.get_workflow_handle(key).terminate("the wake-up was cancelled")
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            # already fired (a fired once wake-up has nothing left to stop)
        return found

    async def close(self) -> None:
        close = getattr(self.book, "close", None)
        if callable(close):
            await close()

    async def _fire_later(self, wakeup: Any) -> None:
        runtime = self.runtime
        client = await runtime.connect()
        key = wakeup_workflow_id(wakeup.agent, wakeup.user_id, wakeup.session_id, wakeup.id)
        firing = WakeupFiring(
            wakeup.agent, wakeup.user_id, wakeup.session_id, wakeup.id, runtime.activity_options
        )
        if wakeup.cron:
            await client.create_schedule(
                key,
                Schedule(
                    action=ScheduleActionStartWorkflow(
                        WAKEUP_WORKFLOW, firing, id=key, task_queue=runtime.task_queue
                    ),
                    spec=ScheduleSpec(cron_expressions=[wakeup.cron], time_zone_name=self.timezone),
                    policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.BUFFER_ONE),
                ),
            )
            return
        await client.start_workflow(
            WAKEUP_WORKFLOW,
            firing,
            id=key,
            task_queue=runtime.task_queue,
            start_delay=timedelta(seconds=max(0.0, wakeup.due_at - time.time())),
        )
