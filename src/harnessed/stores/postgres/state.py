"""Agent states in PostgreSQL, with the same optimistic version check as the file store."""

from __future__ import annotations

import json

from harnessed.messages import clean_text
from harnessed.runtime import SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.state.store import (
    StateConflictError,
    decode_state,
    parse_state_file,
    snapshot,
)
from harnessed.stores.postgres.connection import PostgresStore

__all__ = ["PostgresStateStore"]


class PostgresStateStore:
    """An :class:`~harnessed.state.AgentStateStore` on PostgreSQL.

    ``save`` writes only when the stored version is the one the state was loaded with (one
    conditional statement, atomic in the database), so of two app servers saving the same
    loaded version exactly one wins and the other gets :class:`StateConflictError`.
    """

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return f"PostgresStateStore(schema={self.store.schema!r})"

    async def load(self, key: SessionRef) -> AgentState | None:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT version, data FROM harnessed_states"
                " WHERE agent_id = %s AND user_id = %s AND session_id = %s",
                (key.agent_id, key.user_id, key.session_id),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        where = f"row {key} of harnessed_states"
        data = parse_state_file(row[1].encode(), where)
        data["version"] = int(row[0])
        return decode_state(data, key, where)

    async def save(self, state: AgentState) -> None:
        key = state.key
        new_version = state.version + 1
        data = snapshot(state, new_version)
        text = clean_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        ids = (key.agent_id, key.user_id, key.session_id)
        async with self.store.connection() as conn:
            if state.version == 0:
                cursor = await conn.execute(
                    "INSERT INTO harnessed_states (agent_id, user_id, session_id, version, data)"
                    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (*ids, new_version, text),
                )
            else:
                cursor = await conn.execute(
                    "UPDATE harnessed_states SET version = %s, data = %s"
                    " WHERE agent_id = %s AND user_id = %s AND session_id = %s AND version = %s",
                    (new_version, text, *ids, state.version),
                )
            if cursor.rowcount != 1:
                cursor = await conn.execute(
                    "SELECT version FROM harnessed_states"
                    " WHERE agent_id = %s AND user_id = %s AND session_id = %s",
                    ids,
                )
                row = await cursor.fetchone()
                raise StateConflictError(key, state.version, int(row[0]) if row else 0)
        state.version = new_version

    async def delete(self, key: SessionRef) -> bool:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM harnessed_states"
                " WHERE agent_id = %s AND user_id = %s AND session_id = %s",
                (key.agent_id, key.user_id, key.session_id),
            )
            return cursor.rowcount > 0

    async def list_sessions(self, agent_id: str, user_id: str) -> list[str]:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT session_id FROM harnessed_states WHERE agent_id = %s AND user_id = %s"
                " ORDER BY session_id",
                (agent_id, user_id),
            )
            rows = await cursor.fetchall()
        return [str(r[0]) for r in rows]
