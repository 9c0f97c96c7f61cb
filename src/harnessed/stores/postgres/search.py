"""Full-text search of the session log in PostgreSQL (``tsvector`` + GIN, per user).

The log store writes a search row for every searchable message in the same transaction as the
message itself, so the index is never behind the log. The index holds exactly the words of the
shared rules (:mod:`harnessed.log.search`, made into ``tsvector`` literals by
:mod:`.lexemes`, never PostgreSQL's own parser); candidates are checked against those rules
again, so all backends give the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harnessed.log.record import RecordType, SessionRecord
from harnessed.log.search import (
    MatchMode,
    SearchHit,
    SearchOrder,
    check_search_args,
    matches,
    query_phrases,
    words,
)
from harnessed.log.store import SessionLogStore
from harnessed.runtime import SessionRef
from harnessed.stores.postgres.connection import PostgresStore
from harnessed.stores.postgres.lexemes import INSERT_SEARCH_ROW, search_row, tsquery
from harnessed.stores.postgres.log import PostgresSessionLogStore

__all__ = ["PostgresSearchIndex"]


class PostgresSearchIndex:
    """A :class:`~harnessed.log.SearchIndex` over the PostgreSQL session log."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self._built: set[tuple[str, str]] = set()
        """Users seen with current search rows (rows are never made stale again)."""

    def __repr__(self) -> str:
        return f"PostgresSearchIndex(schema={self.store.schema!r})"

    async def add(self, key: SessionRef, records: Sequence[SessionRecord]) -> int:
        # Appends index their own messages in the same transaction: nothing is left to do.
        if records:
            return max(r.seq for r in records)
        return await self.indexed_through(key)

    async def indexed_through(self, key: SessionRef) -> int:
        # every append indexes its messages in its own statement: the index is the log
        return await PostgresSessionLogStore(self.store).last_seq(key)

    async def is_built(self, agent_id: str, user_id: str) -> bool:
        """False for a user whose rows were made with the terms of an earlier release
        (listed by migration 6): :meth:`rebuild` them first."""
        if (agent_id, user_id) in self._built:
            return True
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT 1 FROM harnessed_search_stale WHERE agent_id = %s AND user_id = %s",
                (agent_id, user_id),
            )
            stale = await cursor.fetchone() is not None
        if not stale:
            self._built.add((agent_id, user_id))
        return not stale

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
        check_search_args(max_results, match, order)
        wanted = query_phrases(query, match)
        sql = (
            "SELECT session_id, seq, role, body, ts, name FROM harnessed_search,"
            " CAST(%s AS tsquery) AS q WHERE agent_id = %s AND user_id = %s AND words @@ q"
        )
        params: list[Any] = [tsquery(wanted, match), agent_id, user_id]
        if session_id is not None:
            sql += " AND session_id = %s"
            params.append(session_id)
        if order == "relevance":
            sql += " ORDER BY ts_rank_cd(words, q) DESC, ts_micros DESC, seq DESC"
        else:
            sql += " ORDER BY ts_micros DESC, seq DESC"
        sql += " LIMIT %s OFFSET %s"
        # Candidates are checked against the text (long messages are matched by their words
        # only, see lexemes.py): read further pages until enough of them pass.
        batch = max_results + 10
        hits: list[SearchHit] = []
        offset = 0
        async with self.store.connection() as conn:
            while len(hits) < max_results:
                # Never prepared: a generic plan cannot know how rare the words are, and the
                # right plan depends on it (rare: the GIN index; common: newest first).
                cursor = await conn.execute(sql.encode(), [*params, batch, offset], prepare=False)
                rows = await cursor.fetchall()
                for row in rows:
                    if matches(words(row[3]), wanted, match) and len(hits) < max_results:
                        hits.append(
                            SearchHit(
                                str(row[0]), int(row[1]), str(row[2]), row[3], str(row[4]), row[5]
                            )
                        )
                if len(rows) < batch:
                    break
                offset += batch
                batch *= 2
        return hits

    async def rebuild(self, store: SessionLogStore, agent_id: str, user_id: str) -> int:
        count = 0
        async with self.store.connection() as conn, conn.transaction():
            await conn.execute(
                "DELETE FROM harnessed_search WHERE agent_id = %s AND user_id = %s",
                (agent_id, user_id),
            )
            for info in await store.sessions(agent_id, user_id):
                key = SessionRef(agent_id, user_id, info.session_id)
                records = await store.read(key, types=[RecordType.MESSAGE])
                rows = [r for r in (search_row(key, rec) for rec in records) if r is not None]
                if rows:
                    async with conn.cursor() as cur:
                        await cur.executemany(INSERT_SEARCH_ROW, rows)
                count += len(rows)
            await conn.execute(
                "DELETE FROM harnessed_search_stale WHERE agent_id = %s AND user_id = %s",
                (agent_id, user_id),
            )
        self._built.add((agent_id, user_id))
        return count

    async def close(self) -> None:
        """Nothing to release: the :class:`PostgresStore` owns the connections."""
