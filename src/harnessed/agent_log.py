"""Reading an agent's session log: a part of :class:`~harnessed.HarnessAgent`."""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.cost.ledger import session_spending
from harnessed.log.record import RecordType, SessionRecord
from harnessed.log.search import MatchMode, SearchHit, SearchOrder
from harnessed.log.store import SessionInfo
from harnessed.messages import Msg
from harnessed.models.usage import UsageTotals
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.stores.local.indexed import IndexedSessionLogStore

__all__ = ["SessionQueries"]


class SessionQueries:
    """The full history of an agent's sessions, and search over it."""

    def __init__(self, name: str, session_store: IndexedSessionLogStore) -> None:
        self.name = name
        self.session_store = session_store

    async def session_log(
        self,
        ctx: RuntimeContext | None = None,
        *,
        types: Sequence[str] | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """The full, never-compacted record of a session (optionally of some record types)."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        key = SessionRef(self.name, ctx.user_id, ctx.session)
        return await self.session_store.read(key, types=types, after_seq=after_seq, limit=limit)

    async def session_messages(self, ctx: RuntimeContext | None = None) -> list[Msg]:
        """Every message of a session as it happened (full tool output, nothing summarized)."""
        records = await self.session_log(ctx, types=[RecordType.MESSAGE])
        return [m for m in (r.message for r in records) if m is not None]

    async def sessions(self, user_id: str = "default") -> list[SessionInfo]:
        """The sessions a user has with this agent, most recent first."""
        return await self.session_store.sessions(self.name, user_id)

    async def session_search(
        self,
        query: str,
        user_id: str = "default",
        *,
        max_results: int = 10,
        match: MatchMode = "phrase",
        order: SearchOrder = "recent",
        session_id: str | None = None,
    ) -> list[SearchHit]:
        """Search the messages of a user's sessions (newest first by default)."""
        return await self.session_store.search(
            self.name,
            user_id,
            query,
            max_results=max_results,
            match=match,
            order=order,
            session_id=session_id,
        )

    async def session_usage(self, ctx: RuntimeContext | None = None) -> UsageTotals:
        """What a session has spent: its calls' requests (and their sub-agents'), with their
        cost, as its log records them."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        return await session_spending(self.session_store, SessionRef.of(self.name, ctx))
