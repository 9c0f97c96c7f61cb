"""Migration 4 (turns waiting for a lease served in order) on a schema an earlier harnessed
made and uses: its live lease survives, and waiters queue behind it."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from harnessed.sessions import SessionBusyError, TurnLease
from harnessed.stores.postgres import MIGRATIONS, PostgresStore, PostgresTurnGate
from tests.support.postgres import URL


def at_version(schema: str, version: int) -> None:
    """The schema as a harnessed that knew migrations up to ``version`` left it."""
    with psycopg.connect(URL, autocommit=True) as conn, conn.transaction():
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET LOCAL search_path TO {schema}")
        conn.execute(
            "CREATE TABLE harnessed_schema (version integer PRIMARY KEY,"
            " description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for migration in MIGRATIONS[:version]:
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO harnessed_schema (version, description) VALUES (%s, %s)",
                (migration.version, migration.description),
            )


async def test_a_lease_held_before_the_upgrade_still_holds_and_waiters_queue(
    schema: str,
) -> None:
    at_version(schema, 3)
    old_holder = "another-host:1:2:0123456789ab"  # a server still running the old version
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {schema}.harnessed_turns (session, holder, expires_at)"
            " VALUES ('s', %s, extract(epoch FROM clock_timestamp()) + 600)",
            (old_holder,),
        )
    store = PostgresStore(URL, schema=schema)
    try:
        assert 4 in await store.upgrade()
        gate = PostgresTurnGate(store, lease_seconds=600, poll_interval=0.02)
        with pytest.raises(SessionBusyError):
            await gate.acquire("s", wait=False)
        waiter = asyncio.create_task(gate.acquire("s"))
        while True:  # until a probe hears that the waiter is in line
            with pytest.raises(SessionBusyError) as busy:
                await gate.acquire("s", wait=False)
            if "1 more waiting" in str(busy.value):
                break
            assert not waiter.done()
            await asyncio.sleep(0.01)
        await gate.release(TurnLease("s", old_holder, 0))  # the old server gives it back
        lease = await asyncio.wait_for(waiter, 60)
        await gate.release(lease)
        await gate.release(await gate.acquire("s", wait=False))
    finally:
        await store.close()


async def test_migration_6_lists_the_users_whose_search_rows_have_old_terms(schema: str) -> None:
    at_version(schema, 4)
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {schema}.harnessed_search (agent_id, user_id, session_id, seq,"
            " ts_micros, ts, role, name, body, words) VALUES ('a', 'u', 's', 1, 0, '', 'user',"
            " NULL, '数据库迁移', to_tsvector('simple', '数据库迁移'))"
        )
    store = PostgresStore(URL, schema=schema)
    try:
        assert 6 in await store.upgrade()
        index = store.search_index()
        assert not await index.is_built("a", "u")  # rebuilt before its first search
        assert await index.is_built("a", "someone-else")
    finally:
        await store.close()
