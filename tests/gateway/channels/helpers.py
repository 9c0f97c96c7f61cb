"""Shared pieces of the channel tests: servers run on free loopback ports inside the test's
own event loop (so the test waits on asyncio events), a fake platform that records what it is
sent, and agents whose model can be held."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harnessed import HarnessAgent
from harnessed.gateway import BearerAuth, Gateway, create_app
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from tests.gateway.helpers import TOKENS, Tools
from tests.support.fixtures import free_socket


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn in this event loop on a free port; yields its base URL."""
    sock = free_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the server stopped before it started")
            await asyncio.sleep(0.005)
        host, port = sock.getsockname()
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        sock.close()


class Recorder:
    """What a fake platform was sent: each call's path and JSON body, waitable."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._changed = asyncio.Condition()

    async def add(self, path: str, body: dict[str, Any]) -> None:
        async with self._changed:
            self.calls.append((path, body))
            self._changed.notify_all()

    async def wait_for(self, check: Callable[[list[tuple[str, dict[str, Any]]]], bool]) -> None:
        async with asyncio.timeout(60):  # a stuck test fails instead of hanging
            async with self._changed:
                await self._changed.wait_for(lambda: check(self.calls))

    def bodies(self, path_part: str = "") -> list[dict[str, Any]]:
        return [b for p, b in self.calls if path_part in p]


class Gate:
    """Holds the model while ``held`` words are in the request, until :meth:`open`."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.opened = asyncio.Event()

    def open(self) -> None:
        self.opened.set()


def responder(gate: Gate) -> Callable[[ModelRequest], Any]:
    """'slow ...' waits for the gate; 'deploy X' asks for approval; a tool result is summed
    up; anything else is echoed with the conversation's message count (so sessions show)."""

    async def respond(request: ModelRequest) -> ScriptedResponse:
        said = [m for m in request.messages if not (m.role == "user" and m.text.startswith("<"))]
        last = said[-1]
        if last.role == "tool":
            return ScriptedResponse(text=f"Finished: {last.text}")
        users = [m for m in request.messages if m.role == "user"]
        since = request.messages[
            max((i for i, m in enumerate(request.messages) if m.role == "assistant"), default=0) :
        ]
        news = [m for m in since if m.metadata.get("harness") == "subagent_tasks"]
        if news:
            told = news[-1].text.split("\n", 1)[-1]
            return ScriptedResponse(text="Your background work is done. " + told[:300])
        said_by_user = [m for m in users if not m.text.startswith("<")]
        text = said_by_user[-1].text if said_by_user else ""
        if text.startswith("slow"):
            gate.reached.set()
            await gate.opened.wait()
        if text.startswith("ship "):
            spawn = {"agent_id": "deployer", "task": text[5:], "timeout_seconds": 0}
            return ScriptedResponse(tool_calls=[ScriptedToolCall("agent_spawn", spawn)])
        if text.startswith("research "):
            spawn = {"agent_id": "researcher", "task": text[9:], "timeout_seconds": 0}
            return ScriptedResponse(tool_calls=[ScriptedToolCall("agent_spawn", spawn)])
        if text.startswith("deploy "):
            call = ScriptedToolCall("deploy", {"target": text[7:]})
            return ScriptedResponse(text="Deploying now.", tool_calls=[call])
        return ScriptedResponse(text=f"You said: {text} (message {len(said_by_user)} here)")

    return respond


def researcher(done: asyncio.Event) -> Any:
    """A sub-agent that finishes its task once ``done`` is set."""
    from harnessed.subagents import SubagentSpec

    async def answer(request: ModelRequest) -> str:
        await done.wait()
        return "Found three papers on the topic."

    return SubagentSpec(
        "researcher",
        "Researches a topic.",
        system_prompt="You research.",
        model=ScriptedModel(responder=answer, name="child"),
    )


def deployer(release: asyncio.Event) -> Any:
    """A sub-agent that wants to run ``deploy`` (which needs a person's approval), once
    ``release`` is set."""
    from harnessed.subagents import SubagentSpec

    async def answer(request: ModelRequest) -> ScriptedResponse:
        await release.wait()
        if request.messages[-1].role == "tool":
            return ScriptedResponse(text="done")
        return ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": "prod"})])

    return SubagentSpec(
        "deployer",
        "Deploys.",
        system_prompt="You deploy.",
        model=ScriptedModel(responder=answer, name="child"),
        on_approval="fail",  # the task ends needing a person, and the channel is told so
    )


def make_agent(workspace: Path, gate: Gate, tools: Tools, **kw: Any) -> HarnessAgent:
    kw.setdefault("permission_mode", "default")
    return HarnessAgent(
        "helper",
        ScriptedModel(responder=responder(gate), chunk_size=8),
        workspace=workspace,
        tools=tools.all,
        shell=False,
        memory=False,
        **kw,
    )


def gateway_app(gateway: Gateway, **kw: Any) -> Any:
    return create_app(gateway, BearerAuth(TOKENS), freeze_startup_objects=False, **kw)


def recording_app(recorder: Recorder, routes: list[Route]) -> Starlette:
    return Starlette(routes=routes)


async def json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {"_raw": raw.decode(errors="replace")}
    return data if isinstance(data, dict) else {"_value": data}


__all__ = [
    "Gate",
    "JSONResponse",
    "Recorder",
    "Response",
    "Route",
    "gateway_app",
    "json_body",
    "make_agent",
    "recording_app",
    "researcher",
    "deployer",
    "responder",
    "serving",
]
