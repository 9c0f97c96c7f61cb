"""The task list's state: :class:`TodoItem` and the ``todos`` section of the agent state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from harnessed.state.sections import StateSection

__all__ = ["TODOS", "TodoItem", "TodoStatus"]

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


def _decode(data: Any) -> tuple[TodoItem, ...]:
    if not isinstance(data, list):
        raise ValueError(f"the todos section must be a list, got {type(data).__name__}")
    return tuple(TodoItem.from_dict(item) for item in data)


def _encode(items: Sequence[TodoItem]) -> list[dict[str, Any]] | None:
    return [item.to_dict() for item in items] or None


TODOS: StateSection[tuple[TodoItem, ...]] = StateSection(
    "todos", decode=_decode, encode=_encode, default=tuple
)
"""The session's task list, in order (empty: no section stored)."""
