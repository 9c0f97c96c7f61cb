"""``ScanSearchIndex``: search by reading the logs themselves, with no index to keep.

It follows the same matching rules as the real indexes (see :mod:`harnessed.log.search`)
but reads every session of the user on each search, so its cost grows with the history. It is
the default where no local file can hold an index (memory and object-store workspaces, agents
without a workspace) and the baseline of ``benchmarks/session_log.py``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from harnessed.log.record import SessionRecord
from harnessed.log.search import (
    MatchMode,
    Phrase,
    SearchHit,
    SearchOrder,
    check_search_args,
    indexable,
    matches,
    query_phrases,
    timestamp_micros,
    words,
)
from harnessed.log.store import SessionLogStore
from harnessed.runtime import SessionRef

__all__ = ["ScanSearchIndex"]


class ScanSearchIndex:
    """A :class:`~harnessed.log.search.SearchIndex` that scans ``store`` on every search."""

    def __init__(self, store: SessionLogStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return f"ScanSearchIndex({self.store!r})"

    async def add(self, key: SessionRef, records: Sequence[SessionRecord]) -> int:
        """Nothing to store: the log is searched directly."""
        if records:
            return max(r.seq for r in records)
        return await self.indexed_through(key)

    async def indexed_through(self, key: SessionRef) -> int:
        last = await self.store.tail(key, 1)
        return last[-1].seq if last else 0

    async def is_built(self, agent_id: str, user_id: str) -> bool:
        return True

    async def rebuild(self, store: SessionLogStore, agent_id: str, user_id: str) -> int:
        """Nothing to rebuild; returns the number of searchable messages."""
        total = 0
        for info in await store.sessions(agent_id, user_id):
            records = await store.read(SessionRef(agent_id, user_id, info.session_id))
            total += sum(1 for r in records if indexable(r) is not None)
        return total

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
        terms = {t for p in wanted for t in p.terms}
        if session_id is not None:
            session_ids = [session_id]
        else:
            session_ids = [s.session_id for s in await self.store.sessions(agent_id, user_id)]
        scored: list[tuple[float, int, int, SearchHit]] = []
        for position, sid in enumerate(session_ids):
            for record in await self.store.read(SessionRef(agent_id, user_id, sid)):
                item = indexable(record)
                if item is None:
                    continue
                role, text, name = item
                if text.isascii() and not _may_match(text.lower(), wanted, match):
                    continue  # cheap rejection before splitting the text into words
                text_words = words(text)
                if not matches(text_words, wanted, match):
                    continue
                when = timestamp_micros(record.timestamp)
                score = float(when)
                if order == "relevance":
                    score = sum(1 for w in text_words if w in terms) / (len(text_words) + 10)
                hit = SearchHit(sid, record.seq, role, text, record.timestamp, name)
                scored.append((score, when, -position, hit))
        best = heapq.nlargest(max_results, scored, key=lambda s: (s[0], s[1], s[2], s[3].seq))
        return [entry[3] for entry in best]

    async def close(self) -> None:
        return None


def _may_match(lowered: str, wanted: Sequence[Phrase], match: MatchMode) -> bool:
    """False when the text cannot match (a query term is not even a substring)."""
    if match == "any":
        return any(all(t in lowered for t in p.terms) for p in wanted)
    return all(t in lowered for p in wanted for t in p.terms)
