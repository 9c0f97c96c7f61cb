"""A process the crash tests start and kill: an agent working through a long session.

python -m tests.support.crash_worker <workspace> multi <seed>
    calls the agent again and again; every call makes tool steps (a tool that takes a few
    milliseconds) and ends with a text reply; one call in five fails at the model.
python -m tests.support.crash_worker <workspace> first-tool <marker>
    one call whose first tool call creates <marker> and then hangs.
python -m tests.support.crash_worker <workspace> once <text>
    one call with input <text> (a second process writing to the same session).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
from pathlib import Path

from harnessed import CompactionConfig, HarnessAgent, RuntimeContext, tool
from harnessed.models import ModelError, ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel

CTX = RuntimeContext("u", "crash")


def responder(seed: int) -> object:
    rng = random.Random(seed)

    def answer(request: ModelRequest) -> object:
        last = request.messages[-1] if request.messages else None
        text = last.text if last is not None else ""
        if "FAIL" in text and last is not None and last.role == "user":
            raise ModelError("provider down", provider="scripted")
        steps = sum(1 for m in request.messages if m.role == "tool")
        if rng.random() < 0.75 or steps == 0:
            calls = [
                ScriptedToolCall("work", {"n": rng.randint(1, 10**6)})
                for _ in range(rng.randint(1, 3))
            ]
            return ScriptedResponse(text="working", tool_calls=calls)
        return f"done after {steps} results"

    return answer


def agent_for(workspace: str, answer: object) -> HarnessAgent:
    @tool
    async def work(n: int) -> str:
        """Do some work."""
        await asyncio.sleep(random.random() * 0.01)
        return f"result {n} " + "x" * 200

    return HarnessAgent(
        "crash",
        ScriptedModel(responder=answer),  # type: ignore[arg-type]
        tools=[work],
        workspace=workspace,
        shell=False,
        memory=False,
        max_iters=6,
        compaction=CompactionConfig(trigger_messages=10**9),
    )


async def multi(workspace: str, seed: int) -> None:
    agent = agent_for(workspace, responder(seed))
    rng = random.Random(seed)
    for i in range(10_000):
        text = f"task {i}" + (" FAIL" if rng.random() < 0.2 else "")
        with contextlib.suppress(ModelError):  # a failed call: its input stays in the log
            await agent.call(text, CTX)


async def first_tool(workspace: str, marker: str) -> None:
    @tool
    async def slow(path: str) -> str:
        """Start a long job."""
        Path(marker).write_text("started")
        await asyncio.sleep(600)
        return "finished"

    model = ScriptedModel([ScriptedResponse(tool_calls=[ScriptedToolCall("slow", {"path": "x"})])])
    agent = HarnessAgent(
        "crash", model, tools=[slow], workspace=workspace, shell=False, memory=False
    )
    await agent.call("run the long job", CTX)


async def once(workspace: str, text: str) -> None:
    agent = HarnessAgent(
        "crash", ScriptedModel(["noted by the second process"]), workspace=workspace, memory=False
    )
    await agent.call(text, CTX)
    await agent.close()


def main() -> None:
    workspace, mode, arg = sys.argv[1:4]
    if mode == "multi":
        asyncio.run(multi(workspace, int(arg)))
    elif mode == "first-tool":
        asyncio.run(first_tool(workspace, arg))
    else:
        asyncio.run(once(workspace, arg))


if __name__ == "__main__":
    main()
