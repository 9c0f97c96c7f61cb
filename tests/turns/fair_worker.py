"""A process calling ``agent.call`` on one session again and again, as fast as it can (used by
test_fairness.py and tests/stores/test_fairness.py).

usage: python -m tests.turns.fair_worker WHERE LABEL OTHER CALLS EVENTS
    WHERE: a workspace (the default lease files), or postgres:URL|SCHEMA

Each call's tool writes ``turn`` to ``EVENTS/LABEL`` and then holds the turn until the other
worker waits for the session (the last word in ``EVENTS/OTHER`` is ``wait``) or has finished
(``done``), so every turn ends with the other worker waiting. This worker writes ``wait``
each time it waits between two attempts at the lease, and ``done`` after its last call.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel

CTX = RuntimeContext("u", "fair")


def reply(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ScriptedResponse(tool_calls=[ScriptedToolCall("work", {"text": last.text})])
    return ScriptedResponse(text=f"done: {last.text}")


def write(path: Path, word: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{word}\n".encode())
    finally:
        os.close(fd)


def last_word(path: Path) -> str | None:
    try:
        words = path.read_text().split()
    except FileNotFoundError:
        return None
    return words[-1] if words else None


def make_agent(where: str) -> HarnessAgent:
    model = ScriptedModel(responder=reply)
    if where.startswith("postgres:"):
        from harnessed.stores.postgres import PostgresStore

        url, schema = where.removeprefix("postgres:").rsplit("|", 1)
        store = PostgresStore(url, schema=schema)
        agent = HarnessAgent("shared", model, tools=[work], store=store, memory=False)
        agent.turn_gate = store.turn_gate()
        return agent
    return HarnessAgent("shared", model, workspace=where, tools=[work], shell=False, memory=False)


MINE = Path()
OTHERS = Path()


@tool
async def work(text: str) -> str:
    """Hold the turn until the other worker waits for the session."""
    write(MINE, "turn")
    while last_word(OTHERS) not in ("wait", "done"):
        await asyncio.sleep(0.005)
    return f"handled {text}"


async def main(where: str, label: str, other: str, calls: int, events: Path) -> None:
    global MINE, OTHERS
    MINE, OTHERS = events / label, events / other
    agent = make_agent(where)
    waiting = agent.turn_gate._waiting  # type: ignore[attr-defined]
    until = waiting.until

    async def waits(session: str, deadline: float | None, attempt: int) -> bool:
        write(MINE, "wait")  # the lease was busy (or others are ahead): this worker waits
        return bool(await until(session, deadline, attempt))

    waiting.until = waits
    for i in range(calls):
        await agent.call(f"{label}-{i}", CTX)
    write(MINE, "done")
    await agent.close()


if __name__ == "__main__":
    where, label, other, calls, events = sys.argv[1:]
    asyncio.run(main(where, label, other, int(calls), Path(events)))
