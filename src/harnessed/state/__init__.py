"""Agent state and the stores that keep it between calls and processes."""

from harnessed.contract.state import (
    Requirement,
    TaskContextState,
    TaskContractConfig,
    TaskRevisionConflictError,
    VerificationResult,
)
from harnessed.contract.verification import VerificationService
from harnessed.state.agent_state import AgentState, PlanState, StateKey, TodoItem, TodoStatus
from harnessed.state.conversation import ConversationStore
from harnessed.state.editor import StateEditor
from harnessed.state.store import (
    AgentStateStore,
    InMemoryStateStore,
    JsonFileStateStore,
    StateConflictError,
    StateCorruptedError,
)
from harnessed.stores.fsspec.state import FilesystemStateStore

__all__ = [
    "AgentState",
    "AgentStateStore",
    "ConversationStore",
    "FilesystemStateStore",
    "InMemoryStateStore",
    "JsonFileStateStore",
    "PlanState",
    "Requirement",
    "StateConflictError",
    "StateCorruptedError",
    "StateEditor",
    "StateKey",
    "TaskContextState",
    "TaskContractConfig",
    "TaskRevisionConflictError",
    "TodoItem",
    "TodoStatus",
    "VerificationResult",
    "VerificationService",
]
