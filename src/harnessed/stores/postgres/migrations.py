"""Versioned schema migrations of the PostgreSQL store.

Each migration is a number and the SQL that takes the schema from the previous number to it.
:func:`upgrade` applies the missing ones in order, in one transaction, under an
advisory lock, so app servers starting together never apply one twice. The applied numbers are
kept in ``harnessed_schema``. Migrations are only ever added, never edited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "applied_version", "upgrade"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "session logs with full-text search, agent states",
        """
        CREATE TABLE harnessed_sessions (
            agent_id   text   NOT NULL,
            user_id    text   NOT NULL,
            session_id text   NOT NULL,
            last_seq   bigint NOT NULL DEFAULT 0,
            size_bytes bigint NOT NULL DEFAULT 0,
            updated_at double precision NOT NULL,
            PRIMARY KEY (agent_id, user_id, session_id)
        );
        CREATE INDEX harnessed_sessions_recent
            ON harnessed_sessions (agent_id, user_id, updated_at DESC);

        CREATE TABLE harnessed_records (
            agent_id   text   NOT NULL,
            user_id    text   NOT NULL,
            session_id text   NOT NULL,
            seq        bigint NOT NULL,
            event_id   text   NOT NULL,
            type       text   NOT NULL,
            ts         text   NOT NULL,
            run_id     text,
            turn_id    text,
            payload    text   NOT NULL,
            PRIMARY KEY (agent_id, user_id, session_id, seq)
        );
        CREATE INDEX harnessed_records_type
            ON harnessed_records (agent_id, user_id, session_id, type, seq);

        CREATE TABLE harnessed_search (
            agent_id   text   NOT NULL,
            user_id    text   NOT NULL,
            session_id text   NOT NULL,
            seq        bigint NOT NULL,
            ts_micros  bigint NOT NULL,
            ts         text   NOT NULL,
            role       text   NOT NULL,
            name       text,
            body       text   NOT NULL,
            words      tsvector NOT NULL,
            PRIMARY KEY (agent_id, user_id, session_id, seq)
        );
        CREATE INDEX harnessed_search_words ON harnessed_search USING GIN (words);
        -- word frequencies for the planner: rare words take the GIN index, common ones walk
        -- the newest messages (the default 100 mistakes rare words for common ones)
        ALTER TABLE harnessed_search ALTER COLUMN words SET STATISTICS 1000;
        CREATE INDEX harnessed_search_recent
            ON harnessed_search (agent_id, user_id, ts_micros DESC, seq DESC);

        CREATE TABLE harnessed_states (
            agent_id   text   NOT NULL,
            user_id    text   NOT NULL,
            session_id text   NOT NULL,
            version    bigint NOT NULL,
            data       text   NOT NULL,
            PRIMARY KEY (agent_id, user_id, session_id)
        );
        """,
    ),
    Migration(
        2,
        "turn leases",
        """
        CREATE TABLE harnessed_turns (
            session    text NOT NULL PRIMARY KEY,
            holder     text NOT NULL,
            expires_at double precision NOT NULL
        );
        """,
    ),
    Migration(
        3,
        "notes to turn holders",
        """
        CREATE TABLE harnessed_turn_notes (
            id      bigserial PRIMARY KEY,
            session text NOT NULL,
            holder  text NOT NULL,
            note    text NOT NULL,
            posted_at double precision NOT NULL DEFAULT extract(epoch FROM clock_timestamp())
        );
        CREATE INDEX harnessed_turn_notes_session ON harnessed_turn_notes (session, holder);
        """,
    ),
    Migration(
        4,
        "turns waiting for a lease are served in order",
        """
        -- until when a ticket may still be waiting (0: nobody): a free lease is taken in one
        -- statement only when nobody can be waiting for it
        ALTER TABLE harnessed_turns
            ADD COLUMN queued_until double precision NOT NULL DEFAULT 0;
        CREATE TABLE harnessed_turn_queue (
            id         bigserial PRIMARY KEY,
            session    text NOT NULL,
            holder     text NOT NULL,
            expires_at double precision NOT NULL,
            UNIQUE (session, holder)
        );
        CREATE INDEX harnessed_turn_queue_line ON harnessed_turn_queue (session, id);
        """,
    ),
    # 5 was never used: two changes made at the same time took 6 and 7 (numbers are only
    # ever added, and a database at a later number skips earlier ones)
    Migration(
        6,
        "CJK search terms: search rows rebuilt per user",
        """
        -- the terms of the search rows changed (CJK runs as character pairs, NFKC folding);
        -- SQL cannot make them, so every user with rows is listed here and the search index
        -- rebuilds that user's rows before its first search (then removes the entry)
        CREATE TABLE harnessed_search_stale (
            agent_id text NOT NULL,
            user_id  text NOT NULL,
            PRIMARY KEY (agent_id, user_id)
        );
        INSERT INTO harnessed_search_stale (agent_id, user_id)
            SELECT DISTINCT agent_id, user_id FROM harnessed_search;
        """,
    ),
    Migration(
        7,
        "wake-ups; running turns and their events for every server",
        """
        CREATE TABLE harnessed_wakeups (
            id          text PRIMARY KEY,
            agent_id    text NOT NULL,
            user_id     text NOT NULL,
            session_id  text NOT NULL,
            note        text NOT NULL,
            due_at      double precision NOT NULL,
            cron        text,
            created_at  double precision NOT NULL,
            fired       integer NOT NULL DEFAULT 0,
            holder      text NOT NULL DEFAULT '',
            claim_until double precision NOT NULL DEFAULT 0
        );
        CREATE INDEX harnessed_wakeups_due ON harnessed_wakeups (agent_id, due_at);
        CREATE INDEX harnessed_wakeups_user
            ON harnessed_wakeups (agent_id, user_id, session_id);

        -- a turn running (or run lately) on some server: its lease (the turn gate's session
        -- key and holder) says whether it still runs; its events follow in order
        CREATE TABLE harnessed_turn_runs (
            turn_id    text PRIMARY KEY,
            lease      text NOT NULL,
            holder     text NOT NULL,
            agent_id   text NOT NULL,
            user_id    text NOT NULL,
            session_id text NOT NULL,
            started_at double precision NOT NULL,
            ended_at   double precision
        );
        CREATE INDEX harnessed_turn_runs_open
            ON harnessed_turn_runs (agent_id, user_id, session_id) WHERE ended_at IS NULL;
        CREATE INDEX harnessed_turn_runs_ended ON harnessed_turn_runs (ended_at);
        CREATE TABLE harnessed_turn_events (
            turn_id text NOT NULL REFERENCES harnessed_turn_runs ON DELETE CASCADE,
            seq     integer NOT NULL,
            kind    text NOT NULL,
            data    text NOT NULL,
            PRIMARY KEY (turn_id, seq)
        );
        """,
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The schema version this release of harnessed needs."""

