"""The SessionLogStore protocol: where the append-only session history lives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harnessed.session.record import NewRecord, SessionKey, SessionRecord

__all__ = ["SessionCatalog", "SessionInfo", "SessionLogStore"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session of a user, as listed by a store."""

    session_id: str
    updated_at: float
    """Seconds since the epoch of the last write."""
    size_bytes: int = 0


@runtime_checkable
class SessionLogStore(Protocol):
    """Append-only storage of session records, one sequence per (agent, user, session)."""

    async def append(self, key: SessionKey, records: Sequence[NewRecord]) -> list[SessionRecord]:
        """Store ``records`` in order after the existing ones, with gapless sequence numbers."""
        ...

    async def read(
        self,
        key: SessionKey,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Records with ``seq > after_seq`` (of the given types), oldest first."""
        ...

    async def tail(
        self, key: SessionKey, count: int, *, types: Sequence[str] | None = None
    ) -> list[SessionRecord]:
        """The newest ``count`` records (of the given types), oldest first."""
        ...

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        """The sessions one user has with one agent, most recent first."""
        ...


@runtime_checkable
class SessionCatalog(Protocol):
    """Optional: a store that can also list which users have sessions with an agent.

    ``harnessed reindex`` and :func:`~harnessed.session.rebuild_index` use it to rebuild the
    search index of every user at once.
    """

    async def users(self, agent_id: str) -> list[str]:
        """The ids of the users who have at least one session with ``agent_id``, sorted."""
        ...
