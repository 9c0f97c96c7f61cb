"""AnthropicModel against a real local HTTP server speaking the Messages API wire format."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from harnessed.messages import (
    INVALID_ARGUMENTS_KEY,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from harnessed.models.anthropic import AnthropicModel
from harnessed.models.base import (
    ModelEvent,
    ModelRequest,
    ModelResponse,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
    ToolSchema,
    Usage,
)
from harnessed.models.errors import ContextOverflowError, ModelError, RateLimitError
from harnessed.models.retry import RetryPolicy
from tests.support.fixtures import free_port
from tests.support.http_server import LocalServer, Reply

MODEL = "claude-sonnet-4-6"
FAST_RETRY = RetryPolicy(initial_delay=0.01)


# ------------------------------------------------------------------------ wire helpers


def event(kind: str, **data: Any) -> str:
    """One server-sent event exactly as the Messages API writes it."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def message_start(**usage: int) -> str:
    message: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-sonnet-4-6-20260101",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1, **usage},
    }
    return event("message_start", message=message)


def block_start(index: int, block: dict[str, Any]) -> str:
    return event("content_block_start", index=index, content_block=block)


def delta(index: int, kind: str, **fields: Any) -> str:
    return event("content_block_delta", index=index, delta={"type": kind, **fields})


def block_stop(index: int) -> str:
    return event("content_block_stop", index=index)


def message_end(stop_reason: str = "end_turn", output_tokens: int = 5) -> list[str]:
    return [
        event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        event("message_stop"),
    ]


def text_reply(text: str = "ok") -> Reply:
    return Reply(
        sse=[
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, "text_delta", text=text),
            block_stop(0),
            *message_end(),
        ]
    )


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture
async def make_model(
    http_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[..., AnthropicModel]]:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    made: list[AnthropicModel] = []

    def make(**kwargs: Any) -> AnthropicModel:
        kwargs.setdefault("api_key", "test-key")
        kwargs.setdefault("retry", FAST_RETRY)
        model = AnthropicModel(MODEL, base_url=http_server.url, **kwargs)
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


async def run(model: AnthropicModel, request: ModelRequest) -> list[ModelEvent]:
    return [e async for e in model.stream(request)]


def hello() -> ModelRequest:
    return ModelRequest(messages=(Msg.user("hello"),))


# ----------------------------------------------------------------------------- streams


async def test_streams_text_and_reports_usage(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(
            sse=[
                message_start(
                    input_tokens=12, cache_read_input_tokens=30, cache_creation_input_tokens=5
                ),
                block_start(0, {"type": "text", "text": ""}),
                event("ping"),
                delta(0, "text_delta", text="Hel"),
                delta(0, "text_delta", text="lo!"),
                block_stop(0),
                *message_end("end_turn", output_tokens=7),
            ]
        )
    )
    events = await run(make_model(), hello())

    assert events[:2] == [TextDelta("Hel"), TextDelta("lo!")]
    final = events[-1]
    assert isinstance(final, ModelResponse) and len(events) == 3
    assert final.message.role == "assistant"
    assert final.message.content == (TextBlock("Hello!"),)
    # input_tokens is the whole prompt: uncached + cache reads + cache writes.
    assert final.usage == Usage(
        input_tokens=47, output_tokens=7, cache_read_tokens=30, cache_write_tokens=5
    )
    assert final.stop_reason == "end_turn"
    assert final.model == "claude-sonnet-4-6-20260101"


