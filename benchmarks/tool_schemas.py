"""What do the default tools' schemas cost per request?

Builds a default ``HarnessAgent`` on a fresh local workspace (file and shell tools, memory,
sessions, sub-agents, skills, plan mode, the task list: everything on by default), sends
"hello" with a scripted model, and prints each tool's schema cost as the context compiler
counts it (the same figure ``harnessed inspect`` shows) and the total.

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
from harnessed.tokens import default_estimator


async def measure() -> list[tuple[str, int, int]]:
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel()
        model.add("hi")
        agent = HarnessAgent("bench", model, workspace=Path(tmp))
        await agent.call("hello", RuntimeContext("u", "s"))
        await agent.close()
        request = model.requests[-1]
        meter = Meter(default_estimator())
        rows = [
            (schema.name, meter.tools([schema]), len(json.dumps(dict(schema.parameters))))
            for schema in request.tools
        ]
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    rows = asyncio.run(measure())
    width = max(len(name) for name, _, _ in rows)
    print(f"{'tool':<{width}}  tokens  schema chars")
    for name, tokens, chars in rows:
        print(f"{name:<{width}}  {tokens:>6}  {chars:>12}")
    total = sum(tokens for _, tokens, _ in rows)
    print(f"{'total (' + str(len(rows)) + ' tools)':<{width}}  {total:>6}")
    if args.json:
        args.json.write_text(json.dumps({"tools": rows, "total": total}))


if __name__ == "__main__":
    main()
