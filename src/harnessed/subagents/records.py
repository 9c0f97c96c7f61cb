"""Task records: one per piece of work given to a sub-agent, kept with the parent's session.

A record moves ``PENDING → RUNNING → COMPLETED | FAILED | CANCELLED`` (or straight from
``PENDING`` to an end state); an ended record never changes again except for its ``delivered``
flag (the parent model has seen the outcome). Records are plain JSON in the parent's state
(the sub-agents capability's section), so they survive restarts and are never summarized.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from harnessed._internal.clock import now_iso

__all__ = ["TaskRecord", "TaskStatus", "child_session_id", "clean_label"]


class TaskStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def ended(self) -> bool:
        return self in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)


_NEXT: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.PENDING: frozenset(
        {TaskStatus.RUNNING, TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.COMPLETED}
    ),
    TaskStatus.RUNNING: frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}),
}
_LABEL = re.compile(r"[^a-z0-9_-]+")


def clean_label(label: str) -> str:
    """A label as used in session ids: lowercase letters, digits, ``_`` and ``-``."""
    cleaned = _LABEL.sub("-", label.strip().lower()).strip("-")[:48]
    if not cleaned:
        raise ValueError(f"label {label!r} has no letters or digits")
    return cleaned


def child_session_id(parent_session: str, agent_id: str, label: str) -> str:
    """The session of a sub-agent: derived from its parent's session, its id and its label,
    so that the same label continues the same conversation."""
    return f"{parent_session}:{agent_id}:{label}"


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task given to a sub-agent."""

    task_id: str
    agent_id: str
    label: str
    child_session: str
    task: str
    """What the sub-agent was asked (the spawn's task or the message sent)."""
    status: TaskStatus = TaskStatus.PENDING
    background: bool = False
    """Whether the outcome is delivered later (a background spawn, or a sync one that timed
    out) rather than returned as the tool's result."""
    depth: int = 1
    created_at: str = dataclasses.field(default_factory=now_iso)
    started_at: str | None = None
    finished_at: str | None = None
    result: str | None = None
    output: Any = None
    """A typed answer as JSON data (a sub-agent with an output type); ``result`` is its text."""
    error: str | None = None
    delivered: bool = False
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def agent_key(self) -> str:
        """How ``agent_send`` names the sub-agent session: ``<agent_id>:<label>``."""
        return f"{self.agent_id}:{self.label}"

    @property
    def ended(self) -> bool:
        return self.status.ended

    def moved(self, status: TaskStatus, **changes: Any) -> TaskRecord:
        """The record in its next status; an impossible move raises ``ValueError``."""
        if status not in _NEXT.get(self.status, frozenset()):
            raise ValueError(
                f"task {self.task_id} cannot go from {self.status.value} to {status.value}"
            )
        if status is TaskStatus.RUNNING:
            changes.setdefault("started_at", now_iso())
        if status.ended:
            changes.setdefault("finished_at", now_iso())
        return dataclasses.replace(self, status=status, **changes)

    def with_usage(self, input_tokens: int, output_tokens: int) -> TaskRecord:
        return dataclasses.replace(self, input_tokens=input_tokens, output_tokens=output_tokens)

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in _FIELDS}  # every value is plain data
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskRecord:
        values = {k: v for k, v in data.items() if k in _FIELD_SET}
        values["status"] = TaskStatus(values.get("status", "PENDING"))
        return cls(**values)

    def summary(self) -> dict[str, Any]:
        """What the task tools show the model."""
        data: dict[str, Any] = {
            "task_id": self.task_id,
            "agent_key": self.agent_key,
            "status": self.status.value,
            "task": _short(self.task, 200),
            "created_at": self.created_at,
        }
        if self.finished_at:
            data["finished_at"] = self.finished_at
        if self.error:
            data["error"] = self.error
        return data


_FIELDS = tuple(f.name for f in dataclasses.fields(TaskRecord))
_FIELD_SET = frozenset(_FIELDS)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
