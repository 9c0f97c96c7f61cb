"""The default search index: SQLite FTS5 (Python's own ``sqlite3``, no extra dependency).

The index holds the terms of the shared rules (:func:`harnessed.log.search.words`: folded
words, CJK runs as character pairs), written space-separated into the indexed column and read
by FTS5's ``ascii`` tokenizer, which splits exactly at those spaces: SQLite never splits or
folds text its own way, so the query's terms are the text's terms. A database made by an
earlier release (other terms) is emptied when it is opened and rebuilt from the logs at the
first search.

One database per (agent, user), next to that user's session logs::

    <root>/<agent>/sessions/<user>/index.sqlite3

so one user's search can never read another user's messages, and a user's index stays as
small as their own history. The row id of a message is its log timestamp in microseconds, so
"newest first" is the index's natural order: a query stops after ``max_results`` hits however
common its words are, and a rebuild (which visits sessions in any order) keeps that order.
Databases run in WAL mode with a busy timeout, so several processes may index and search the
same user at once. All SQLite work happens in worker threads, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from harnessed._internal.sqlite_wal import use_wal
from harnessed.log.record import SessionRecord
from harnessed.log.search import (
    MatchMode,
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

__all__ = ["DEFAULT_TOKENIZER", "INDEX_FILE", "SqliteSearchIndex", "fts_query"]

logger = logging.getLogger(__name__)

INDEX_FILE = "index.sqlite3"
DEFAULT_TOKENIZER = "ascii"
"""Splits the stored terms at their spaces (every other tokenizer would split them again)."""
_SCHEMA_VERSION = "2"
"""2: the indexed column holds the shared terms (1: the text, split by ``unicode61``)."""
_REBUILD_CHUNK = 5_000
_AUTOMERGE = 16
_BULK = 1_000
"""An add of at least this many records, and of at least as many as the index held, is a bulk
load (a catch-up, a rebuild's start): its segments are merged into one right away."""

T = TypeVar("T")


def fts_query(query: str, match: MatchMode) -> str:
    """The FTS5 query for ``query``: each of its phrases quoted (terms are letters and digits
    only, so nothing to escape), a single CJK character as a prefix, joined by AND or OR."""
    parts = [
        '"' + " ".join(p.terms) + '"' + (" *" if p.prefix else "")
        for p in query_phrases(query, match)
    ]
    return (" OR " if match == "any" else " AND ").join(parts)


class _Db:
    """One open database and the lock that serializes its use."""

    def __init__(self, path: Path, tokenizer: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.closed = False
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(
            path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        try:
            self._setup(tokenizer)
        except BaseException:
            self.conn.close()
            raise

    def _setup(self, tokenizer: str) -> None:
        conn = self.conn
        use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS sessions("
                "session_id TEXT PRIMARY KEY, indexed_seq INTEGER NOT NULL)"
            )
            stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if stored and stored.get("version") != _SCHEMA_VERSION:
                # made by an earlier release: its terms are not this release's; start empty
                # (not built), so the first search rebuilds it from the logs
                logger.info("search index %s has old terms: it will be rebuilt", self.path)
                conn.execute("DROP TABLE IF EXISTS messages")
                conn.execute("DELETE FROM sessions")
                conn.execute("DELETE FROM meta")
                stored = {}
            escaped = tokenizer.replace("'", "''")
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS messages USING fts5("
                "terms, text UNINDEXED, session_id UNINDEXED, seq UNINDEXED, role UNINDEXED, "
                "name UNINDEXED, "
                f"timestamp UNINDEXED, tokenize='{escaped}')"
            )
            merge = conn.execute("SELECT v FROM messages_config WHERE k = 'automerge'").fetchone()
            if merge is None or merge[0] != _AUTOMERGE:
                # merge segments only once 16 of a size have piled up (FTS5's default is 4, which
                # keeps every small write merging older, larger segments: bytes per write would
                # grow with the index)
                conn.execute(
                    "INSERT INTO messages(messages, rank) VALUES ('automerge', ?)", (_AUTOMERGE,)
                )
            if not stored:
                conn.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?)",
                    [("version", _SCHEMA_VERSION), ("tokenizer", tokenizer)],
                )
            elif stored.get("tokenizer") != tokenizer:
                raise ValueError(
                    f"the search index {self.path} was built with tokenizer "
                    f"{stored.get('tokenizer')!r}, not {tokenizer!r}; delete it and run "
                    "`harnessed reindex` to rebuild it with the new tokenizer"
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.conn.close()


class SqliteSearchIndex:
    """Full-text search over session messages with SQLite FTS5.

    Args:
        root: The directory holding the session logs (a workspace's ``agents`` directory).
        tokenizer: The FTS5 tokenizer of the stored terms. Keep the default: the terms are
            already made by the shared rules (CJK included), and another tokenizer could split
            them differently from the query.
        max_open: Databases kept open at once (least recently used ones are closed).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        tokenizer: str = DEFAULT_TOKENIZER,
        max_open: int = 32,
    ) -> None:
        if not tokenizer.strip():
            raise ValueError("SqliteSearchIndex tokenizer must not be blank")
        if max_open < 1:
            raise ValueError(f"SqliteSearchIndex max_open must be at least 1, got {max_open}")
        self.root = Path(root)
        self.tokenizer = tokenizer
        self.max_open = max_open
        self._pool: HandlePool[_Db] = HandlePool(lambda path: _Db(path, tokenizer), max_open)

    def __repr__(self) -> str:
        return f"SqliteSearchIndex({str(self.root)!r})"

    def path_for(self, agent_id: str, user_id: str) -> Path:
        """``<root>/<agent>/sessions/<user>/index.sqlite3``."""
        return user_session_file(self.root, agent_id, user_id, INDEX_FILE)

    def _discard(self, path: Path) -> None:
        self._pool.discard(path)
        for suffix in ("", "-wal", "-shm", "-journal"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)

    async def _run(self, agent_id: str, user_id: str, work: Callable[[sqlite3.Connection], T]) -> T:
        path = self.path_for(agent_id, user_id)
        return await asyncio.to_thread(self._pool.use, path, lambda db: work(db.conn))

    # ------------------------------------------------------------------ write
    async def add(self, key: SessionRef, records: Sequence[SessionRecord]) -> int:
        if not records:
            return await self.indexed_through(key)
        ordered = sorted(records, key=lambda r: r.seq)
        return await self._run(
            key.agent_id, key.user_id, lambda conn: _add(conn, key.session_id, ordered)
        )

    async def add_many(
        self, agent_id: str, user_id: str, batches: Sequence[tuple[str, Sequence[SessionRecord]]]
    ) -> list[int]:
        """:meth:`add` for several sessions of one user in one transaction (what concurrent
        appends of a user become); returns each session's indexed seq."""
        ordered = [(sid, sorted(records, key=lambda r: r.seq)) for sid, records in batches]
        return await self._run(agent_id, user_id, lambda conn: _add_many(conn, ordered))

    def add_many_blocking(
        self, agent_id: str, user_id: str, batches: Sequence[tuple[str, Sequence[SessionRecord]]]
    ) -> list[int]:
        """:meth:`add_many` in the calling thread (records of each session in ``seq`` order)."""
        path = self.path_for(agent_id, user_id)
        return self._pool.use(path, lambda db: _add_many(db.conn, batches))

    async def indexed_through(self, key: SessionRef) -> int:
        if not self.path_for(key.agent_id, key.user_id).exists():
            return 0
        return await self._run(
            key.agent_id, key.user_id, lambda conn: _indexed_seq(conn, key.session_id)
        )

    async def is_built(self, agent_id: str, user_id: str) -> bool:
        if not self.path_for(agent_id, user_id).exists():
            return False
        found = await self._run(
            agent_id,
            user_id,
            lambda conn: conn.execute("SELECT 1 FROM meta WHERE key = 'built'").fetchone(),
        )
        return found is not None

    async def rebuild(self, store: SessionLogStore, agent_id: str, user_id: str) -> int:
        """Index the user's sessions again. A database that cannot be opened as this index
        (another tokenizer, a damaged file) is replaced."""
        try:
            await self._run(agent_id, user_id, _clear)
        except (ValueError, sqlite3.DatabaseError) as exc:
            logger.warning("replacing the search index of user %s: %s", user_id, exc)
            await asyncio.to_thread(self._discard, self.path_for(agent_id, user_id))
            await self._run(agent_id, user_id, _clear)
        total = await rebuild_from_log(self.add, store, agent_id, user_id, _REBUILD_CHUNK)
        await self._run(agent_id, user_id, _mark_built)
        return total

    # ----------------------------------------------------------------- search
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
        expression = fts_query(query, match)
        if not self.path_for(agent_id, user_id).exists():
            return []
        sql = (
            "SELECT session_id, seq, role, text, timestamp, name FROM messages "
            "WHERE messages MATCH ?"
            + (" AND session_id = ?" if session_id is not None else "")
            + (" ORDER BY rowid DESC" if order == "recent" else " ORDER BY rank")
            + " LIMIT ?"
        )
        params: tuple[object, ...] = (
            (expression, session_id, max_results)
            if session_id is not None
            else (expression, max_results)
        )
        rows = await self._run(agent_id, user_id, lambda conn: conn.execute(sql, params).fetchall())
        return [
            SearchHit(str(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4]), r[5]) for r in rows
        ]

    async def close(self) -> None:
        await asyncio.to_thread(self._pool.close_all)


# ---------------------------------------------------------------- SQL work
def _indexed_seq(conn: sqlite3.Connection, session_id: str) -> int:
    row = conn.execute(
        "SELECT indexed_seq FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def _add(conn: sqlite3.Connection, session_id: str, records: Sequence[SessionRecord]) -> int:
    return _add_many(conn, [(session_id, records)])[0]


def _add_many(
    conn: sqlite3.Connection, batches: Sequence[tuple[str, Sequence[SessionRecord]]]
) -> list[int]:
    """Index the records of several sessions in one transaction; returns each session's new
    ``indexed_seq``."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows: list[_Row] = []
        added, out = 0, []
        for session_id, records in batches:
            last = start = _indexed_seq(conn, session_id)
            for record in records:
                if record.seq <= last:
                    continue  # already indexed (idempotent)
                if record.seq != last + 1:
                    break  # a gap: the caller reads the missing records and calls again
                item = indexable(record)
                if item is not None:
                    role, text, name = item
                    rowid = timestamp_micros(record.timestamp)
                    rows.append((rowid, text, session_id, record.seq, role, name, record.timestamp))
                last = record.seq
            if last != start:
                conn.execute(
                    "INSERT INTO sessions(session_id, indexed_seq) VALUES (?, ?) "
                    "ON CONFLICT(session_id) DO UPDATE SET indexed_seq = excluded.indexed_seq",
                    (session_id, last),
                )
            added += last - start
            out.append(last)
        _insert(conn, rows)
        bulk = added >= _BULK and 2 * added >= _indexed_total(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if bulk:
        # one segment now, instead of later small writes paying the merges of a bulk load
        conn.execute("INSERT INTO messages(messages) VALUES ('optimize')")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # and not at some later small write
    return out


def _indexed_total(conn: sqlite3.Connection) -> int:
    """Records indexed over all sessions (log records, not only messages)."""
    return int(conn.execute("SELECT total(indexed_seq) FROM sessions").fetchone()[0])


_Row = tuple[int, str, str, int, str, str | None, str]
"""rowid (the timestamp in microseconds), text, session_id, seq, role, name, timestamp."""


def _insert(conn: sqlite3.Connection, rows: list[_Row]) -> None:
    """Insert messages in row id order: FTS5 writes its pending terms out as a new segment
    whenever a row id is lower than the one before, so sessions interleaved in time would
    otherwise cost a segment each."""
    rows.sort()
    floor = -(2**63)
    for row in rows:
        rowid = max(row[0], floor + 1)
        while True:  # row ids are unique: messages logged in the same microsecond move up by one
            try:
                conn.execute(
                    "INSERT INTO messages(rowid, terms, text, session_id, seq, role, name, "
                    "timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (rowid, " ".join(words(row[1])), *row[1:]),
                )
                break
            except sqlite3.IntegrityError:
                rowid += 1
        floor = rowid


def _clear(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM messages")
        conn.execute("DELETE FROM sessions")
        conn.execute("DELETE FROM meta WHERE key = 'built'")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _mark_built(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO messages(messages) VALUES ('optimize')")
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('built', '1')")
