"""Per-step overhead of a real ``agent.call`` by history length, with the default stores.

For each history size (10 … 100,000 messages already in the session) a fresh process:

1. writes the session's log (the history shape of ``/work/shared/bench/deepagents_step.py``:
   a repeating 10-message unit of 4 user and 4 assistant texts of 400 characters, one
   assistant ``read_file`` call of 120 characters and its 2,000-character result);
2. builds a default ``HarnessAgent`` on a local workspace — JSONL session log, SQLite search
   index, state files, file and shell tools, memory, eviction, pruning — with summaries moved
   out of reach (``trigger_messages`` 10^9, a 100M-token window), like the peer benchmark's
   huge window;
3. times ``agent.call`` with a model that answers at once (one model request per call):
   * cold: the first call of a new agent object (the session's log is replayed; imports and
     the OS file cache are warm);
   * warm: the following calls (the session stays loaded; only new records are read);
   * overhead = call time - time inside the model's ``stream``; the CPU column is the
     process's CPU time (all threads) per warm call, which a loaded machine inflates least;
4. reports the bytes the session log grew by per call, all bytes handed to ``write()`` per call
   (``wchar`` of ``/proc/self/io``: log, SQLite search index, state files), the size of the
   state files (none: nothing structured changed), and peak RSS (``ru_maxrss``).

The ``fsync`` column repeats the warm run with ``JsonlSessionLogStore(durable=True)``: each
call then waits for the disk (group commit; on this machine one fsync takes ~4 ms).

    python benchmarks/agent_step.py [--sizes 10,100,1000,10000,100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

SIZES = (10, 100, 1_000, 10_000, 100_000)
WARM_RUNS = {10: 40, 100: 40, 1_000: 30, 10_000: 20, 100_000: 10}
COLD_RUNS = {10: 5, 100: 5, 1_000: 5, 10_000: 3, 100_000: 2}
WORDS = tuple(
    [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "omicron",
        "pi",
        "rho",
        "sigma",
        "tau",
        "upsilon",
        "phi",
        "chi",
        "psi",
        "omega",
        "context",
        "harness",
        "middleware",
        "token",
        "message",
        "agent",
        "summary",
    ]
)


def text(rng: random.Random, n: int) -> str:
    out: list[str] = []
    length = 0
    while length < n:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)[:n]


def history(size: int) -> list[Any]:
    from harnessed.messages import Msg, ToolUseBlock

    rng = random.Random(1234 + size)
    out: list[Msg] = []
    k = 0
    while len(out) < size:
        pos = len(out) % 10
        if pos in (0, 2, 4, 8):
            out.append(Msg.user(text(rng, 400)))
        elif pos == 5:
            k += 1
            call = ToolUseBlock(f"call_{k}", "read_file", {"path": f"src/module_{k}.py"})
            out.append(Msg.assistant([*Msg.assistant(text(rng, 120)).content, call]))
        elif pos == 6:
            out.append(Msg.tool_result(f"call_{k}", text(rng, 2000), name="read_file"))
        else:
            out.append(Msg.assistant(text(rng, 400)))
    return out


class InstantModel:
    """Answers every request at once with a short final text; records time spent inside."""

    name = "instant"
    context_window = 100_000_000
    max_output_tokens = 4_096

    def __init__(self) -> None:
        self.seconds = 0.0

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        from harnessed.messages import Msg
        from harnessed.models.base import ModelResponse

        started = time.perf_counter()
        response = ModelResponse(
            message=Msg.assistant("All done. Here is the final answer."), stop_reason="end_turn"
        )
        self.seconds += time.perf_counter() - started
        yield response


def wchar() -> int:
    with open("/proc/self/io") as handle:
        for line in handle:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


async def seed(root: Path, size: int) -> None:
    from harnessed.log import NewRecord
    from harnessed.runtime import SessionRef
    from harnessed.stores import JsonlSessionLogStore

    store = JsonlSessionLogStore(root / "agents")
    key = SessionRef("bench", "u", "s")
    messages = history(size)
    for start in range(0, len(messages), 2_000):
        chunk = messages[start : start + 2_000]
        await store.append(
            key, [NewRecord.message(m, run_id="seed", turn_id="seed") for m in chunk]
        )


def make_agent(root: Path, model: InstantModel, durable: bool) -> Any:
    from harnessed import CompactionConfig, HarnessAgent
    from harnessed.stores import JsonlSessionLogStore

    store = JsonlSessionLogStore(root / "agents", durable=True) if durable else None
    return HarnessAgent(
        "bench",
        model,  # type: ignore[arg-type]
        workspace=root,
        session_store=store,
        compaction=CompactionConfig(trigger_messages=10**9),
    )


CPU: list[float] = []
"""CPU time (all threads) of each timed call, minus the model's share."""


