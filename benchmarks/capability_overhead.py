"""What does the capability seam cost per call?

A real ``agent.call`` with the default durable stores (JSON state and JSONL session log in a
local workspace), one tool step then an answer (2 model requests, 1 tool call), on a
``ScriptedModel`` so only the harness is measured. Rows:

* ``built-ins only``: the agent as the keywords build it (no application capability);
* ``+ 10 capabilities, no hook``: capabilities that override no per-call hook (must cost
  nothing);
* ``+ 10 capabilities, every hook``: each overrides every per-call hook with a no-op;
* ``+ audit log (README)``: the README's example, writing a JSON line per tool call.

    python benchmarks/capability_overhead.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harnessed import (
    CallContext,
    CallEnd,
    Capability,
    HarnessAgent,
    ModelCall,
    RuntimeContext,
    StateBlock,
    ToolResultBlock,
    ToolUseBlock,
    tool,
)
from harnessed.capabilities import CapabilityHost
from harnessed.events import Event
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.state import AgentState
from harnessed.tools import Tool

CALLS = 60
ROUNDS = 3


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


class SetupOnly(Capability):
    def __init__(self, i: int) -> None:
        self.name = f"setup_{i}"

    def setup(self, host: CapabilityHost) -> None:
        self.host = host


class EveryHook(Capability):
    def __init__(self, i: int) -> None:
        self.name = f"hooks_{i}"

    def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
        return ()

    async def before_call(self, call: CallContext) -> None:
        return None

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        return None

    async def before_model_request(self, call: CallContext) -> None:
        return None

    async def after_model_request(self, call: CallContext, model_call: ModelCall) -> None:
        return None

    async def before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        return None

    async def after_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
    ) -> ToolResultBlock | None:
        return None

    def on_event(self, call: CallContext, event: Event) -> None:
        return None


class AuditLog(Capability):
    name = "audit_log"

    def __init__(self, path: Path) -> None:
        self.path = path

    async def after_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, result: ToolResultBlock
    ) -> None:
        count = (self.section(call.state) or {}).get("calls", 0) + 1
        self.set_section(call.state, {"calls": count})
        line = json.dumps({"session": call.session_id, "tool": tool_call.name})
        await asyncio.to_thread(self._append, line)

    def _append(self, line: str) -> None:
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")


def script() -> list[ScriptedResponse | str]:
    out: list[ScriptedResponse | str] = []
    for _ in range(CALLS):
        out.append(ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"key": "k"})]))
        out.append("done")
    return out


async def measure(label: str, make: list[Capability], root: Path) -> tuple[str, float, float]:
    agent = HarnessAgent(
        "bench", ScriptedModel(script()), tools=[lookup], workspace=root, capabilities=make
    )
    times: list[float] = []
    for i in range(CALLS):
        ctx = RuntimeContext("u", f"s{i % 6}")
        started = time.perf_counter()
        await agent.call("look it up", ctx)
        times.append((time.perf_counter() - started) * 1000)
    await agent.close()
    warm = times[6:]
    return label, statistics.median(warm), statistics.quantiles(warm, n=10)[-1]


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        cases: list[tuple[str, Callable[[], list[Capability]]]] = [
            ("built-ins only", list),
            ("+ 10 capabilities, no hook", lambda: [SetupOnly(i) for i in range(10)]),
            ("+ 10 capabilities, every hook", lambda: [EveryHook(i) for i in range(10)]),
            ("+ audit log (README)", lambda: [AuditLog(base / "audit.jsonl")]),
        ]
        best: dict[str, tuple[str, float, float]] = {}
        for round_ in range(ROUNDS):  # interleaved rounds; the best of each (a shared machine)
            for n, (label, make) in enumerate(cases):
                row = await measure(label, make(), base / f"ws{round_}_{n}")
                if label not in best or row[1] < best[label][1]:
                    best[label] = row
        rows = [best[label] for label, _ in cases]
    print(
        f"agent.call: 2 model requests + 1 tool call, JSON/JSONL stores, {CALLS} calls, "
        f"best of {ROUNDS} rounds"
    )
    print(f"{'capabilities':<32} {'median ms':>10} {'p90 ms':>10}")
    for label, median, p90 in rows:
        print(f"{label:<32} {median:>10.2f} {p90:>10.2f}")


if __name__ == "__main__":
    asyncio.run(main())
