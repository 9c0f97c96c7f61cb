"""Models used from more than one event loop, against servers that keep connections alive.

A real OpenAI-compatible server (llama.cpp, vLLM, Ollama) keeps HTTP/1.1 connections open
after an answer; the pooled connection then belongs to the event loop that opened it. A second
``asyncio.run`` (or ``agent.call_sync``) must not try to reuse it.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.messages import Msg
from harnessed.models.anthropic import AnthropicModel
from harnessed.models.base import ModelRequest, collect
from harnessed.models.openai import OpenAIChatModel
from harnessed.models.retry import RetryPolicy
from tests.support.http_server import LocalServer, Reply

MODEL = "tiny-local"


def openai_reply(text: str) -> Reply:
    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        body = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n"

    return Reply(sse=[chunk({"content": text}), chunk({}, "stop"), "data: [DONE]\n\n"])


def anthropic_reply(text: str) -> Reply:
    def event(name: str, data: dict[str, object]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 3, "output_tokens": 0},
    }
    return Reply(
        sse=[
            event("message_start", {"message": message}),
            event(
                "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
            ),
            event(
                "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}
            ),
            event("content_block_stop", {"index": 0}),
            event(
                "message_delta",
                {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
            ),
            event("message_stop", {}),
        ]
    )


@pytest.fixture
def server():
    srv = LocalServer(keep_alive=True).start()
    yield srv
    srv.stop()


def request() -> ModelRequest:
    return ModelRequest(messages=(Msg.user("hi"),))


def test_openai_model_answers_in_two_event_loops_over_kept_alive_connections(server):
    server.queue(openai_reply("one"), openai_reply("two"), openai_reply("three"))
    model = OpenAIChatModel(
        MODEL, base_url=server.url + "/v1", timeout=5.0, retry=RetryPolicy(max_attempts=1)
    )
    first = asyncio.run(collect(model, request()))
    second = asyncio.run(collect(model, request()))

    async def twice_in_one_loop() -> str:
        try:
            return (await collect(model, request())).message.text
        finally:
            await model.aclose()

    third = asyncio.run(twice_in_one_loop())
    assert [first.message.text, second.message.text, third] == ["one", "two", "three"]
    assert len(server.requests) == 3


def test_anthropic_model_answers_in_two_event_loops_over_kept_alive_connections(server):
    server.queue(anthropic_reply("one"), anthropic_reply("two"))
    model = AnthropicModel(
        MODEL, api_key="k", base_url=server.url, timeout=5.0, retry=RetryPolicy(max_attempts=1)
    )
    first = asyncio.run(collect(model, request()))
    second = asyncio.run(collect(model, request()))
    assert [first.message.text, second.message.text] == ["one", "two"]


def test_connections_are_reused_within_one_loop(server):
    """One client per loop, not one per request: the kept-alive connection is used again."""
    server.queue(openai_reply("one"), openai_reply("two"))
    model = OpenAIChatModel(MODEL, base_url=server.url + "/v1", timeout=5.0)

    async def both() -> list[str]:
        try:
            return [(await collect(model, request())).message.text for _ in range(2)]
        finally:
            await model.aclose()

    assert asyncio.run(both()) == ["one", "two"]
    assert server.connections == 1


def test_agent_call_sync_twice_against_a_keep_alive_server(server, tmp_path):
    server.queue(openai_reply("first answer"), openai_reply("second answer"))
    model = OpenAIChatModel(
        MODEL,
        base_url=server.url + "/v1",
        timeout=5.0,
        context_window=8_000,
        retry=RetryPolicy(max_attempts=1),
    )
    agent = HarnessAgent("a", model, workspace=tmp_path)
    ctx = RuntimeContext(user_id="u", session_id="s")
    assert agent.call_sync("hello", ctx).text == "first answer"
    assert agent.call_sync("again", ctx).text == "second answer"
    asyncio.run(agent.close())
