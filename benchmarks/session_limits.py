"""What a session limit costs per call on a long session: a real ``agent.call`` with the default
stores on a 10,000-message session (the history of ``agent_step.py``), without and with
``session_usage_limits`` (checked at every call against the session's spending so far).

    python benchmarks/session_limits.py [--size 10000] [--calls 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_step

from harnessed import RuntimeContext, UsageLimits


async def main(size: int, calls: int) -> None:
    ctx = RuntimeContext("u", "s")
    print(f"{'session limit':<20} {'history msgs':>12} {'median ms / call':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await agent_step.seed(root, size)
        for name, limits in (("none", None), ("cost_usd=100", UsageLimits(cost_usd=100.0))):
            model = agent_step.InstantModel()
            agent = agent_step.make_agent(root, model, durable=False)
            agent.session_usage_limits = limits
            for i in range(3):  # warm: the session is loaded
                await agent.call(f"warm {i}", ctx)
            times = []
            for i in range(calls):
                started = time.perf_counter()
                await agent.call(f"call {i}", ctx)
                times.append(time.perf_counter() - started)
            await agent.close()
            print(f"{name:<20} {size:>12,} {statistics.median(times) * 1000:>17.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.size, args.calls))
