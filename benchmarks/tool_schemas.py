"""What do the default tools' schemas cost per request?

Builds a default ``HarnessAgent`` on a fresh local workspace (file and shell tools, memory,
sessions, sub-agents, skills, plan mode, the task list: everything on by default), sends
"hello" with a scripted model, and prints each tool's schema cost as the context compiler
counts it (the same figure ``harnessed inspect`` shows), the same text counted exactly with
o200k (when ``harnessed[tiktoken]`` is installed), and the totals.

    python benchmarks/tool_schemas.py [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.context.meter import Meter
from harnessed.models import ScriptedModel
from harnessed.tokens import TokenEstimator, default_estimator

Row = tuple[str, int, int | None, int]
"""Tool name, estimated tokens, o200k tokens (None without tiktoken), schema characters."""


def exact() -> TokenEstimator | None:
    try:
        from harnessed import TiktokenEstimator

        return TiktokenEstimator()
    except (ImportError, RuntimeError, ValueError):
        return None


async def measure() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel()
        model.add("hi")
        agent = HarnessAgent("bench", model, workspace=Path(tmp))
        await agent.call("hello", RuntimeContext("u", "s"))
        await agent.close()
        request = model.requests[-1]
        meter = Meter(default_estimator())
        o200k = exact()
        exact_meter = Meter(o200k) if o200k is not None else None
        return [
            (
                schema.name,
                meter.tools([schema]),
                exact_meter.tools([schema]) if exact_meter is not None else None,
                len(json.dumps(dict(schema.parameters))),
            )
            for schema in request.tools
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    rows = asyncio.run(measure())
    width = max(len(name) for name, *_ in rows) + 3
    print(f"{'tool':<{width}}  tokens  o200k  schema chars")
    for name, tokens, counted, chars in rows:
        shown = "-" if counted is None else str(counted)
        print(f"{name:<{width}}  {tokens:>6}  {shown:>5}  {chars:>12}")
    total = sum(row[1] for row in rows)
    total_o200k = None if rows and rows[0][2] is None else sum(row[2] or 0 for row in rows)
    label = f"total ({len(rows)} tools)"
    shown = "-" if total_o200k is None else str(total_o200k)
    print(f"{label:<{width}}  {total:>6}  {shown:>5}")
    if args.json:
        figures = {"tools": rows, "total": total, "total_o200k": total_o200k}
        args.json.write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
