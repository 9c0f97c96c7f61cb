"""Provider bodies that are not the wire format, and streams cut mid-answer, on both adapters.

A proxy's HTML page, a truncated or empty body, a wrong content type or a stream of garbage
events must each become a typed, retryable ModelError that names the HTTP status and the URL,
retried as the RetryPolicy says (the server counts the requests). A stream cut after part of
the answer was shown says it was cut, and is not asked again.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from harnessed.messages import Msg
from harnessed.models.anthropic import AnthropicModel
from harnessed.models.base import ModelRequest, TextDelta, collect
from harnessed.models.errors import ContextOverflowError, ModelError
from harnessed.models.openai import OpenAIChatModel
from harnessed.models.retry import RetryPolicy
from tests.support.http_server import LocalServer, Recorded, Reply

pytestmark = pytest.mark.asyncio

ATTEMPTS = 3
POLICY = RetryPolicy(max_attempts=ATTEMPTS, initial_delay=0, jitter=0)
HTML = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def openai_chunk(content: str | None = None, finish: str | None = None) -> str:
    delta = {} if content is None else {"content": content}
    body = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def anthropic_event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


ANTHROPIC_START = [
    anthropic_event(
        "message_start",
        message={
            "id": "msg",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 0},
        },
    ),
    anthropic_event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
]
ANTHROPIC_TEXT = anthropic_event(
    "content_block_delta", index=0, delta={"type": "text_delta", "text": "Half an answer"}
)

# What a broken provider sends in answer to a streamed request: (label, reply).
BOTH: list[tuple[str, Reply]] = [
    ("html page", Reply(200, HTML, headers={"Content-Type": "text/html"})),
    ("truncated json", Reply(200, '{"id": "x", "choices": [{"mess')),
    ("json of another shape", Reply(200, "[1, 2, 3]")),
    ("plain text", Reply(200, "upstream connect error", headers={"Content-Type": "text/plain"})),
    ("html inside an event stream", Reply(200, sse=["<html><body>oops</body></html>\n\n"])),
    ("event that is not json", Reply(200, sse=['data: {"choices": [{"ind\n\n'])),
    ("garbage lines", Reply(200, sse=["hello\nworld\n\n", "data: [DONE]\n\n"])),
]
OPENAI_ONLY: list[tuple[str, Reply]] = [
    ("chunk of the wrong shape", Reply(200, sse=['data: {"choices": 5}\n\n'])),
]
ANTHROPIC_ONLY: list[tuple[str, Reply]] = [
    ("empty body", Reply(200, b"")),
    ("empty event stream", Reply(200, sse=[])),
    ("named event that is not json", Reply(200, sse=["event: message_start\ndata: {bad\n\n"])),
    (
        "event of the wrong shape, read leniently, then no message_stop",
        Reply(200, sse=[anthropic_event("content_block_start", index=0, content_block=7)]),
    ),
]


def openai_model(server: LocalServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        "m",
        api_key="k",
        base_url=server.url + "/v1",
        timeout=10,
        retry=POLICY,
        context_window=10**5,
    )


def anthropic_model(server: LocalServer) -> AnthropicModel:
    return AnthropicModel("claude-x", api_key="k", base_url=server.url, timeout=10, retry=POLICY)


def always(reply: Reply) -> LocalServer:
    return LocalServer(handler=lambda request: reply if request.method == "POST" else None)


async def fail(model: OpenAIChatModel | AnthropicModel) -> ModelError:
    try:
        with pytest.raises(ModelError) as caught:
            await collect(model, ModelRequest(messages=(Msg.user("hi"),)))
    finally:
        await model.aclose()
    return caught.value


def assert_names_the_answer(error: ModelError, server: LocalServer, path: str) -> None:
    assert type(error) is ModelError and error.retryable
    assert error.status_code == 200
    assert "HTTP 200" in str(error)
    assert f"{server.url}{path}" in str(error)
    assert f"gave up after {ATTEMPTS} attempts" in str(error)


@pytest.mark.parametrize(
    ("label", "reply"), BOTH + OPENAI_ONLY, ids=lambda v: v if isinstance(v, str) else ""
)
async def test_openai_streamed_body_not_the_wire_format(label: str, reply: Reply) -> None:
    server = always(reply).start()
    try:
        error = await fail(openai_model(server))
    finally:
        server.stop()
    assert_names_the_answer(error, server, "/v1/chat/completions")
    # One request per attempt: a body that says something is not an empty stream, so it is
    # not asked again without streaming.
    assert len(server.requests) == ATTEMPTS, label
    if reply.body:
        assert str(reply.body)[:10] in str(error)  # the start of what was sent is quoted


@pytest.mark.parametrize(
    ("label", "reply"), BOTH + ANTHROPIC_ONLY, ids=lambda v: v if isinstance(v, str) else ""
)
async def test_anthropic_streamed_body_not_the_wire_format(label: str, reply: Reply) -> None:
    server = always(reply).start()
    try:
        error = await fail(anthropic_model(server))
    finally:
        server.stop()
    assert_names_the_answer(error, server, "/v1/messages")
    assert len(server.requests) == ATTEMPTS, label
    if reply.body:
        assert str(reply.body)[:10] in str(error)


UNSTREAMED: list[tuple[str, Reply]] = [
    ("empty body", Reply(200, b"")),
    ("html page", Reply(200, HTML, headers={"Content-Type": "text/html"})),
    ("truncated json", Reply(200, '{"id": "x", "choices": [{"mess')),
    ("json without choices", Reply(200, {"id": "x", "object": "chat.completion"})),
    ("choice of the wrong shape", Reply(200, {"choices": [5]})),
]


@pytest.mark.parametrize(
    ("label", "reply"), UNSTREAMED, ids=lambda v: v if isinstance(v, str) else ""
)
async def test_openai_unstreamed_fallback_body_not_the_wire_format(
    label: str, reply: Reply
) -> None:
    """The stream comes back empty, so the request is asked again without streaming (the
    llama.cpp rule), and that answer is broken too: two requests per attempt."""

    def serve(request: Recorded) -> Reply | None:
        if request.method != "POST":
            return None
        return Reply(200, sse=[]) if request.json().get("stream") else reply

    server = LocalServer(handler=serve).start()
    try:
        error = await fail(openai_model(server))
    finally:
        server.stop()
    assert_names_the_answer(error, server, "/v1/chat/completions")
    assert "without streaming" in str(error)
    streamed = [bool(r.json().get("stream")) for r in server.requests]
    assert streamed == [True, False] * ATTEMPTS, label


async def test_openai_server_that_ignores_stream_is_understood() -> None:
    """A gateway that drops ``stream: true`` answers with the whole completion as JSON."""
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "whole"}, "finish": "x"}
        ],
    }
    server = always(Reply(200, completion)).start()
    model = openai_model(server)
    try:
        response = await collect(model, ModelRequest(messages=(Msg.user("hi"),)))
    finally:
        await model.aclose()
        server.stop()
    assert response.message.text == "whole"
    assert len(server.requests) == 1


async def test_openai_json_error_in_a_200_is_the_error_it_states() -> None:
    said = {"error": {"message": "maximum context length is 4096 tokens", "type": "x"}}
    server = always(Reply(200, said)).start()
    try:
        error = await fail(openai_model(server))
    finally:
        server.stop()
    assert isinstance(error, ContextOverflowError)
    assert "HTTP 200" in str(error) and server.url in str(error)
    assert len(server.requests) == 1  # an overflow is not retried


async def test_anthropic_json_error_in_a_200_is_the_error_it_states() -> None:
    said = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = always(Reply(200, said)).start()
    try:
        error = await fail(anthropic_model(server))
    finally:
        server.stop()
    assert error.status_code == 529 and error.retryable
    assert "Overloaded" in str(error) and server.url in str(error)
    assert len(server.requests) == ATTEMPTS


async def test_status_error_with_an_html_page_names_url_and_status() -> None:
    for make, path in ((openai_model, "/v1/chat/completions"), (anthropic_model, "/v1/messages")):
        server = always(Reply(502, HTML, headers={"Content-Type": "text/html"})).start()
        try:
            error = await fail(make(server))  # type: ignore[operator]
        finally:
            server.stop()
        assert error.status_code == 502 and error.retryable
        assert f"HTTP 502 from POST {server.url}{path}" in str(error)
        assert len(server.requests) == ATTEMPTS


# ------------------------------------------------------------------------ cut streams


CUT_AFTER_TEXT = {
    "openai": Reply(sse=[openai_chunk("Half an answer")], cut=True),
    "anthropic": Reply(sse=[*ANTHROPIC_START, ANTHROPIC_TEXT], cut=True),
}
CUT_BEFORE_TEXT = {
    "openai": Reply(sse=[openai_chunk()], cut=True),
    "anthropic": Reply(sse=ANTHROPIC_START, cut=True),
}


def model_of(adapter: str, server: LocalServer) -> OpenAIChatModel | AnthropicModel:
    return openai_model(server) if adapter == "openai" else anthropic_model(server)


@pytest.mark.parametrize("adapter", ["openai", "anthropic"])
async def test_stream_cut_after_text_says_it_was_cut_and_is_not_repeated(adapter: str) -> None:
    server = always(CUT_AFTER_TEXT[adapter]).start()
    model = model_of(adapter, server)
    shown: list[str] = []
    try:
        with pytest.raises(ModelError) as caught:
            async for event in model.stream(ModelRequest(messages=(Msg.user("hi"),))):
                if isinstance(event, TextDelta):
                    shown.append(event.text)
    finally:
        await model.aclose()
        server.stop()
    message = str(caught.value)
    assert shown == ["Half an answer"]  # shown once: the request was not repeated
    assert len(server.requests) == 1
    assert "the stream was cut" in message and "could not reach" not in message
    assert f"after {len('Half an answer')} characters" in message
    assert "HTTP 200" in message and server.url in message


@pytest.mark.parametrize("adapter", ["openai", "anthropic"])
async def test_stream_cut_before_any_text_is_retried_and_says_so(adapter: str) -> None:
    server = always(CUT_BEFORE_TEXT[adapter]).start()
    try:
        error = await fail(model_of(adapter, server))
    finally:
        server.stop()
    assert error.retryable and "the stream was cut" in str(error)
    assert "could not reach" not in str(error)
    assert len(server.requests) == ATTEMPTS


# ------------------------------------------------------------------- silent servers


class SilentServer:
    """Reads each request, then (optionally after the start of a stream) says nothing."""

    def __init__(self, first_bytes: bytes = b"") -> None:
        self.first_bytes = first_bytes
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._idle: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> SilentServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        for writer in self._idle:
            writer.close()
        self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._idle.add(writer)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if b"length:" in line.lower()
            ),
            0,
        )
        await reader.readexactly(length)
        self.requests += 1
        if self.first_bytes:
            writer.write(self.first_bytes)
            await writer.drain()
        await reader.read()  # until the client gives up and closes


async def test_a_server_that_never_answers_is_not_called_unreachable() -> None:
    async with SilentServer() as server:
        model = OpenAIChatModel(
            "m", api_key="k", base_url=server.url + "/v1", timeout=0.5, retry=POLICY
        )
        error = await fail(model)
        assert server.requests == ATTEMPTS
    assert error.retryable and "took the request but sent no answer" in str(error)
    assert "could not reach" not in str(error)


async def test_a_stream_that_falls_silent_after_text_says_so() -> None:
    start = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        + openai_chunk("Half an answer").encode()
    )
    async with SilentServer(start) as server:
        model = OpenAIChatModel(
            "m", api_key="k", base_url=server.url + "/v1", timeout=0.5, retry=POLICY
        )
        error = await fail(model)
        assert server.requests == 1  # part of the answer was shown: not asked again
    assert "sent nothing for 0.5 s in the middle of the stream" in str(error)
    assert f"after {len('Half an answer')} characters" in str(error)
