"""OpenTelemetry spans of agent calls, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from harnessed import HarnessAgent, ModelError, RuntimeContext, tool
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall, Usage
from harnessed.models.openai import OpenAIChatModel
from harnessed.models.retry import RetryPolicy
from harnessed.tracing import Tracing
from tests.models.test_event_loops import openai_reply
from tests.support.http_server import LocalServer, Reply


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """An exporter behind a provider of the test's own (the process-wide one is left alone:
    agents built after it is set get tracing by themselves, which other tests do not expect)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    exporter.provider = provider  # type: ignore[attr-defined]
    return exporter


def traced(spans: InMemorySpanExporter) -> list[Tracing]:
    return [Tracing(tracer_provider=spans.provider)]  # type: ignore[attr-defined]


def by_name(finished: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name.startswith(prefix)]


@tool(read_only=True)
def lookup(city: str) -> str:
    """Look up the weather.

    Args:
        city: the city
    """
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"


CTX = RuntimeContext(user_id="u", session_id="s-42")


async def test_a_call_with_tools_gives_agent_chat_and_tool_spans(tmp_path, spans):
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("lookup", {"city": "Oslo"}, id="c1"),
                    ScriptedToolCall("lookup", {"city": "Atlantis"}, id="c2"),
                ],
                usage=Usage(input_tokens=120, output_tokens=9),
            ),
            ScriptedResponse("Sunny in Oslo.", usage=Usage(input_tokens=150, output_tokens=5)),
        ],
        name="scripted-x",
        context_window=32_000,
    )
    agent = HarnessAgent(
        "weather", model, tools=[lookup], workspace=tmp_path, capabilities=traced(spans)
    )
    try:
        await agent.call("weather?", CTX)
    finally:
        await agent.close()
    finished = spans.get_finished_spans()
    [root] = by_name(finished, "invoke_agent")
    chats = by_name(finished, "chat ")
    tools = by_name(finished, "execute_tool ")

    assert root.name == "invoke_agent weather"
    assert root.kind == SpanKind.INTERNAL
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "weather"
    assert root.attributes["gen_ai.conversation.id"] == "s-42"
    assert root.attributes["gen_ai.request.model"] == "scripted-x"
    assert root.attributes["harnessed.run.status"] == "completed"
    assert root.attributes["harnessed.run.iterations"] == 2
    assert root.status.status_code == StatusCode.UNSET

    assert [c.name for c in chats] == ["chat scripted-x", "chat scripted-x"]
    first = chats[0]
    assert first.kind == SpanKind.CLIENT
    assert first.parent.span_id == root.context.span_id
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "scripted-x"
    assert first.attributes["gen_ai.usage.input_tokens"] == 120
    assert first.attributes["gen_ai.usage.output_tokens"] == 9
    assert tuple(chats[1].attributes["gen_ai.response.finish_reasons"]) == ("end_turn",)
    # the manifest's summary rides on the chat span
    assert first.attributes["harnessed.context.input_limit"] > 0
    assert first.attributes["harnessed.context.estimated_input_tokens"] > 0
    assert first.attributes["harnessed.context.tokens.system"] > 0
    assert first.attributes["harnessed.context.window_source"] == "given"

    assert sorted(t.attributes["gen_ai.tool.call.id"] for t in tools) == ["c1", "c2"]
    for span in tools:
        assert span.name == "execute_tool lookup"
        assert span.parent.span_id == root.context.span_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "lookup"
        assert span.attributes["gen_ai.tool.type"] == "function"
        assert span.end_time >= span.start_time
    failed = next(t for t in tools if t.attributes["gen_ai.tool.call.id"] == "c2")
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "tool_error"
    assert {t.trace_id for t in (s.context for s in finished)} == {root.context.trace_id}


async def test_retries_are_span_events_and_a_failed_call_marks_its_spans(tmp_path, spans):
    server = LocalServer().start()
    busy = Reply(503, {"error": {"message": "busy"}})
    server.queue(busy, openai_reply("ok"), busy, busy)
    model = OpenAIChatModel(
        "local-m",
        base_url=server.url + "/v1",
        context_window=8000,
        retry=RetryPolicy(max_attempts=2, initial_delay=0.01, jitter=0),
    )
    agent = HarnessAgent("a", model, workspace=tmp_path, capabilities=traced(spans))
    try:
        await agent.call("hi", CTX)
        with pytest.raises(ModelError):
            await agent.call("again", CTX)
    finally:
        await agent.close()
        server.stop()
    finished = spans.get_finished_spans()
    ok_chat, failed_chat = by_name(finished, "chat local-m")
    assert ok_chat.attributes["gen_ai.provider.name"] == "openai"
    assert ok_chat.attributes["server.address"] == "127.0.0.1"
    [retry] = [e for e in ok_chat.events if e.name == "harnessed.model_retry"]
    assert retry.attributes["harnessed.attempt"] == 1
    assert retry.attributes["harnessed.status_code"] == 503
    assert ok_chat.status.status_code == StatusCode.UNSET

    assert failed_chat.status.status_code == StatusCode.ERROR
    assert failed_chat.attributes["error.type"] == "ModelError"
    ok_root, failed_root = by_name(finished, "invoke_agent")
    assert failed_root.status.status_code == StatusCode.ERROR
    assert failed_root.attributes["error.type"] == "ModelError"
    assert ok_root.status.status_code == StatusCode.UNSET


