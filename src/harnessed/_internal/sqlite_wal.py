"""Switching an SQLite file to WAL mode when other processes may be opening it too."""

from __future__ import annotations

import sqlite3
import time

__all__ = ["use_wal"]


def use_wal(conn: sqlite3.Connection, attempts: int = 100) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the file: SQLite
    answers "database is locked" at once (without its busy wait) when two connections both
    try to upgrade a read lock, which happens when processes set up one new file together."""
    for attempt in range(attempts):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.005 * (attempt + 1))
