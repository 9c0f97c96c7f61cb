"""The turn gate on PostgreSQL: one lease row per session, shared by every app server.

A lease is a row ``(session, holder, expires_at)``. Taking it is one statement that inserts the
row or takes over an expired one, so of many servers asking at once exactly one gets it. Times
come from the database's clock (never the servers' own, which may disagree): a holder that
crashed or hangs stops renewing, and its lease is free ``lease_seconds`` later.
"""

from __future__ import annotations

from harnessed.sessions.gate import (
    DEFAULT_LEASE_SECONDS,
    LeaseLostError,
    LeaseWaiter,
    TurnLease,
)
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


class PostgresTurnGate:
    """A :class:`~harnessed.sessions.TurnGate` whose leases live in PostgreSQL.

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
