"""Another process lists and answers a sub-agent's request forwarded to its parent's session
(used by test_nested_processes.py).

usage: python -m tests.subagents.nested_answer_worker WORKSPACE SESSION APPROVED [ANSWER_JSON]
Prints each waiting request as "SOURCE REQUEST_ID TOOL", then "answered", or the error's type
and text.
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
    ctx = RuntimeContext("u", session)
    try:
        pending = await agent.pending_confirmations(ctx)
        for request in pending:
            print(request.details.get("source"), request.request_id, request.call.name, flush=True)
        given = {"answer": json.loads(answer[0])} if answer else {}
        await agent.respond(ctx, pending[0].request_id, approved == "yes", **given)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", flush=True)
    else:
        print("answered", flush=True)
    await agent.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
