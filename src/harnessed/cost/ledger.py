"""A session's spending, read from its log: every call's ``run/end`` record carries its usage,
and ``usage`` records what background work spent after a call ended.

The session log is the truth here as everywhere: no separate counter to keep in step, and the
totals survive restarts, resumed turns and calls that failed halfway (a failed call's end record
carries what it spent too).
"""

from __future__ import annotations

from harnessed.log.record import RecordType
from harnessed.log.store import SessionLogStore
from harnessed.models.usage import UsageTotals
from harnessed.runtime import SessionRef

__all__ = ["session_spending"]


async def session_spending(store: SessionLogStore, key: SessionRef) -> UsageTotals:
    """What the session's calls spent (each call with the sub-agents it ran, and what their
    background work spent after they ended)."""
    total = UsageTotals()
    for record in await store.read(key, types=[RecordType.RUN_END, RecordType.USAGE]):
        usage = record.payload.get("usage")
        if isinstance(usage, dict):
            total = total + UsageTotals.from_dict(usage)
    return total
