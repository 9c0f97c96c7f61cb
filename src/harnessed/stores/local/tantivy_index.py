"""An optional faster search index on tantivy (``pip install 'harnessed[tantivy]'``).

Same layout and rules as the SQLite index: one index directory per (agent, user) next to that
user's logs (``<root>/<agent>/sessions/<user>/index.tantivy/``), the terms of the shared rules
(:func:`harnessed.log.search.words`, CJK included) indexed space-separated and split only at
those spaces, results newest first or best first. An index made by an earlier release (other
terms, no version file) is emptied when opened and rebuilt from the logs at the first search.
How far each session is indexed is kept in the index itself (one marker document per session,
committed together with the messages), so a crash never leaves the two out of step.

tantivy allows one writer per index: keep indexing of a user's sessions on one process (the
readers may be anywhere). The package is imported only when this class is used.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from harnessed.log.record import SessionRecord
from harnessed.log.search import (
    MatchMode,
    Phrase,
    SearchHit,
    SearchOrder,
    check_search_args,
    indexable,
    query_phrases,
    timestamp_micros,
    words,
)
from harnessed.log.store import SessionLogStore
from harnessed.runtime import SessionRef
from harnessed.stores.local.index_files import HandlePool, rebuild_from_log, user_session_file

__all__ = ["TANTIVY_DIR", "TantivySearchIndex"]

TANTIVY_DIR = "index.tantivy"
_ANALYZER = "harnessed_terms"
_VERSION_FILE = "harnessed-version"
_VERSION = "2"
"""2: a ``terms`` field of the shared terms and the text stored as bytes (1: the text itself,
split by tantivy's own tokenizer)."""
_REBUILD_CHUNK = 20_000
T = TypeVar("T")


def _tantivy() -> Any:
    try:
        import tantivy
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "TantivySearchIndex needs the tantivy package: pip install 'harnessed[tantivy]'"
        ) from exc
    return tantivy


class _Handle:
    """One open index, its writer (opened on first write) and the lock that serializes them."""

    def __init__(self, path: Path, writer_heap: int) -> None:
        tv = _tantivy()
        self.tv = tv
        self.lock = threading.Lock()
        self.closed = False
        self.writer_heap = writer_heap
        _check_version(path)
        builder = tv.SchemaBuilder()
        builder.add_text_field("terms", stored=False, tokenizer_name=_ANALYZER)
        builder.add_bytes_field("text", stored=True)
        builder.add_text_field("session_id", stored=True, tokenizer_name="raw")
        builder.add_text_field("kind", stored=False, tokenizer_name="raw")
        builder.add_integer_field("seq", stored=True, indexed=True, fast=True)
        builder.add_integer_field("ts", stored=False, indexed=True, fast=True)
        builder.add_text_field("role", stored=True, tokenizer_name="raw")
        builder.add_text_field("name", stored=True, tokenizer_name="raw")
        builder.add_text_field("timestamp", stored=True, tokenizer_name="raw")
        self.schema = builder.build()
        self.index = tv.Index(self.schema, path=str(path), reuse=True)
        analyzer = (
            tv.TextAnalyzerBuilder(tv.Tokenizer.whitespace())
            .filter(tv.Filter.remove_long(255))
            .build()
        )
        self.index.register_tokenizer(_ANALYZER, analyzer)
        self.writer: Any = None

    def term(self, field: str, value: object) -> Any:
        return self.tv.Query.term_query(self.schema, field, value)

    def phrase(self, phrase: Phrase) -> Any:
        """The query of one phrase; a last single CJK character matches the terms starting
        with it (CJK characters need no regex escaping)."""
        query = self.tv.Query
        terms = list(phrase.terms)
        if phrase.prefix:
            terms[-1] += ".*"
            if len(terms) == 1:
                return query.regex_query(self.schema, "terms", terms[0])
            return query.regex_phrase_query(self.schema, "terms", terms)
        if len(terms) == 1:
            return self.term("terms", terms[0])
        return query.phrase_query(self.schema, "terms", terms)

    def must(self, *queries: Any) -> Any:
        return self.tv.Query.boolean_query([(self.tv.Occur.Must, q) for q in queries])

    def writable(self) -> Any:
        if self.writer is None:
            self.writer = self.index.writer(self.writer_heap, 1)
        return self.writer

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            if self.writer is not None:
                self.writer.wait_merging_threads()
                self.writer = None


