"""How late a server following a turn of another server sees its events (PostgreSQL feed).

usage: python benchmarks/turn_feed.py [URL]

One process plays both servers (two PostgresStore objects, two pools, two LISTEN connections
would be the same): a writer writes N single-event batches, each as soon as the reader has the
one before; the table gives the time from the start of a write to the reader having it.
A fresh schema is made and dropped.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid

import psycopg

from harnessed.runtime import SessionRef
from harnessed.stores.postgres import PostgresStore
from harnessed.turns.feed import FeedEntry

N = 300


async def main(url: str) -> None:
    schema = "bench_" + uuid.uuid4().hex[:10]
    writer, reader = PostgresStore(url, schema=schema), PostgresStore(url, schema=schema)
    try:
        await writer.upgrade()
        key = SessionRef("bench", "u", "s")
        lease = await writer.turn_gate().acquire(SessionRef.token_of("bench", "u", "s"))
        await writer.turn_feed().begin(key, "run_bench", lease)
        seen: asyncio.Queue[float] = asyncio.Queue()

        async def follow() -> None:
            async for batch in reader.turn_feed().follow(key, "run_bench"):
                for _ in batch:
                    seen.put_nowait(time.perf_counter())

        task = asyncio.create_task(follow())
        await asyncio.sleep(0.5)  # the reader is listening
        lags = []
        for seq in range(1, N + 1):
            kind = "end" if seq == N else "event"
            start = time.perf_counter()
            await writer.turn_feed().write("run_bench", [FeedEntry(seq, kind, {"type": "x"})])
            lags.append((await seen.get()) - start)
        await task
        lags.sort()
        ms = [x * 1000 for x in lags]
        print("| events | median ms | p90 ms | p99 ms | max ms |")
        print("| --- | --- | --- | --- | --- |")
        print(
            f"| {N} | {statistics.median(ms):.2f} | {ms[int(N * 0.9)]:.2f} |"
            f" {ms[int(N * 0.99)]:.2f} | {ms[-1]:.2f} |"
        )
    finally:
        await writer.close()
        await reader.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())


if __name__ == "__main__":
    asyncio.run(
        main(sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/test")
    )
