"""Another process answers a question the model asked (used by test_processes.py).

usage: python -m tests.questions.answer_worker WORKSPACE REQUEST_ID ANSWER_JSON
Prints "answered", or the error's type and text.
"""

from __future__ import annotations

import asyncio
import json
import sys

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.questions import AskUser

CTX = RuntimeContext("u", "asked")


def asking_agent(workspace: str, model: ScriptedModel) -> HarnessAgent:
    return HarnessAgent(
        "asker", model, workspace=workspace, capabilities=[AskUser()], shell=False, memory=False
    )


async def main(workspace: str, request_id: str, answer: str) -> None:
    agent = asking_agent(workspace, ScriptedModel())
    try:
        pending = await agent.pending_confirmations(CTX)
        print("question:", pending[0].details["question"], flush=True)
        await agent.respond(CTX, request_id, True, answer=json.loads(answer))
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", flush=True)
    else:
        print("answered", flush=True)
    await agent.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
