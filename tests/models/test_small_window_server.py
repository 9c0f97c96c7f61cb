"""A self-hosted server with a small window that does not say so up front.

It behaves like llama-cpp-python's OpenAI-compatible server: a streamed request longer than
its window gets HTTP 200 with an empty body; the same request without streaming gets a 400
``context_length_exceeded``. No session may end up where every call fails the same way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.messages import Msg
from harnessed.models.base import ModelRequest, collect
from harnessed.models.errors import ContextOverflowError
from harnessed.models.openai import OpenAIChatModel
from harnessed.models.retry import RetryPolicy
from tests.models.test_event_loops import openai_reply
from tests.support.http_server import LocalServer, Recorded, Reply

MODEL = "tiny-local"
WINDOW = 4096


class SmallWindow:
    """The server's behaviour: a window of ``WINDOW`` tokens of 4 characters of JSON.

    ``rude`` is llama-cpp-python's manner: the empty streamed answer says ``Connection:
    keep-alive``, then the server resets the connection when the next request arrives on it.
    """

    def __init__(self, *, states_window: bool = True, rude: bool = False) -> None:
        self.states_window = states_window
        self.rude = rude
        self.streamed_empty = 0
        self.rejected = 0
        self.answers = 0

    def __call__(self, request: Recorded) -> Reply | None:
        if request.method == "GET" or "/chat/completions" not in request.path:
            return Reply(404, {"error": {"message": "not found"}})
        body = request.json()
        tokens = len(json.dumps(body["messages"])) // 4
        if tokens > WINDOW:
            if body.get("stream"):
                self.streamed_empty += 1
                return Reply(200, sse=[], drop_next=self.rude)
            self.rejected += 1
            said = (
                f"This model's maximum context length is {WINDOW} tokens. However, you "
                f"requested {tokens} tokens. Please reduce the length of the messages."
                if self.states_window
                else "Requested tokens exceed context window"
            )
            error = {"message": said, "type": "invalid_request_error"}
            return Reply(400, {"error": {**error, "code": "context_length_exceeded"}})
        self.answers += 1
        text = f"answer {self.answers}"
        if body.get("stream"):
            return openai_reply(text)
        return Reply(200, _completion(text))


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


def serve(behaviour: SmallWindow) -> LocalServer:
    return LocalServer(handler=behaviour).start()


def model_for(server: LocalServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        MODEL, base_url=server.url + "/v1", timeout=5.0, retry=RetryPolicy(max_attempts=1)
    )


async def test_an_empty_stream_is_asked_again_without_streaming_and_shows_the_overflow():
    behaviour = SmallWindow()
    server = serve(behaviour)
    model = model_for(server)
    try:
        with pytest.raises(ContextOverflowError) as caught:
            await collect(model, ModelRequest(messages=(Msg.user("x" * 20_000),)))
    finally:
        await model.aclose()
        server.stop()
    assert "without sending any chunk" in str(caught.value)
    assert "maximum context length is 4096" in str(caught.value)
    assert behaviour.streamed_empty == 1 and behaviour.rejected == 1
    assert model.context_window == WINDOW
    assert model.context_window_source == "server_error"


async def test_an_empty_stream_answered_without_streaming_gives_that_answer():
    calls: list[bool] = []

    def flaky(request: Recorded) -> Reply:
        streamed = bool(request.json().get("stream"))
        calls.append(streamed)
        return Reply(200, sse=[]) if streamed else Reply(200, _completion("the real answer"))

    server = LocalServer(handler=flaky).start()
    model = model_for(server)
    try:
        events = [e async for e in model.stream(ModelRequest(messages=(Msg.user("hi"),)))]
    finally:
        await model.aclose()
        server.stop()
    assert calls == [True, False]
    assert events[-1].message.text == "the real answer"
    assert [type(e).__name__ for e in events] == ["TextDelta", "ModelResponse"]


@pytest.mark.parametrize("states_window", [True, False])
async def test_no_session_is_left_failing_every_call(tmp_path, states_window):
    """Calls grow the history past the server's 4,096-token window. Streamed requests then
    come back empty; the agent must find out why, recover, and keep working call after call."""
    behaviour = SmallWindow(states_window=states_window)
    server = serve(behaviour)
    # a 4,096-token window: the tool schemas of every default would leave too little room
    # for the history this test grows, so the defaults beyond the file tools are off
    agent = HarnessAgent("a", model_for(server), workspace=tmp_path, subagents=False, web=False)
    ctx = RuntimeContext(user_id="u", session_id="s")
    replies = []
    try:
        for turn in range(8):
            reply = await agent.call(f"note {turn}: " + "lorem ipsum " * 400, ctx)
            replies.append(reply.text)
        manifest = agent.last_manifest(ctx)
        logged = await agent.session_log(ctx, types=["custom"])
    finally:
        await agent.close()
        server.stop()
    assert all(text.startswith("answer") for text in replies), replies
    assert behaviour.streamed_empty >= 1  # the window was really overrun at least once
    assert "overflow_recovery" in [r.payload["name"] for r in logged]  # recovered, not failed
    assert manifest is not None
    assert manifest.window_source == ("server_error" if states_window else "rejected_request")
    assert manifest.context_window is not None and manifest.context_window <= WINDOW


async def test_a_stream_cut_before_any_text_is_asked_again_without_streaming():
    """Only the role chunk arrives, then the stream ends without a finish reason."""
    role_only = "data: " + json.dumps(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": MODEL,
            "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}],
        }
    )

    def cut(request: Recorded) -> Reply:
        if request.json().get("stream"):
            return Reply(200, sse=[role_only + "\n\n"])
        return Reply(200, _completion("complete answer"))

    server = LocalServer(handler=cut).start()
    model = model_for(server)
    try:
        response = await collect(model, ModelRequest(messages=(Msg.user("hi"),)))
    finally:
        await model.aclose()
        server.stop()
    assert response.message.text == "complete answer"
    assert [bool(r.json().get("stream")) for r in server.requests] == [True, False]


async def test_keep_alive_then_drop_the_fallback_goes_out_on_a_fresh_connection():
    """The empty stream's connection is not reused for the request without streaming: the
    server would reset it, and the overflow it would have reported would never be seen."""
    behaviour = SmallWindow(rude=True)
    server = serve(behaviour)
    model = model_for(server)
    try:
        with pytest.raises(ContextOverflowError) as caught:
            await collect(model, ModelRequest(messages=(Msg.user("x" * 20_000),)))
    finally:
        await model.aclose()
        server.stop()
    assert "maximum context length is 4096" in str(caught.value)
    assert behaviour.streamed_empty == 1 and behaviour.rejected == 1
    assert server.dropped == []  # nothing was sent on the doomed connection


async def test_keep_alive_then_drop_server_the_agent_recovers_by_compaction(tmp_path):
    """A HarnessAgent against the rude server with the default retry policy: the history
    outgrows the window, the overflow is seen, compaction runs and every call succeeds."""
    behaviour = SmallWindow(rude=True)
    server = serve(behaviour)
    model = OpenAIChatModel(MODEL, base_url=server.url + "/v1", timeout=5.0)
    agent = HarnessAgent("a", model, workspace=tmp_path)
    ctx = RuntimeContext(user_id="u", session_id="s")
    replies = []
    try:
        for turn in range(6):
            reply = await agent.call(f"note {turn}: " + "lorem ipsum " * 400, ctx)
            replies.append(reply.text)
        logged = await agent.session_log(ctx, types=["custom"])
    finally:
        await agent.close()
        server.stop()
    assert all(text.startswith("answer") for text in replies), replies
    assert behaviour.streamed_empty >= 1 and behaviour.rejected >= 1
    assert "overflow_recovery" in [r.payload["name"] for r in logged]
    assert server.dropped == []
