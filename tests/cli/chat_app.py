"""An application module for the ``harnessed chat`` / ``serve`` tests: a scripted agent whose
workspace is $CHAT_TEST_WORKSPACE. 'slow …' starts a tool that takes a minute."""

from __future__ import annotations

import asyncio
import os

from harnessed import HarnessAgent, tool
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel


def respond(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"Finished after: {last.text[:40]}")
    if last.text.startswith("slow"):
        return ScriptedResponse(tool_calls=[ScriptedToolCall("slow_job", {"label": last.text})])
    return ScriptedResponse(text=f"You said: {last.text}")


@tool(read_only=True)
async def slow_job(label: str) -> str:
    """Take a minute."""
    await asyncio.sleep(60)
    return f"finished {label}"


def make_agent() -> HarnessAgent:
    return HarnessAgent(
        "chatty",
        ScriptedModel(responder=respond),
        workspace=os.environ["CHAT_TEST_WORKSPACE"],
        tools=[slow_job],
        shell=False,
        memory=False,
    )
