"""The session log in PostgreSQL: gapless sequence numbers per session, batched appends.

An append reserves its sequence numbers by bumping ``last_seq`` of the session's row (the
row lock serializes writers of one session across all app servers, and a rolled-back append
gives its numbers back), then inserts the records and their search rows with pipelined
statements, all in one transaction: a crash commits all of a batch or none of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harnessed.log.record import NewRecord, SessionRecord
from harnessed.log.store import SessionInfo
from harnessed.runtime import SessionRef
from harnessed.stores.postgres.connection import PostgresStore
from harnessed.stores.postgres.lexemes import db_text, search_fields

__all__ = ["PostgresSessionLogStore"]

_APPEND = """
WITH reserved AS (
    INSERT INTO harnessed_sessions AS s
        (agent_id, user_id, session_id, last_seq, size_bytes, updated_at)
    VALUES (%(agent)s, %(user)s, %(session)s, %(count)s, %(size)s,
        extract(epoch FROM clock_timestamp()))
    ON CONFLICT (agent_id, user_id, session_id) DO UPDATE SET
        last_seq = s.last_seq + EXCLUDED.last_seq,
        size_bytes = s.size_bytes + EXCLUDED.size_bytes,
        updated_at = EXCLUDED.updated_at
    RETURNING last_seq
), records AS (
    INSERT INTO harnessed_records
        (agent_id, user_id, session_id, seq, event_id, type, ts, run_id, turn_id, payload)
    SELECT %(agent)s, %(user)s, %(session)s, reserved.last_seq - %(count)s + r.n,
        r.event_id, r.type, r.ts, r.run_id, r.turn_id, r.payload
    FROM reserved, unnest(
        %(event_ids)s::text[], %(types)s::text[], %(stamps)s::text[], %(run_ids)s::text[],
        %(turn_ids)s::text[], %(payloads)s::text[]
    ) WITH ORDINALITY AS r(event_id, type, ts, run_id, turn_id, payload, n)
), search AS (
    INSERT INTO harnessed_search
        (agent_id, user_id, session_id, seq, ts_micros, ts, role, name, body, words)
    SELECT %(agent)s, %(user)s, %(session)s, reserved.last_seq - %(count)s + x.n,
        x.ts_micros, x.ts, x.role, x.name, x.body, x.words::tsvector
    FROM reserved, unnest(
        %(s_positions)s::bigint[], %(s_micros)s::bigint[], %(s_stamps)s::text[],
        %(s_roles)s::text[], %(s_names)s::text[], %(s_bodies)s::text[], %(s_words)s::text[]
    ) AS x(n, ts_micros, ts, role, name, body, words)
)
SELECT last_seq FROM reserved
"""
"""One statement (one round trip, one commit): reserve the numbers, insert the records and
their search rows. The session row's lock serializes appends to one session; its time comes
from the database's clock, so sessions written by different servers sort right."""
_COLUMNS = "seq, event_id, type, ts, run_id, turn_id, payload"


class PostgresSessionLogStore:
    """A :class:`~harnessed.log.SessionLogStore` (and ``SessionCatalog``) on PostgreSQL."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return f"PostgresSessionLogStore(schema={self.store.schema!r})"

    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        if not records:
            return []
        payloads = [
            db_text(json.dumps(dict(r.payload), ensure_ascii=False, separators=(",", ":")))
            for r in records
        ]
        size = sum(len(p) for p in payloads)
        relative = [SessionRecord.assign(i + 1, r) for i, r in enumerate(records)]
        searchable = [(r.seq, f) for r in relative if (f := search_fields(r)) is not None]
        columns = list(zip(*(f for _, f in searchable), strict=True)) or [()] * 6
        params = {
            "agent": key.agent_id,
            "user": key.user_id,
            "session": key.session_id,
            "count": len(records),
            "size": size,
            "event_ids": [r.event_id for r in relative],
            "types": [r.type for r in relative],
            "stamps": [r.timestamp for r in relative],
            "run_ids": [r.run_id for r in relative],
            "turn_ids": [r.turn_id for r in relative],
            "payloads": payloads,
            "s_positions": [n for n, _ in searchable],
            **{
                name: list(values)
                for name, values in zip(
                    ("s_micros", "s_stamps", "s_roles", "s_names", "s_bodies", "s_words"),
                    columns,
                    strict=True,
                )
            },
        }
        async with self.store.connection() as conn:
            cursor = await conn.execute(_APPEND, params)
            row = await cursor.fetchone()
        assert row is not None
        first = int(row[0]) - len(records) + 1
        return [SessionRecord.assign(first + i, r) for i, r in enumerate(records)]

    async def read(
        self,
        key: SessionRef,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        if limit is not None and limit <= 0:
            return []
        query = (
            f"SELECT {_COLUMNS} FROM harnessed_records"
            " WHERE agent_id = %s AND user_id = %s AND session_id = %s AND seq > %s"
        )
        params: list[Any] = [key.agent_id, key.user_id, key.session_id, after_seq]
        if types is not None:
            query += " AND type = ANY(%s)"
            params.append(list(types))
        query += " ORDER BY seq"
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        return await self._fetch(query, params)

    async def tail(
        self, key: SessionRef, count: int, *, types: Sequence[str] | None = None
    ) -> list[SessionRecord]:
        if count <= 0:
            return []
        query = (
            f"SELECT {_COLUMNS} FROM harnessed_records"
            " WHERE agent_id = %s AND user_id = %s AND session_id = %s"
        )
        params: list[Any] = [key.agent_id, key.user_id, key.session_id]
        if types is not None:
            query += " AND type = ANY(%s)"
            params.append(list(types))
        query += " ORDER BY seq DESC LIMIT %s"
        params.append(count)
        return list(reversed(await self._fetch(query, params)))

    async def last_seq(self, key: SessionRef) -> int:
        """The newest sequence number of a session (0 when it has no records)."""
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT last_seq FROM harnessed_sessions"
                " WHERE agent_id = %s AND user_id = %s AND session_id = %s",
                (key.agent_id, key.user_id, key.session_id),
            )
            row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT session_id, updated_at, size_bytes FROM harnessed_sessions"
                " WHERE agent_id = %s AND user_id = %s AND last_seq > 0"
                " ORDER BY updated_at DESC, session_id",
                (agent_id, user_id),
            )
            rows = await cursor.fetchall()
        return [SessionInfo(str(r[0]), float(r[1]), int(r[2])) for r in rows]

    async def users(self, agent_id: str) -> list[str]:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT DISTINCT user_id FROM harnessed_sessions"
                " WHERE agent_id = %s AND last_seq > 0 ORDER BY user_id",
                (agent_id,),
            )
            rows = await cursor.fetchall()
        return [str(r[0]) for r in rows]

    async def _fetch(self, query: str, params: Sequence[Any]) -> list[SessionRecord]:
        async with self.store.connection() as conn:
            cursor = await conn.execute(query.encode(), params)
            rows = await cursor.fetchall()
        return [
            SessionRecord(
                seq=int(r[0]),
                event_id=str(r[1]),
                type=str(r[2]),
                timestamp=str(r[3]),
                run_id=r[4],
                turn_id=r[5],
                payload=json.loads(r[6]),
            )
            for r in rows
        ]
