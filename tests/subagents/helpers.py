"""Scripted parents and children for the sub-agent tests.

A :class:`Router` answers each request by looking at who is asking (the system prompt names the
sub-agent) so that a parent and its sub-agents can share one model, as the built-in
``general-purpose`` sub-agent does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from harnessed import HarnessAgent, RuntimeContext
from harnessed.messages import Msg
from harnessed.models import ScriptedModel
from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedResponse, ScriptedToolCall
from harnessed.subagents import Subagents, SubagentSpec

Answer = Callable[[ModelRequest], Any]


def spawn(agent_id: str, task: str, **args: Any) -> ScriptedToolCall:
    return ScriptedToolCall("agent_spawn", {"agent_id": agent_id, "task": task, **args})


def calls(*tool_calls: ScriptedToolCall, text: str = "") -> ScriptedResponse:
    return ScriptedResponse(text, tool_calls=tool_calls)


def _said(m: Msg) -> bool:
    """A user message of the conversation (not the harness's state or context message)."""
    return m.role == "user" and not m.text.startswith(("<TASK_STATE>", "<RUNTIME_STATE>", "<"))


def last_user_text(request: ModelRequest) -> str:
    users = [m for m in request.messages if _said(m)]
    return users[-1].text if users else ""


def tool_results(request: ModelRequest) -> list[str]:
    out: list[str] = []
    for m in request.messages:
        if m.role == "tool":
            out.extend(b.content for b in m.tool_results)
    return out


def system_text(request: ModelRequest) -> str:
    return (
        request.messages[0].text
        if request.messages and request.messages[0].role == "system"
        else ""
    )


def child_model(
    reply: str | Callable[[ModelRequest], str],
    delay: float = 0.0,
    wait_for: Callable[[], Awaitable[object]] | None = None,
) -> ScriptedModel:
    """A sub-agent model that answers every task (after ``delay`` seconds, and once
    ``wait_for()`` has returned, when given)."""

    async def respond(request: ModelRequest) -> str:
        if delay:
            await asyncio.sleep(delay)
        if wait_for is not None:
            await asyncio.wait_for(wait_for(), timeout=120)
        return reply(request) if callable(reply) else reply

    return ScriptedModel(responder=respond, name="child")


def parent(
    model: ScriptedModel, *specs: SubagentSpec | HarnessAgent, workspace: Any = None, **kw: Any
) -> HarnessAgent:
    return HarnessAgent(
        "boss",
        model,
        sys_prompt="You lead.",
        workspace=workspace,
        capabilities=[Subagents(specs, **kw.pop("subagents", {}))],
        **kw,
    )


class Rendezvous:
    """Returns from :meth:`arrive` only once ``parties`` callers are inside at the same time:
    proof that they run concurrently, without measuring time."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.inside = 0
        self.all_in = asyncio.Event()

    async def arrive(self) -> None:
        self.inside += 1
        if self.inside >= self.parties:
            self.all_in.set()
        await self.all_in.wait()


async def wait_for_tasks(
    agent: HarnessAgent, ctx: RuntimeContext, count: int, status: str = "COMPLETED"
) -> None:
    """Wait until ``count`` of the session's task records have ``status`` (as saved): an event
    to wait for, not a time to sleep, so a loaded machine only makes the test slower."""
    deadline = asyncio.get_running_loop().time() + 120
    while True:
        tasks = await agent.capability(Subagents).tasks(ctx)
        if sum(t.status.value == status for t in tasks) >= count:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{count} task(s) {status} expected, have {tasks!r}")
        await asyncio.sleep(0.01)


def user_msgs(messages: list[Msg]) -> list[str]:
    return [m.text for m in messages if m.role == "user"]
