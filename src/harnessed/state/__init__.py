"""Agent state and the stores that keep it between calls and processes."""

from harnessed.state.agent_state import AgentState, PlanState, StateKey, TodoItem, TodoStatus
from harnessed.state.store import (
    AgentStateStore,
    InMemoryStateStore,
    JsonFileStateStore,
    StateConflictError,
    StateCorruptedError,
)

__all__ = [
    "AgentState",
    "AgentStateStore",
    "InMemoryStateStore",
    "JsonFileStateStore",
    "PlanState",
    "StateConflictError",
    "StateCorruptedError",
    "StateKey",
    "TodoItem",
    "TodoStatus",
]
