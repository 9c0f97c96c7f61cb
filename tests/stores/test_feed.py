"""The PostgreSQL turn feed read directly: a turn whose server died (its lease gone, no end
written) ends for its readers with an error instead of hanging; readers woken by NOTIFY see
each batch once, in order; a turn of one session is unknown to another."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from harnessed.runtime import SessionRef
from harnessed.sessions import TurnLease
from harnessed.stores.postgres import PostgresStore
from harnessed.turns.feed import FeedEntry
from tests.support.postgres import URL, postgres_store

KEY = SessionRef("bot", "alice", "s1")


@pytest.fixture
async def pg() -> AsyncIterator[PostgresStore]:
    async for store in postgres_store():
        yield store


def entry(seq: int, text: str) -> FeedEntry:
    return FeedEntry(seq, "event", {"type": "text_delta", "delta": text})


async def test_a_turn_whose_server_died_ends_for_its_readers(pg: PostgresStore) -> None:
    feed = pg.turn_feed()
    lease = TurnLease(SessionRef.token_of("bot", "alice", "s1"), "dead-host", 0)
    await feed.begin(KEY, "run_dead", lease)  # no live lease row: its holder is gone
    await feed.write("run_dead", [entry(1, "half a "), entry(2, "reply")])
    assert await feed.running(KEY) is None
    assert await feed.known(KEY, "run_dead")
    got = [e async for batch in feed.follow(KEY, "run_dead") for e in batch]
    assert [e.seq for e in got] == [1, 2, 3]
    assert got[-1].kind == "end" and got[-1].data["error_type"] == "TurnLostError"
    await feed.close()


async def test_live_batches_reach_a_reader_once_in_order(pg: PostgresStore) -> None:
    feed = pg.turn_feed()
    gate = pg.turn_gate()
    lease = await gate.acquire(SessionRef.token_of("bot", "alice", "s1"))
    await feed.begin(KEY, "run_live", lease)
    assert await feed.running(KEY) == "run_live"
    assert await feed.running_in("bot", "alice") == {"s1": "run_live"}
    assert not await feed.known(SessionRef("bot", "alice", "s2"), "run_live")
    assert not await feed.known(SessionRef("bot", "mallory", "s1"), "run_live")
    got: list[FeedEntry] = []
    first = asyncio.Event()

    async def read() -> None:
        async for batch in feed.follow(KEY, "run_live", idle=30):
            got.extend(batch)
            first.set()

    reader = asyncio.create_task(read())
    await feed.write("run_live", [entry(1, "a")])
    await asyncio.wait_for(first.wait(), 30)
    for seq in range(2, 40):  # written one by one while the reader follows
        await feed.write("run_live", [entry(seq, str(seq))])
    await feed.write("run_live", [entry(1, "a again")])  # a retried write: no double
    await feed.write("run_live", [FeedEntry(40, "end", {"status": "completed"})])
    await asyncio.wait_for(reader, 30)
    assert [e.seq for e in got] == list(range(1, 41))
    assert got[0].data["delta"] == "a" and got[-1].kind == "end"
    assert await feed.running(KEY) is None  # ended, though its lease is still held
    await gate.release(lease)
    await feed.close()


async def test_ended_turns_are_dropped_after_keep_seconds(pg: PostgresStore) -> None:
    feed = pg.turn_feed()
    feed.keep_seconds = 1e-6
    for run in ("run_old", "run_new"):
        await feed.begin(KEY, run, TurnLease("k", "h", 0))
        await feed.write(run, [FeedEntry(1, "end", {"status": "completed"})])
    with psycopg.connect(URL) as conn:
        rows = conn.execute(f"SELECT turn_id FROM {pg.schema}.harnessed_turn_runs").fetchall()
    assert [r[0] for r in rows] == ["run_new"]  # the older one went when the newer ended
    await feed.close()