def test_the_global_provider_is_used_by_agents_built_after_it_and_absent_without_it():
    """Checked in fresh processes: the process-wide provider can be set only once."""
    import subprocess
    import sys

    script = (
        "import tempfile\n"
        "from opentelemetry import trace\n"
        "from harnessed import HarnessAgent\n"
        "from harnessed.models import ScriptedModel\n"
        "if SDK:\n"
        "    from opentelemetry.sdk.trace import TracerProvider\n"
        "    from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (\n"
        "        InMemorySpanExporter)\n"
        "    exporter = InMemorySpanExporter()\n"
        "    provider = TracerProvider()\n"
        "    provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "    trace.set_tracer_provider(provider)\n"
        "agent = HarnessAgent('a', ScriptedModel(['hi']), workspace=tempfile.mkdtemp())\n"
        "print(agent.call_sync('x').text)\n"
        "print('tracing' in [c.capability_name for c in agent.capabilities])\n"
        "print(sorted(s.name for s in exporter.get_finished_spans()) if SDK else [])\n"
    )

    def run(sdk: bool) -> list[str]:
        code = f"SDK = {sdk}\n" + script
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )
        return done.stdout.splitlines()

    assert run(False) == ["hi", "False", "[]"]
    assert run(True) == ["hi", "True", "['chat scripted', 'invoke_agent a']"]


async def test_overflow_recovery_and_compaction_show_as_spans_with_a_private_provider(tmp_path):
    """``Tracing(tracer_provider=...)`` records without touching the global provider."""
    from harnessed import CompactionConfig

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    summary = "## Session intent\nRead logs.\n## Next steps\nContinue."

    def respond(request):
        return summary if request.purpose == "summary" else "done"

    model = ScriptedModel(responder=respond, context_window=200_000, overflow_at_tokens=4_000)
    agent = HarnessAgent(
        "big",
        model,
        workspace=tmp_path,
        capabilities=[Tracing(tracer_provider=provider)],
        compaction=CompactionConfig(trigger_messages=1_000),
    )
    ctx = RuntimeContext("u", "s")
    try:
        for turn in range(5):
            await agent.call(f"part {turn}: " + "log line " * 300, ctx)
    finally:
        await agent.close()
    finished = exporter.get_finished_spans()
    overflowed = [
        s
        for s in by_name(finished, "chat ")
        if s.attributes.get("error.type") == "ContextOverflowError"
    ]
    assert overflowed and overflowed[0].status.status_code == StatusCode.ERROR
    [compaction, *_] = by_name(finished, "compaction")
    assert compaction.attributes["harnessed.reason"] == "overflow"
    assert compaction.attributes["harnessed.status"] == "completed"
    roots = by_name(finished, "invoke_agent big")
    assert compaction.parent.span_id in {r.context.span_id for r in roots}
    assert all(r.attributes["harnessed.run.status"] == "completed" for r in roots)


async def test_a_stream_closed_early_ends_its_spans(tmp_path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedModel(["a long answer"], context_window=32_000)
    agent = HarnessAgent(
        "a", model, workspace=tmp_path, capabilities=[Tracing(tracer_provider=provider)]
    )
    events = agent.stream_events("hi", CTX)
    try:
        async for event in events:
            if type(event).__name__ == "ModelCallStartEvent":
                break
        await events.aclose()
    finally:
        await agent.close()
    [root] = by_name(exporter.get_finished_spans(), "invoke_agent")
    assert root.attributes["harnessed.run.status"] == "closed"
    assert root.status.status_code == StatusCode.ERROR
    [chat] = by_name(exporter.get_finished_spans(), "chat ")
    assert chat.attributes["error.type"] == "closed"


async def test_spans_carry_cache_usage_cost_and_the_cached_prefix(tmp_path, spans):
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[ScriptedToolCall("lookup", {"city": "Oslo"}, id="c1")],
                usage=Usage(1_000, 10, cache_read_tokens=800, cache_write_tokens=100),
            ),
            ScriptedResponse("Sunny.", usage=Usage(1_100, 4, cache_read_tokens=900)),
        ],
        name="gpt-4.1-mini",  # a model the price table knows
    )
    agent = HarnessAgent("cost", model, tools=[lookup], capabilities=traced(spans))
    await agent.call("weather in Oslo?", CTX)
    await agent.close()
    finished = spans.get_finished_spans()
    first, second = by_name(finished, "chat ")
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 800
    assert first.attributes["gen_ai.usage.cache_creation.input_tokens"] == 100
    assert first.attributes["harnessed.cost_usd"] > 0
    assert second.attributes["harnessed.context.cached_prefix_tokens"] > 0
    [root] = by_name(finished, "invoke_agent")
    assert root.attributes["harnessed.run.requests"] == 2
    assert root.attributes["harnessed.cost_usd"] == pytest.approx(
        first.attributes["harnessed.cost_usd"] + second.attributes["harnessed.cost_usd"]
    )
