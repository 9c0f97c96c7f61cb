"""``IndexedSessionLogStore``: any session log store, with a search index kept up to date.

Every append goes to the store first — the log is the truth — and then to the index. Appends
made at the same time are batched: with a store that takes batches (the JSONL store) and an
index that can be written from any thread (SQLite), a batch is written to the log and then to
the index in one worker thread hand-off, one index transaction per user. An index
that fails or falls behind never fails an append: the session is remembered as behind and
caught up from the log before the next search of its user (or by the next append, which
notices the gap). A user whose index was never built (a workspace from before search existed,
a deleted index file) is indexed from the log on the first search.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from harnessed._internal.group_commit import Failed, GroupCommit
from harnessed.log.record import NewRecord, SessionRecord
from harnessed.log.search import (
    BlockingSearchIndex,
    GroupedSearchIndex,
    MatchMode,
    SearchHit,
    SearchIndex,
    SearchOrder,
)
from harnessed.log.store import (
    BatchAppendStore,
    SessionCatalog,
    SessionInfo,
    SessionLogStore,
    Stored,
)
from harnessed.runtime import SessionLocks, SessionRef

__all__ = ["IndexedSessionLogStore"]

logger = logging.getLogger(__name__)


class IndexedSessionLogStore:
    """A :class:`SessionLogStore` that also maintains ``index`` and answers searches."""

    def __init__(self, store: SessionLogStore, index: SearchIndex) -> None:
        if isinstance(store, IndexedSessionLogStore):
            raise TypeError("the store is already indexed; pass its .store instead")
        self.store = store
        self.index = index
        self._behind: set[SessionRef] = set()
        self._verified: set[tuple[str, str]] = set()
        """Users whose every session was compared with the index in this process."""
        self._builds = SessionLocks()
        self._groups: GroupCommit[tuple[SessionRef, Sequence[SessionRecord]], None] = GroupCommit(
            self._index_group
        )
        self._batches: GroupCommit[tuple[SessionRef, Sequence[NewRecord]], list[SessionRecord]]
        self._batches = GroupCommit(self._append_batch)
        self._fused: tuple[BatchAppendStore, BlockingSearchIndex] | None = None
        if isinstance(store, BatchAppendStore) and isinstance(index, BlockingSearchIndex):
            self._fused = (store, index)

    def __repr__(self) -> str:
        return f"IndexedSessionLogStore({self.store!r}, {self.index!r})"

    # ------------------------------------------------------------ the store
    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        if self._fused is not None:
            return await self._batches.submit(None, (key, records)) if records else []
        stored = await self.store.append(key, records)
        if stored:
            # concurrent appends (a durable store commits them in groups) reach the index as
            # one group per user: one transaction, in sequence order, so no gaps to fill
            await self._groups.submit((key.agent_id, key.user_id), (key, stored))
        return stored

    async def _index_group(
        self, scope: object, items: list[tuple[SessionRef, Sequence[SessionRecord]]]
    ) -> list[None]:
        by_session: dict[SessionRef, list[SessionRecord]] = {}
        for key, stored in items:
            by_session.setdefault(key, []).extend(stored)
        for stored in by_session.values():
            stored.sort(key=lambda r: r.seq)
        todo = by_session
        if len(by_session) > 1 and isinstance(self.index, GroupedSearchIndex):
            first = next(iter(by_session))
            try:  # one transaction for the whole group
                through = await self.index.add_many(
                    first.agent_id,
                    first.user_id,
                    [(k.session_id, s) for k, s in by_session.items()],
                )
            except asyncio.CancelledError:
                self._behind.update(by_session)
                raise
            except Exception:
                pass  # each session on its own below: a failure is logged and remembered there
            else:
                todo = {
                    k: s
                    for (k, s), done in zip(by_session.items(), through, strict=True)
                    if done < s[-1].seq
                }
                self._behind.difference_update(k for k in by_session if k not in todo)
        for key, stored in todo.items():
            await self._index(key, stored)
        return [None] * len(items)

    async def _append_batch(
        self, _: object, appends: list[tuple[SessionRef, Sequence[NewRecord]]]
    ) -> Sequence[list[SessionRecord] | Failed]:
        """Log a batch and index it in the same worker thread; then, back here, note what
        the index could not take and fill the gaps other writers left."""
        assert self._fused is not None
        store, index = self._fused
        outcome: dict[SessionRef, tuple[list[SessionRecord], int | Exception]] = {}

        def index_batch(done: Stored) -> None:
            users: dict[tuple[str, str], dict[SessionRef, list[SessionRecord]]] = {}
            for key, stored in done:
                users.setdefault((key.agent_id, key.user_id), {}).setdefault(key, []).extend(stored)
            for (agent_id, user_id), sessions in users.items():
                batches = [(k.session_id, r) for k, r in sessions.items()]
                through: Sequence[int | Exception]
                try:  # one transaction for all of the user's sessions
                    through = index.add_many_blocking(agent_id, user_id, batches)
                except Exception as exc:  # several sessions: each on its own, below
                    through = [0 if len(sessions) > 1 else exc] * len(sessions)
                for (key, stored), done_through in zip(sessions.items(), through, strict=True):
                    outcome[key] = (stored, done_through)

        try:
            results = await store.append_batch(appends, then=index_batch)
        except asyncio.CancelledError:
            self._behind.update(key for key, _ in appends)  # indexed or not: check later
            raise
        for key, (stored, through) in outcome.items():
            if isinstance(through, Exception):
                self._behind.add(key)
                _warn_behind(key, through)
            elif through >= stored[-1].seq:
                self._behind.discard(key)
            else:  # a gap other writers left, or a failed shared transaction: on its own
                await self._index(key, stored)
        return results

    async def read(
        self,
        key: SessionRef,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        return await self.store.read(key, after_seq=after_seq, types=types, limit=limit)

    async def tail(
        self, key: SessionRef, count: int, *, types: Sequence[str] | None = None
    ) -> list[SessionRecord]:
        return await self.store.tail(key, count, types=types)

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        return await self.store.sessions(agent_id, user_id)

    async def users(self, agent_id: str) -> list[str]:
        """The users with sessions (needs a store that is a :class:`SessionCatalog`)."""
        if not isinstance(self.store, SessionCatalog):
            raise TypeError(
                f"{type(self.store).__name__} cannot list users; name the user to reindex"
            )
        return await self.store.users(agent_id)

    # ------------------------------------------------------------ indexing
    async def _index(self, key: SessionRef, stored: Sequence[SessionRecord]) -> None:
        try:
            through = await self.index.add(key, stored)
            if through < stored[-1].seq:  # records another writer appended are missing
                missing = await self.store.read(key, after_seq=through)
                through = await self.index.add(key, missing)
            if through < stored[-1].seq:
                raise RuntimeError(f"index stopped at seq {through} of {stored[-1].seq}")
        except asyncio.CancelledError:
            self._behind.add(key)
            raise
        except Exception as exc:
            self._behind.add(key)
            _warn_behind(key, exc)
        else:
            self._behind.discard(key)

    async def catch_up(self, key: SessionRef) -> int:
        """Index whatever of the session's log the index does not have yet."""
        through = await self.index.indexed_through(key)
        missing = await self.store.read(key, after_seq=through)
        if missing:
            through = await self.index.add(key, missing)
        self._behind.discard(key)
        return through

    async def _ready(self, agent_id: str, user_id: str) -> None:
        scope = (agent_id, user_id)
        async with self._builds.hold(agent_id, user_id):
            if not await self.index.is_built(agent_id, user_id):
                count = await self.index.rebuild(self.store, agent_id, user_id)
                logger.info("indexed %d messages of user %s (agent %s)", count, user_id, agent_id)
                self._behind = {k for k in self._behind if (k.agent_id, k.user_id) != scope}
                self._verified.add(scope)
                return
            if scope not in self._verified:
                # A process that stopped between writing the log and the index (a crash, a
                # kill) left no note of it: compare every session once per process.
                for info in await self.store.sessions(agent_id, user_id):
                    key = SessionRef(agent_id, user_id, info.session_id)
                    last = await self.store.tail(key, 1)
                    if last and await self.index.indexed_through(key) < last[-1].seq:
                        self._behind.add(key)
                self._verified.add(scope)
        for key in [k for k in self._behind if (k.agent_id, k.user_id) == scope]:
            try:
                await self.catch_up(key)
            except Exception:
                logger.warning("search index still behind for %s", key, exc_info=True)

    # ------------------------------------------------------------ search
    async def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        max_results: int = 10,
        match: MatchMode = "phrase",
        order: SearchOrder = "recent",
        session_id: str | None = None,
    ) -> list[SearchHit]:
        """Messages of the user's sessions matching ``query`` (see :class:`SearchIndex`)."""
        await self._ready(agent_id, user_id)
        return await self.index.search(
            agent_id,
            user_id,
            query,
            max_results=max_results,
            match=match,
            order=order,
            session_id=session_id,
        )

    async def rebuild(self, agent_id: str, user_id: str | None = None) -> int:
        """Rebuild the index of one user (or of every user) from the log; returns messages."""
        users = [user_id] if user_id is not None else await self.users(agent_id)
        total = 0
        for user in users:
            scope = (agent_id, user)
            async with self._builds.hold(agent_id, user):
                total += await self.index.rebuild(self.store, agent_id, user)
                self._behind = {k for k in self._behind if (k.agent_id, k.user_id) != scope}
        return total

    async def close(self) -> None:
        await self.index.close()


def _warn_behind(key: SessionRef, error: Exception) -> None:
    logger.warning(
        "could not index session %s of user %s (the log is complete; the index catches up "
        "before the next search)",
        key.session_id,
        key.user_id,
        exc_info=error,
    )
