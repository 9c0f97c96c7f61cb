"""Lone UTF-16 surrogates in model output crash the agent.

1. OpenAIChatModel joins streamed deltas with ``"".join`` (openai.py:_StreamState.finish), so an
   astral character split by a gateway into ``"\\ud83d"`` / ``"\\ude00"`` escapes in two chunks
   stays two lone surrogates instead of one emoji.
2. Any lone surrogate in a message then crashes ``agent.call`` with UnicodeEncodeError when the
   session log is written (session/jsonl.py:63 ``data.encode("utf-8")`` of
   ``Msg.to_json()``/record JSON made with ``ensure_ascii=False``).
"""

import json
import tempfile

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from tests.models.test_openai_stream_edges import chunk, drain, make
from tests.models.test_openai_stream_edges import server as server  # the fixture
from tests.support.http_server import Reply

pytestmark = pytest.mark.asyncio


async def test_emoji_split_into_surrogate_escapes_across_chunks_is_reassembled(server):
    """Some gateways (JS ``JSON.stringify`` on UTF-16 slices) split an astral character into
    ``"\\ud83d"`` and ``"\\ude00"`` in two chunks. Joined as Python strings these stay two lone
    surrogates, and the message can then not be encoded as UTF-8 (session log / state file)."""
    server.queue(
        Reply(
            sse=[
                "data: " + json.dumps(chunk(content="ok ")) + "\n\n",
                "data: " + json.dumps(chunk(content="\ud83d")) + "\n\n",
                "data: " + json.dumps(chunk(content="\ude00")) + "\n\n",
                "data: " + json.dumps(chunk(finish="stop")) + "\n\n",
                "data: [DONE]\n\n",
            ]
        )
    )
    events = await drain(make(server.url))
    message = events[-1].message
    assert message.text == "ok \U0001f600"
    message.to_json().encode("utf-8")


async def test_lone_surrogate_in_a_reply_does_not_crash_the_call():
    agent = HarnessAgent(
        name="a", model=ScriptedModel(["ok \ud83d\ude00"]), workspace=tempfile.mkdtemp()
    )
    try:
        reply = await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))
    finally:
        await agent.close()
    assert reply.text.startswith("ok ")


def _history_with_lone_surrogates():
    from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock
    from harnessed.models.base import ModelRequest, ToolSchema

    call = ToolUseBlock("call_1", "read_file", {"path": "bad\udcff.txt"})
    result = ToolResultBlock("call_1", "bytes: \udcff\udcfe and half an emoji \ud83d", name="read")
    return ModelRequest(
        messages=(
            Msg.system("sys \ud800"),
            Msg.user("look at bad\udcff.txt"),
            Msg.assistant([call]),
            Msg("tool", (result,)),
        ),
        tools=(ToolSchema("read_file", "reads \udcff", {"type": "object"}),),
    )


async def test_openai_request_with_lone_surrogates_is_sent_repaired(server):
    server.queue(
        Reply(
            sse=[
                "data: " + json.dumps(chunk(content="fine")) + "\n\n",
                "data: " + json.dumps(chunk(finish="stop")) + "\n\n",
            ]
        )
    )
    model = make(server.url)
    try:
        events = [e async for e in model.stream(_history_with_lone_surrogates())]
    finally:
        await model.aclose()
    assert events[-1].message.text == "fine"
    sent = server.requests[-1].body.decode("utf-8")
    assert "\ufffd" in json.loads(sent)["messages"][3]["content"]
    assert "\\udcff" not in sent


async def test_anthropic_request_with_lone_surrogates_is_sent_repaired(server):
    from harnessed.models.anthropic import AnthropicModel
    from harnessed.models.retry import RetryPolicy
    from tests.models.test_event_loops import anthropic_reply

    server.queue(anthropic_reply("fine"))
    model = AnthropicModel(
        "claude-x", api_key="k", base_url=server.url, retry=RetryPolicy(max_attempts=1)
    )
    try:
        events = [e async for e in model.stream(_history_with_lone_surrogates())]
    finally:
        await model.aclose()
    assert events[-1].message.text == "fine"
    sent = json.loads(server.requests[-1].body.decode("utf-8"))
    assert "\ufffd" in json.dumps([sent["system"], sent["messages"]], ensure_ascii=False)
