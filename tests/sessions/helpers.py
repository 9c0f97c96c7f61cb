"""Models and tools that let tests stop a turn exactly where they want."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from harnessed import HarnessAgent, Msg, tool
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from harnessed.models.base import ModelEvent, ModelResponse, TextDelta, Usage
from harnessed.tools.base import Tool
from tests.support.fixtures import call


class DrippingModel:
    """Streams each scripted reply one word at a time, ``gap`` seconds apart (a slow
    provider); the pieces already sent are in ``sent``."""

    def __init__(self, replies: list[str], gap: float = 0.05, lead: float = 0.0) -> None:
        self.replies = list(replies)
        self.gap = gap
        self.lead = lead
        self.sent: list[str] = []
        self.requests: list[ModelRequest] = []
        self.closed = 0

    name = "dripping"
    context_window = None
    max_output_tokens = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        text = self.replies.pop(0)
        try:
            await asyncio.sleep(self.lead)
            for word in text.split(" "):
                piece = word + " "
                self.sent.append(piece)
                yield TextDelta(piece)
                await asyncio.sleep(self.gap)
            yield ModelResponse(
                message=Msg.assistant(text),
                usage=Usage(input_tokens=10, output_tokens=10),
                stop_reason="end_turn",
                model=self.name,
            )
        finally:
            self.closed += 1


class Blocker:
    """A ``wait_here`` tool that blocks until released; ``started`` is set when it runs."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = 0

        @tool
        async def wait_here(label: str) -> str:
            """Wait until the test releases the tool."""
            self.started.set()
            await self.release.wait()
            self.finished += 1
            return f"done {label}"

        self.tool: Tool = wait_here


def tool_step(name: str, id: str | None = None, **args: Any) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[call(name, id, **args)])


def texts(request: ModelRequest) -> list[str]:
    return [m.text for m in request.messages]


def make_agent(model: Any, workspace: Any = None, **kw: Any) -> HarnessAgent:
    kw.setdefault("memory", False)
    return HarnessAgent("helper", model, workspace=workspace, **kw)


__all__ = [
    "Blocker",
    "DrippingModel",
    "ScriptedModel",
    "call",
    "make_agent",
    "texts",
    "tool_step",
]
