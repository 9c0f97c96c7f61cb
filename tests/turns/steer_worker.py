"""A process running one slow session turn that another process steers and interrupts (used
by test_notes_processes.py and tests/stores/test_notes_processes.py).

usage: python -m tests.turns.steer_worker WORKSPACE  (or postgres:URL|SCHEMA)

Prints ``started`` once the model streams, ``steered MESSAGE_ID`` when the turn takes a
steering message, ``asked N`` (how many model requests included it) and the turn's end status
when it ends, then ``done``.
"""

from __future__ import annotations

import asyncio
import sys

from harnessed import HarnessAgent, RuntimeContext
from harnessed.events import CustomEvent, TextDeltaEvent
from tests.sessions.helpers import DrippingModel

CTX = RuntimeContext("u", "one")
SLOW = " ".join(f"w{i}" for i in range(40))  # 40 pieces, 0.05 s apart: 2 s
SLOWER = " ".join(f"v{i}" for i in range(1200))  # a minute: long enough to be interrupted


def make_agent(where: str, model: object) -> HarnessAgent:
    if where.startswith("postgres:"):
        from harnessed.stores.postgres import PostgresStore

        url, schema = where.removeprefix("postgres:").rsplit("|", 1)
        store = PostgresStore(url, schema=schema)
        agent = HarnessAgent("shared", model, store=store, memory=False)
        agent.turn_gate = store.turn_gate()
        return agent
    return HarnessAgent("shared", model, workspace=where, shell=False, memory=False)


async def main(where: str) -> None:
    model = DrippingModel([SLOW, SLOWER], gap=0.05)
    agent = make_agent(where, model)
    session = agent.session(CTX)
    turn = await session.submit("go")
    started = False
    steered: list[str] = []
    async for event in turn.events():
        if isinstance(event, TextDeltaEvent) and not started:
            started = True
            print("started", flush=True)
        elif isinstance(event, CustomEvent) and event.name == "steer":
            steered.append(str(event.data["message_id"]))
            print(f"steered {event.data['message_id']}", flush=True)
    end = await turn.result()
    asked = sum(any(m.id in steered for m in r.messages) for r in model.requests)
    print(f"asked {asked}", flush=True)
    print(end.status, flush=True)
    await session.wait_idle()
    await agent.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
