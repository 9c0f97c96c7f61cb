"""Window discovery: servers that tell their window (vLLM, llama.cpp, Ollama) are asked once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import discovery
from harnessed.models.discovery import DISCOVERY_DEADLINE, ask_window
from harnessed.models.openai import OpenAIChatModel
from tests.models.test_event_loops import openai_reply
from tests.support.http_server import LocalServer, Recorded, Reply


@pytest.fixture(autouse=True)
def fresh_answers() -> None:
    """Answers are cached per server address for the process, and a test server's port may
    be one an earlier test's server had: every test starts without them."""
    discovery._CACHE.clear()


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


async def test_a_server_that_hangs_holds_discovery_up_for_one_deadline_only() -> None:
    """Three probes against a server that accepts and never answers take one deadline, not
    three timeouts (the probes run at once)."""
    held: list[asyncio.StreamWriter] = []

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # read the request, never answer, keep the connection open
        await reader.read(65536)

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        window = await asyncio.wait_for(
            ask_window(f"http://127.0.0.1:{port}/v1", "hung", timeout=10),
            timeout=DISCOVERY_DEADLINE + 5,  # one probe after another would take 3 x 10 s
        )
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()
    assert window is None
    assert len(held) == 3  # all three questions were asked, concurrently


async def test_concurrent_probes_prefer_vllm_over_the_others(tmp_path) -> None:
    def every_route(request: Recorded) -> Reply | None:
        answers = {path: body for _, path, body in (VLLM, LLAMA_CPP, OLLAMA_NUM_CTX)}
        return Reply(200, answers[request.path]) if request.path in answers else None

    server = LocalServer(handler=every_route).start()
    try:
        assert await ask_window(f"{server.url}/v1", "m") == 8192
    finally:
        server.stop()
