"""What does OpenTelemetry tracing cost per call?

A real ``agent.call`` with the default durable stores (JSON state and JSONL session log in a
local workspace), one tool step then an answer (2 model requests, 1 tool call: 4 spans), on a
``ScriptedModel`` so only the harness is measured. Rows:

* ``no SDK``: the default (no tracer provider installed: the agent has no tracing hook);
* ``Tracing, no-op provider``: the capability with the API's no-op provider;
* ``Tracing, SDK + in-memory exporter``: spans really recorded (SimpleSpanProcessor).

    python benchmarks/tracing_overhead.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

from harnessed import Capability, HarnessAgent, RuntimeContext, tool
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.tracing import Tracing

CALLS = 60
ROUNDS = 3


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _script() -> list[ScriptedResponse | str]:
    out: list[ScriptedResponse | str] = []
    for i in range(CALLS):
        out.append(ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"key": f"k{i}"})]))
        out.append("done")
    return out


async def _per_call_ms(capabilities: Sequence[Capability]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel(_script(), context_window=128_000)
        agent = HarnessAgent(
            "bench", model, tools=[lookup], workspace=tmp, capabilities=capabilities
        )
        ctx = RuntimeContext("u", "s")
        started = time.perf_counter()
        for i in range(CALLS):
            await agent.call(f"question {i}", ctx)
        elapsed = time.perf_counter() - started
        await agent.close()
    return elapsed / CALLS * 1000


def main() -> None:
    exporter = InMemorySpanExporter()
    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(exporter))
    rows = [
        ("no SDK", list[Capability]()),
        ("Tracing, no-op provider", [Tracing(tracer_provider=NoOpTracerProvider())]),
        ("Tracing, SDK + in-memory exporter", [Tracing(tracer_provider=sdk)]),
    ]
    print(f"{'configuration':<36} {'ms per call (median of ' + str(ROUNDS) + ')':>28}")
    for label, caps in rows:
        times = [asyncio.run(_per_call_ms(caps)) for _ in range(ROUNDS)]
        print(f"{label:<36} {statistics.median(times):>28.2f}")
    print(f"\nspans recorded by the SDK row: {len(exporter.get_finished_spans()):,}")


if __name__ == "__main__":
    main()
