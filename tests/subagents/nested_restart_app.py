"""The application of the nested-request restart test: run as a script, its background
sub-agent asks for approval (forwarded to the parent's session) and the process waits, so the
test can kill it while the request is open."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.subagents import Subagents, SubagentSpec
from tests.subagents.helpers import calls, spawn, tool_results

CTX = RuntimeContext("u", "restart")


def build(workspace: Path, parent_script: list[Any]) -> HarnessAgent:
    marks = workspace / "marks"
    marks.mkdir(exist_ok=True)

    @tool
    def deploy(name: str) -> str:
        """Deploy (changes things: needs approval)."""
        (marks / f"deployed-{name}").write_text("done")
        return f"deployed {name}"

    def child(request: ModelRequest) -> str | ScriptedResponse:
        results = tool_results(request)
        if results:
            return f"tool said: {results[-1]}"
        return ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"name": "web"})])

    spec = SubagentSpec("worker", "Deploys.", model=ScriptedModel(responder=child, name="child"))
    return HarnessAgent(
        "boss",
        ScriptedModel(parent_script),
        workspace=str(workspace),
        tools=[deploy],
        permission_mode="default",
        shell=False,
        memory=False,
        capabilities=[Subagents([spec])],
    )


async def main(workspace: Path) -> None:
    agent = build(workspace, [calls(spawn("worker", "deploy web", timeout_seconds=0)), "Started."])
    async for _ in agent.stream_events("deploy web in the background", CTX):
        pass
    while not (pending := await agent.pending_confirmations(CTX)):
        await asyncio.sleep(0.01)
    (workspace / "marks" / f"asked-{pending[0].request_id}").write_text("waiting")
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
