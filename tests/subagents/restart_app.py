"""The application of the restart test: run as a script it starts a background sub-agent task
whose second step hangs, so the test can kill the process while the task is running."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pydantic

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.models import ScriptedModel
from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedResponse, ScriptedToolCall
from harnessed.output import FINAL_TOOL
from harnessed.subagents import Subagents, SubagentSpec

CTX = RuntimeContext(user_id="u1", session_id="main")


class JobReport(pydantic.BaseModel):
    steps: int
    ok: bool


def build(
    workspace: Path,
    parent_script: list[object],
    *,
    hang: bool,
    declare: bool = True,
    typed: bool = False,
) -> HarnessAgent:
    marks = workspace / "marks"
    marks.mkdir(exist_ok=True)

    @tool(read_only=True)
    async def work(step: int) -> str:
        """Do one step of the job."""
        (marks / f"step-{step}-{os.getpid()}").write_text("started")
        if hang and step == 2:
            await asyncio.sleep(3600)
        return f"step {step} done"

    def respond(request: ModelRequest) -> str | ScriptedResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < 3:
            return ScriptedResponse(tool_calls=[ScriptedToolCall("work", {"step": done + 1})])
        if typed:  # the typed answer, through the final-answer tool
            report = {"steps": done, "ok": True}
            return ScriptedResponse(tool_calls=[ScriptedToolCall(FINAL_TOOL, report)])
        return f"job finished after {done} steps"

    specs = [
        SubagentSpec(
            "worker",
            "Does long jobs.",
            model=ScriptedModel(responder=respond),
            output_type=JobReport if typed else None,
        )
    ]
    return HarnessAgent(
        "boss",
        ScriptedModel(parent_script),  # type: ignore[arg-type]
        workspace=workspace,
        tools=[work],
        capabilities=[Subagents(specs if declare else [])],
    )


async def main(workspace: Path, typed: bool) -> None:
    start = ScriptedResponse(
        tool_calls=[
            ScriptedToolCall(
                "agent_spawn", {"agent_id": "worker", "task": "the long job", "timeout_seconds": 0}
            )
        ]
    )
    agent = build(workspace, [start, "Started the job."], hang=True, typed=typed)
    await agent.call("start the long job", CTX)
    (workspace / "marks" / "parent-done").write_text("the spawn step is committed")
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2:] == ["typed"]))
