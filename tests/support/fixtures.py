"""What the tests of several packages share: the usual caller, scripted tool calls, the events
of one call, and free loopback ports."""

from __future__ import annotations

import socket
from typing import Any

from harnessed import HarnessAgent, RuntimeContext
from harnessed.events import Event
from harnessed.models import ScriptedResponse, ScriptedToolCall

CTX = RuntimeContext("u", "s")
"""The caller of a test that needs one user and one session and does not care which."""


def call(name: str, id: str | None = None, **args: Any) -> ScriptedToolCall:
    """A scripted call of tool ``name`` with ``args`` (and the call id ``id``, if given)."""
    return ScriptedToolCall(name, args, id=id)


async def collect(
    agent: HarnessAgent, text: str | None, ctx: RuntimeContext | None = None
) -> list[Event]:
    """Every event of one ``stream_events`` call, in order."""
    return [e async for e in agent.stream_events(text, ctx)]


def free_socket() -> socket.socket:
    """A TCP socket bound to a free port of 127.0.0.1 (not listening yet)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def free_port() -> int:
    """A port of 127.0.0.1 that was free a moment ago (for a server started elsewhere)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def tool_step(tool_name: str, /, **arguments: Any) -> ScriptedResponse:
    """A scripted model step that calls one tool with ``arguments``."""
    return ScriptedResponse(tool_calls=[ScriptedToolCall(tool_name, arguments)])
