"""A separate process submitting turns to one session (used by test_processes.py).

usage: python -m tests.turns.worker WORKSPACE LABEL TURNS [LEASE_SECONDS] [hang|interrupt|call]
Prints "started" once its first tool runs, "done" at the end. With "interrupt" the first turn's
tool hangs and the process interrupts the turn, then exits. With "call" the turns are plain
``agent.call`` calls, one after the other, instead of a session's submitted turns.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from harnessed.sessions import FileTurnGate


def reply(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ScriptedResponse(tool_calls=[ScriptedToolCall("slow", {"text": last.text})])
    return ScriptedResponse(text=f"done: {last.text}")


async def main(
    workspace: str,
    label: str,
    turns: int,
    lease: float,
    hang: bool,
    interrupt: bool = False,
    plain: bool = False,
) -> None:
    @tool
    async def slow(text: str) -> str:
        """Take a moment."""
        print("started", flush=True)
        await asyncio.sleep(3600 if hang or interrupt else 0.02)
        return f"handled {text}"

    agent = HarnessAgent(
        "shared",
        ScriptedModel(responder=reply),
        workspace=workspace,
        tools=[slow],
        shell=False,
        memory=False,
    )
    agent.turn_gate = FileTurnGate(Path(workspace) / ".harnessed" / "turns", lease_seconds=lease)
    if plain:
        for i in range(turns):
            await agent.call(f"{label}-{i}", RuntimeContext("u", "one"))
        print("done", flush=True)
        return
    session = agent.session(RuntimeContext("u", "one"))
    submitted = [await session.submit(f"{label}-{i}") for i in range(turns)]
    if interrupt:
        while session.running is None or session.running.status != "running":
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        session.interrupt()
        end = await submitted[0].result()
        print(end.status, flush=True)
    for turn in submitted:
        await turn.result()
    print("done", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(
        main(
            args[0],
            args[1],
            int(args[2]),
            float(args[3]) if len(args) > 3 else 30.0,
            len(args) > 4 and args[4] == "hang",
            len(args) > 4 and args[4] == "interrupt",
            len(args) > 4 and args[4] == "call",
        )
    )
