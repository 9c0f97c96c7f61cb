"""Where to cut the history: everything before the cut is summarized, the tail is kept.

The cut is always a group boundary (see :func:`harnessed.context.pairs.group_boundaries`): an
assistant message and the results of all its tool calls, parallel ones included, are on the
same side. The kept tail always holds at least the last group, so the newest step survives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harnessed.context.pairs import group_boundaries
from harnessed.messages import Msg

__all__ = ["cut_for_messages", "cut_for_tokens", "last_group_start"]


def last_group_start(history: Sequence[Msg]) -> int:
    """Index where the last group begins (0 when the history is one group or empty)."""
    bounds = group_boundaries(history)
    starts = [b for b in bounds if b < len(history)]
    return starts[-1] if starts else 0


def cut_for_tokens(history: Sequence[Msg], count: Callable[[Msg], int], keep_tokens: int) -> int:
    """The cut that keeps the newest whole groups fitting in ``keep_tokens`` (at least one)."""
    bounds = [b for b in group_boundaries(history) if b < len(history)]
    if not bounds:
        return 0
    cut = len(history)
    kept = 0
    for start in reversed(bounds):
        size = sum(count(m) for m in history[start:cut])
        if cut < len(history) and kept + size > keep_tokens:
            break
        kept += size
        cut = start
    return cut


def cut_for_messages(history: Sequence[Msg], keep_messages: int) -> int:
    """The cut that keeps at least the last ``keep_messages`` messages, moved back to a boundary.

    Moving back (keeping a little more) rather than forward means the kept tail is never
    smaller than asked for.
    """
    target = len(history) - keep_messages
    if target <= 0:
        return 0
    bounds = [b for b in group_boundaries(history) if b <= target]
    cut = bounds[-1] if bounds else 0
    return min(cut, last_group_start(history))
