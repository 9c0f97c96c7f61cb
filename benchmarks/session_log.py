"""Session log throughput and ``session_search`` latency, JSONL scan versus the indexes.

Prints three tables:

1. append throughput of the JSONL store, alone and with the SQLite FTS5 index kept up to date
   (one record per append, as a loop step writes them, and ten per append); an append returns
   after its one ``write()``: the records survive the process being killed (not a power loss);
2. durable appends (``durable=True``): an append returns only after its records were written
   and ``fsync()``\ ed (the file's directory too when the file is new), so they survive a
   power loss. Appends made at the same time, to any sessions, are written in batches (group
   commit): one worker thread hand-off, one write per file and the files' fsyncs at once, then
   one SQLite transaction per user for the index — so throughput grows with the number of
   writers. The index is derived data (WAL, ``synchronous=NORMAL``): a power loss may cost
   its last transactions, which are caught up from the log before the next search;
3. search latency through ``IndexedSessionLogStore.search`` (what ``session_search`` calls) over
   10^4, 10^5 and 10^6 logged messages of one user — the worst case: every message is that
   user's — for scanning the JSONL files, the default SQLite FTS5 index, and tantivy when it
   is installed. Queries: a rare word, a common word (in about half the messages), a phrase
   of two common words and two mid-frequency words with ``match="all"``, newest first (the
   default); plus the common word ranked by relevance.

The messages are synthetic (Zipf-distributed words from a 5,000-word vocabulary, ~30 words
each, in sessions of 1,000 messages). Run time is a few minutes, mostly building the 10^6 logs;
``--sizes 10000,100000`` is quicker, ``--sizes ""`` runs only the append tables.

    python benchmarks/session_log.py [--sizes 10000,100000,1000000] [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harnessed.log import NewRecord, SearchIndex
from harnessed.messages import Msg
from harnessed.runtime import SessionRef
from harnessed.stores import (
    IndexedSessionLogStore,
    JsonlSessionLogStore,
    ScanSearchIndex,
    SqliteSearchIndex,
    TantivySearchIndex,
)

AGENT, USER = "bench", "u"
SESSION_SIZE = 1_000
VOCABULARY = 5_000
BATCH = 1_000
SCAN_LIMIT = 100_000  # from here a scan takes seconds per query: each is measured once


def words() -> list[str]:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < VOCABULARY:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(3, 9)))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


VOCAB = words()
CUMULATIVE = list(itertools.accumulate(1 / (rank + 1) for rank in range(VOCABULARY)))
RARE = "zanzibarite"  # planted in 20 messages of every size


def message_text(rng: random.Random, planted: bool) -> str:
    picked = rng.choices(VOCAB, cum_weights=CUMULATIVE, k=rng.randint(15, 45))
    if planted:
        picked.insert(rng.randrange(len(picked)), RARE)
    return " ".join(picked)


def generate(root: Path, count: int) -> float:
    """Write ``count`` messages of one user; returns seconds taken."""
    store = JsonlSessionLogStore(root)
    rng = random.Random(count)
    planted = set(rng.sample(range(count), 20))
    start_time = datetime(2025, 1, 1, tzinfo=UTC)

    async def write() -> None:
        for first in range(0, count, BATCH):
            key = SessionRef(AGENT, USER, f"s{first // SESSION_SIZE:05d}")
            batch = []
            for i in range(first, min(first + BATCH, count)):
                message = {  # what Msg.to_dict() gives, built directly: generation is faster
                    "id": f"msg_{i}",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "name": None,
                    "content": [{"text": message_text(rng, i in planted), "type": "text"}],
                    "metadata": {},
                    "timestamp": (start_time + timedelta(seconds=i)).isoformat(),
                }
                batch.append(
                    NewRecord("message", {"message": message}, timestamp=message["timestamp"])
                )
            await store.append(key, batch)

    started = time.perf_counter()
    asyncio.run(write())
    return time.perf_counter() - started


def queries() -> list[tuple[str, str, str, str]]:
    """(label, query, match, order)."""
    return [
        ("rare word", RARE, "phrase", "recent"),
        ("common word", VOCAB[0], "phrase", "recent"),
        ("common phrase", f"{VOCAB[0]} {VOCAB[1]}", "phrase", "recent"),
        ("two words, all", f"{VOCAB[40]} {VOCAB[60]}", "all", "recent"),
        ("common, by relevance", VOCAB[0], "phrase", "relevance"),
    ]


async def timed(fn: Callable[[], Awaitable[object]], runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def disk_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def search_table(sizes: list[int], runs: int) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    backends: list[str] = ["scan", "sqlite"]
    if importlib.util.find_spec("tantivy") is not None:
        backends.append("tantivy")
    for count in sizes:
        root = Path(tempfile.mkdtemp(prefix=f"harnessed-bench-{count}-"))
        try:
            seconds = generate(root, count)
            logs = disk_size(root)
            print(
                f"  {count:>9,} messages written in {seconds:5.1f} s "
                f"({count / seconds:,.0f}/s, {logs / 1e6:,.0f} MB of JSONL)",
                flush=True,
            )
            for backend in backends:
                rows.extend(asyncio.run(measure(root, backend, count, runs)))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return rows


async def measure(root: Path, backend: str, count: int, runs: int) -> list[tuple[str, ...]]:
    store = JsonlSessionLogStore(root)
    index: SearchIndex
    if backend == "sqlite":
        index = SqliteSearchIndex(root)
    elif backend == "tantivy":
        index = TantivySearchIndex(root, writer_heap_bytes=256_000_000)
    else:
        index = ScanSearchIndex(store)
    log = IndexedSessionLogStore(store, index)
    started = time.perf_counter()
    if backend != "scan":  # nothing to build for a scan
        await log.rebuild(AGENT, USER)
    build = time.perf_counter() - started
    where = (
        index.path_for(AGENT, USER)
        if isinstance(index, SqliteSearchIndex | TantivySearchIndex)
        else None
    )
    size = f"{disk_size(where) / 1e6:,.0f} MB" if where is not None else "-"
    build_text = f"{build:,.1f} s" if where is not None else "-"
    rows: list[tuple[str, ...]] = []
    slow = backend == "scan"
    n = (3 if count < SCAN_LIMIT else 1) if slow else runs
    for label, query, match, order in queries():
        if slow and count > SCAN_LIMIT and label != "common word":
            continue  # about a minute per query at this size: one query shows the trend
        hits: list[int] = []

        async def once(
            q: str = query, m: str = match, o: str = order, hits: list[int] = hits
        ) -> None:
            found = await log.search(AGENT, USER, q, max_results=10, match=m, order=o)  # type: ignore[arg-type]
            hits.append(len(found))

        if not slow:
            await once()  # warm up: page cache, open connections
        p50, p95 = await timed(once, n)
        rows.append(
            (
                f"{count:,}",
                backend,
                label,
                str(hits[-1]),
                f"{p50:,.2f}",
                f"{p95:,.2f}" if n > 1 else "-",
                build_text,
                size,
            )
        )
        print(f"  {count:>9,} {backend:<8} {label:<22} p50 {p50:9.2f} ms", flush=True)
    await log.close()
    return rows


def append_table(records: int) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for label, indexed in (("JSONL", False), ("JSONL + SQLite FTS5", True)):
        for per_append in (1, 10):
            root = Path(tempfile.mkdtemp(prefix="harnessed-append-"))
            try:
                store = JsonlSessionLogStore(root)
                log: JsonlSessionLogStore | IndexedSessionLogStore = (
                    IndexedSessionLogStore(store, SqliteSearchIndex(root)) if indexed else store
                )
                rng = random.Random(1)
                key = SessionRef(AGENT, USER, "s")
                texts = [message_text(rng, False) for _ in range(records)]

                async def run(
                    log: JsonlSessionLogStore | IndexedSessionLogStore = log,
                    texts: list[str] = texts,
                    per_append: int = per_append,
                    key: SessionRef = key,
                ) -> float:
                    started = time.perf_counter()
                    for first in range(0, len(texts), per_append):
                        batch = [
                            NewRecord.message(Msg.user(t), run_id="r", turn_id="t")
                            for t in texts[first : first + per_append]
                        ]
                        await log.append(key, batch)
                    elapsed = time.perf_counter() - started
                    if isinstance(log, IndexedSessionLogStore):
                        await log.close()
                    return elapsed

                seconds = asyncio.run(run())
                rows.append(
                    (
                        label,
                        str(per_append),
                        f"{records / per_append / seconds:,.0f}",
                        f"{records / seconds:,.0f}",
                        f"{seconds / (records / per_append) * 1e6:,.0f}",
                    )
                )
            finally:
                shutil.rmtree(root, ignore_errors=True)
    return rows


def durable_table(records: int, repeats: int) -> list[tuple[str, ...]]:
    """Durable appends: each returns only after its record was written and fsync()ed. Many
    writers at once share writes and fsyncs (group commit). Each configuration runs
    ``repeats`` times (fresh sessions, same store): the median and best rate, and the median
    CPU time per append (all threads) — on a shared machine CPU time varies least."""
    rows: list[tuple[str, ...]] = []
    text = message_text(random.Random(2), False)
    for label, indexed in (("JSONL durable", False), ("JSONL durable + SQLite FTS5", True)):
        for writers, sessions in ((1, 1), (16, 1), (256, 1), (256, 16)):
            root = Path(tempfile.mkdtemp(prefix="harnessed-durable-"))
            try:
                store = JsonlSessionLogStore(root, durable=True)
                log: JsonlSessionLogStore | IndexedSessionLogStore = (
                    IndexedSessionLogStore(store, SqliteSearchIndex(root)) if indexed else store
                )
                count = records if writers > 1 else min(records, 500)

                async def writer(
                    n: int, key: SessionRef, log: JsonlSessionLogStore | IndexedSessionLogStore
                ) -> None:
                    for _ in range(n):
                        await log.append(
                            key, [NewRecord.message(Msg.user(text), run_id="r", turn_id="t")]
                        )

                async def run(
                    log: JsonlSessionLogStore | IndexedSessionLogStore = log,
                    writers: int = writers,
                    sessions: int = sessions,
                    count: int = count,
                    rep: int = 0,
                ) -> tuple[float, float]:
                    keys = [SessionRef(AGENT, USER, f"s{rep}-{i}") for i in range(sessions)]
                    started, cpu = time.perf_counter(), time.process_time()
                    await asyncio.gather(
                        *(writer(count // writers, keys[w % sessions], log) for w in range(writers))
                    )
                    return time.perf_counter() - started, time.process_time() - cpu

                async def runs(
                    log: JsonlSessionLogStore | IndexedSessionLogStore = log,
                    run: Callable[..., Awaitable[tuple[float, float]]] = run,
                ) -> list[tuple[float, float]]:
                    out = [await run(rep=rep) for rep in range(repeats)]
                    if isinstance(log, IndexedSessionLogStore):
                        await log.close()
                    return out

                measured = asyncio.run(runs())
                done = count // writers * writers
                seconds = statistics.median(wall for wall, _ in measured)
                cpu = statistics.median(cpu for _, cpu in measured)
                rows.append(
                    (
                        label,
                        str(writers),
                        str(sessions),
                        f"{done / seconds:,.0f}",
                        f"{max(done / wall for wall, _ in measured):,.0f}",
                        f"{cpu / done * 1e6:,.1f}",
                        f"{seconds / (done / writers) * 1e3:,.2f}",
                    )
                )
            finally:
                shutil.rmtree(root, ignore_errors=True)
    return rows


def print_table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}\n")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(
            "  ".join(
                c.rjust(w) if c[:1].isdigit() else c.ljust(w)
                for c, w in zip(row, widths, strict=True)
            )
        )


DURABLE_TITLE = (
    "Durable appends (one record each). Durable: an append returns only after write() and "
    "fsync() of the session's log file (and of its directory when the file is new), so the "
    "record survives a power loss; the SQLite index beside it is derived data (WAL, "
    "synchronous=NORMAL), caught up from the log if a power loss costs it its last writes"
)
APPEND_TITLE = (
    "Append throughput ({:,} message records, one session; an append returns after its "
    "write(): the records survive kill -9, not a power loss)"
)
SEARCH_TITLE = "session_search latency (top 10; newest first unless noted)"
SEARCH_HEADER = (
    "messages",
    "backend",
    "query",
    "hits",
    "p50 ms",
    "p95 ms",
    "index build",
    "index size",
)
DURABLE_HEADER = (
    "store",
    "concurrent writers",
    "sessions",
    "appends/s (median)",
    "appends/s (best)",
    "CPU µs/append",
    "ms/append (latency)",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=30, help="searches per query (default 30)")
    parser.add_argument("--appends", type=int, default=5_000, help="records per append run")
    parser.add_argument("--durable", type=int, default=20_000, help="records per durable run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per durable configuration")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]

    print("append throughput ...", flush=True)
    appends = append_table(args.appends)
    print("durable appends ...", flush=True)
    durable = durable_table(args.durable, args.repeats)
    searches: list[tuple[str, ...]] = []
    if sizes:
        print("search latency ...", flush=True)
        searches = search_table(sizes, args.runs)

    print_table(
        APPEND_TITLE.format(args.appends),
        ("store", "records/append", "appends/s", "records/s", "µs/append"),
        appends,
    )
    print_table(DURABLE_TITLE, DURABLE_HEADER, durable)
    if searches:
        print_table(SEARCH_TITLE, SEARCH_HEADER, searches)


if __name__ == "__main__":
    main()
