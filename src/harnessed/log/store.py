"""The SessionLogStore protocol: where the append-only session history lives."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harnessed._internal.group_commit import Failed
from harnessed.log.record import NewRecord, SessionRecord
from harnessed.runtime import SessionRef

__all__ = ["BatchAppendStore", "Stored", "SessionCatalog", "SessionInfo", "SessionLogStore"]

Stored = Sequence[tuple[SessionRef, list[SessionRecord]]]
"""The appends of a batch that succeeded: each session with the records it stored."""


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

    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        """Store ``records`` in order after the existing ones, with gapless sequence numbers."""
        ...

    async def read(
        self,
        key: SessionRef,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Records with ``seq > after_seq`` (of the given types), oldest first."""
        ...

    async def tail(
        self, key: SessionRef, count: int, *, types: Sequence[str] | None = None
    ) -> list[SessionRecord]:
        """The newest ``count`` records (of the given types), oldest first."""
        ...

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        """The sessions one user has with one agent, most recent first."""
        ...


@runtime_checkable
class SessionCatalog(Protocol):
    """Optional: a store that can also list which users have sessions with an agent.

    ``harnessed reindex`` and :func:`~harnessed.log.rebuild_index` use it to rebuild the
    search index of every user at once.
    """

    async def users(self, agent_id: str) -> list[str]:
        """The ids of the users who have at least one session with ``agent_id``, sorted."""
        ...


@runtime_checkable
class BatchAppendStore(Protocol):
    """Optional: a store that appends to many sessions in one batch.

    :class:`~harnessed.log.IndexedSessionLogStore` uses it to write the log and the search
    index of a batch in one worker thread hand-off instead of one each per append.
    """

    async def append_batch(
        self,
        appends: Sequence[tuple[SessionRef, Sequence[NewRecord]]],
        *,
        then: Callable[[Stored], None] | None = None,
    ) -> list[list[SessionRecord] | Failed]:
        """:meth:`SessionLogStore.append` for each ``(key, records)``: each one's stored
        records, or its own failure. ``then`` is called (blocking, in the worker thread that
        wrote the batch) with the appends that succeeded once they are as durable as the
        store makes them; an error it raises is logged and fails no append."""
        ...
