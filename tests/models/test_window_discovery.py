"""Window discovery: servers that tell their window (vLLM, llama.cpp, Ollama) are asked once."""

from __future__ import annotations

from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models.openai import OpenAIChatModel
from tests.models.test_event_loops import openai_reply
from tests.support.http_server import LocalServer, Recorded, Reply


class Teller:
    """Answers one discovery route with a body; every other discovery route is a 404."""

    def __init__(self, method: str, path: str, body: dict[str, Any]) -> None:
        self.route = (method, path)
        self.body = body

    def __call__(self, request: Recorded) -> Reply | None:
        if "/chat/completions" in request.path:
            return None  # the queue answers
        if (request.method, request.path) == self.route:
            return Reply(200, self.body)
        return Reply(404, {"error": "not found"})


VLLM = ("GET", "/v1/models", {"data": [{"id": "m", "max_model_len": 8192}]})
LLAMA_CPP = ("GET", "/props", {"default_generation_settings": {"n_ctx": 4096}})
OLLAMA_NUM_CTX = ("POST", "/api/show", {"parameters": "temperature 0.7\nnum_ctx 16384\n"})
OLLAMA_DEFAULT = ("POST", "/api/show", {"model_info": {"llama.context_length": 131072}})


@pytest.mark.parametrize(
    ("route", "window"),
    [(VLLM, 8192), (LLAMA_CPP, 4096), (OLLAMA_NUM_CTX, 16384), (OLLAMA_DEFAULT, 4096)],
    ids=["vllm", "llama.cpp", "ollama-num_ctx", "ollama-default"],
)
async def test_the_window_the_server_reports_is_used_and_named_in_the_manifest(
    tmp_path, route, window
):
    method, path, body = route
    server = LocalServer(handler=Teller(method, path, body)).start()
    server.queue(openai_reply("hello"))
    # A distinct base URL per case: answers are cached per server and model.
    model = OpenAIChatModel("m", base_url=f"{server.url}/v1")
    agent = HarnessAgent("a", model, workspace=tmp_path)
    ctx = RuntimeContext(user_id="u", session_id="s")
    try:
        assert model.context_window is None
        assert (await agent.call("hi", ctx)).text == "hello"
        manifest = agent.last_manifest(ctx)
    finally:
        await agent.close()
        server.stop()
    assert model.context_window == window
    assert model.context_window_source == "server"
    assert manifest is not None
    assert (manifest.context_window, manifest.window_source) == (window, "server")
    assert manifest.input_limit < window


async def test_the_server_is_asked_once_per_model_and_a_given_window_wins(tmp_path):
    server = LocalServer(handler=Teller(*VLLM)).start()
    try:
        first = OpenAIChatModel("m", base_url=f"{server.url}/v1")
        second = OpenAIChatModel("m", base_url=f"{server.url}/v1")
        assert await first.discover_context_window() == 8192
        assert await first.discover_context_window() == 8192
        assert await second.discover_context_window() == 8192
        asked = [r for r in server.requests if r.path == "/v1/models"]
        assert len(asked) == 1  # cached per server and model
        given = OpenAIChatModel("m", base_url=f"{server.url}/v1", context_window=2048)
        assert await given.discover_context_window() == 2048
        assert given.context_window_source == "given"
    finally:
        server.stop()


async def test_a_server_that_tells_nothing_leaves_the_window_unknown():
    server = LocalServer(handler=lambda r: Reply(404, {"error": "no"})).start()
    try:
        model = OpenAIChatModel("unknown-model", base_url=f"{server.url}/v1")
        assert await model.discover_context_window() is None
        assert model.context_window_source == "unknown"
    finally:
        server.stop()


def test_openais_own_api_is_never_asked():
    model = OpenAIChatModel("gpt-4o", api_key="sk-x")
    assert (model.context_window, model.context_window_source) == (128_000, "published")
