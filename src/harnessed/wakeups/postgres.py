"""Wake-ups in PostgreSQL (table ``harnessed_wakeups``), claimed by any server of the database.

A claim takes due rows with ``FOR UPDATE SKIP LOCKED``: of several servers claiming at once
each row goes to exactly one, and none waits for another's lock. The per-user bound is
checked under a transaction-scoped advisory lock on the user, so two adds racing for the last
free place cannot both win.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from harnessed.stores.postgres.connection import PostgresStore
from harnessed.wakeups.spec import Wakeup, WakeupLimitError
from harnessed.wakeups.store import limit_message

__all__ = ["PostgresWakeupStore"]

_COLUMNS = "id, agent_id, user_id, session_id, note, due_at, cron, created_at, fired"
_CLAIM = (
    "UPDATE harnessed_wakeups w SET holder = %(holder)s, claim_until = %(until)s"
    " FROM (SELECT id FROM harnessed_wakeups WHERE agent_id = ANY(%(agents)s)"
    " AND due_at <= %(now)s AND claim_until <= %(now)s ORDER BY due_at, id LIMIT %(limit)s"
    " FOR UPDATE SKIP LOCKED) due WHERE w.id = due.id"
    " RETURNING " + ", ".join(f"w.{c.strip()}" for c in _COLUMNS.split(","))
)


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


class PostgresWakeupStore:
    """A :class:`~harnessed.wakeups.WakeupStore` on PostgreSQL
    (``PostgresStore.wakeup_store()``)."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return f"PostgresWakeupStore(schema={self.store.schema!r})"

    async def add(self, wakeup: Wakeup, *, max_per_user: int) -> None:
        async with self.store.connection() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))",
                (json.dumps(["wakeups", wakeup.agent, wakeup.user_id]),),
            )
            cursor = await conn.execute(
                "SELECT count(*) FROM harnessed_wakeups WHERE agent_id = %s AND user_id = %s",
                (wakeup.agent, wakeup.user_id),
            )
            row = await cursor.fetchone()
            if row is not None and int(row[0]) >= max_per_user:
                raise WakeupLimitError(limit_message(wakeup.user_id, max_per_user))
            await conn.execute(
                f"INSERT INTO harnessed_wakeups ({_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
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

    async def pending(
        self, agent: str, user_id: str, session_id: str | None = None
    ) -> list[Wakeup]:
        sql = f"SELECT {_COLUMNS} FROM harnessed_wakeups WHERE agent_id = %s AND user_id = %s"
        args: tuple[Any, ...] = (agent, user_id)
        if session_id is not None:
            sql, args = sql + " AND session_id = %s", (*args, session_id)
        async with self.store.connection() as conn:
            cursor = await conn.execute((sql + " ORDER BY due_at, id").encode(), args)
            return [_row(r) for r in await cursor.fetchall()]

    async def cancel(
        self, agent: str, user_id: str, session_id: str, wakeup_id: str
    ) -> Wakeup | None:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM harnessed_wakeups WHERE id = %s AND agent_id = %s AND user_id = %s"
                f" AND session_id = %s RETURNING {_COLUMNS}",
                (wakeup_id, agent, user_id, session_id),
            )
            row = await cursor.fetchone()
        return _row(row) if row else None

    async def claim(
        self, agents: Collection[str], holder: str, now: float, claim_seconds: float, limit: int
    ) -> list[Wakeup]:
        params = {
            "holder": holder,
            "until": now + claim_seconds,
            "agents": sorted(agents),
            "now": now,
            "limit": limit,
        }
        async with self.store.connection() as conn:
            cursor = await conn.execute(_CLAIM.encode(), params)
            rows = await cursor.fetchall()
        return sorted((_row(r) for r in rows), key=lambda w: (w.due_at, w.id))

    async def settle(self, wakeup: Wakeup, holder: str, next_due: float | None) -> bool:
        key = (wakeup.id, holder, wakeup.fired)
        where = " WHERE id = %s AND holder = %s AND fired = %s"
        async with self.store.connection() as conn:
            if next_due is None:
                cursor = await conn.execute(("DELETE FROM harnessed_wakeups" + where).encode(), key)
            else:
                cursor = await conn.execute(
                    (
                        "UPDATE harnessed_wakeups SET due_at = %s, fired = fired + 1,"
                        " holder = '', claim_until = 0" + where
                    ).encode(),
                    (next_due, *key),
                )
            return cursor.rowcount == 1

    async def release(self, wakeup: Wakeup, holder: str) -> None:
        async with self.store.connection() as conn:
            await conn.execute(
                "UPDATE harnessed_wakeups SET holder = '', claim_until = 0"
                " WHERE id = %s AND holder = %s",
                (wakeup.id, holder),
            )

    async def next_due(self, agents: Collection[str]) -> float | None:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT min(greatest(due_at, claim_until)) FROM harnessed_wakeups"
                " WHERE agent_id = ANY(%s)",
                (sorted(agents),),
            )
            row = await cursor.fetchone()
        return float(row[0]) if row is not None and row[0] is not None else None

    async def close(self) -> None:
        return None  # the connections are the PostgresStore's
