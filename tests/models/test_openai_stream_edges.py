"""OpenAIChatModel streaming edge cases against a real local HTTP server."""

import json

import pytest

from harnessed.messages import Msg
from harnessed.models.base import ModelRequest
from harnessed.models.errors import ModelError
from harnessed.models.openai import OpenAIChatModel
from harnessed.models.retry import RetryPolicy
from tests.support.http_server import LocalServer, Reply

pytestmark = pytest.mark.asyncio
MODEL = "gpt-4o-mini"


def chunk(content=None, finish=None, tool_calls=None):
    delta = {}
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.fixture
def server():
    srv = LocalServer().start()
    yield srv
    srv.stop()


def make(url):
    return OpenAIChatModel(
        MODEL, api_key="sk-x", base_url=url + "/v1", timeout=5.0, retry=RetryPolicy(max_attempts=1)
    )


async def drain(model):
    try:
        return [e async for e in model.stream(ModelRequest(messages=(Msg.user("hi"),)))]
    finally:
        await model.aclose()


async def test_stream_cut_before_finish_is_not_a_complete_answer(server):
    """The connection drops mid-answer (no finish_reason, no [DONE]): the adapter must not
    hand back the partial text / half a tool call as a finished response."""
    server.queue(
        Reply(
            sse=[
                f"data: {json.dumps(chunk(content='I will now delete'))}\n\n",
                "data: "
                + json.dumps(
                    chunk(
                        tool_calls=[
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "execute",
                                    "arguments": '{"command": "rm -rf bu',
                                },
                            }
                        ]
                    )
                )
                + "\n\n",
            ]
        )
    )
    with pytest.raises(ModelError):
        await drain(make(server.url))
