"""OpenAIChatModel against a real local HTTP server speaking the chat-completions wire format."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from harnessed.messages import INVALID_ARGUMENTS_KEY, ImageBlock, Msg, TextBlock, ToolUseBlock
from harnessed.models.base import (
    Model,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
    ToolSchema,
    Usage,
    collect,
)
from harnessed.models.errors import ContextOverflowError, ModelError, RateLimitError
from harnessed.models.openai import OpenAIChatModel
from harnessed.models.retry import RetryPolicy
from tests.support.http_server import LocalServer, Reply

MODEL = "gpt-4o-mini"
FAST_RETRY = RetryPolicy(initial_delay=0.01, jitter=0)


# ---------------------------------------------------------------- wire helpers
def chunk(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    role: str | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` carrying a single choice delta."""
    delta: dict[str, Any] = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def usage_chunk(prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
    """The trailing chunk sent with ``stream_options.include_usage``: no choices, only usage."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [],
        "usage": usage,
    }


def tool_fragment(
    index: int, arguments: str, *, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        fragment["id"] = call_id
        fragment["type"] = "function"
    if name is not None:
        fragment["function"]["name"] = name
    return fragment


def sse(*chunks: dict[str, Any]) -> Reply:
    return Reply(sse=[f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"])


def error_reply(status: int, message: str, code: str | None = None, **headers: str) -> Reply:
    return Reply(
        status,
        {"error": {"message": message, "type": "invalid_request_error", "code": code}},
        headers=dict(headers),
    )


def make_model(server: LocalServer, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("timeout", 5.0)
    return OpenAIChatModel(MODEL, base_url=server.url + "/v1", **kw)


def ask(text: str = "hi", **kw: Any) -> ModelRequest:
    return ModelRequest(messages=(Msg.user(text),), **kw)


async def run(model: OpenAIChatModel, request: ModelRequest) -> list[ModelEvent]:
    try:
        return [event async for event in model.stream(request)]
    finally:
        await model.aclose()


def final(events: list[ModelEvent]) -> ModelResponse:
    assert isinstance(events[-1], ModelResponse)
    assert sum(isinstance(e, ModelResponse) for e in events) == 1
    return events[-1]


# ----------------------------------------------------------------------- tests
async def test_streams_text_deltas_in_order(http_server: LocalServer) -> None:
    http_server.queue(
        sse(
            chunk(role="assistant", content=""),
            chunk(content="Hel"),
            chunk(content="lo, "),
            chunk(content="world"),
            chunk(finish="stop"),
            usage_chunk(12, 3),
        )
    )
    events = await run(make_model(http_server), ask())

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo, ", "world"]
    response = final(events)
    assert response.message.role == "assistant"
    assert response.message.text == "Hello, world"
    assert response.message.content == (TextBlock("Hello, world"),)
    assert response.stop_reason == "stop"
    assert response.model == MODEL
    assert http_server.requests[0].path == "/v1/chat/completions"


async def test_usage_comes_from_final_chunk(http_server: LocalServer) -> None:
    http_server.queue(sse(chunk(content="ok"), chunk(finish="stop"), usage_chunk(100, 7, 64)))
    events = await run(make_model(http_server), ask())

    assert final(events).usage == Usage(input_tokens=100, output_tokens=7, cache_read_tokens=64)
    body = http_server.requests[0].json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_usage_is_none_when_server_sends_none(http_server: LocalServer) -> None:
    http_server.queue(sse(chunk(content="ok"), chunk(finish="stop")))
    assert final(await run(make_model(http_server), ask())).usage is None


async def test_parallel_tool_calls_assembled_from_interleaved_fragments(
    http_server: LocalServer,
) -> None:
    http_server.queue(
        sse(
            chunk(role="assistant", content="Let me look."),
            chunk(tool_calls=[tool_fragment(0, "", call_id="call_a", name="read_file")]),
            chunk(tool_calls=[tool_fragment(0, '{"pa')]),
            chunk(tool_calls=[tool_fragment(1, "", call_id="call_b", name="grep")]),
            chunk(tool_calls=[tool_fragment(1, '{"pattern": ')]),
            chunk(tool_calls=[tool_fragment(0, 'th": "a.py"}')]),
            chunk(tool_calls=[tool_fragment(1, '"TODO", "n": 3}')]),
            chunk(finish="tool_calls"),
            usage_chunk(50, 20),
        )
    )
    events = await run(make_model(http_server), ask())

    ready = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert ready == [
        ToolUseBlock("call_a", "read_file", {"path": "a.py"}),
        ToolUseBlock("call_b", "grep", {"pattern": "TODO", "n": 3}),
    ]
    response = final(events)
    assert response.stop_reason == "tool_calls"
    assert response.message.text == "Let me look."
    assert response.message.tool_uses == ready
    # the tool calls are announced only after the stream has ended, right before the response
    assert [type(e) for e in events[-3:]] == [ToolCallReady, ToolCallReady, ModelResponse]


async def test_invalid_and_empty_arguments_and_missing_id(http_server: LocalServer) -> None:
    http_server.queue(
        sse(
            chunk(tool_calls=[tool_fragment(0, "", call_id="call_x", name="broken")]),
            chunk(tool_calls=[tool_fragment(0, '{"path": "a.py"')]),  # truncated JSON
            chunk(tool_calls=[tool_fragment(1, "", call_id="call_y", name="no_args")]),
            chunk(tool_calls=[tool_fragment(2, "[1, 2]", name="not_object")]),  # no id sent
            chunk(finish="tool_calls"),
        )
    )
    calls = final(await run(make_model(http_server), ask())).message.tool_uses

    assert calls[0].input == {INVALID_ARGUMENTS_KEY: '{"path": "a.py"'}
    assert calls[1].input == {}
    assert calls[2].input == {INVALID_ARGUMENTS_KEY: "[1, 2]"}
    assert calls[2].id.startswith("call_") and len(calls[2].id) > len("call_")


async def test_reasoning_content_becomes_thinking(http_server: LocalServer) -> None:
    http_server.queue(
        sse(
            chunk(role="assistant", reasoning="First, "),
            chunk(reasoning="think."),
            chunk(content="Answer."),
            chunk(finish="stop"),
        )
    )
    events = await run(make_model(http_server), ask())

    assert [e.thinking for e in events if isinstance(e, ThinkingDelta)] == ["First, ", "think."]
    message = final(events).message
    assert message.thinking == "First, think."
    assert message.text == "Answer."
    assert [b.type for b in message.content] == ["thinking", "text"]


async def test_request_body_shape(http_server: LocalServer) -> None:
    http_server.queue(sse(chunk(content="done"), chunk(finish="stop")))
    history = (
        Msg.system("You are terse."),
        Msg.user("Read a.py"),
        Msg.assistant(
            [
                TextBlock("Reading."),
                ToolUseBlock("call_1", "read_file", {"path": "a.py"}),
            ]
        ),
        Msg.tool_result("call_1", "print('hi')", name="read_file"),
        Msg.user(
            [
                TextBlock("And these?"),
                ImageBlock(url="https://example.com/x.png"),
                ImageBlock(data="AAAA", media_type="image/png"),
            ]
        ),
    )
    tool = ToolSchema(
        "read_file",
        "Read a file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    model = make_model(http_server, temperature=0.2, extra_body={"top_k": 20})
    await run(model, ModelRequest(messages=history, tools=(tool,), max_output_tokens=256))

    body = http_server.requests[0].json()
    assert body["model"] == MODEL
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Read a.py"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And these?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
    ]
    assert body["tools"] == [{"type": "function", "function": tool.to_dict()}]
    assert body["max_tokens"] == 256  # custom base_url -> the widely supported name
    assert "max_completion_tokens" not in body
    assert body["temperature"] == 0.2
    assert body["top_k"] == 20


async def test_thinking_not_sent_and_tool_only_assistant_has_null_content(
    http_server: LocalServer,
) -> None:
    http_server.queue(sse(chunk(content="ok"), chunk(finish="stop")))
    from harnessed.messages import ThinkingBlock

    history = (
        Msg.user("go"),
        Msg.assistant([ThinkingBlock("hmm"), ToolUseBlock("c1", "ls", {})]),
        Msg.tool_result("c1", "a.py"),
    )
    await run(make_model(http_server, max_output_tokens=99), ModelRequest(messages=history))

    body = http_server.requests[0].json()
    assistant = body["messages"][1]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["function"] == {"name": "ls", "arguments": "{}"}
    assert "hmm" not in json.dumps(body)
    assert body["max_tokens"] == 99
    assert "tools" not in body and "temperature" not in body


async def test_max_tokens_param_can_be_chosen(http_server: LocalServer) -> None:
    http_server.queue(sse(chunk(content="ok"), chunk(finish="stop")))
    model = make_model(http_server, max_tokens_param="max_completion_tokens")
    await run(model, ask(max_output_tokens=64))

    body = http_server.requests[0].json()
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body


async def test_context_overflow_is_typed_and_not_retried(http_server: LocalServer) -> None:
    http_server.queue(
        error_reply(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. Please reduce the length of the messages.",
            "context_length_exceeded",
        )
    )
    with pytest.raises(ContextOverflowError) as info:
        await run(make_model(http_server), ask())

    assert info.value.status_code == 400
    assert info.value.provider == "openai"
    assert "maximum context length is 8192" in info.value.message
    assert "context_length_exceeded" in info.value.message
    assert len(http_server.requests) == 1


async def test_overflow_detected_from_error_code_alone(http_server: LocalServer) -> None:
    http_server.queue(error_reply(400, "Request rejected.", "context_length_exceeded"))
    with pytest.raises(ContextOverflowError):
        await run(make_model(http_server), ask())


async def test_rate_limit_is_retried_then_succeeds(http_server: LocalServer) -> None:
    http_server.queue(
        error_reply(429, "Rate limit reached.", "rate_limit_exceeded", **{"Retry-After": "0"}),
        sse(chunk(content="fine"), chunk(finish="stop")),
    )
    events = await run(make_model(http_server), ask())

    assert final(events).message.text == "fine"
    assert len(http_server.requests) == 2


async def test_rate_limit_error_carries_retry_after(http_server: LocalServer) -> None:
    http_server.queue(error_reply(429, "Slow down.", None, **{"Retry-After": "7"}))
    model = make_model(http_server, retry=RetryPolicy(max_attempts=1))
    with pytest.raises(RateLimitError) as info:
        await run(model, ask())

    assert info.value.retry_after == 7.0
    assert info.value.status_code == 429


async def test_server_error_retried_until_attempts_run_out(http_server: LocalServer) -> None:
    for _ in range(3):
        http_server.queue(Reply(500, {"error": {"message": "The server had an error."}}))
    with pytest.raises(ModelError) as info:
        await run(make_model(http_server), ask())

    assert type(info.value) is ModelError
    assert info.value.status_code == 500
    assert info.value.retryable
    assert "The server had an error." in info.value.message
    assert len(http_server.requests) == 3


async def test_error_event_inside_stream_is_mapped(http_server: LocalServer) -> None:
    bad = Reply(sse=['data: {"error": {"message": "overloaded", "code": "server_busy"}}\n\n'])
    http_server.queue(bad)
    model = make_model(http_server, retry=RetryPolicy(max_attempts=1))
    with pytest.raises(ModelError) as info:
        await run(model, ask())

    assert "overloaded" in info.value.message
    assert "server_busy" in info.value.message
    assert info.value.__class__.__module__.startswith("harnessed.")


async def test_connection_failure_is_retryable_model_error() -> None:
    model = OpenAIChatModel(
        MODEL,
        api_key="k",
        base_url="http://127.0.0.1:9/v1",  # discard port: nothing listens there
        retry=RetryPolicy(max_attempts=1),
        timeout=2.0,
    )
    with pytest.raises(ModelError) as info:
        await run(model, ask())

    assert info.value.retryable
    assert info.value.status_code is None


async def test_env_vars_are_picked_up(
    http_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    http_server.queue(sse(chunk(content="ok"), chunk(finish="stop")))
    model = OpenAIChatModel(MODEL, retry=FAST_RETRY)
    assert model.base_url == http_server.url + "/v1"
    await run(model, ask())

    headers = {k.lower(): v for k, v in http_server.requests[0].headers.items()}
    assert headers["authorization"] == "Bearer sk-from-env"


async def test_local_server_needs_no_key(
    http_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    http_server.queue(sse(chunk(content="ok"), chunk(finish="stop")))
    model = OpenAIChatModel(MODEL, base_url=http_server.url + "/v1", retry=FAST_RETRY)
    assert final(await run(model, ask())).message.text == "ok"


def test_missing_key_without_base_url_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIChatModel(MODEL)


def test_official_endpoint_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIChatModel("gpt-4o", api_key="sk-x", max_output_tokens=1000)
    assert model.max_tokens_param == "max_completion_tokens"
    assert model.name == "gpt-4o"
    assert model.context_window == 128_000
    assert model.max_output_tokens == 1000
    assert isinstance(model, Model)
    params = model.build_params(ask())
    assert params["max_completion_tokens"] == 1000


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"context_window": 0}, "context_window"),
        ({"max_output_tokens": -5}, "max_output_tokens"),
        ({"timeout": 0}, "timeout"),
        ({"max_tokens_param": "max_output"}, "max_tokens_param"),
    ],
)
def test_invalid_arguments_are_rejected(kwargs: dict[str, Any], argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        OpenAIChatModel(MODEL, api_key="k", **kwargs)


def test_empty_model_name_rejected() -> None:
    with pytest.raises(ValueError, match="model"):
        OpenAIChatModel("  ", api_key="k")


def test_unknown_model_has_no_context_window() -> None:
    model = OpenAIChatModel("my-local-llama", api_key="k", base_url="http://localhost:1/v1")
    assert model.context_window is None
    assert OpenAIChatModel("x", api_key="k", context_window=4096).context_window == 4096


async def test_collect_returns_final_response(http_server: LocalServer) -> None:
    http_server.queue(sse(chunk(content="a"), chunk(content="b"), chunk(finish="stop")))
    model = make_model(http_server)
    try:
        response = await collect(model, ask())
    finally:
        await model.aclose()
    assert response.message.text == "ab"


def test_sdk_is_not_imported_with_harnessed() -> None:
    import subprocess

    code = "import sys, harnessed.models, harnessed.models.openai; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_tool_calls_without_index_are_split_by_id(http_server: LocalServer) -> None:
    def whole(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    http_server.queue(
        sse(
            chunk(tool_calls=[whole("c1", "ls", '{"dir": "."}')]),
            chunk(tool_calls=[whole("c2", "cat", '{"path": "x"}')]),
            chunk(finish="tool_calls"),
        )
    )
    calls = final(await run(make_model(http_server), ask())).message.tool_uses
    assert [(c.id, c.name, dict(c.input)) for c in calls] == [
        ("c1", "ls", {"dir": "."}),
        ("c2", "cat", {"path": "x"}),
    ]


async def test_injected_client_is_used_and_left_open(http_server: LocalServer) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key="sk-injected", base_url=http_server.url + "/v1")
    http_server.queue(Reply(503, {"error": {"message": "busy"}}))
    model = OpenAIChatModel(MODEL, client=client, retry=RetryPolicy(max_attempts=1))
    assert model.max_tokens_param == "max_tokens"
    with pytest.raises(ModelError):
        await run(model, ask())

    assert len(http_server.requests) == 1  # the SDK's own retries are off for the copy

    assert not client.is_closed()
    await client.close()
    headers = {k.lower(): v for k, v in http_server.requests[0].headers.items()}
    assert headers["authorization"] == "Bearer sk-injected"
