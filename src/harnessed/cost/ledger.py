"""A session's spending, read from its log: every call's ``run/end`` record carries its usage,
and ``usage`` records what background work spent after a call ended.

The session log is the truth here as everywhere: no separate counter to keep in step, and the
totals survive restarts, resumed turns and calls that failed halfway (a failed call's end record
carries what it spent too).
"""

from __future__ import annotations

from collections import OrderedDict
from weakref import WeakKeyDictionary

from harnessed.log.record import RecordType
from harnessed.log.store import SessionLogStore
from harnessed.models.usage import UsageTotals
from harnessed.runtime import SessionRef

__all__ = ["session_spending"]

_KEPT = 2_048
"""Sessions whose running totals a store keeps (least recently asked dropped first)."""

_Totals = OrderedDict[SessionRef, tuple[int, UsageTotals]]
_TOTALS: WeakKeyDictionary[SessionLogStore, _Totals] = WeakKeyDictionary()
"""Per store: each session's totals and the last record they counted. The log only grows, so a
later ask reads only the records after that one (a session limit is checked at every call: a
whole read of a 10,000-message log was ~140 ms)."""


async def session_spending(store: SessionLogStore, key: SessionRef) -> UsageTotals:
    """What the session's calls spent (each call with the sub-agents it ran, and what their
    background work spent after they ended)."""
    try:
        kept: _Totals | None = _TOTALS.setdefault(store, OrderedDict())
    except TypeError:  # a store that cannot be weakly referenced: read it whole each time
        kept = None
    seq, total = kept.pop(key, (0, UsageTotals())) if kept is not None else (0, UsageTotals())
    types = [RecordType.RUN_END, RecordType.USAGE]
    for record in await store.read(key, after_seq=seq, types=types):
        seq = max(seq, record.seq)
        usage = record.payload.get("usage")
        if isinstance(usage, dict):
            total = total + UsageTotals.from_dict(usage)
    if kept is not None:
        kept[key] = (seq, total)
        while len(kept) > _KEPT:
            kept.popitem(last=False)
    return total
