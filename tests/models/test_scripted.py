"""ScriptedModel: scripted streams, recording, overflow simulation."""

from __future__ import annotations

import pytest

from harnessed import ContextOverflowError, ModelError, Msg
from harnessed.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ScriptedResponse,
    ScriptedToolCall,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
    ToolSchema,
    collect,
)


def request(text: str = "hi", tools: tuple[ToolSchema, ...] = ()) -> ModelRequest:
    return ModelRequest(messages=(Msg.user(text),), tools=tools)


async def test_streams_thinking_text_and_tool_calls_then_response() -> None:
    model = ScriptedModel(
        [ScriptedResponse("a" * 30, [ScriptedToolCall("t", {"x": 1}, id="c1")], thinking="th")],
        chunk_size=10,
    )
    events = [e async for e in model.stream(request())]
    assert [type(e) for e in events] == [
        ThinkingDelta,
        TextDelta,
        TextDelta,
        TextDelta,
        ToolCallReady,
        ModelResponse,
    ]
    final = events[-1]
    assert isinstance(final, ModelResponse)
    assert final.message.text == "a" * 30 and final.message.tool_uses[0].id == "c1"
    assert final.stop_reason == "tool_use" and final.usage and final.usage.input_tokens > 0


async def test_records_requests_and_raises_scripted_errors() -> None:
    model = ScriptedModel(["one", ModelError("down")])
    assert (await collect(model, request("first"))).message.text == "one"
    with pytest.raises(ModelError, match="down"):
        await collect(model, request("second"))
    assert [r.messages[0].text for r in model.requests] == ["first", "second"]
    with pytest.raises(ModelError, match="no scripted response left"):
        await collect(model, request("third"))


async def test_responder_answers_when_the_script_is_empty() -> None:
    async def answer(req: ModelRequest) -> str:
        return f"echo {req.messages[-1].text}"

    model = ScriptedModel(["scripted"], responder=answer)
    assert (await collect(model, request("a"))).message.text == "scripted"
    assert (await collect(model, request("b"))).message.text == "echo b"


async def test_overflow_is_raised_like_a_provider_would() -> None:
    model = ScriptedModel(["fits"], overflow_at_tokens=50, context_window=64)
    assert model.context_window == 64
    with pytest.raises(ContextOverflowError, match="maximum context length is 50 tokens"):
        await collect(model, request("word " * 200))
    assert model.remaining == 1  # the script item was not consumed
    assert (await collect(model, request("short"))).message.text == "fits"


async def test_tool_schemas_count_toward_the_estimate() -> None:
    model = ScriptedModel()
    schema = ToolSchema("big", "d" * 400, {"type": "object", "properties": {}})
    assert model.estimate(request(tools=(schema,))) > model.estimate(request()) + 50


def test_invalid_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="context_window"):
        ScriptedModel(context_window=0)
    with pytest.raises(ValueError, match="overflow_at_tokens"):
        ScriptedModel(overflow_at_tokens=-1)
