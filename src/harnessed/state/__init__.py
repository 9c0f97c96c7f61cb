"""Agent state and the stores that keep it between calls and processes."""

from harnessed.state.agent_state import AgentState
from harnessed.state.conversation import ConversationStore
from harnessed.state.editor import StateEditor
from harnessed.state.sections import StateSection
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
    "ConversationStore",
    "InMemoryStateStore",
    "JsonFileStateStore",
    "StateConflictError",
    "StateCorruptedError",
    "StateEditor",
    "StateSection",
]
