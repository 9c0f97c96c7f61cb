"""Shared pieces of the gateway tests: an agent with a scripted model, SSE parsing, a real
uvicorn server on a free port."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harnessed import HarnessAgent, tool
from harnessed.gateway import BearerAuth, Gateway, create_app
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from tests.support.fixtures import free_socket

TOKENS = {"alice-token-123": "alice", "bob-token-4567": "bob"}
ALICE = {"Authorization": "Bearer alice-token-123"}
BOB = {"Authorization": "Bearer bob-token-4567"}


class Tools:
    """``deploy`` needs approval (not read-only); ``wait_here`` blocks until released."""

    def __init__(self) -> None:
        self.deployed: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()

        @tool
        async def deploy(target: str) -> str:
            """Deploy to a target."""
            self.deployed.append(target)
            return f"deployed to {target}"

        @tool(read_only=True)
        async def wait_here(label: str) -> str:
            """Wait until released."""
            self.started.set()
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            return f"waited {label}"

        self.all = [deploy, wait_here]


def respond(request: ModelRequest) -> ScriptedResponse:
    """Scripted behaviour by the last user text: 'deploy X' asks to deploy, 'wait' blocks in a
    tool, anything else is echoed; after a tool result the model sums up."""
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"Finished: {last.text}")
    text = last.text
    if text.startswith("deploy "):
        return ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": text[7:]})])
    if text.startswith("wait"):
        return ScriptedResponse(tool_calls=[ScriptedToolCall("wait_here", {"label": text})])
    return ScriptedResponse(text=f"You said: {text}. Streaming this reply in pieces.")


def make_agent(workspace: Path, tools: Tools, name: str = "helper", **kw: Any) -> HarnessAgent:
    kw.setdefault("permission_mode", "default")
    return HarnessAgent(
        name,
        ScriptedModel(responder=respond, chunk_size=6, **kw.pop("model_kw", {})),
        workspace=workspace,
        tools=tools.all,
        shell=False,
        memory=False,
        **kw,
    )


def make_app(*agents: HarnessAgent, **kw: Any) -> Any:
    return create_app(Gateway(list(agents)), BearerAuth(TOKENS), **kw)


def sse(body: str) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of each frame of an SSE body (comments skipped)."""
    frames = []
    for chunk in body.split("\n\n"):
        event, data = "message", []
        for line in chunk.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            frames.append((event, json.loads("\n".join(data))))
    return frames


@contextmanager
def uvicorn_server(app: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn in a thread on a free port; yields its base URL."""
    import uvicorn

    sock = free_socket()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            threading.Event().wait(0.01)
        else:
            raise RuntimeError("uvicorn did not start")
        host, port = sock.getsockname()
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def require_external(what: str, available: bool, reason: str) -> None:
    """Skip on a laptop without ``what``; fail in CI, where it must be present."""
    if available:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} is required in CI: {reason}")
    pytest.skip(f"{what} not available: {reason}")


def http_scope(
    path: str,
    headers: list[tuple[bytes, bytes]],
    *,
    method: str = "POST",
    query: bytes = b"",
) -> dict[str, Any]:
    """The ASGI scope of an HTTP request (for tests that drive the app by hand)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
