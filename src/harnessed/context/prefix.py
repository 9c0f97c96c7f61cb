"""What a request shares with the previous one: the part a provider's prompt cache can serve.

Providers cache a request's prefix — tool schemas, then the system message, then the
conversation — and serve a later request from that cache only as far as the two are the same
from the start. The compiler keeps, per session, the stable part of the last reasoning request
(its tools and its system + history messages) and measures how much of the next one repeats it.
Messages are immutable, so an unchanged message is usually the very same object; one read back
from the session log (after a checkpoint) is an equal copy, which the provider sees the same.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from harnessed.context.meter import Meter
from harnessed.messages import Msg, shared_prefix
from harnessed.models.base import ToolSchema

__all__ = ["LastPrefix", "PrefixMemo", "equal_prefix"]

_SESSIONS_KEPT = 2_048


@dataclass(frozen=True, slots=True)
class LastPrefix:
    """The stable part of a session's last reasoning request, as it was sent: what the
    provider has cached (a summary request that repeats it is served from that cache)."""

    tools: tuple[ToolSchema, ...]
    messages: Sequence[Msg]
    """The system message (when there was one) and the history, without the transient tail."""
    cache_key: str | None


class PrefixMemo:
    """The stable prefix of each session's last reasoning request."""

    def __init__(self) -> None:
        self._last: OrderedDict[
            tuple[str, ...], tuple[tuple[ToolSchema, ...], Sequence[Msg], int]
        ] = OrderedDict()
        self._keys: dict[tuple[str, ...], str | None] = {}

    def last(self, session: tuple[str, ...]) -> LastPrefix | None:
        """The session's last remembered prefix, or ``None``."""
        previous = self._last.get(session)
        if previous is None:
            return None
        return LastPrefix(previous[0], previous[1], self._keys.get(session))

    def shared(
        self,
        session: tuple[str, ...],
        tools: tuple[ToolSchema, ...],
        stable: Sequence[Msg],
        tool_tokens: int,
        meter: Meter,
        cache_key: str | None = None,
    ) -> tuple[int, int]:
        """Remember ``stable`` as the session's last prefix; return how many of its leading
        messages the previous one had too, and the raw tokens of the shared part (tools
        included). Different tools share nothing: they come first.

        The work is proportional to what changed: the tokens of the shared part are the last
        prefix's total less what differs, so only the changed messages are estimated (the
        first request of a session in this process estimates its whole prefix once)."""
        previous = self._last.pop(session, None)
        if previous is None:
            count, shared, total = 0, 0, meter.messages(stable)
        else:
            last_tools, last, last_total = previous
            count = equal_prefix(last, stable)
            shared = last_total - meter.messages(last[count:])
            total = shared + meter.messages(stable[count:])
            if last_tools != tools:
                count, shared = 0, 0
        self._last[session] = (tools, stable, total)
        self._keys[session] = cache_key
        while len(self._last) > _SESSIONS_KEPT:
            self._keys.pop(self._last.popitem(last=False)[0], None)
        if count == 0:
            return 0, 0
        return count, tool_tokens + shared


def equal_prefix(previous: Sequence[Msg], current: Sequence[Msg]) -> int:
    """How many leading messages the two sequences share as the same or equal messages."""
    count = shared_prefix(previous, current)  # identical objects: one comparison in C
    limit = min(len(previous), len(current))
    while count < limit and previous[count] == current[count]:
        count += 1
        count += shared_prefix(previous[count:], current[count:])
    return count
