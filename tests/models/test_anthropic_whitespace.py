"""AnthropicModel wire format: whitespace-only text blocks are sent as-is.

The Messages API rejects them with HTTP 400 "messages: text content blocks must contain
non-whitespace text". The adapter only drops *empty* text (anthropic.py:_block_param,
``if block.text``) and keeps a streamed whitespace-only text block in the assistant message
(anthropic.py:_StreamState._close, ``if partial.kind == "text" and text``), so once such a
block is in the history every later request of the session fails.
"""

import json

import pytest

from harnessed.messages import Msg, TextBlock, ToolUseBlock
from harnessed.models.anthropic import AnthropicModel
from harnessed.models.base import ModelRequest
from harnessed.models.retry import RetryPolicy
from tests.support.http_server import LocalServer, Reply

pytestmark = pytest.mark.asyncio


def ev(kind, **data):
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def reply(text="\n\n", tool=True):
    events = [
        ev(
            "message_start",
            message={
                "id": "m",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-6",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 3, "output_tokens": 1},
            },
        ),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
        ev("content_block_stop", index=0),
    ]
    if tool:
        events += [
            ev(
                "content_block_start",
                index=1,
                content_block={"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}},
            ),
            ev("content_block_stop", index=1),
        ]
    events += [
        ev(
            "message_delta",
            delta={"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
            usage={"output_tokens": 2},
        ),
        ev("message_stop"),
    ]
    return Reply(sse=events)


@pytest.fixture
def server():
    srv = LocalServer().start()
    yield srv
    srv.stop()


def all_text_blocks(body):
    for message in body["messages"]:
        for block in message["content"]:
            if block.get("type") == "text":
                yield block["text"]


async def test_whitespace_only_text_is_not_sent(server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    server.queue(reply("ok", tool=False))
    model = AnthropicModel(
        "claude-sonnet-4-6", api_key="k", base_url=server.url, retry=RetryPolicy(max_attempts=1)
    )
    history = (
        Msg.user("list files"),
        Msg.assistant([TextBlock("\n\n"), ToolUseBlock("toolu_1", "ls", {})]),
        Msg.tool_result("toolu_1", "a.txt"),
        Msg.user("   "),
    )
    try:
        [e async for e in model.stream(ModelRequest(messages=history))]
    finally:
        await model.aclose()
    body = json.loads(server.requests[0].body)
    bad = [t for t in all_text_blocks(body) if not t.strip()]
    assert not bad, f"whitespace-only text blocks sent to the Messages API: {bad!r}"