_LOCK_KEY = 0x6861726E  # an arbitrary constant: the advisory lock of schema upgrades


async def applied_version(conn: AsyncConnection[Any]) -> int:
    """The highest migration applied in the connection's schema (0 for an empty one)."""
    cursor = await conn.execute("SELECT to_regclass('harnessed_schema') IS NOT NULL")
    row = await cursor.fetchone()
    if row is None or not row[0]:
        return 0
    cursor = await conn.execute("SELECT coalesce(max(version), 0) FROM harnessed_schema")
    row = await cursor.fetchone()
    return int(row[0]) if row is not None else 0


async def upgrade(conn: AsyncConnection[Any], schema: str) -> list[int]:
    """Create ``schema`` if needed and apply the missing migrations in it; returns the
    versions applied now (maybe none).

    Raises ``RuntimeError`` when the database was migrated by a newer harnessed than this one.
    """
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}".encode())
        await conn.execute(f"SET LOCAL search_path TO {schema}".encode())
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS harnessed_schema ("
            " version integer PRIMARY KEY, description text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = await applied_version(conn)
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"the database schema is at version {current}, newer than the {SCHEMA_VERSION} "
                "this harnessed knows: upgrade harnessed"
            )
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            await conn.execute(migration.sql.encode())
            await conn.execute(
                "INSERT INTO harnessed_schema (version, description) VALUES (%s, %s)",
                (migration.version, migration.description),
            )
            applied.append(migration.version)
    return applied
