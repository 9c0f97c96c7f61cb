"""An in-memory session log store for tests and agents without a workspace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from harnessed.log.record import NewRecord, SessionRecord
from harnessed.log.store import SessionInfo
from harnessed.runtime import SessionRef

__all__ = ["InMemorySessionLogStore"]


class InMemorySessionLogStore:
    """Keeps records in process memory; lost when the process ends."""

    def __init__(self) -> None:
        self._logs: dict[SessionRef, list[SessionRecord]] = {}
        self._updated: dict[SessionRef, float] = {}
        self._lock = asyncio.Lock()

    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        async with self._lock:
            log = self._logs.setdefault(key, [])
            stored = [SessionRecord.assign(len(log) + i + 1, r) for i, r in enumerate(records)]
            log.extend(stored)
            if stored:
                self._updated[key] = time.time()
            return stored

    async def read(
        self,
        key: SessionRef,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        wanted = set(types) if types else None
        out = [r for r in self._logs.get(key, [])[after_seq:] if wanted is None or r.type in wanted]
        return out[:limit] if limit is not None else out

    async def tail(
        self, key: SessionRef, count: int, *, types: Sequence[str] | None = None
    ) -> list[SessionRecord]:
        records = await self.read(key, types=types)
        return records[-count:] if count > 0 else []

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        infos = [
            SessionInfo(k.session_id, self._updated.get(k, 0.0))
            for k in self._logs
            if k.agent_id == agent_id and k.user_id == user_id
        ]
        return sorted(infos, key=lambda i: (-i.updated_at, i.session_id))

    async def users(self, agent_id: str) -> list[str]:
        return sorted({k.user_id for k in self._logs if k.agent_id == agent_id})
