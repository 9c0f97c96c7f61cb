"""Typed answers through OpenAIChatModel against the local chat-completions server: the
``response_format`` body, a malformed answer retried, a refusal, and the final-answer tool for
servers without structured output."""

from __future__ import annotations

import json
from typing import Literal

import pydantic
import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.output import FINAL_TOOL, OutputRefusedError
from tests.models.test_openai import chunk, make_model, sse, tool_fragment, usage_chunk
from tests.support.http_server import LocalServer

CTX = RuntimeContext("u", "s")


class Verdict(pydantic.BaseModel):
    decision: Literal["merge", "reject"]
    reasons: list[str]
    score: int = 0


def content(text: str) -> object:
    return sse(chunk(role="assistant", content=text), chunk(finish="stop"), usage_chunk(20, 6))


async def test_native_answer_sends_a_strict_schema_and_a_bad_answer_is_retried(
    http_server: LocalServer,
) -> None:
    http_server.queue(
        content('{"decision": "merge", "reasons": '),  # cut short: not JSON
        content('{"decision": "ship", "reasons": [], "score": 1}'),  # not in the Literal
        content('{"decision": "merge", "reasons": ["tests pass"], "score": 9}'),
    )
    agent = HarnessAgent("rev", make_model(http_server), output_type=Verdict)
    try:
        result = await agent.call("review the PR", CTX)
    finally:
        await agent.close()
    assert result.output == Verdict(decision="merge", reasons=["tests pass"], score=9)
    assert result.usage.input_tokens == 60 and result.model_requests == 3
    bodies = [r.json() for r in http_server.requests]
    fmt = bodies[0]["response_format"]
    assert fmt["type"] == "json_schema"
    spec = fmt["json_schema"]
    assert spec["name"] == "Verdict" and spec["strict"] is True
    assert spec["schema"]["required"] == ["decision", "reasons", "score"]
    assert spec["schema"]["additionalProperties"] is False
    assert "default" not in json.dumps(spec["schema"])
    assert "tools" not in bodies[0]  # no final-answer tool when the provider constrains
    nudge = bodies[1]["messages"][-1]
    assert nudge["role"] == "user" and "not JSON" in nudge["content"]
    assert bodies[1]["messages"][-2] == {
        "role": "assistant",
        "content": '{"decision": "merge", "reasons": ',
    }
    assert "decision" in bodies[2]["messages"][-1]["content"]
    assert "'merge' or 'reject'" in bodies[2]["messages"][-1]["content"]


async def test_a_refusal_is_an_error_naming_what_the_model_said(
    http_server: LocalServer,
) -> None:
    refusal = {
        **chunk(role="assistant"),
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": None, "refusal": "I can't rate that."},
                "finish_reason": None,
                "logprobs": None,
            }
        ],
    }
    http_server.queue(sse(refusal, chunk(finish="stop")))
    agent = HarnessAgent("rev", make_model(http_server), output_type=Verdict)
    try:
        with pytest.raises(OutputRefusedError, match="can't rate that") as caught:
            await agent.call("review", CTX)
    finally:
        await agent.close()
    assert caught.value.refusal == "I can't rate that."
    assert len(http_server.requests) == 1  # not asked again
    state = await agent.load_state(CTX)
    assert state.history[-1].metadata["refusal"] == "I can't rate that."


async def test_a_server_without_structured_output_gets_the_final_answer_tool(
    http_server: LocalServer,
) -> None:
    http_server.queue(
        sse(
            chunk(
                role="assistant", tool_calls=[tool_fragment(0, "", call_id="c1", name=FINAL_TOOL)]
            ),
            chunk(tool_calls=[tool_fragment(0, '{"decision": "reject", "reasons": ["flaky"]}')]),
            chunk(finish="tool_calls"),
        )
    )
    model = make_model(http_server, structured_output="tool")
    agent = HarnessAgent("rev", model, output_type=Verdict)
    try:
        result = await agent.call("review", CTX)
    finally:
        await agent.close()
    assert result.output == Verdict(decision="reject", reasons=["flaky"])
    body = http_server.requests[0].json()
    assert "response_format" not in body
    (final,) = [t["function"] for t in body["tools"] if t["function"]["name"] == FINAL_TOOL]
    assert final["parameters"]["properties"]["decision"]["enum"] == ["merge", "reject"]
