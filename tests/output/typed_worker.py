"""A process whose typed call hangs in a tool until it is killed (used by test_resume.py).

usage: python -m tests.output.typed_worker WORKSPACE
Prints "started" once the tool runs.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pydantic

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.sessions import FileTurnGate

CTX = RuntimeContext("u", "typed")


class Report(pydantic.BaseModel):
    files: int
    summary: str


@tool
async def scan(path: str) -> str:
    """Scan a directory."""
    print("started", flush=True)
    await asyncio.sleep(3600)
    return "never"


def typed_agent(workspace: str, model: ScriptedModel) -> HarnessAgent:
    agent = HarnessAgent(
        "typed",
        model,
        workspace=workspace,
        tools=[scan],
        shell=False,
        memory=False,
        output_type=Report,
    )
    agent.turn_gate = FileTurnGate(Path(workspace) / ".harnessed" / "turns", lease_seconds=1.0)
    return agent


async def main(workspace: str) -> None:
    model = ScriptedModel([ScriptedResponse(tool_calls=[ScriptedToolCall("scan", {"path": "."})])])
    await typed_agent(workspace, model).call("scan the repo", CTX)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
