"""Run commands through a real agent's ``execute`` tool (a scripted model asks for them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnessed import HarnessAgent, RuntimeContext, ToolResultEvent
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.sandbox import Sandbox
from harnessed.workspace import Workspace


def execute(command: str, timeout: float = 30) -> ScriptedResponse:
    return ScriptedResponse(
        tool_calls=[ScriptedToolCall("execute", {"command": command, "timeout": timeout})]
    )


async def run(
    workspace: str | Path | Workspace,
    sandbox: Sandbox,
    ctx: RuntimeContext,
    steps: Sequence[ScriptedResponse],
    **kwargs: Any,
) -> list[str]:
    """One call of a fresh agent that makes ``steps``; the tool results' texts."""
    agent = HarnessAgent(
        "bot",
        ScriptedModel([*steps, "done"]),
        workspace=workspace,
        shell=sandbox,
        max_iters=len(steps) + 1,
        memory=False,
        **kwargs,
    )
    try:
        return [
            e.result.content
            async for e in agent.stream_events("go", ctx)
            if isinstance(e, ToolResultEvent)
        ]
    finally:
        await agent.close()
