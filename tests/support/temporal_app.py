"""The agent the Temporal tests' worker processes serve (``--agent
tests.support.temporal_app:agent``), configured by environment variables:

* ``HARNESSED_TEST_WORKSPACE``: the workspace directory the test and every worker share;
* ``HARNESSED_TEST_MARKS``: where the model and the tool leave what they did (files);
* ``HARNESSED_TEST_TEMPORAL`` / ``HARNESSED_TEST_QUEUE``: the runtime the test's agent uses.

The model answers from the request alone, so any worker gives the same answer. The user's
text says what the turn does: ``plain`` (a reply), ``tool KEY`` (one call of ``effect``, then
a reply), ``slow-model KEY`` (the first request of the turn hangs until its worker is killed;
the marker ``model-KEY`` holds the worker's pid), ``tool hang-KEY`` (the tool hangs after its
side effect until its worker is killed), ``tool wait-KEY`` (the tool waits for the file
``release-wait-KEY``), ``fail KEY`` (the model raises ``ValueError``), ``spawn KEY`` (starts
the sub-agent ``helper`` in the background on ``tool KEY``), ``wake KEY`` (asks to be woken
in two seconds with the note ``tool woke-KEY``; the woken turn does what its note says),
``cancel TASK`` (calls ``task_cancel``). Harness reminders and state blocks are not the
user's text.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from harnessed import HarnessAgent, tool
from harnessed.messages import ToolResultBlock
from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.subagents import Subagents, SubagentSpec
from harnessed.temporal import ActivityOptions, TemporalRuntime
from harnessed.wakeups import Wakeups

MARKS = Path(os.environ.get("HARNESSED_TEST_MARKS", "."))


def _mark(name: str, text: str, *, exclusive: bool = False) -> bool:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_APPEND)
    try:
        fd = os.open(MARKS / name, flags, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, text.encode() + b"\n")
    finally:
        os.close(fd)
    return True


async def respond(request: ModelRequest) -> str | ScriptedResponse:
    users = [
        i
        for i, m in enumerate(request.messages)
        if m.role == "user" and "harness" not in m.metadata and not m.text.startswith("<")
    ]
    last = users[-1]
    text = request.messages[last].text
    if text.startswith("[Wake-up"):
        text = text.splitlines()[-1]  # the note
    words = text.split()
    kind, key = words[0], (words[1] if len(words) > 1 else "")
    results = [
        b.content
        for m in request.messages[last + 1 :]
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    if kind == "slow-model" and _mark(f"model-{key}", str(os.getpid()), exclusive=True):
        await asyncio.sleep(3600)  # killed here
    if kind == "fail":
        raise ValueError(f"the model refuses {key}")
    if kind == "spawn" and not results:
        task = {"agent_id": "helper", "task": f"tool {key}", "timeout_seconds": 0}
        return ScriptedResponse(tool_calls=[ScriptedToolCall("agent_spawn", task)])
    if kind == "cancel" and not results:
        return ScriptedResponse(tool_calls=[ScriptedToolCall("task_cancel", {"task_id": key})])
    if kind == "wake" and not results:
        wake = {"note": f"tool woke-{key}", "after_seconds": 2}
        return ScriptedResponse(tool_calls=[ScriptedToolCall("schedule_wakeup", wake)])
    if kind == "tool" and not results:
        return ScriptedResponse(tool_calls=[ScriptedToolCall("effect", {"key": key})])
    if kind == "tools" and len(results) < 2:
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("effect", {"key": f"{key}-{len(results)}"})]
        )
    return f"done: {kind} {key} {' | '.join(results)}".strip()


@tool
async def effect(key: str) -> str:
    """Leave a side effect that must happen once.

    Args:
        key: Which effect.
    """
    _mark(f"effects-{key}", str(os.getpid()))
    if key.startswith("hang"):
        await asyncio.sleep(3600)  # killed or interrupted here
    while key.startswith("wait") and not (MARKS / f"release-{key}").exists():
        await asyncio.sleep(0.05)  # until the test releases it
    return f"effect {key} made"


def make_agent() -> HarnessAgent:
    target = os.environ.get("HARNESSED_TEST_TEMPORAL")
    runtime = (
        TemporalRuntime(
            target,
            task_queue=os.environ.get("HARNESSED_TEST_QUEUE", "harnessed-test"),
            activity_options=ActivityOptions(
                heartbeat_timeout=2.0, retry_initial=0.2, retry_max=1.0
            ),
            poll_interval=0.05,
        )
        if target
        else None
    )
    return HarnessAgent(
        "durable",
        ScriptedModel(responder=respond),
        tools=[effect],
        workspace=os.environ.get("HARNESSED_TEST_WORKSPACE"),
        file_tools=False,
        memory=False,
        runtime=runtime,
        capabilities=[
            Subagents(
                [SubagentSpec("helper", "Runs one tool call.", tools=("effect",))],
                general_purpose=False,
                workspace_files=False,
            ),
            Wakeups(),
        ],
    )


agent = make_agent