async def timed_call(agent: Any, model: InstantModel, ctx: Any, i: int) -> tuple[float, float]:
    model.seconds = 0.0
    started, cpu = time.perf_counter(), time.process_time()
    await agent.call(f"Please give me the final answer now ({i}).", ctx)
    total = time.perf_counter() - started
    CPU.append(time.process_time() - cpu - model.seconds)
    return total, total - model.seconds


async def worker(size: int) -> dict[str, Any]:
    from harnessed import RuntimeContext

    ctx = RuntimeContext("u", "s")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        await seed(root, size)
        log = root / "agents/bench/sessions/u/s.log.jsonl"
        log_bytes = log.stat().st_size
        colds: list[float] = []
        for i in range(COLD_RUNS[size]):
            model = InstantModel()
            agent = make_agent(root, model, durable=False)
            colds.append((await timed_call(agent, model, ctx, i))[1])
            await agent.close()
        model = InstantModel()
        agent = make_agent(root, model, durable=False)
        for i in range(3):
            await timed_call(agent, model, ctx, 100 + i)
        warm: list[float] = []
        totals: list[float] = []
        runs = WARM_RUNS[size]
        CPU.clear()
        before = wchar()
        log_before = log.stat().st_size
        for i in range(runs):
            total, overhead = await timed_call(agent, model, ctx, 200 + i)
            totals.append(total)
            warm.append(overhead)
        written = (wchar() - before) / runs
        warm_cpu = statistics.median(CPU)
        log_written = (log.stat().st_size - log_before) / runs
        await agent.close()
        model = InstantModel()
        agent = make_agent(root, model, durable=True)
        for i in range(3):
            await timed_call(agent, model, ctx, 300 + i)
        synced = [(await timed_call(agent, model, ctx, 400 + i))[1] for i in range(min(runs, 15))]
        await agent.close()
        state_files = sum(p.stat().st_size for p in (root / ".harnessed").rglob("*") if p.is_file())
    return {
        "size": size,
        "log_mb": log_bytes / 2**20,
        "cold_ms": statistics.median(colds) * 1e3,
        "warm_ms": statistics.median(warm) * 1e3,
        "warm_cpu_ms": warm_cpu * 1e3,
        "warm_total_ms": statistics.median(totals) * 1e3,
        "warm_p90_ms": sorted(warm)[int(len(warm) * 0.9) - 1] * 1e3,
        "fsync_ms": statistics.median(synced) * 1e3,
        "bytes_per_call": written,
        "log_bytes_per_call": log_written,
        "state_bytes": state_files,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", type=int)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(asyncio.run(worker(args.worker))))
        return
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", str(size)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"worker for {size} failed")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"… {size:,} done", file=sys.stderr, flush=True)
    print(
        "| history msgs | log MB | cold overhead ms | warm overhead ms | warm CPU ms | "
        "warm p90 ms | "
        "warm, fsync per step ms | log bytes / call | all bytes written / call | "
        "state file bytes | peak RSS MB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['size']:,} | {r['log_mb']:.1f} | {r['cold_ms']:.1f} | {r['warm_ms']:.2f} | "
            f"{r['warm_cpu_ms']:.2f} | {r['warm_p90_ms']:.2f} | {r['fsync_ms']:.2f} | "
            f"{r['log_bytes_per_call']:,.0f} | "
            f"{r['bytes_per_call']:,.0f} | "
            f"{r['state_bytes']:,} | {r['peak_rss_mb']:.0f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
