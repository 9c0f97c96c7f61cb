"""Another process lists and answers a sub-agent's request forwarded to its parent's session
(used by test_nested_processes.py).

usage: python -m tests.subagents.nested_answer_worker WORKSPACE SESSION APPROVED [ANSWER_JSON]
Prints each waiting request as "SOURCE REQUEST_ID TOOL", then "answered", or the error's type
and text ("nothing waiting" when nothing is).
"""

from __future__ import annotations

import asyncio
import json
import sys

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel


def answering_agent(workspace: str) -> HarnessAgent:
    """The parent agent as a second process builds it: the same name and stores, nothing else."""
    return HarnessAgent("boss", ScriptedModel(), workspace=workspace, shell=False, memory=False)


async def main(workspace: str, session: str, approved: str, *answer: str) -> None:
    agent = answering_agent(workspace)
    try:
        print(await answer_first(agent, RuntimeContext("u", session), approved == "yes", answer))
    finally:
        await agent.close()


async def answer_first(
    agent: HarnessAgent, ctx: RuntimeContext, approved: bool, answer: tuple[str, ...]
) -> str:
    """List what waits and answer the first request; returns the lines to print."""
    pending = await agent.pending_confirmations(ctx)
    if not pending:
        return "nothing waiting"
    lines = [f"{r.details.get('source')} {r.request_id} {r.call.name}" for r in pending]
    given = {"answer": json.loads(answer[0])} if answer else {}
    try:
        await agent.respond(ctx, pending[0].request_id, approved, **given)
    except Exception as exc:
        lines.append(f"{type(exc).__name__}: {exc}")
    else:
        lines.append("answered")
    return "\n".join(lines)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
