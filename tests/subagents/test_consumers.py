"""Consumers of the event stream tell a sub-agent's events from the agent's own: tracing and
AgentSession turns."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.subagents import Subagents, SubagentSpec
from harnessed.tracing import Tracing
from tests.subagents.helpers import calls, child_model, spawn


async def test_tracing_spans_are_the_parents_own() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spec = SubagentSpec("helper", "Helps.", model=child_model("helped"))
    model = ScriptedModel([calls(spawn("helper", "help")), "done"])
    agent = HarnessAgent(
        "boss", model, capabilities=[Subagents([spec]), Tracing(tracer_provider=provider)]
    )
    await agent.call("go", RuntimeContext())
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == [
        "chat scripted",
        "chat scripted",
        "execute_tool agent_spawn",
        "invoke_agent boss",
    ]
    await agent.close()
