"""Typed answers through AnthropicModel against the local Messages API server: the
``output_config`` body, a malformed answer retried, a refusal, and the final-answer tool."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import pydantic
import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models.anthropic import AnthropicModel
from harnessed.models.retry import RetryPolicy
from harnessed.output import FINAL_TOOL, OutputRefusedError, OutputValidationError
from tests.models.test_anthropic import (
    block_start,
    block_stop,
    delta,
    message_end,
    message_start,
)
from tests.support.http_server import LocalServer, Reply

FAST = RetryPolicy(initial_delay=0.01)

CTX = RuntimeContext("u", "s")


class Verdict(pydantic.BaseModel):
    decision: Literal["merge", "reject"]
    reasons: list[str]


@pytest.fixture
async def make_model(http_server: LocalServer) -> AsyncIterator[Callable[..., AnthropicModel]]:
    made: list[AnthropicModel] = []

    def make(**kwargs: Any) -> AnthropicModel:
        made.append(
            AnthropicModel(
                "claude-sonnet-4-6", api_key="k", base_url=http_server.url, retry=FAST, **kwargs
            )
        )
        return made[-1]

    yield make
    for model in made:
        await model.aclose()


def text(answer: str, stop: str = "end_turn") -> Reply:
    return Reply(
        sse=[
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, "text_delta", text=answer),
            block_stop(0),
            *message_end(stop),
        ]
    )


def final_call(arguments: str) -> Reply:
    return Reply(
        sse=[
            message_start(),
            block_start(0, {"type": "tool_use", "id": "toolu_1", "name": FINAL_TOOL, "input": {}}),
            delta(0, "input_json_delta", partial_json=arguments),
            block_stop(0),
            *message_end("tool_use"),
        ]
    )


async def test_native_answer_sends_output_config_and_a_bad_answer_is_retried(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        text('{"decision": "merge"}'),  # a required field missing
        text('{"decision": "merge", "reasons": ["green"]}'),
    )
    agent = HarnessAgent("rev", make_model(), output_type=Verdict)
    result = await agent.call("review the PR", CTX)
    assert result.output == Verdict(decision="merge", reasons=["green"])
    bodies = [r.json() for r in http_server.requests]
    fmt = bodies[0]["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["required"] == ["decision", "reasons"]
    assert fmt["schema"]["additionalProperties"] is False
    assert "tools" not in bodies[0]
    retry = bodies[1]["messages"][-1]
    assert retry["role"] == "user" and "reasons" in json.dumps(retry["content"])


async def test_a_refusal_stop_reason_is_an_error(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(text("I won't review this.", stop="refusal"))
    agent = HarnessAgent("rev", make_model(), output_type=Verdict)
    with pytest.raises(OutputRefusedError, match="won't review"):
        await agent.call("review", CTX)
    assert len(http_server.requests) == 1


async def test_the_final_answer_tool_retries_then_fails_clearly(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        final_call('{"decision": "maybe", "reasons": []}'),
        final_call('{"decision": "merge", "reasons": "one"}'),
    )
    agent = HarnessAgent(
        "rev", make_model(structured_output="tool"), output_type=Verdict, output_retries=1
    )
    with pytest.raises(OutputValidationError, match="after 2 attempts"):
        await agent.call("review", CTX)
    bodies = [r.json() for r in http_server.requests]
    assert "output_config" not in bodies[0]
    assert FINAL_TOOL in [t["name"] for t in bodies[0]["tools"]]
    sent_back = bodies[1]["messages"][-1]["content"][0]
    assert sent_back["type"] == "tool_result" and sent_back["is_error"] is True
    assert "decision" in json.dumps(sent_back["content"])
