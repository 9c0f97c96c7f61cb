"""The model's wake-up tools: ``schedule_wakeup``, ``list_wakeups`` and ``cancel_wakeup``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool
from harnessed.wakeups.spec import WakeupError

if TYPE_CHECKING:
    from harnessed.wakeups.capability import Wakeups

__all__ = ["wakeup_tools"]


def wakeup_tools(wakeups: Wakeups) -> list[Tool]:
    """The three tools over ``wakeups``, for the calling session only."""

    @tool(name="schedule_wakeup")
    async def schedule_wakeup(
        note: str,
        context: ToolContext,
        at: str | None = None,
        after_seconds: float | None = None,
        cron: str | None = None,
    ) -> str:
        """Ask to be woken later in this conversation: a new turn starts then, with your
        note as its message. Give exactly one of at, after_seconds or cron.

        Args:
            note: What to do when woken (you will read it then, without this turn's memory
                of why): e.g. "check whether the nightly build passed and tell the user".
            at: A time in ISO-8601, e.g. 2026-05-01T09:00:00+00:00.
            after_seconds: A delay from now, in seconds (3600 for an hour).
            cron: A cron spec for a repeating wake-up, e.g. "0 9 * * 1-5" (weekdays at 9).
        """
        try:
            wakeup = await wakeups.schedule(
                context.runtime, note, at=at, after=after_seconds, cron=cron
            )
        except WakeupError as exc:
            raise ToolError(str(exc)) from None
        repeat = f", then on {wakeup.cron!r}" if wakeup.cron else ""
        return f"Wake-up {wakeup.id} scheduled for {wakeup.to_dict()['due']}{repeat}."

    @tool(name="list_wakeups", read_only=True)
    async def list_wakeups(context: ToolContext) -> str:
        """List this conversation's pending wake-ups (id, when, cron spec, note)."""
        found = await wakeups.pending(context.runtime)
        if not found:
            return "No wake-ups are scheduled in this conversation."
        return json.dumps([wakeups.describe(w) for w in found], ensure_ascii=False, indent=1)

    @tool(name="cancel_wakeup")
    async def cancel_wakeup(wakeup_id: str, context: ToolContext) -> str:
        """Cancel a pending wake-up of this conversation.

        Args:
            wakeup_id: The id schedule_wakeup or list_wakeups gave.
        """
        cancelled = await wakeups.cancel(context.runtime, wakeup_id)
        if cancelled is None:
            raise ToolError(f"this conversation has no pending wake-up {wakeup_id!r}")
        return f"Wake-up {wakeup_id} cancelled."

    return [schedule_wakeup, list_wakeups, cancel_wakeup]
