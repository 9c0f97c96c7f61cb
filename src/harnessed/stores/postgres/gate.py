"""The turn gate on PostgreSQL: one lease row per session, shared by every app server.

A lease is a row ``(session, holder, expires_at)``. Taking a free lease nobody waits for is one
statement that inserts the row or takes over an expired one, so of many servers asking at once
exactly one gets it. Times come from the database's clock (never the servers' own, which may
disagree): a holder that crashed or hangs stops renewing, and its lease is free
``lease_seconds`` later.

Turns that find the session busy wait in its line (:mod:`harnessed.turns.line`), rows of
``harnessed_turn_queue`` in the order they came. Every change to a line is made in a
transaction holding the lease row's lock, and sets the row's ``queued_until`` (until when a
ticket may still wait), so the one-statement take (which passes only when ``queued_until`` is
over) never overtakes a waiter.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import harnessed.turns.gate as gates
from harnessed.stores.postgres.connection import PostgresStore
from harnessed.turns.gate import (
    DEFAULT_LEASE_SECONDS,
    LeaseLostError,
    LeaseWaiter,
    TurnLease,
    to_the_end,
)
from harnessed.turns.line import Ticket, live_tickets, serve, without
from harnessed.turns.notes import Note, encode_note

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresTurnGate"]

_NOW = "extract(epoch FROM clock_timestamp())"
# taken (true, its expiry) when free and nobody waits; otherwise (false, how long the lease
# still runs, how many wait) as it stood when the statement began: still running means it was
# busy then; run out means the line may be in the way (or another asker won)
_TAKE = (
    "WITH taken AS (INSERT INTO harnessed_turns AS t (session, holder, expires_at)"
    f" VALUES (%(session)s, %(holder)s, {_NOW} + %(seconds)s)"
    " ON CONFLICT (session) DO UPDATE SET holder = EXCLUDED.holder,"
    " expires_at = EXCLUDED.expires_at"
    f" WHERE t.expires_at <= {_NOW} AND t.queued_until <= {_NOW}"
    " RETURNING expires_at)"
    " SELECT true, expires_at, 0 FROM taken"
    f" UNION ALL SELECT false, t.expires_at - {_NOW}, (SELECT count(*) FROM"
    f" harnessed_turn_queue q WHERE q.session = t.session AND q.expires_at > {_NOW})"
    " FROM harnessed_turns t WHERE t.session = %(session)s AND NOT EXISTS (SELECT 1 FROM taken)"
)
# the lease row, created free when missing, and locked: every change to the session's line is
# made holding it, so the line read after it is the whole line
_LOCK = (
    "INSERT INTO harnessed_turns AS t (session, holder, expires_at) VALUES (%s, '', 0)"
    " ON CONFLICT (session) DO UPDATE SET session = t.session"
    f" RETURNING t.holder, t.expires_at, {_NOW}"
)
# a waiter's look at the line without locking anything: the lease's expiry, its own ticket's,
# how many live tickets are before it, and the time (no row: it is not in line)
_PEEK = (
    "SELECT coalesce((SELECT t.expires_at FROM harnessed_turns t"
    " WHERE t.session = %(session)s), 0), q.expires_at,"
    " (SELECT count(*) FROM harnessed_turn_queue a WHERE a.session = %(session)s"
    f" AND a.id < q.id AND a.expires_at > {_NOW}), {_NOW}"
    " FROM harnessed_turn_queue q WHERE q.session = %(session)s AND q.holder = %(holder)s"
)
_LINE = "SELECT holder, expires_at FROM harnessed_turn_queue WHERE session = %s ORDER BY id"
_DROP = "DELETE FROM harnessed_turn_queue WHERE session = %s AND holder = ANY(%s)"
_JOIN = (
    "INSERT INTO harnessed_turn_queue (session, holder, expires_at) VALUES (%s, %s, %s)"
    " ON CONFLICT (session, holder) DO UPDATE SET expires_at = EXCLUDED.expires_at"
)
_SERVED = (
    "UPDATE harnessed_turns SET holder = %s, expires_at = %s, queued_until = %s WHERE session = %s"
)
_QUEUED = "UPDATE harnessed_turns SET queued_until = %s WHERE session = %s"
_RENEW = (
    f"UPDATE harnessed_turns SET expires_at = {_NOW} + %s"
    " WHERE session = %s AND holder = %s RETURNING expires_at"
)
# the row goes when nobody can be waiting; otherwise it stays, free, with its line
_RELEASE = (
    f"DELETE FROM harnessed_turns WHERE session = %s AND holder = %s AND queued_until <= {_NOW}"
)
_FREE = "UPDATE harnessed_turns SET holder = '', expires_at = 0 WHERE session = %s AND holder = %s"
_HOLDER = (
    f"SELECT holder, expires_at FROM harnessed_turns WHERE session = %s AND expires_at > {_NOW}"
)
# the lease row is locked (FOR SHARE) while the note goes in: a release waits for the post,
# and a post after a release finds no live lease, so a holder collecting after it released its lease
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
    """A :class:`~harnessed.sessions.TurnGate` whose leases live in PostgreSQL, turns waiting
    for them in line (table ``harnessed_turn_queue``), with notes to the holders
    (:class:`~harnessed.turns.notes.TurnNotes`, table ``harnessed_turn_notes``).

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
        self._waiting = LeaseWaiter(poll_interval, self.lease_seconds)

    def __repr__(self) -> str:
        return f"PostgresTurnGate(schema={self.store.schema!r}, lease_seconds={self.lease_seconds})"

    async def acquire(
        self, session: str, *, wait: bool = True, timeout: float | None = None
    ) -> TurnLease:
        asked: list[bool] = []  # whether this holder asked before (then it may be in line)

        async def attempt(holder: str, queue: bool) -> TurnLease | int:
            got = await to_the_end(self._attempt(session, holder, queue, again=bool(asked)))
            asked.append(True)
            return got

        async def leave(holder: str) -> None:
            await self._leave(session, holder)
            self._waiting.released(session)

        return await self._waiting.acquire(session, attempt, leave, wait=wait, timeout=timeout)

    async def _attempt(
        self, session: str, holder: str, queue: bool, *, again: bool
    ) -> TurnLease | int:
        async with self.store.connection("leases") as conn:
            peek = None
            if again:  # a waiter: a look first, changing nothing
                cursor = await conn.execute(_PEEK, {"session": session, "holder": holder})
                peek = await cursor.fetchone()
            if peek is None:  # the usual case, in one statement: free, and nobody waits
                cursor = await conn.execute(
                    _TAKE, {"session": session, "holder": holder, "seconds": self.lease_seconds}
                )
                row = await cursor.fetchone()
                if row is not None and row[0]:
                    return TurnLease(session, holder, float(row[1]))
                if not queue and (row is None or float(row[1]) > 0):
                    return 0 if row is None else int(row[2])  # busy (someone took it meanwhile)
            else:
                lease_expires, mine, ahead, now = (float(value) for value in peek)
                if lease_expires > now and mine - now > self.lease_seconds * 2 / 3:
                    return int(ahead)  # still busy, and the ticket is fresh: nothing to change
            return await self._in_line(conn, session, holder, queue)

    async def _in_line(
        self, conn: AsyncConnection[Any], session: str, holder: str, queue: bool
    ) -> TurnLease | int:
        """Ask for the lease holding the row's lock: served when it is free and nobody is
        ahead; otherwise (``queue``) the holder joins the line or renews its ticket."""
        async with conn.transaction():
            cursor = await conn.execute(_LOCK, (session,))
            row = await cursor.fetchone()
            assert row is not None  # an upsert returns its row
            lease_expires, now = float(row[1]), float(row[2])
            rows = await (await conn.execute(_LINE, (session,))).fetchall()
            line = live_tickets(rows, now)
            served = serve(
                line,
                holder,
                busy=lease_expires > now,
                queue=queue,
                now=now,
                lease_seconds=self.lease_seconds,
            )
            kept = {ticket.holder for ticket in served.line}
            gone = [str(r[0]) for r in rows if r[0] not in kept]  # dead, expired, or served
            if gone:
                await conn.execute(_DROP, (session, gone))
            if served.take:
                expires_at = now + self.lease_seconds
                await conn.execute(_SERVED, (holder, expires_at, _until(served.line), session))
                return TurnLease(session, holder, expires_at)
            mine = next((t for t in served.line if t.holder == holder), None)
            if served.changed and mine is not None:
                await conn.execute(_JOIN, (session, holder, mine.expires_at))
            if served.changed or gone:
                await conn.execute(_QUEUED, (_until(served.line), session))
            return served.ahead

    async def _leave(self, session: str, holder: str) -> None:
        """``holder`` gave up waiting: its ticket leaves the line, and a lease taken for it by
        an attempt whose answer it no longer waited for is given back."""
        async with self.store.connection("leases") as conn, conn.transaction():
            cursor = await conn.execute(_LOCK, (session,))
            row = await cursor.fetchone()
            assert row is not None
            rows = await (await conn.execute(_LINE, (session,))).fetchall()
            line = without(live_tickets(rows, float(row[2])), holder)
            await conn.execute(_DROP, (session, [holder]))
            await conn.execute(_QUEUED, (_until(line), session))
            await conn.execute(_FREE, (session, holder))

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
            cursor = await conn.execute(_RELEASE, (lease.session, lease.holder))
            if cursor.rowcount == 0:  # turns wait (or the lease was lost: then nothing)
                await conn.execute(_FREE, (lease.session, lease.holder))
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


def _until(line: list[Ticket]) -> float:
    """Until when a ticket of ``line`` may still wait (0: nobody waits)."""
    return max((ticket.expires_at for ticket in line), default=0.0)