async def test_streams_two_tool_calls_with_split_json(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(
            sse=[
                message_start(),
                block_start(0, {"type": "text", "text": ""}),
                delta(0, "text_delta", text="Checking."),
                block_stop(0),
                block_start(
                    1, {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
                ),
                delta(1, "input_json_delta", partial_json=""),
                delta(1, "input_json_delta", partial_json='{"ci'),
                delta(1, "input_json_delta", partial_json='ty": "Pa'),
                delta(1, "input_json_delta", partial_json='ris", "days": 3}'),
                block_stop(1),
                block_start(2, {"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {}}),
                block_stop(2),
                *message_end("tool_use"),
            ]
        )
    )
    events = await run(make_model(), hello())

    weather = ToolUseBlock("toolu_1", "weather", {"city": "Paris", "days": 3})
    clock = ToolUseBlock("toolu_2", "clock", {})
    assert events[:3] == [TextDelta("Checking."), ToolCallReady(weather), ToolCallReady(clock)]
    final = events[3]
    assert isinstance(final, ModelResponse)
    assert final.message.content == (TextBlock("Checking."), weather, clock)
    assert final.stop_reason == "tool_use"


async def test_tool_arguments_that_are_not_an_object_are_marked_invalid(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(
            sse=[
                message_start(),
                block_start(0, {"type": "tool_use", "id": "t1", "name": "a", "input": {}}),
                delta(0, "input_json_delta", partial_json="[1, 2]"),
                block_stop(0),
                block_start(1, {"type": "tool_use", "id": "t2", "name": "b", "input": {}}),
                delta(1, "input_json_delta", partial_json='{"unterminated'),
                block_stop(1),
                *message_end("tool_use"),
            ]
        )
    )
    events = await run(make_model(), hello())

    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [c.input for c in calls] == [
        {INVALID_ARGUMENTS_KEY: "[1, 2]"},
        {INVALID_ARGUMENTS_KEY: '{"unterminated'},
    ]


async def test_streams_thinking_with_signature(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(
            sse=[
                message_start(),
                block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
                delta(0, "thinking_delta", thinking="Let me "),
                delta(0, "thinking_delta", thinking="think."),
                delta(0, "signature_delta", signature="EqQBCgIYAhIM"),
                block_stop(0),
                block_start(1, {"type": "text", "text": ""}),
                delta(1, "text_delta", text="42"),
                block_stop(1),
                *message_end(),
            ]
        )
    )
    events = await run(make_model(thinking_budget=2048), hello())

    assert events[:3] == [ThinkingDelta("Let me "), ThinkingDelta("think."), TextDelta("42")]
    final = events[-1]
    assert isinstance(final, ModelResponse)
    assert final.message.content == (
        ThinkingBlock("Let me think.", signature="EqQBCgIYAhIM"),
        TextBlock("42"),
    )
    assert final.message.thinking == "Let me think."


# ---------------------------------------------------------------------------- requests


async def test_request_body_shape(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(text_reply(), text_reply(), text_reply())
    model = make_model(thinking_budget=4096, max_output_tokens=8192)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    messages = (
        Msg.system("You are terse."),
        Msg.system("Answer in English."),
        Msg.user(
            [
                TextBlock("Weather in Paris and Rome?"),
                ImageBlock(url="https://example.com/map.png"),
                ImageBlock(data="aGk=", media_type="image/png"),
            ]
        ),
        Msg.assistant(
            [
                ThinkingBlock("I need both cities.", signature="sig-1"),
                ThinkingBlock("unsigned, must be dropped"),
                TextBlock("Looking up."),
                ToolUseBlock("toolu_1", "weather", {"city": "Paris"}),
                ToolUseBlock("toolu_2", "weather", {"city": "Rome"}),
            ]
        ),
        Msg.tool_result("toolu_1", "sunny", name="weather"),
        Msg.tool_result("toolu_2", "no such city", is_error=True, name="weather"),
        Msg.user("Thanks, and tomorrow?"),
    )
    tools = (ToolSchema("weather", "Current weather for a city.", schema),)
    await run(model, ModelRequest(messages=messages, tools=tools))
    await run(model, ModelRequest(messages=(Msg.user("short"),), max_output_tokens=3000))
    await run(model, ModelRequest(messages=(Msg.user("tiny"),), max_output_tokens=1500))

    body = http_server.requests[0].json()
    assert http_server.requests[0].path == "/v1/messages"
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["max_tokens"] == 8192
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["system"] == "You are terse.\n\nAnswer in English."
    assert body["tools"] == [
        {"name": "weather", "description": "Current weather for a city.", "input_schema": schema}
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in Paris and Rome?"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/map.png"}},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I need both cities.", "signature": "sig-1"},
                {"type": "text", "text": "Looking up."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "sunny",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "no such city",
                    "is_error": True,
                },
                {"type": "text", "text": "Thanks, and tomorrow?"},
            ],
        },
    ]
    assert "temperature" not in body

    # A per-request limit wins; the thinking budget shrinks to stay below it.
    second = http_server.requests[1].json()
    assert second["max_tokens"] == 3000
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 1500}
    assert "system" not in second and "tools" not in second
    # Half of a 1500-token limit is under the API minimum budget: no thinking at all.
    third = http_server.requests[2].json()
    assert third["max_tokens"] == 1500 and "thinking" not in third


