"""Wake-ups in an SQLite file of a local workspace (``.harnessed/wakeups.sqlite3``).

Every process serving agents on the workspace opens the same file; a claim is one write
transaction (``BEGIN IMMEDIATE``), so two processes claiming at once never get the same
wake-up. The file survives restarts: a wake-up due while no process ran fires when one starts.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from harnessed._internal.sqlite_wal import use_wal
from harnessed.wakeups.spec import Wakeup, WakeupLimitError
from harnessed.wakeups.store import limit_message

__all__ = ["SqliteWakeupStore"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS wakeups (
    id          TEXT PRIMARY KEY,
    agent       TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    note        TEXT NOT NULL,
    due_at      REAL NOT NULL,
    cron        TEXT,
    created_at  REAL NOT NULL,
    fired       INTEGER NOT NULL DEFAULT 0,
    holder      TEXT NOT NULL DEFAULT '',
    claim_until REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS wakeups_due ON wakeups (agent, due_at);
CREATE INDEX IF NOT EXISTS wakeups_user ON wakeups (agent, user_id, session_id);
"""
_COLUMNS = "id, agent, user_id, session_id, note, due_at, cron, created_at, fired"


def _row(row: tuple[Any, ...]) -> Wakeup:
    return Wakeup(
        id=row[0],
        agent=row[1],
        user_id=row[2],
        session_id=row[3],
        note=row[4],
        due_at=float(row[5]),
        cron=row[6],
        created_at=float(row[7]),
        fired=int(row[8]),
    )


def _set_up(conn: sqlite3.Connection) -> None:
    """WAL mode and the schema, safe against another process setting up the same file (the
    schema is written in a transaction that takes the write lock first)."""
    conn.execute("PRAGMA busy_timeout=30000")
    use_wal(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class SqliteWakeupStore:
    """A :class:`~harnessed.wakeups.WakeupStore` in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SqliteWakeupStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            try:
                _set_up(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                conn = self._connect()
                conn.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
                try:
                    result = work(conn)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                return result

        return await asyncio.to_thread(locked)

    async def add(self, wakeup: Wakeup, *, max_per_user: int) -> None:
        def work(conn: sqlite3.Connection) -> None:
            (count,) = conn.execute(
                "SELECT count(*) FROM wakeups WHERE agent = ? AND user_id = ?",
                (wakeup.agent, wakeup.user_id),
            ).fetchone()
            if count >= max_per_user:
                raise WakeupLimitError(limit_message(wakeup.user_id, max_per_user))
            conn.execute(
                f"INSERT INTO wakeups ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    wakeup.id,
                    wakeup.agent,
                    wakeup.user_id,
                    wakeup.session_id,
                    wakeup.note,
                    wakeup.due_at,
                    wakeup.cron,
                    wakeup.created_at,
                    wakeup.fired,
                ),
            )

        await self._run(work)

    async def pending(
        self, agent: str, user_id: str, session_id: str | None = None
    ) -> list[Wakeup]:
        def work(conn: sqlite3.Connection) -> list[Wakeup]:
            sql = f"SELECT {_COLUMNS} FROM wakeups WHERE agent = ? AND user_id = ?"
            args: tuple[Any, ...] = (agent, user_id)
            if session_id is not None:
                sql, args = sql + " AND session_id = ?", (*args, session_id)
            return [_row(r) for r in conn.execute(sql + " ORDER BY due_at, id", args)]

        return await self._run(work)

    async def cancel(
        self, agent: str, user_id: str, session_id: str, wakeup_id: str
    ) -> Wakeup | None:
        def work(conn: sqlite3.Connection) -> Wakeup | None:
            row = conn.execute(
                f"DELETE FROM wakeups WHERE id = ? AND agent = ? AND user_id = ? AND "
                f"session_id = ? RETURNING {_COLUMNS}",
                (wakeup_id, agent, user_id, session_id),
            ).fetchone()
            return _row(row) if row else None

        return await self._run(work)

    async def claim(
        self, agents: Collection[str], holder: str, now: float, claim_seconds: float, limit: int
    ) -> list[Wakeup]:
        names = sorted(agents)
        if not names:
            return []
        marks = ",".join("?" * len(names))

        def work(conn: sqlite3.Connection) -> list[Wakeup]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM wakeups WHERE agent IN ({marks}) AND due_at <= ?"
                " AND claim_until <= ? ORDER BY due_at, id LIMIT ?",
                (*names, now, now, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE wakeups SET holder = ?, claim_until = ? WHERE id = ?",
                [(holder, now + claim_seconds, r[0]) for r in rows],
            )
            return [_row(r) for r in rows]

        return await self._run(work)

    async def settle(self, wakeup: Wakeup, holder: str, next_due: float | None) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            key = (wakeup.id, holder, wakeup.fired)
            where = " WHERE id = ? AND holder = ? AND fired = ?"
            if next_due is None:
                cursor = conn.execute("DELETE FROM wakeups" + where, key)
            else:
                cursor = conn.execute(
                    "UPDATE wakeups SET due_at = ?, fired = fired + 1, holder = '',"
                    " claim_until = 0" + where,
                    (next_due, *key),
                )
            return cursor.rowcount == 1

        return await self._run(work)

    async def release(self, wakeup: Wakeup, holder: str) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE wakeups SET holder = '', claim_until = 0 WHERE id = ? AND holder = ?",
                (wakeup.id, holder),
            )

        await self._run(work)

    async def next_due(self, agents: Collection[str]) -> float | None:
        names = sorted(agents)
        if not names:
            return None
        marks = ",".join("?" * len(names))

        def work(conn: sqlite3.Connection) -> float | None:
            (value,) = conn.execute(
                f"SELECT min(max(due_at, claim_until)) FROM wakeups WHERE agent IN ({marks})",
                names,
            ).fetchone()
            return float(value) if value is not None else None

        return await self._run(work)

    async def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
