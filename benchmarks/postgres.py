"""The PostgreSQL store beside the file stores: appends, ``session_search``, per-step overhead.

Prints three tables:

1. append throughput of the session log with its search index kept up to date — JSONL +
   SQLite FTS5 (the local default) against PostgreSQL — one and ten records per append, by one
   writer and by 8 writers on 8 sessions at once (what many app servers do);
2. ``session_search`` latency (through ``IndexedSessionLogStore.search``, what the tool calls)
   over 10^6 messages of one user, the same synthetic messages and queries as
   ``benchmarks/session_log.py``: the SQLite FTS5 index against PostgreSQL. The PostgreSQL rows
   are loaded with ``COPY`` (the search rows built by the store's own code);
3. per-step overhead of a real ``agent.call`` (model answers at once; overhead = call time -
   time inside the model) on a session that already holds N messages: default local workspace
   (JSONL + SQLite + state files) against ``store=PostgresStore(...)``, each without and with
   waiting for the disk on every append (the JSONL store's default does not fsync appends,
   PostgreSQL's default does; ``durable=`` switches either).

Needs the PostgreSQL server of ``HARNESSED_BENCH_POSTGRES_URL`` (default: the local ``test``
database); everything is written in a schema of its own, dropped at the end.

    python benchmarks/postgres.py [--messages 1000000] [--history 10000] [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from session_log import (
    AGENT,
    SEARCH_HEADER,
    SEARCH_TITLE,
    USER,
    generate,
    message_text,
    print_table,
    queries,
    timed,
)
from session_log import measure as measure_files

from harnessed import HarnessAgent, RuntimeContext
from harnessed.log import NewRecord, SessionLogStore, SessionRecord
from harnessed.messages import Msg
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.runtime import SessionRef
from harnessed.stores import IndexedSessionLogStore, JsonlSessionLogStore, SqliteSearchIndex
from harnessed.stores.postgres import PostgresStore
from harnessed.stores.postgres.lexemes import search_row

URL = os.environ.get("HARNESSED_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
SESSION_SIZE = 1_000


def new_store(*, durable: bool = True) -> PostgresStore:
    schema = "bench_" + uuid.uuid4().hex[:12]
    return PostgresStore(URL, schema=schema, max_size=16, durable=durable)


async def drop(store: PostgresStore) -> None:
    async with store.connection() as conn:
        await conn.execute(f"DROP SCHEMA {store.schema} CASCADE".encode())
    await store.close()


# ------------------------------------------------------------------ appends
async def append_run(
    log: SessionLogStore, texts: list[str], per_append: int, writers: int
) -> float:
    async def writer(w: int) -> None:
        key = SessionRef(AGENT, USER, f"w{w}")
        mine = texts[w::writers]
        for first in range(0, len(mine), per_append):
            batch = [
                NewRecord.message(Msg.user(t), run_id="r", turn_id="t")
                for t in mine[first : first + per_append]
            ]
            await log.append(key, batch)

    started = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    return time.perf_counter() - started


def append_table(records: int) -> list[tuple[str, ...]]:
    rng = random.Random(1)
    texts = [message_text(rng, False) for _ in range(records)]
    rows = []
    for backend in ("JSONL + SQLite FTS5", "PostgreSQL", "PostgreSQL, durable=False"):
        for writers in (1, 8):
            for per_append in (1, 10):

                async def run(
                    backend: str = backend, writers: int = writers, n: int = per_append
                ) -> float:
                    if backend.startswith("PostgreSQL"):
                        pg = new_store(durable=backend == "PostgreSQL")
                        log = IndexedSessionLogStore(pg.session_log(), pg.search_index())
                        try:
                            await log.append(SessionRef(AGENT, USER, "warm"), [NewRecord("x", {})])
                            return await append_run(log, texts, n, writers)
                        finally:
                            await drop(pg)
                    root = Path(tempfile.mkdtemp(prefix="harnessed-append-"))
                    try:
                        store = JsonlSessionLogStore(root)
                        log = IndexedSessionLogStore(store, SqliteSearchIndex(root))
                        seconds = await append_run(log, texts, n, writers)
                        await log.close()
                        return seconds
                    finally:
                        shutil.rmtree(root, ignore_errors=True)

                seconds = asyncio.run(run())
                appends = records / per_append
                rows.append(
                    (
                        backend,
                        str(writers),
                        str(per_append),
                        f"{appends / seconds:,.0f}",
                        f"{records / seconds:,.0f}",
                    )
                )
                print(
                    f"  {backend:<26} writers {writers} x{per_append}: "
                    f"{records / seconds:,.0f} records/s",
                    flush=True,
                )
    return rows


# ------------------------------------------------------------------ search
async def load_postgres(pg: PostgresStore, count: int) -> float:
    """``count`` messages of one user (the sibling benchmark's), written with COPY."""
    import json

    rng = random.Random(count)
    planted = set(rng.sample(range(count), 20))
    start_time = datetime(2025, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    async with pg.connection():  # the first connection creates the schema
        pass
    async with pg.connection() as conn, conn.transaction():
        cur = conn.cursor()
        # two COPYs cannot run at once on one connection: write the records, then the rows
        rows: list[tuple[Any, ...]] = []
        async with cur.copy(
            "COPY harnessed_records (agent_id, user_id, session_id, seq, event_id, type, ts,"
            " run_id, turn_id, payload) FROM STDIN"
        ) as records:
            for i in range(count):
                key = SessionRef(AGENT, USER, f"s{i // SESSION_SIZE:05d}")
                ids = (key.agent_id, key.user_id, key.session_id)
                stamp = (start_time + timedelta(seconds=i)).isoformat()
                message = {
                    "id": f"msg_{i}",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "name": None,
                    "content": [{"text": message_text(rng, i in planted), "type": "text"}],
                    "metadata": {},
                    "timestamp": stamp,
                }
                record = SessionRecord(
                    seq=i % SESSION_SIZE + 1,
                    event_id=f"e{i}",
                    type="message",
                    timestamp=stamp,
                    run_id=None,
                    turn_id=None,
                    payload={"message": message},
                )
                payload = json.dumps(record.payload, separators=(",", ":"))
                await records.write_row(
                    (*ids, record.seq, record.event_id, "message", stamp, None, None, payload)
                )
                row = search_row(key, record)
                assert row is not None
                rows.append(row)
        async with cur.copy(
            "COPY harnessed_search (agent_id, user_id, session_id, seq, ts_micros, ts, role,"
            " name, body, words) FROM STDIN"
        ) as search:
            for row in rows:
                await search.write_row(row)
        sessions = (count + SESSION_SIZE - 1) // SESSION_SIZE
        await cur.executemany(
            "INSERT INTO harnessed_sessions (agent_id, user_id, session_id, last_seq,"
            " size_bytes, updated_at) VALUES (%s, %s, %s, %s, 0, %s)",
            [
                (AGENT, USER, f"s{s:05d}", min(SESSION_SIZE, count - s * SESSION_SIZE), time.time())
                for s in range(sessions)
            ],
        )
    async with pg.connection() as conn:
        await conn.execute("VACUUM ANALYZE harnessed_search")
        await conn.execute("VACUUM ANALYZE harnessed_records")
    return time.perf_counter() - started


async def measure_postgres(pg: PostgresStore, count: int, runs: int) -> list[tuple[str, ...]]:
    log = IndexedSessionLogStore(pg.session_log(), pg.search_index())
    async with pg.connection() as conn:
        cursor = await conn.execute(
            "SELECT pg_total_relation_size('harnessed_search'),"
            " pg_relation_size('harnessed_search_words')"
        )
        total, gin = await cursor.fetchone()  # type: ignore[misc]
    rows = []
    for label, query, match, order in queries():
        hits: list[int] = []

        async def once(
            q: str = query, m: str = match, o: str = order, hits: list[int] = hits
        ) -> None:
            found = await log.search(AGENT, USER, q, max_results=10, match=m, order=o)  # type: ignore[arg-type]
            hits.append(len(found))

        await once()
        p50, p95 = await timed(once, runs)
        rows.append(
            (f"{count:,}", "postgres", label, str(hits[-1]), f"{p50:,.2f}", f"{p95:,.2f}", "-",
             f"{total / 1e6:,.0f} MB (GIN {gin / 1e6:,.0f})")
        )  # fmt: skip
        print(f"  {count:>9,} postgres {label:<22} p50 {p50:9.2f} ms", flush=True)
    return rows


def search_table(count: int, runs: int, files: bool) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    root = Path(tempfile.mkdtemp(prefix="harnessed-bench-files-"))
    try:
        if files:
            seconds = generate(root, count)
            print(f"  {count:,} messages written as JSONL in {seconds:.1f} s", flush=True)
            rows.extend(asyncio.run(measure_files(root, "sqlite", count, runs)))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    async def postgres() -> None:
        pg = new_store()
        try:
            seconds = await load_postgres(pg, count)
            print(f"  {count:,} messages loaded into PostgreSQL in {seconds:.1f} s", flush=True)
            rows.extend(await measure_postgres(pg, count, runs))
        finally:
            await drop(pg)

    asyncio.run(postgres())
    return rows


# ------------------------------------------------------------------ per step
class Timed(ScriptedModel):
    """Answers at once and adds up the time spent inside ``stream``."""

    def __init__(self) -> None:
        super().__init__(responder=self._answer)
        self.inside = 0.0

    def _answer(self, request: ModelRequest) -> str:
        return "ok"

    async def stream(self, request: ModelRequest) -> Any:
        started = time.perf_counter()
        async for event in super().stream(request):
            yield event
        self.inside += time.perf_counter() - started


def history_records(count: int) -> list[NewRecord]:
    rng = random.Random(3)
    records = []
    for i in range(count):
        msg = (
            Msg.user(message_text(rng, False))
            if i % 2 == 0
            else Msg.assistant(message_text(rng, False))
        )
        records.append(NewRecord.message(msg, run_id=f"r{i // 2}", turn_id=f"t{i // 2}"))
    return records


async def seed_history(agent: HarnessAgent, ctx: RuntimeContext, count: int) -> None:
    """A session that already holds ``count`` messages (through the agent's own stores)."""
    key = SessionRef(agent.name, ctx.user_id, ctx.session_id or agent.name)
    records = history_records(count)
    for first in range(0, count, 1_000):
        await agent.session_store.append(key, records[first : first + 1_000])


def step_table(history: int, runs: int) -> list[tuple[str, ...]]:
    """The four set-ups take turns call by call, so a busy machine slows them alike."""
    ctx = RuntimeContext("u", "long")

    async def measure() -> dict[str, list[float]]:
        roots: list[Path] = []
        stores: list[PostgresStore] = []
        agents: dict[str, tuple[HarnessAgent, Timed]] = {}
        try:
            for label, kind, durable in (
                ("files (default)", "files", False),
                ("PostgreSQL, durable=False", "postgres", False),
                ("files, JSONL durable=True", "files", True),
                ("PostgreSQL (default: durable)", "postgres", True),
            ):
                model = Timed()
                if kind == "files":
                    root = Path(tempfile.mkdtemp(prefix="harnessed-step-"))
                    roots.append(root)
                    log = JsonlSessionLogStore(root / "agents", durable=durable)
                    agent = HarnessAgent(
                        "bench", model, workspace=root, session_store=log, memory=False, shell=False
                    )
                else:
                    stores.append(new_store(durable=durable))
                    agent = HarnessAgent(
                        "bench", model, store=stores[-1], memory=False, shell=False
                    )
                await seed_history(agent, ctx, history)
                await agent.call("warm up", ctx)
                agents[label] = (agent, model)
            samples: dict[str, list[float]] = {label: [] for label in agents}
            for i in range(runs):
                for label, (agent, model) in agents.items():
                    model.inside = 0.0
                    started = time.perf_counter()
                    await agent.call(f"step {i}", ctx)
                    samples[label].append((time.perf_counter() - started - model.inside) * 1000)
            for agent, _ in agents.values():
                await agent.close()
            return samples
        finally:
            for root in roots:
                shutil.rmtree(root, ignore_errors=True)
            for store in stores:
                await drop(store)

    samples = asyncio.run(measure())
    rows = []
    p50 = {}
    for label, values in samples.items():
        values.sort()
        p50[label] = statistics.median(values)
        p95 = values[int(len(values) * 0.95)]
        rows.append((label, f"{history:,}", f"{p50[label]:,.2f}", f"{p95:,.2f}"))
        print(f"  {label:<30} p50 {p50[label]:8.2f} ms", flush=True)
    labels = list(samples)
    for pg_label, file_label in ((labels[1], labels[0]), (labels[3], labels[2])):
        rows.append(
            (f"{pg_label} / {file_label}", "", f"{p50[pg_label] / p50[file_label]:.2f}x", "")
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages searched")
    parser.add_argument("--history", type=int, default=10_000, help="messages before a step")
    parser.add_argument("--appends", type=int, default=4_000, help="records per append run")
    parser.add_argument("--runs", type=int, default=30, help="searches / steps measured")
    parser.add_argument("--only", choices=("appends", "search", "steps"), default=None)
    parser.add_argument(
        "--postgres-only", action="store_true", help="search: skip the file stores' rows"
    )
    args = parser.parse_args()

    tables = []
    if args.only in (None, "appends"):
        print("append throughput ...", flush=True)
        tables.append(
            (
                f"Append throughput ({args.appends:,} message records, search index up to date)",
                ("store", "writers", "records/append", "appends/s", "records/s"),
                append_table(args.appends),
            )
        )
    if args.only in (None, "search"):
        print("search latency ...", flush=True)
        tables.append(
            (
                SEARCH_TITLE,
                SEARCH_HEADER,
                search_table(args.messages, args.runs, not args.postgres_only),
            )
        )
    if args.only in (None, "steps"):
        print("per-step overhead ...", flush=True)
        tables.append(
            (
                "Per-step overhead of agent.call (ms, model time excluded)",
                ("stores", "history", "p50 ms", "p95 ms"),
                step_table(args.history, args.runs),
            )
        )
    for title, header, rows in tables:
        print_table(title, header, rows)


if __name__ == "__main__":
    main()