async def test_temperature_is_sent_when_set(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(text_reply())
    await run(make_model(temperature=0.2, max_output_tokens=100), hello())
    body = http_server.requests[0].json()
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 100
    assert "thinking" not in body


# ------------------------------------------------------------------------------ errors


async def test_prompt_too_long_is_context_overflow_without_retry(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    message = "prompt is too long: 210000 tokens > 200000 maximum"
    http_server.queue(Reply(400, error_body("invalid_request_error", message)))

    with pytest.raises(ContextOverflowError) as caught:
        await run(make_model(), hello())
    assert caught.value.message == f"invalid_request_error: {message}"
    assert caught.value.status_code == 400
    assert caught.value.provider == "anthropic"
    assert len(http_server.requests) == 1


async def test_rate_limit_is_retried(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(429, error_body("rate_limit_error", "slow down"), headers={"retry-after": "0"}),
        text_reply("after the wait"),
    )
    events = await run(make_model(), hello())

    final = events[-1]
    assert isinstance(final, ModelResponse) and final.message.text == "after the wait"
    assert len(http_server.requests) == 2


async def test_rate_limit_carries_retry_after(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(429, error_body("rate_limit_error", "slow down"), headers={"retry-after": "7"})
    )
    with pytest.raises(RateLimitError) as caught:
        await run(make_model(retry=RetryPolicy(max_attempts=1)), hello())
    assert caught.value.retry_after == 7.0
    assert caught.value.message == "rate_limit_error: slow down"


async def test_overloaded_is_retried_until_attempts_run_out(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    overloaded = error_body("overloaded_error", "Overloaded")
    http_server.queue(*(Reply(529, overloaded) for _ in range(3)), text_reply("unused"))

    with pytest.raises(ModelError) as caught:
        await run(make_model(), hello())
    assert type(caught.value) is ModelError
    assert caught.value.status_code == 529 and caught.value.retryable
    assert "overloaded_error: Overloaded" in caught.value.message
    assert len(http_server.requests) == 3


async def test_error_event_before_output_is_retried(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    overloaded = error_body("overloaded_error", "Overloaded")
    http_server.queue(
        Reply(sse=[message_start(), event("error", error=overloaded["error"])]),
        text_reply("second try"),
    )
    events = await run(make_model(), hello())

    final = events[-1]
    assert isinstance(final, ModelResponse) and final.message.text == "second try"
    assert len(http_server.requests) == 2


async def test_error_event_after_output_is_raised(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(
            sse=[
                message_start(),
                block_start(0, {"type": "text", "text": ""}),
                delta(0, "text_delta", text="partial"),
                event("error", error={"type": "overloaded_error", "message": "Overloaded"}),
            ]
        ),
        text_reply("must not be requested"),
    )
    seen: list[ModelEvent] = []
    with pytest.raises(ModelError) as caught:
        async for e in make_model().stream(hello()):
            seen.append(e)
    assert seen == [TextDelta("partial")]
    assert caught.value.retryable and caught.value.status_code == 529
    assert caught.value.message == "overloaded_error: Overloaded"
    assert len(http_server.requests) == 1


async def test_stream_cut_before_message_stop_is_an_error(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(Reply(sse=[message_start(), block_start(0, {"type": "text", "text": ""})]))
    with pytest.raises(ModelError, match="before message_stop"):
        await run(make_model(retry=RetryPolicy(max_attempts=1)), hello())


async def test_connection_refused_is_a_retryable_model_error() -> None:
    port = free_port()
    model = AnthropicModel(
        MODEL, api_key="k", base_url=f"http://127.0.0.1:{port}", retry=RetryPolicy(max_attempts=1)
    )
    try:
        with pytest.raises(ModelError) as caught:
            await run(model, hello())
    finally:
        await model.aclose()
    assert type(caught.value) is ModelError
    assert caught.value.retryable and caught.value.status_code is None


async def test_unknown_events_and_blocks_are_skipped(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(
        Reply(
            sse=[
                message_start(),
                event("some_future_event", detail=1),
                block_start(0, {"type": "redacted_thinking", "data": "opaque"}),
                block_stop(0),
                block_start(1, {"type": "text", "text": ""}),
                delta(1, "citations_delta", citation={"type": "char_location"}),
                delta(1, "text_delta", text="fine"),
                block_stop(1),
                *message_end(),
            ]
        )
    )
    events = await run(make_model(), hello())
    assert events[0] == TextDelta("fine")
    final = events[-1]
    assert isinstance(final, ModelResponse)
    assert final.message.content == (ThinkingBlock("", redacted="opaque"), TextBlock("fine"))


async def test_redacted_thinking_is_sent_back_unchanged(
    http_server: LocalServer, make_model: Callable[..., AnthropicModel]
) -> None:
    http_server.queue(text_reply())
    earlier = Msg.assistant([ThinkingBlock("", redacted="encrypted=="), TextBlock("Hi.")])
    request = ModelRequest(messages=(Msg.user("hello"), earlier, Msg.user("again")))
    await run(make_model(), request)
    sent = http_server.requests[0].json()["messages"][1]["content"]
    assert sent == [
        {"type": "redacted_thinking", "data": "encrypted=="},
        {"type": "text", "text": "Hi."},
    ]


# ------------------------------------------------------------------------ construction


async def test_supplied_client_runs_without_sdk_retries_and_stays_open(
    http_server: LocalServer,
) -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="k", base_url=http_server.url, max_retries=5)
    model = AnthropicModel(MODEL, client=client, retry=RetryPolicy(max_attempts=1))
    http_server.queue(Reply(529, error_body("overloaded_error", "Overloaded")), text_reply())
    with pytest.raises(ModelError):
        await run(model, hello())
    assert len(http_server.requests) == 1  # the SDK did not retry on its own

    await model.aclose()
    assert not client.is_closed()
    await client.close()


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes ``import anthropic`` fail
    with pytest.raises(ImportError, match=r"pip install 'harnessed\[anthropic\]'"):
        AnthropicModel(MODEL, api_key="k")


async def test_api_key_from_environment_reaches_the_server(
    http_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    http_server.queue(text_reply())
    model = AnthropicModel(MODEL, base_url=http_server.url)
    try:
        await run(model, hello())
    finally:
        await model.aclose()
    headers = {k.lower(): v for k, v in http_server.requests[0].headers.items()}
    # anthropic 2.x sends the key as a bearer token; older SDKs used x-api-key.
    assert headers.get("x-api-key") == "env-key" or headers.get("authorization") == (
        "Bearer env-key"
    )


def test_base_url_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/gateway")
    model = AnthropicModel(MODEL, api_key="k")
    assert str(model.base_url).startswith("http://127.0.0.1:9/gateway")


def test_missing_api_key_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(MODEL)
    # A custom endpoint given explicitly may work without a key.
    assert AnthropicModel(MODEL, base_url="http://127.0.0.1:9").name == MODEL


def test_properties_and_known_window() -> None:
    model = AnthropicModel(MODEL, api_key="k", max_output_tokens=2000)
    assert (model.name, model.context_window, model.max_output_tokens) == (MODEL, 200_000, 2000)
    assert AnthropicModel("my-finetune", api_key="k").context_window is None
    assert (
        AnthropicModel("my-finetune", api_key="k", context_window=50_000).context_window == 50_000
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"thinking_budget": 512},
        {"thinking_budget": 4096, "max_output_tokens": 4096},
        {"thinking_budget": 2048, "temperature": 0.5},
        {"temperature": 1.5},
        {"max_output_tokens": 0},
        {"timeout": 0},
        {"context_window": 0},
    ],
)
def test_invalid_arguments_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        AnthropicModel(MODEL, api_key="k", **kwargs)


def test_importing_harnessed_does_not_import_the_sdk() -> None:
    code = (
        "import sys, harnessed, harnessed.models, harnessed.models.anthropic; "
        "assert 'anthropic' not in sys.modules, 'anthropic SDK imported eagerly'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
