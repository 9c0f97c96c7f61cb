"""The task records of one parent session, as stored in its state, and the tasks running in
this process.

:class:`TaskBook` reads and writes the sub-agents capability's section of an
:class:`~harnessed.state.AgentState` (records in creation order, label counters, the tokens the
session's sub-agents used). :class:`Running` is one task in flight in this process; the
:class:`Board` holds them all (shared by a parent and its sub-agents), so a finished task can be
written to its parent's records at the next safe point.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harnessed.runtime import RuntimeContext
from harnessed.subagents.child import ChildOutcome, ChildRun
from harnessed.subagents.records import TaskRecord, TaskStatus

__all__ = ["Board", "Owner", "Running", "TaskBook"]

Owner = tuple[str, str, str]
"""A parent session: ``(agent name, user id, session id)``."""

KEEP_RECORDS = 500
"""Ended and delivered records beyond this many are dropped from the state (the session log
keeps their ``subagent/*`` records)."""


class TaskBook:
    """The sub-agent data of one session's state (a copy; :meth:`data` gives it back)."""

    def __init__(self, section: Any) -> None:
        # only read: records are rebuilt from plain values, the rest is copied below
        raw = section if isinstance(section, Mapping) else {}
        self.tasks: dict[str, TaskRecord] = {}
        for item in raw.get("tasks", []):
            record = TaskRecord.from_dict(item)
            self.tasks[record.task_id] = record
        self.labels: dict[str, int] = {str(k): int(v) for k, v in raw.get("labels", {}).items()}
        usage = raw.get("usage", {})
        self.input_tokens = int(usage.get("input_tokens", 0))
        self.output_tokens = int(usage.get("output_tokens", 0))

    def data(self) -> dict[str, Any]:
        records = list(self.tasks.values())
        if len(records) > KEEP_RECORDS:
            droppable = [r for r in records if r.ended and r.delivered]
            drop = {r.task_id for r in droppable[: len(records) - KEEP_RECORDS]}
            records = [r for r in records if r.task_id not in drop]
        return {
            "tasks": [r.to_dict() for r in records],
            "labels": dict(self.labels),
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        }

    def put(self, record: TaskRecord) -> None:
        self.tasks[record.task_id] = record

    def next_label(self, agent_id: str) -> str:
        n = self.labels.get(agent_id, 0) + 1
        self.labels[agent_id] = n
        return str(n)

    def busy(self, agent_key: str) -> TaskRecord | None:
        """The unfinished task of a sub-agent session, if any."""
        return next(
            (r for r in self.tasks.values() if r.agent_key == agent_key and not r.ended), None
        )

    def last_of(self, agent_key: str) -> TaskRecord | None:
        found = [r for r in self.tasks.values() if r.agent_key == agent_key]
        return found[-1] if found else None

    def undelivered(self) -> list[TaskRecord]:
        return [r for r in self.tasks.values() if r.ended and not r.delivered]

    def finish(self, record: TaskRecord, outcome: ChildOutcome, *, delivered: bool) -> TaskRecord:
        """Move ``record`` to the end ``outcome`` reached (counting its tokens once)."""
        ended = record.moved(
            TaskStatus(outcome.status),
            result=outcome.result,
            output=outcome.output,
            error=outcome.error,
            delivered=delivered,
        ).with_usage(outcome.input_tokens, outcome.output_tokens)
        self.input_tokens += outcome.input_tokens
        self.output_tokens += outcome.output_tokens
        self.put(ended)
        return ended

    def mark_delivered(self, task_ids: Iterator[str] | list[str]) -> bool:
        changed = False
        for task_id in task_ids:
            record = self.tasks.get(task_id)
            if record is not None and record.ended and not record.delivered:
                self.tasks[task_id] = _delivered(record)
                changed = True
        return changed


def _delivered(record: TaskRecord) -> TaskRecord:
    return dataclasses.replace(record, delivered=True)


@dataclass(slots=True)
class Running:
    """A task in flight in this process."""

    record: TaskRecord
    owner: Owner
    parent_ctx: RuntimeContext
    link: ChildRun
    task: asyncio.Task[ChildOutcome] | None = None
    outcome: ChildOutcome | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    approvals: str = "fail"
    """What its requests for approval become: ``forward`` (to the parent's stream), ``deny``
    or ``fail`` (see :attr:`SubagentSpec.on_approval`)."""
    abandoned: bool = False
    """The process is closing: the task is stopped without being marked ended (it is resumed
    from its log when the parent session is used again)."""


class Board:
    """Every task in flight in this process, by task id (shared by a parent and its
    sub-agents)."""

    def __init__(self) -> None:
        self.running: dict[str, Running] = {}
        self.persisting: set[asyncio.Task[Any]] = set()
        self.persisters: dict[Owner, asyncio.Task[Any]] = {}
        """One worker per parent session saving the outcomes of its finished tasks."""

    def of(self, owner: Owner) -> list[Running]:
        return [r for r in self.running.values() if r.owner == owner]

    def get(self, task_id: str, owner: Owner) -> Running | None:
        found = self.running.get(task_id)
        return found if found is not None and found.owner == owner else None


async def wait_done(running: Running, timeout: float | None) -> bool:
    """Wait up to ``timeout`` seconds for a task's outcome; whether it has one."""
    if running.outcome is not None:
        return True
    waiter = asyncio.ensure_future(running.done.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        if not waiter.done():
            waiter.cancel()
    return running.outcome is not None
