"""Backing off from a summary model that keeps failing.

When a summary fails the history stays as it was, so the next request is just as due for one.
Trying again at every step would send a doomed summary request (with all its retries) before
each model request. After ``n`` failures in a row, a session's next ``2 ** (n - 1)`` due
summaries are skipped (at most :data:`MAX_SKIPPED`); a summary that succeeds resets the count.
Overflow recovery still tries at once: it cannot go on without one.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["MAX_SKIPPED", "SummaryBackoff"]

MAX_SKIPPED = 32
_SESSIONS_KEPT = 2_048

Session = tuple[str, ...]


@dataclass
class _Failures:
    count: int = 0
    skip: int = 0


class SummaryBackoff:
    """Failure counts of the summaries of each session (kept in memory)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[Session, _Failures] = OrderedDict()

    def skip(self, session: Session) -> int:
        """How many failures in a row make this due summary wait (0: try it now). Counts the
        skip, so a session waits through a limited number of due summaries."""
        failures = self._sessions.get(session)
        if failures is None or failures.skip <= 0:
            return 0
        failures.skip -= 1
        return failures.count

    def failed(self, session: Session) -> None:
        failures = self._sessions.pop(session, None) or _Failures()
        failures.count += 1
        failures.skip = min(2 ** (failures.count - 1), MAX_SKIPPED)
        self._sessions[session] = failures
        while len(self._sessions) > _SESSIONS_KEPT:
            self._sessions.popitem(last=False)

    def succeeded(self, session: Session) -> None:
        self._sessions.pop(session, None)
