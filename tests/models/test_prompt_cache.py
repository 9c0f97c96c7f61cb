"""Prompt caching on the wire: Anthropic ``cache_control`` breakpoints and usage, OpenAI
``prompt_cache_key`` — against the local servers speaking each API's real format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import genai_prices
import pytest

from harnessed import (
    AgentEndEvent,
    CompactionConfig,
    ContextBlock,
    ContextRequest,
    HarnessAgent,
    ModelCallEndEvent,
    RuntimeContext,
    tool,
)
from harnessed.memory import MemoryConfig
from harnessed.messages import Msg
from harnessed.models.anthropic import AnthropicModel
from harnessed.models.base import ModelRequest
from harnessed.models.openai import OpenAIChatModel
from tests.models.test_anthropic import (
    FAST_RETRY,
    block_start,
    block_stop,
    delta,
    event,
    message_end,
    text_reply,
)
from tests.models.test_openai import chunk, sse, usage_chunk
from tests.support.http_server import LocalServer, Reply

CLAUDE = "claude-sonnet-4-5"


@tool(read_only=True)
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    return f"{city}: " + "facts " * 200


def claude_start(**usage: int) -> str:
    message: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": CLAUDE,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1, **usage},
    }
    return event("message_start", message=message)


def tool_reply(call_id: str, city: str, **usage: int) -> Reply:
    return Reply(
        sse=[
            claude_start(**usage),
            block_start(0, {"type": "tool_use", "id": call_id, "name": "lookup", "input": {}}),
            delta(0, "input_json_delta", partial_json=json.dumps({"city": city})),
            block_stop(0),
            *message_end("tool_use"),
        ]
    )


def markers(body: dict[str, Any]) -> list[str]:
    """Where the body carries cache_control: tools/N, system/N, messages/M/N (type)."""
    found = [f"tools/{i}" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system/{i}" for i, b in enumerate(system) if "cache_control" in b]
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if isinstance(block, dict) and "cache_control" in block:
                found.append(f"messages/{m}/{b}:{block['type']}")
    return found


def claude(server: LocalServer, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(
        CLAUDE, api_key="test-key", base_url=server.url, retry=FAST_RETRY, **kwargs
    )


async def test_anthropic_breakpoints_sit_on_tools_system_and_the_end_of_the_history(
    http_server: LocalServer,
) -> None:
    http_server.queue(
        tool_reply("toolu_1", "Paris"),
        tool_reply("toolu_2", "Rome", cache_read_input_tokens=900, cache_creation_input_tokens=40),
        text_reply("done"),
    )
    model = claude(http_server)
    agent = HarnessAgent("cache", model, sys_prompt="You look cities up.", tools=[lookup])
    steps = iter(range(100))

    async def clock(request: ContextRequest) -> list[ContextBlock]:  # changes every request
        return [ContextBlock.runtime("step", f"request {next(steps)}")]

    agent.add_context_source("clock", clock)
    ends: list[ModelCallEndEvent] = []
    async for e in agent.stream_events("Paris, then Rome", RuntimeContext("u", "s")):
        if isinstance(e, ModelCallEndEvent):
            ends.append(e)
    await agent.close()

    bodies = [r.json() for r in http_server.requests]
    assert len(bodies) == 3
    for body in bodies:
        found = markers(body)
        assert len(found) <= 4
        assert f"tools/{len(body['tools']) - 1}" in found  # the last tool: all schemas cached
        assert "system/0" in found and body["system"][0]["cache_control"] == {"type": "ephemeral"}
    # the third request: the history ends with the second tool result; the task state that
    # follows it (transient) is after the breakpoint, in the same user turn
    third = bodies[2]
    history_marks = [m for m in markers(third) if m.startswith("messages/")]
    assert len(history_marks) == 1
    turn, block = (int(x) for x in history_marks[0].split(":")[0].split("/")[1:3])
    last_turn = third["messages"][turn]
    marked = last_turn["content"][block]
    assert marked["type"] == "tool_result" and marked["tool_use_id"] == "toolu_2"
    after = last_turn["content"][block + 1 :]
    assert [b["type"] for b in after] == ["text"]
    assert "request 2" in after[0]["text"]  # the transient part, after the breakpoint
    # usage with cache reads and writes is accounted: the whole prompt, its cached parts, a price
    second = ends[1]
    assert second.usage is not None
    assert second.usage.input_tokens == 10 + 900 + 40
    assert (second.usage.cache_read_tokens, second.usage.cache_write_tokens) == (900, 40)
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=950, cache_read_tokens=900, cache_write_tokens=40, output_tokens=5
        ),
        CLAUDE,
        provider_id="anthropic",
    ).total_price
    assert second.cost_usd == pytest.approx(float(expected))
    assert second.cost_usd is not None and second.cost_usd > 0


def _history(turns: int) -> tuple[Msg, ...]:
    messages: list[Msg] = [Msg.system("rules"), Msg.user("start")]
    for i in range(turns):
        messages.append(Msg.assistant(f"step {i}"))
        messages.append(Msg.user(f"more {i}"))
    return tuple(messages)


async def test_anthropic_marks_the_previous_prefix_when_it_is_beyond_the_lookback(
    http_server: LocalServer,
) -> None:
    http_server.queue(text_reply(), text_reply())
    model = claude(http_server)
    messages = _history(15)  # 31 conversation blocks
    near = ModelRequest(messages=messages, cache_points=(len(messages) - 4, len(messages)))
    far = ModelRequest(messages=messages, cache_points=(3, len(messages)))
    async for _ in model.stream(near):
        pass
    async for _ in model.stream(far):
        pass
    await model.aclose()
    near_body, far_body = (r.json() for r in http_server.requests)
    # within 20 blocks the API finds the earlier entry itself: one history marker
    assert [m for m in markers(near_body) if m.startswith("messages/")] == [
        f"messages/{len(near_body['messages']) - 1}/0:text"
    ]
    # further back: a second marker where the shared prefix ends
    far_marks = [m for m in markers(far_body) if m.startswith("messages/")]
    assert far_marks == ["messages/1/0:text", f"messages/{len(far_body['messages']) - 1}/0:text"]
    assert len(markers(far_body)) <= 4


async def test_anthropic_sends_no_markers_without_cache_points_or_when_off(
    http_server: LocalServer,
) -> None:
    http_server.queue(text_reply(), text_reply())
    messages = (Msg.system("rules"), Msg.user("hi"))
    plain = claude(http_server)
    async for _ in plain.stream(ModelRequest(messages=messages)):
        pass
    off = claude(http_server, prompt_caching=False)
    async for _ in off.stream(ModelRequest(messages=messages, cache_points=(2,))):
        pass
    await plain.aclose()
    await off.aclose()
    for request in http_server.requests:
        body = request.json()
        assert markers(body) == [] and body["system"] == "rules"


def test_cache_points_are_validated() -> None:
    messages = (Msg.user("a"), Msg.user("b"))
    for bad in ((0,), (3,), (2, 1), (1, 1)):
        with pytest.raises(ValueError, match="cache_points"):
            ModelRequest(messages=messages, cache_points=bad)


# ------------------------------------------------------------------------------ OpenAI


def answer(text: str = "ok", cached: int | None = None) -> Reply:
    return sse(
        chunk(role="assistant", content=text), chunk(finish="stop"), usage_chunk(50, 3, cached)
    )


async def test_openai_gets_a_stable_prompt_cache_key_per_session(http_server: LocalServer) -> None:
    http_server.queue(*(answer(cached=32) for _ in range(3)))
    model = OpenAIChatModel(
        "gpt-4.1-mini",
        api_key="sk-test",
        base_url=http_server.url + "/v1",
        retry=FAST_RETRY,
        prompt_cache_key=True,
    )
    agent = HarnessAgent("keyed", model)
    await agent.call("one", RuntimeContext("alice", "s1"))
    await agent.call("two", RuntimeContext("alice", "s1"))
    await agent.call("three", RuntimeContext("alice", "s2"))
    await agent.close()
    keys = [r.json()["prompt_cache_key"] for r in http_server.requests]
    assert keys[0] == keys[1] != keys[2]
    assert all(k.startswith("hs-") and "alice" not in k and "s1" not in k for k in keys)


async def test_openai_compatible_servers_get_no_cache_key_unless_asked(
    http_server: LocalServer,
) -> None:
    http_server.queue(answer())
    model = OpenAIChatModel(
        "local-model", api_key="sk-test", base_url=http_server.url + "/v1", retry=FAST_RETRY
    )
    agent = HarnessAgent("unkeyed", model)
    reply = await agent.call("hi", RuntimeContext("u", "s"))
    await agent.close()
    assert reply.text == "ok"
    assert "prompt_cache_key" not in http_server.requests[0].json()


def test_the_official_endpoint_gets_the_key_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test")
    params = model.build_params(ModelRequest(messages=(Msg.user("hi"),), cache_key="hs-1"))
    assert params["prompt_cache_key"] == "hs-1"


def _cached_part(body: dict[str, Any]) -> list[Any]:
    """Tools, system and the message blocks up to the last history marker, markers removed:
    the prefix a cache entry written at that marker stands for."""

    def bare(block: Any) -> Any:
        return {k: v for k, v in block.items() if k != "cache_control"}

    last = [m for m in markers(body) if m.startswith("messages/")][-1]
    turn, block = (int(x) for x in last.split(":")[0].split("/")[1:3])
    messages = [(m["role"], [bare(b) for b in m["content"]]) for m in body["messages"][: turn + 1]]
    messages[-1] = (messages[-1][0], messages[-1][1][: block + 1])
    return [[bare(t) for t in body["tools"]], [bare(b) for b in body["system"]], messages]


async def test_anthropic_a_summary_request_repeats_the_cached_prefix_of_the_last_request(
    http_server: LocalServer,
) -> None:
    http_server.queue(
        tool_reply("toolu_1", "Paris"),
        tool_reply("toolu_2", "Rome"),
        tool_reply("toolu_3", "Oslo"),
        text_reply("## Session intent\nLook cities up."),  # the summary
        text_reply("done"),
    )
    agent = HarnessAgent(
        "cache",
        claude(http_server),
        sys_prompt="You look cities up.",
        tools=[lookup],
        compaction=CompactionConfig(trigger_messages=6, keep_messages=2, keep_tokens=0),
    )
    reply = await agent.call("Paris, Rome, Oslo", RuntimeContext("u", "s"))
    await agent.close()
    assert reply.text == "done"
    bodies = [r.json() for r in http_server.requests]
    assert len(bodies) == 5
    last_reasoning, summary, after = bodies[2], bodies[3], bodies[4]
    # the summary request carries the very prefix the third request cached, then the
    # instruction in the same user turn, after the breakpoint
    assert _cached_part(summary) == _cached_part(last_reasoning)
    [turn] = summary["messages"][-1:]
    assert turn["content"][-1]["type"] == "text"
    assert "handover note" in turn["content"][-1]["text"]
    assert len(markers(summary)) <= 4
    # the request after it starts from the summary
    assert "Look cities up." in json.dumps(after["messages"][0])


async def test_anthropic_the_memory_flush_before_a_summary_rides_on_the_cached_prefix(
    http_server: LocalServer, tmp_path: Path
) -> None:
    fact = "The user always wants the temperature in Celsius."
    http_server.queue(
        tool_reply("toolu_1", "Paris"),
        tool_reply("toolu_2", "Rome"),
        tool_reply("toolu_3", "Oslo", cache_read_input_tokens=900),
        text_reply(  # the summary, then memory's facts, in one answer
            f"## Session intent\nLook cities up.\n\n<memory_facts>\n- {fact}\n</memory_facts>"
        ),
        text_reply("done"),
    )
    agent = HarnessAgent(
        "cache",
        claude(http_server),
        sys_prompt="You look cities up.",
        tools=[lookup],
        workspace=tmp_path,
        memory=MemoryConfig(timezone="UTC", maintenance_interval_minutes=None),
        compaction=CompactionConfig(trigger_messages=6, keep_messages=2, keep_tokens=0),
    )
    events = [
        e
        async for e in agent.stream_events(
            "Paris, Rome, Oslo (in Celsius)", RuntimeContext("u", "s")
        )
    ]
    await agent.close()
    # no memory request of its own: five requests, the fourth both summary and flush
    bodies = [r.json() for r in http_server.requests]
    assert len(bodies) == 5
    last_reasoning, summary, after = bodies[2], bodies[3], bodies[4]
    assert _cached_part(summary) == _cached_part(last_reasoning)
    instruction = summary["messages"][-1]["content"][-1]
    assert instruction["type"] == "text" and "cache_control" not in instruction
    assert "handover note" in instruction["text"] and "<memory_facts>" in instruction["text"]
    assert len(markers(summary)) <= 4
    # the note goes on, the fact goes to today's ledger, the request is paid by the call
    assert "Look cities up." in json.dumps(after["messages"][0])
    assert fact not in json.dumps(after["messages"][0])
    [ledger] = (tmp_path / "agents" / "cache" / "users" / "u" / "memory").glob("*.md")
    assert fact in ledger.read_text()
    [end] = [e for e in events if isinstance(e, AgentEndEvent)]
    assert end.usage is not None and end.usage.requests == 5


async def test_each_answers_cache_reads_and_writes_stay_in_the_log_and_inspect_shows_them(
    http_server: LocalServer, tmp_path: Path
) -> None:
    from rich.console import Console

    from harnessed.cli.inspect import inspect_session
    from harnessed.models.base import USAGE_KEY
    from harnessed.runtime import SessionRef

    http_server.queue(
        tool_reply("toolu_1", "Paris", cache_creation_input_tokens=700),
        text_reply("done"),
    )
    agent = HarnessAgent(
        "cache", claude(http_server), tools=[lookup], workspace=tmp_path, memory=False
    )
    ctx = RuntimeContext("u", "s")
    await agent.call("Paris", ctx)
    answers = [m for m in await agent.session_messages(ctx) if m.role == "assistant"]
    assert answers[0].metadata[USAGE_KEY] == {
        "input_tokens": 10 + 700,
        "output_tokens": 5,
        "cache_read_tokens": 0,
        "cache_write_tokens": 700,
    }
    console = Console(record=True, width=120)
    assert await inspect_session(agent.session_store, SessionRef("cache", "u", "s"), console) == 0
    await agent.close()
    shown = console.export_text()
    assert "provider's cache: read 0, wrote 700" in shown  # the first request, as reported
    assert "(700 written to cache)" in shown  # the session's spending
