"""The turn gate on PostgreSQL: one lease row per session, shared by every app server.

A lease is a row ``(session, holder, expires_at)``. Taking it is one statement that inserts the
row or takes over an expired one, so of many servers asking at once exactly one gets it. Times
come from the database's clock (never the servers' own, which may disagree): a holder that
crashed or hangs stops renewing, and its lease is free ``lease_seconds`` later.
"""

from __future__ import annotations

import contextlib
import json

import harnessed.sessions.gate as gates
from harnessed.sessions.gate import (
    DEFAULT_LEASE_SECONDS,
    LeaseLostError,
    LeaseWaiter,
    TurnLease,
)
from harnessed.sessions.notes import Note, encode_note
from harnessed.stores.postgres.connection import PostgresStore

__all__ = ["PostgresTurnGate"]

_NOW = "extract(epoch FROM clock_timestamp())"
_TAKE = (
    "INSERT INTO harnessed_turns AS t (session, holder, expires_at)"
    f" VALUES (%s, %s, {_NOW} + %s)"
    " ON CONFLICT (session) DO UPDATE SET holder = EXCLUDED.holder,"
    " expires_at = EXCLUDED.expires_at"
    f" WHERE t.expires_at <= {_NOW}"
    " RETURNING expires_at"
)
_RENEW = (
    f"UPDATE harnessed_turns SET expires_at = {_NOW} + %s"
    " WHERE session = %s AND holder = %s RETURNING expires_at"
)
_RELEASE = "DELETE FROM harnessed_turns WHERE session = %s AND holder = %s"
_HOLDER = (
    f"SELECT holder, expires_at FROM harnessed_turns WHERE session = %s AND expires_at > {_NOW}"
)
# the lease row is locked (FOR SHARE) while the note goes in: a release waits for the post,
# and a post after a release finds no row, so a holder collecting after it released its lease
# sees every note posted to it
_POST = (
    "WITH live AS (SELECT session, holder, expires_at FROM harnessed_turns"
    f" WHERE session = %s AND expires_at > {_NOW} FOR SHARE),"
    " posted AS (INSERT INTO harnessed_turn_notes (session, holder, note)"
    " SELECT session, holder, %s FROM live)"
    " SELECT holder, expires_at FROM live"
)
# the holder's notes, and old ones left for holders whose lease is gone (dropped)
_COLLECT = (
    "DELETE FROM harnessed_turn_notes n WHERE n.session = %s AND (n.holder = %s OR"
    f" (n.posted_at < {_NOW} - %s AND NOT EXISTS (SELECT 1 FROM harnessed_turns t"
    f" WHERE t.session = n.session AND t.holder = n.holder AND t.expires_at > {_NOW})))"
    " RETURNING n.id, n.holder, n.note"
)


class PostgresTurnGate:
    """A :class:`~harnessed.sessions.TurnGate` whose leases live in PostgreSQL, with notes to
    the holders (:class:`~harnessed.sessions.notes.TurnNotes`, table ``harnessed_turn_notes``).

    Args:
        store: The database (``PostgresStore.turn_gate()`` builds this).
        lease_seconds: How long a lease lasts without renewal.
        poll_interval: The longest wait between two attempts while the session is busy.
    """

    def __init__(
        self,
        store: PostgresStore,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        poll_interval: float = 0.1,
    ) -> None:
        if not lease_seconds > 0:
            raise ValueError(
                f"PostgresTurnGate.lease_seconds must be positive, got {lease_seconds!r}"
            )
        if not poll_interval > 0:
            raise ValueError(
                f"PostgresTurnGate.poll_interval must be positive, got {poll_interval!r}"
            )
        self.store = store
        self.lease_seconds = float(lease_seconds)
        self._waiting = LeaseWaiter(poll_interval)

    def __repr__(self) -> str:
        return f"PostgresTurnGate(schema={self.store.schema!r}, lease_seconds={self.lease_seconds})"

    async def acquire(
        self, session: str, *, wait: bool = True, timeout: float | None = None
    ) -> TurnLease:
        async def take(holder: str) -> TurnLease | None:
            async with self.store.connection("leases") as conn:
                cursor = await conn.execute(_TAKE, (session, holder, self.lease_seconds))
                row = await cursor.fetchone()
            return None if row is None else TurnLease(session, holder, float(row[0]))

        return await self._waiting.acquire(session, take, wait=wait, timeout=timeout)

    async def renew(self, lease: TurnLease) -> TurnLease:
        async with self.store.connection("renewals") as conn:
            cursor = await conn.execute(_RENEW, (self.lease_seconds, lease.session, lease.holder))
            row = await cursor.fetchone()
        if row is None:
            raise LeaseLostError(
                f"the lease on session {lease.session!r} expired and was taken over"
            )
        return TurnLease(lease.session, lease.holder, float(row[0]))

    async def release(self, lease: TurnLease) -> None:
        async with self.store.connection("leases") as conn:
            await conn.execute(_RELEASE, (lease.session, lease.holder))
        self._waiting.released(lease.session)

    # ----------------------------------------------------------------- notes
    async def holder(self, session: str) -> TurnLease | None:
        async with self.store.connection("leases") as conn:
            cursor = await conn.execute(_HOLDER, (session,))
            row = await cursor.fetchone()
        return None if row is None else TurnLease(session, str(row[0]), float(row[1]))

    async def post(self, session: str, note: Note) -> TurnLease | None:
        line = encode_note(note)
        async with self.store.connection("leases") as conn:
            cursor = await conn.execute(_POST, (session, line))
            row = await cursor.fetchone()
        return None if row is None else TurnLease(session, str(row[0]), float(row[1]))

    async def collect(self, lease: TurnLease) -> list[Note]:
        async with self.store.connection("leases") as conn:
            cursor = await conn.execute(
                _COLLECT, (lease.session, lease.holder, gates.STALE_NOTE_SECONDS)
            )
            rows = await cursor.fetchall()
        notes: list[Note] = []
        for _, holder, line in sorted(rows):
            if holder != lease.holder:
                continue
            with contextlib.suppress(ValueError):
                note = json.loads(line)
                if isinstance(note, dict):
                    notes.append(note)
        return notes
