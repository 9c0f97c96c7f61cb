"""Retries are visible: a ``model_retry`` event per wait, and a final error that counts."""

from __future__ import annotations

import pytest

from harnessed import CustomEvent, HarnessAgent, ModelError, RuntimeContext
from harnessed.models.openai import OpenAIChatModel
from harnessed.models.retry import RetryPolicy
from tests.models.test_event_loops import openai_reply
from tests.support.http_server import LocalServer, Reply

FAST = RetryPolicy(max_attempts=3, initial_delay=0.01, jitter=0)


def busy() -> Reply:
    return Reply(503, {"error": {"message": "server busy"}})


async def test_each_retry_is_an_event_with_attempt_status_and_wait(tmp_path):
    server = LocalServer().start()
    server.queue(busy(), busy(), openai_reply("finally"))
    model = OpenAIChatModel("m", base_url=server.url + "/v1", context_window=8000, retry=FAST)
    agent = HarnessAgent("a", model, workspace=tmp_path)
    ctx = RuntimeContext(user_id="u", session_id="s")
    try:
        events = [e async for e in agent.stream_events("hi", ctx)]
        logged = await agent.session_log(ctx, types=["custom"])
    finally:
        await agent.close()
        server.stop()
    retries = [e.data for e in events if isinstance(e, CustomEvent) and e.name == "model_retry"]
    assert [(r["attempt"], r["max_attempts"], r["status_code"]) for r in retries] == [
        (1, 3, 503),
        (2, 3, 503),
    ]
    assert retries[1]["wait_seconds"] == pytest.approx(0.02)
    assert "server busy" in retries[0]["error"]
    assert events[-1].reply.text == "finally"
    assert [r.payload["name"] for r in logged].count("model_retry") == 2


async def test_the_final_error_counts_attempts_and_names_the_server(tmp_path):
    model = OpenAIChatModel(
        "m", base_url="http://127.0.0.1:9/v1", context_window=8000, retry=FAST, timeout=2
    )
    agent = HarnessAgent("a", model, workspace=tmp_path)
    try:
        with pytest.raises(ModelError) as caught:
            await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))
    finally:
        await agent.close()
    assert "gave up after 3 attempts" in str(caught.value)
    assert "127.0.0.1:9" in str(caught.value)
