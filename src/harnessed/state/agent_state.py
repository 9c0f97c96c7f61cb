"""AgentState: what one agent is working with in one session.

The working ``history`` may be compacted; structured state (todos, plan mode, task contract,
permissions) lives in its own fields, is shown to the model as transient blocks and is never
summarized away. ``version`` is the storage version used by stores to detect a concurrent
writer; ``task_revision`` and ``history_revision`` count changes to the structured state and to
the history so request preparation can tell whether something changed underneath it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

from harnessed.contract.state import TaskContextState
from harnessed.messages import Msg
from harnessed.runtime import SessionRef

__all__ = ["AgentState", "PlanState", "TodoItem", "TodoStatus"]

TodoStatus: TypeAlias = Literal["pending", "in_progress", "completed"]
_TODO_STATUSES = frozenset(get_args(TodoStatus))


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One entry of the agent's task list."""

    id: str
    content: str
    status: TodoStatus = "pending"

    def __post_init__(self) -> None:
        if not self.content.strip():
            raise ValueError("todo content must not be blank")
        if self.status not in _TODO_STATUSES:
            raise ValueError(
                f"todo status must be one of {sorted(_TODO_STATUSES)}, got {self.status!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "content": self.content, "status": self.status}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TodoItem:
        return cls(str(data["id"]), str(data["content"]), data.get("status", "pending"))


@dataclass(frozen=True, slots=True)
class PlanState:
    """Plan mode: whether it is active and where the plan file lives."""

    active: bool = False
    plan_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"active": self.active, "plan_file": self.plan_file}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanState:
        return cls(bool(data.get("active", False)), data.get("plan_file"))


@dataclass(slots=True, weakref_slot=True)
class AgentState:
    """The working state of one (agent, user, session)."""

    agent_id: str
    user_id: str
    session_id: str
    history: list[Msg] = field(default_factory=list)
    todos: list[TodoItem] = field(default_factory=list)
    plan: PlanState = field(default_factory=PlanState)
    task: TaskContextState | None = None
    """The task contract (objective, requirements, verification results)."""
    permissions: dict[str, Any] = field(default_factory=dict)
    """Session-level permission mode and rules, as JSON-compatible data."""
    metadata: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    """Durable per-session data of capabilities (capability name → JSON-compatible data)."""
    version: int = 0
    """Storage version: 0 for a state never saved; stores bump it on every successful save."""
    task_revision: int = 0
    """Bumped on every change to todos, plan mode, task contract, permissions or sections."""
    history_revision: int = 0
    """Bumped on every change to ``history``."""
    log_seq: int = 0
    """The session log position (record ``seq``) the stored state was last saved at."""

    @property
    def key(self) -> SessionRef:
        return SessionRef(self.agent_id, self.user_id, self.session_id)

    @classmethod
    def new(cls, key: SessionRef) -> AgentState:
        return cls(key.agent_id, key.user_id, key.session_id)

    # -------------------------------------------------------------- changes
    def append(self, *messages: Msg) -> None:
        """Append messages to the working history."""
        self.history.extend(messages)
        self.history_revision += 1

    def replace_history(self, messages: list[Msg]) -> None:
        """Replace the whole working history (compaction, eviction)."""
        self.history = list(messages)
        self.history_revision += 1

    def set_todos(self, todos: list[TodoItem]) -> None:
        self.todos = list(todos)
        self.task_revision += 1

    def set_plan(self, plan: PlanState) -> None:
        self.plan = plan
        self.task_revision += 1

    def set_task(self, task: TaskContextState | Mapping[str, Any] | None) -> None:
        """Replace the task contract (a mapping is read with ``TaskContextState.from_dict``)."""
        if task is not None and not isinstance(task, TaskContextState):
            task = TaskContextState.from_dict(task)
        self.task = task
        self.task_revision += 1

    def set_permissions(self, permissions: dict[str, Any]) -> None:
        self.permissions = copy.deepcopy(permissions)
        self.task_revision += 1

    def set_section(self, name: str, data: Any) -> None:
        """Replace a capability's section (``None`` removes it); ``data`` must be JSON data."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"state section name must be a non-empty string, got {name!r}")
        if data is None:
            self.sections.pop(name, None)
        else:
            try:
                data = json.loads(json.dumps(data))
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"state section {name!r} must be JSON-serializable: {exc}"
                ) from None
            self.sections[name] = data
        self.task_revision += 1

    def copy(self) -> AgentState:
        """An independent copy (messages are immutable and shared)."""
        return AgentState(
            agent_id=self.agent_id,
            user_id=self.user_id,
            session_id=self.session_id,
            history=list(self.history),
            todos=list(self.todos),
            plan=self.plan,
            task=self.task,
            permissions=copy.deepcopy(self.permissions),
            metadata=copy.deepcopy(self.metadata),
            sections=copy.deepcopy(self.sections),
            version=self.version,
            task_revision=self.task_revision,
            history_revision=self.history_revision,
            log_seq=self.log_seq,
        )

    # -------------------------------------------------------- serialization
    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "version": self.version,
            "task_revision": self.task_revision,
            "history_revision": self.history_revision,
            "log_seq": self.log_seq,
            "history": [m.to_dict() for m in self.history],
            "todos": [t.to_dict() for t in self.todos],
            "plan": self.plan.to_dict(),
            "task": self.task.to_dict() if self.task is not None else None,
            "permissions": copy.deepcopy(self.permissions),
            "metadata": copy.deepcopy(self.metadata),
            "sections": copy.deepcopy(self.sections),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentState:
        metadata = dict(data.get("metadata") or {})
        raw_task = data.get("task")
        task: TaskContextState | None = None
        if isinstance(raw_task, Mapping) and "task_id" in raw_task:
            task = TaskContextState.from_dict(raw_task)
        elif isinstance(raw_task, Mapping) and raw_task:
            try:
                task = TaskContextState.from_dict(raw_task)
            except ValueError:
                # free-form task data from before the contract was typed, with nothing we can
                # read as an objective: kept, not dropped, for the application to migrate
                metadata["legacy_task"] = copy.deepcopy(dict(raw_task))
        try:
            return cls(
                agent_id=data["agent_id"],
                user_id=data["user_id"],
                session_id=data["session_id"],
                history=[Msg.from_dict(m) for m in data.get("history", [])],
                todos=[TodoItem.from_dict(t) for t in data.get("todos", [])],
                plan=PlanState.from_dict(data.get("plan") or {}),
                task=task,
                permissions=dict(data.get("permissions") or {}),
                metadata=metadata,
                sections=dict(data.get("sections") or {}),
                version=int(data.get("version", 0)),
                task_revision=int(data.get("task_revision", 0)),
                history_revision=int(data.get("history_revision", 0)),
                log_seq=int(data.get("log_seq", 0)),
            )
        except KeyError as exc:
            raise ValueError(f"agent state data is missing field {exc.args[0]!r}") from None
