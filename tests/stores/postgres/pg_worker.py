"""An app server of the multi-process test: turns arrive on stdin, their ends go to stdout.

usage: python -m tests.stores.postgres.pg_worker URL SCHEMA LEASE_SECONDS

Each stdin line is ``SESSION TURN``; the worker submits the turn ``SESSION-TURN`` (its own
idempotency key) to the session and prints ``done SESSION-TURN`` when it ended — also when an
earlier, killed worker had run it already (then it only completes what was cut short).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.messages import Msg
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from harnessed.stores.postgres import PostgresStore

IDLE = "(nothing left to answer)"
"""A resumed turn whose input another turn answered meanwhile (harmless, answers nothing)."""


def answers(messages: list[Msg]) -> list[str]:
    """The inputs the assistant's replies answered (a reply answers each ``done: <input>``
    line; a turn may answer an input a killed server left unanswered)."""
    return [
        line.removeprefix("done: ")
        for m in messages
        if m.role == "assistant" and not m.tool_uses
        for line in m.text.splitlines()
        if line.startswith("done: ")
    ]


def reply(request: ModelRequest) -> ScriptedResponse:
    """Work on the oldest unanswered input, then answer every unanswered one."""
    messages = list(request.messages)
    answered = set(answers(messages))
    waiting = [m.text for m in messages if m.role == "user" and m.text not in answered]
    if not waiting:
        return ScriptedResponse(text=IDLE)
    last = messages[-1]
    if last.role == "tool" and any(not b.is_error for b in last.tool_results):
        return ScriptedResponse(text="\n".join(f"done: {text}" for text in waiting))
    return ScriptedResponse(tool_calls=[ScriptedToolCall("work", {"text": waiting[0]})])


@tool
async def work(text: str) -> str:
    """Take a moment over the input."""
    await asyncio.sleep(0.01)
    return f"worked on {text}"


async def handle(agent: HarnessAgent, session_id: str, text: str) -> None:
    ctx = RuntimeContext("u", session_id)
    session = agent.session(ctx)
    turn = await session.submit(text, idempotency_key=text)
    with contextlib.suppress(RuntimeError):  # a killed server began it and never ended it
        await turn.result()
    while text not in answers(await agent.session_messages(ctx)):
        await (await session.resume()).result()  # finish what was cut short
    print(f"done {text}", flush=True)


async def main(url: str, schema: str, lease: float) -> None:
    store = PostgresStore(url, schema=schema)
    agent = HarnessAgent(
        "app",
        ScriptedModel(responder=reply),
        tools=[work],
        memory=False,
        store=store,
    )
    agent.turn_gate = store.turn_gate(lease_seconds=lease)  # shorter leases: a quicker test
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks: set[asyncio.Task[None]] = set()
    print("ready", flush=True)
    while line := await reader.readline():
        session_id, index = line.decode().split()
        task = asyncio.create_task(handle(agent, session_id, f"{session_id}-{index}"))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    await agent.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
