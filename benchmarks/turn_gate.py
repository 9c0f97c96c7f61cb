"""The turn gate's costs: an uncontended acquire + release, and two processes sharing a session.

1. uncontended: ``acquire`` + ``release`` of a free session nobody waits for (what every
   ``agent.call`` pays), µs each, for the lease files, the in-memory gate and PostgreSQL (the
   database of ``HARNESSED_BENCH_POSTGRES_URL``, default the local ``test`` database, in a
   schema of its own dropped at the end; skipped when it cannot be reached);
2. contended: two processes each take the lease of one session ``--turns`` times in a row,
   holding it ``--hold`` ms each time (a short turn) and asking again at once. Reported: the
   longest run of turns one process took while the other was still waiting, and turns per
   second over both.

    python benchmarks/turn_gate.py [--rounds 5] [--turns 100] [--hold 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

URL = os.environ.get("HARNESSED_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def gate_of(where: str) -> Any:
    from harnessed.sessions import FileTurnGate, InMemoryTurnGate

    if where == "memory":
        return InMemoryTurnGate()
    if where.startswith("postgres:"):
        from harnessed.stores.postgres import PostgresStore

        url, schema = where.removeprefix("postgres:").rsplit("|", 1)
        return PostgresStore(url, schema=schema).turn_gate()
    return FileTurnGate(where)


async def uncontended(where: str, rounds: int, n: int) -> tuple[float, float]:
    gate = gate_of(where)
    for _ in range(n // 10):
        await gate.release(await gate.acquire("s"))
    each = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            await gate.release(await gate.acquire("s"))
        each.append((time.perf_counter() - start) / n * 1e6)
    if hasattr(gate, "store"):
        await gate.store.close()
    return min(each), statistics.median(each)


async def take_turns(where: str, label: str, turns: int, hold: float, log: str) -> None:
    gate = gate_of(where)
    await gate.release(await gate.acquire("warm-up"))  # connections open, imports done
    print("ready", flush=True)
    sys.stdin.readline()  # both start together
    for _ in range(turns):
        lease = await gate.acquire("s")
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, label.encode())
        os.close(fd)
        await asyncio.sleep(hold)
        await gate.release(lease)
    if hasattr(gate, "store"):
        await gate.store.close()


def contended(where: str, turns: int, hold: float) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as folder:
        log = str(Path(folder) / "turns")
        args = [sys.executable, __file__, "--worker", where, str(turns), str(hold), log]
        procs = [
            subprocess.Popen([*args, label], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            for label in "ab"
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        for proc in procs:
            assert proc.wait() == 0
        elapsed = time.perf_counter() - start
        order = Path(log).read_text()
    longest = run = 0
    for i, label in enumerate(order):
        run = run + 1 if i and order[i - 1] == label else 1
        other = "b" if label == "a" else "a"
        if other in order[i:]:  # the other was still waiting for turns
            longest = max(longest, run)
    return longest, len(order) / elapsed


def postgres_schema() -> str | None:
    try:
        import psycopg

        with psycopg.connect(URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        print(f"PostgreSQL skipped: {type(exc).__name__}: {exc}".splitlines()[0])
        return None
    schema = "bench_" + uuid.uuid4().hex[:12]
    from harnessed.stores.postgres import PostgresStore

    store = PostgresStore(URL, schema=schema)
    asyncio.run(store.upgrade())
    return schema


def drop(schema: str) -> None:
    import psycopg

    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:
        where, turns, hold, log, label = sys.argv[2:]
        asyncio.run(take_turns(where, label, int(turns), float(hold), log))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--hold", type=float, default=2.0, help="ms a turn holds the lease")
    options = parser.parse_args()
    schema = postgres_schema()
    with tempfile.TemporaryDirectory() as folder:
        gates = {"lease files": str(Path(folder) / "turns"), "in memory": "memory"}
        if schema is not None:
            gates["PostgreSQL"] = f"postgres:{URL}|{schema}"
        try:
            print("| gate | uncontended acquire+release µs (min / median) "
                  "| contended: longest run while the other waits | turns/s |")  # fmt: skip
            print("|---|---:|---:|---:|")
            for name, where in gates.items():
                n = 300 if where.startswith("postgres:") else 3000
                low, mid = asyncio.run(uncontended(where, options.rounds, n))
                if where == "memory":  # one process only
                    print(f"| {name} | {low:.1f} / {mid:.1f} | - | - |")
                    continue
                longest, rate = contended(where, options.turns, options.hold / 1000)
                print(f"| {name} | {low:.1f} / {mid:.1f} | {longest} | {rate:.0f} |")
        finally:
            if schema is not None:
                drop(schema)


if __name__ == "__main__":
    main()
