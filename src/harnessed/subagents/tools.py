"""The model's tools for sub-agents: spawn, send, list, and the background task tools."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from harnessed.capabilities.base import CallContext
from harnessed.subagents.board import Running, wait_done
from harnessed.subagents.declarations import caller_ids
from harnessed.subagents.durable import task_runner
from harnessed.subagents.records import TaskRecord, TaskStatus, clean_label
from harnessed.subagents.texts import finished_text, started_text
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.toolset import Toolset, toolset_tool

if TYPE_CHECKING:
    from harnessed.subagents.spawning import Spawning

__all__ = ["MAX_TIMEOUT", "SubagentToolset", "subagent_tools"]

MAX_TIMEOUT = 600.0
"""The longest a tool waits for a sub-agent, in seconds."""
_LISTED = 50


def _timeout(value: float, name: str = "timeout_seconds") -> float:
    if not 0 <= value <= MAX_TIMEOUT:
        raise ToolError(f"{name} must be from 0 to {MAX_TIMEOUT:g} seconds, got {value:g}")
    return float(value)


def _call(context: ToolContext) -> CallContext:
    if context.call is None:
        raise ToolError("sub-agent tools run only inside an agent call")
    return context.call


def subagent_tools(cap: Spawning) -> list[Tool]:
    """The six tools of a :class:`SubagentToolset` bound to ``cap``."""
    return SubagentToolset(cap).tools()


class SubagentToolset(Toolset):
    """The six tools, bound to one :class:`~harnessed.subagents.Subagents` capability."""

    def __init__(self, cap: Spawning) -> None:
        self.cap = cap

    async def outcome(self, call: CallContext, running: Running, timeout: float) -> str:
        """Wait for a task started now; time out into the background."""
        assert running.task is not None
        task_id = running.record.task_id
        try:
            await wait_done(running, timeout)
        except asyncio.CancelledError:
            running.link.cancel("the parent agent's call was cancelled")
            running.task.cancel()
            raise
        book = self.cap.book(call.state)
        record = book.tasks[task_id]
        if running.outcome is None:
            promoted = dataclasses.replace(record, background=True)
            running.record = promoted
            book.put(promoted)
            self.cap.set_section(call.state, book.data())
            return started_text(promoted, timed_out=timeout)
        if record.ended:  # another tool of this step wrote it already
            book.mark_delivered([task_id])
            ended = book.tasks[task_id]
        else:
            ended = book.finish(record, running.outcome, delivered=True)
            self.cap.announce(call, ended, book)
        self.cap.set_section(call.state, book.data())
        if ended.status is not TaskStatus.COMPLETED:
            raise ToolError(
                f"sub-agent {ended.agent_key} {ended.status.value.lower()} "
                f"(task {task_id}): {ended.error}"
            )
        return finished_text(ended)

    @toolset_tool(name="agent_spawn", read_only=True, concurrency_safe=True)
    async def agent_spawn(
        self,
        context: ToolContext,
        agent_id: str,
        task: str,
        label: str | None = None,
        timeout_seconds: float = 30,
    ) -> str:
        """Give a task to a sub-agent, which works in its own session and reports back.

        You wait up to timeout_seconds for the answer; then (or at once with 0) it goes on in
        the background and you are told when it finishes. Spawns in one step run in parallel.

        Args:
            agent_id: e.g. "general-purpose".
            task: All it needs to know: it does not see your conversation.
            label: Names its session; spawn with it again (or agent_send) to continue there.
            timeout_seconds: 0-600.
        """
        call = _call(context)
        wait = _timeout(timeout_seconds)
        if not task.strip():
            raise ToolError("task must not be blank: say what the sub-agent should do")
        specs = await self.cap.declarations.all(*caller_ids(call))
        spec = specs.get(agent_id)
        if spec is None:
            known = ", ".join(sorted(specs)) or "none"
            raise ToolError(f"no sub-agent {agent_id!r}; available: {known}")
        book = self.cap.book(call.state)
        try:
            chosen = clean_label(label) if label is not None else book.next_label(spec.id)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        self.cap.set_section(call.state, book.data())
        running = await self.cap.start(call, spec, chosen, task, background=wait == 0)
        if wait == 0:
            return started_text(running.record)
        return await self.outcome(call, running, wait)

    @toolset_tool(name="agent_send", read_only=True, concurrency_safe=True)
    async def agent_send(
        self, context: ToolContext, agent: str, message: str, timeout_seconds: float = 30
    ) -> str:
        """Send a follow-up message to a sub-agent session you started before (it remembers
        its earlier work). Waits like agent_spawn; 0 = background.

        Args:
            agent: The session's agent_key ("reviewer:1") or just its label.
            message: What to tell or ask it.
            timeout_seconds: How long to wait for the answer, 0 to 600; 0 = background.
        """
        call = _call(context)
        wait = _timeout(timeout_seconds)
        if not message.strip():
            raise ToolError("message must not be blank")
        book = self.cap.book(call.state)
        keys = list(dict.fromkeys(r.agent_key for r in book.tasks.values()))
        if agent in keys:
            key = agent
        else:
            matches = [k for k in keys if k.split(":", 1)[1] == agent]
            if len(matches) != 1:
                why = "several sessions have this label" if matches else "no such session"
                raise ToolError(
                    f"cannot send to {agent!r}: {why}; sessions: {', '.join(keys) or 'none yet'}"
                )
            key = matches[0]
        last = book.last_of(key)
        assert last is not None
        spec = (await self.cap.declarations.all(*caller_ids(call))).get(last.agent_id)
        if spec is None:
            raise ToolError(f"the sub-agent {last.agent_id!r} is no longer declared")
        running = await self.cap.start(call, spec, last.label, message, background=wait == 0)
        if wait == 0:
            return started_text(running.record)
        return await self.outcome(call, running, wait)

    @toolset_tool(name="agent_list", read_only=True)
    async def agent_list(self, context: ToolContext) -> dict[str, Any]:
        """List the sub-agents you can spawn and the sub-agent sessions of this conversation."""
        call = _call(context)
        specs = await self.cap.declarations.all(*caller_ids(call))
        book = self.cap.book(call.state)
        sessions: dict[str, TaskRecord] = {}
        for record in book.tasks.values():
            sessions[record.agent_key] = record
        return {
            "agents": [
                {"id": s.id, "description": s.description} for s in specs.values() if not s.hidden
            ],
            "sessions": [
                {"agent_key": k, "last_task": r.task_id, "status": r.status.value}
                for k, r in sessions.items()
            ],
        }

    @toolset_tool(name="task_output", read_only=True, concurrency_safe=True)
    async def task_output(
        self, context: ToolContext, task_id: str, block: bool = False, timeout: float = 30
    ) -> dict[str, Any]:
        """The status and, once finished, the result of a background task.

        Args:
            task_id: The task's id (from agent_spawn, agent_send or task_list).
            block: Wait for the task to finish (up to timeout seconds).
            timeout: How long to wait with block, 0 to 600 seconds.
        """
        call = _call(context)
        wait = _timeout(timeout, "timeout")
        owner = (call.agent_name, call.user_id, call.session_id)
        book = self.cap.book(call.state)
        record = book.tasks.get(task_id)
        if record is None:
            raise ToolError(f"no task {task_id!r} in this conversation (see task_list)")
        running = self.cap.shared.board.get(task_id, owner)
        if not record.ended and block and running is not None:
            await wait_done(running, wait)
            book = self.cap.book(call.state)  # other tools of this step may have written meanwhile
        self.cap.apply_finished(book, owner, call)
        book.mark_delivered([task_id])
        self.cap.set_section(call.state, book.data())
        record = book.tasks[task_id]
        data = record.summary()
        if record.status is TaskStatus.COMPLETED:
            data["result"] = record.result
            if record.output is not None:
                data["output"] = record.output
        elif not record.ended:
            data["note"] = "still running; you are told when it finishes"
        return data

    @toolset_tool(name="task_cancel", read_only=True)
    async def task_cancel(self, context: ToolContext, task_id: str) -> str:
        """Stop a running task: its sub-agent ends at its next safe point (between steps).

        Args:
            task_id: The task to stop.
        """
        call = _call(context)
        owner = (call.agent_name, call.user_id, call.session_id)
        book = self.cap.book(call.state)
        record = book.tasks.get(task_id)
        if record is None:
            raise ToolError(f"no task {task_id!r} in this conversation (see task_list)")
        if record.ended:
            return f"Task {task_id} already ended ({record.status.value}); nothing to cancel."
        running = self.cap.shared.board.get(task_id, owner)
        runner = task_runner(self.cap.host)
        if running is None and runner is not None:  # the runtime runs it: stopped there
            await runner.cancel_task(*owner, task_id)
            book.put(record.moved(TaskStatus.CANCELLED, error="cancelled", delivered=True))
            self.cap.set_section(call.state, book.data())
            return f"Task {task_id} is stopped and marked cancelled."
        if running is None:
            book.put(record.moved(TaskStatus.CANCELLED, error="cancelled", delivered=True))
            self.cap.set_section(call.state, book.data())
            return f"Task {task_id} was not running in this process; it is marked cancelled."
        running.link.cancel("cancelled by the parent agent (task_cancel)")
        return (
            f"Cancelling task {task_id}: sub-agent {record.agent_key} stops at its next safe "
            "point; you are told when it has."
        )

    @toolset_tool(name="task_list", read_only=True)
    async def task_list(
        self, context: ToolContext, status: str | None = None
    ) -> list[dict[str, Any]]:
        """The sub-agent tasks of this conversation, newest first.

        Args:
            status: Only tasks in this status: PENDING, RUNNING, COMPLETED, FAILED or CANCELLED.
        """
        call = _call(context)
        wanted: TaskStatus | None = None
        if status is not None:
            try:
                wanted = TaskStatus(status.strip().upper())
            except ValueError:
                allowed = ", ".join(s.value for s in TaskStatus)
                raise ToolError(f"status must be one of {allowed}; got {status!r}") from None
        book = self.cap.book(call.state)
        owner = (call.agent_name, call.user_id, call.session_id)
        if self.cap.apply_finished(book, owner, call):
            self.cap.set_section(call.state, book.data())
        records = [r for r in reversed(book.tasks.values()) if wanted in (None, r.status)]
        return [r.summary() for r in records[:_LISTED]]