class TantivySearchIndex:
    """Full-text search over session messages with tantivy.

    Args:
        root: The directory holding the session logs (a workspace's ``agents`` directory).
        writer_heap_bytes: Memory of each index writer (at least 15 MB).
        max_open: Indexes kept open at once (least recently used ones are closed).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        writer_heap_bytes: int = 32_000_000,
        max_open: int = 16,
    ) -> None:
        if writer_heap_bytes < 15_000_000:
            raise ValueError("TantivySearchIndex writer_heap_bytes must be at least 15_000_000")
        if max_open < 1:
            raise ValueError(f"TantivySearchIndex max_open must be at least 1, got {max_open}")
        _tantivy()  # fail at construction, not at the first append, when the extra is missing
        self.root = Path(root)
        self.writer_heap_bytes = writer_heap_bytes
        self.max_open = max_open
        self._pool: HandlePool[_Handle] = HandlePool(
            lambda path: _Handle(path, writer_heap_bytes), max_open
        )

    def __repr__(self) -> str:
        return f"TantivySearchIndex({str(self.root)!r})"

    def path_for(self, agent_id: str, user_id: str) -> Path:
        """``<root>/<agent>/sessions/<user>/index.tantivy``."""
        return user_session_file(self.root, agent_id, user_id, TANTIVY_DIR)

    async def _run(self, agent_id: str, user_id: str, work: Callable[[_Handle], T]) -> T:
        return await asyncio.to_thread(self._pool.use, self.path_for(agent_id, user_id), work)

    # ------------------------------------------------------------ write
    async def add(self, key: SessionRef, records: Sequence[SessionRecord]) -> int:
        ordered = sorted(records, key=lambda r: r.seq)
        return await self._run(
            key.agent_id, key.user_id, lambda h: _add(h, key.session_id, ordered)
        )

    async def indexed_through(self, key: SessionRef) -> int:
        if not self.path_for(key.agent_id, key.user_id).exists():
            return 0
        return await self._run(key.agent_id, key.user_id, lambda h: _mark(h, key.session_id))

    async def is_built(self, agent_id: str, user_id: str) -> bool:
        if not self.path_for(agent_id, user_id).exists():
            return False
        return await self._run(agent_id, user_id, lambda h: _mark(h, "") > 0)

    async def rebuild(self, store: SessionLogStore, agent_id: str, user_id: str) -> int:
        await self._run(agent_id, user_id, _clear)
        total = await rebuild_from_log(self.add, store, agent_id, user_id, _REBUILD_CHUNK)
        await self._run(agent_id, user_id, lambda h: _set_mark(h, "", 1, commit=True))
        return total

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
        check_search_args(max_results, match, order)
        phrases = query_phrases(query, match)
        if not self.path_for(agent_id, user_id).exists():
            return []

        def work(h: _Handle) -> list[SearchHit]:
            tv = h.tv
            if len(phrases) == 1:
                text_query = h.phrase(phrases[0])
            else:
                occur = tv.Occur.Should if match == "any" else tv.Occur.Must
                text_query = tv.Query.boolean_query([(occur, h.phrase(p)) for p in phrases])
            full = (
                h.must(text_query, h.term("session_id", session_id)) if session_id else text_query
            )
            h.index.reload()
            searcher = h.index.searcher()
            if order == "recent":
                result = searcher.search(full, max_results, count=False, order_by_field="ts")
            else:
                result = searcher.search(full, max_results, count=False)
            hits: list[SearchHit] = []
            for _, address in result.hits:
                doc = searcher.doc(address)
                hits.append(
                    SearchHit(
                        session_id=doc.get_first("session_id"),
                        seq=int(doc.get_first("seq")),
                        role=doc.get_first("role"),
                        text=bytes(doc.get_first("text")).decode(),
                        timestamp=doc.get_first("timestamp"),
                        name=doc.get_first("name") or None,
                    )
                )
            return hits

        return await self._run(agent_id, user_id, work)

    async def close(self) -> None:
        await asyncio.to_thread(self._pool.close_all)


# ------------------------------------------------------------------ work
def _check_version(path: Path) -> None:
    """Empty an index directory an earlier release made (its terms are not this one's)."""
    marker = path / _VERSION_FILE
    if path.is_dir() and any(path.iterdir()):
        if marker.is_file() and marker.read_text().strip() == _VERSION:
            return
        for entry in path.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    path.mkdir(parents=True, exist_ok=True)
    marker.write_text(_VERSION)


_MARK_KIND = "mark"


def _mark(h: _Handle, session_id: str) -> int:
    """The indexed seq of a session, kept in its marker document ("" = the built flag)."""
    h.index.reload()
    searcher = h.index.searcher()
    query = h.must(h.term("kind", _MARK_KIND), h.term("session_id", session_id))
    result = searcher.search(query, 1, count=False)
    if not result.hits:
        return 0
    return int(searcher.doc(result.hits[0][1]).get_first("seq"))


def _set_mark(h: _Handle, session_id: str, seq: int, *, commit: bool) -> None:
    writer = h.writable()
    writer.delete_documents_by_query(
        h.must(h.term("kind", _MARK_KIND), h.term("session_id", session_id))
    )
    writer.add_document(h.tv.Document(kind=_MARK_KIND, session_id=session_id, seq=seq, ts=0))
    if commit:
        writer.commit()


def _add(h: _Handle, session_id: str, records: Sequence[SessionRecord]) -> int:
    last = start = _mark(h, session_id)
    if not records:
        return last
    writer = h.writable()
    try:
        for record in records:
            if record.seq <= last:
                continue
            if record.seq != last + 1:
                break
            item = indexable(record)
            if item is not None:
                role, text, name = item
                writer.add_document(
                    h.tv.Document(
                        kind="msg",
                        terms=" ".join(words(text)),
                        text=text.encode(),
                        session_id=session_id,
                        seq=record.seq,
                        ts=timestamp_micros(record.timestamp),
                        role=role,
                        name=name or "",
                        timestamp=record.timestamp,
                    )
                )
            last = record.seq
        if last != start:
            _set_mark(h, session_id, last, commit=False)
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    return last


def _clear(h: _Handle) -> None:
    writer = h.writable()
    writer.delete_all_documents()
    writer.commit()
