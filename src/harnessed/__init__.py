"""harnessed: a harness for long-running LLM agents.

Every model request is rebuilt from the agent's state, fitted to the window, validated and
described; an append-only log keeps everything that happened.
"""

from typing import TYPE_CHECKING

from harnessed.agent import AgentInput, HarnessAgent
from harnessed.capabilities import CallContext, CallEnd, Capability, ModelCall, StateBlock
from harnessed.compaction import (
    CompactionConfig,
    PruneConfig,
    ToolResultEvictionConfig,
    TruncateArgsConfig,
)
from harnessed.context import (
    ContextBlock,
    ContextBudgetExceededError,
    ContextManifest,
    ContextPolicy,
    ContextRequest,
    ContextSource,
    ContextSourceError,
    SourceFailurePolicy,
)
from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    ConfirmationRequestEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    MaxItersEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harnessed.memory import MemoryConfig
from harnessed.messages import (
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from harnessed.models.errors import ContextOverflowError, ModelError, RateLimitError
from harnessed.permissions import (
    ConfirmationError,
    PendingConfirmation,
    PermissionDecision,
    PermissionMode,
    PermissionRule,
)
from harnessed.runtime import RuntimeContext
from harnessed.state import (
    AgentState,
    StateConflictError,
    TaskContextState,
    TaskContractConfig,
    TaskRevisionConflictError,
    TodoItem,
)
from harnessed.subagents import Subagents, SubagentSpec
from harnessed.tools import Tool, ToolContext, ToolError, tool

if TYPE_CHECKING:
    from harnessed.context import ToolPairingError
    from harnessed.models import (
        AnthropicModel,
        OpenAIChatModel,
        RetryPolicy,
        ScriptedModel,
        ScriptedResponse,
        ScriptedToolCall,
        resolve_model,
    )
    from harnessed.session import (
        FilesystemSessionLogStore,
        JsonlSessionLogStore,
        SearchIndex,
        SessionLogStore,
        SqliteSearchIndex,
        TantivySearchIndex,
    )
    from harnessed.state import (
        AgentStateStore,
        FilesystemStateStore,
        InMemoryStateStore,
        JsonFileStateStore,
    )
    from harnessed.stores.postgres import PostgresStore
    from harnessed.tokens import TiktokenEstimator
    from harnessed.tools import ShellConfig
    from harnessed.workspace import FsspecFilesystem, LocalFilesystem, MemoryFilesystem, Workspace

__version__ = "0.1.0"

# Imported on first use: provider SDKs, search back ends and stores that an application may
# never need. ``from harnessed import ScriptedModel`` works like every other name here.
_LAZY = {
    "AgentStateStore": "harnessed.state",
    "AnthropicModel": "harnessed.models",
    "FilesystemSessionLogStore": "harnessed.session",
    "FilesystemStateStore": "harnessed.state",
    "FsspecFilesystem": "harnessed.workspace",
    "InMemoryStateStore": "harnessed.state",
    "JsonFileStateStore": "harnessed.state",
    "JsonlSessionLogStore": "harnessed.session",
    "LocalFilesystem": "harnessed.workspace",
    "MemoryFilesystem": "harnessed.workspace",
    "OpenAIChatModel": "harnessed.models",
    "PostgresStore": "harnessed.stores.postgres",
    "RetryPolicy": "harnessed.models",
    "ScriptedModel": "harnessed.models",
    "ScriptedResponse": "harnessed.models",
    "ScriptedToolCall": "harnessed.models",
    "SearchIndex": "harnessed.session",
    "SessionLogStore": "harnessed.session",
    "ShellConfig": "harnessed.tools",
    "SqliteSearchIndex": "harnessed.session",
    "TantivySearchIndex": "harnessed.session",
    "TiktokenEstimator": "harnessed.tokens",
    "ToolPairingError": "harnessed.context",
    "Workspace": "harnessed.workspace",
    "resolve_model": "harnessed.models",
}

__all__ = [
    "AgentEndEvent",
    "AgentInput",
    "AgentStartEvent",
    "AgentState",
    "AgentStateStore",
    "AnthropicModel",
    "CallContext",
    "CallEnd",
    "Capability",
    "CompactionConfig",
    "ConfirmationError",
    "ConfirmationRequestEvent",
    "ContextBlock",
    "ContextBudgetExceededError",
    "ContextManifest",
    "ContextOverflowError",
    "ContextPolicy",
    "ContextRequest",
    "ContextSource",
    "ContextSourceError",
    "CustomEvent",
    "ErrorEvent",
    "Event",
    "FilesystemSessionLogStore",
    "FilesystemStateStore",
    "FsspecFilesystem",
    "HarnessAgent",
    "ImageBlock",
    "InMemoryStateStore",
    "JsonFileStateStore",
    "JsonlSessionLogStore",
    "LocalFilesystem",
    "MaxItersEvent",
    "MemoryConfig",
    "MemoryFilesystem",
    "ModelCall",
    "ModelCallEndEvent",
    "ModelCallStartEvent",
    "ModelError",
    "Msg",
    "OpenAIChatModel",
    "PendingConfirmation",
    "PermissionDecision",
    "PermissionMode",
    "PermissionRule",
    "PostgresStore",
    "PruneConfig",
    "RateLimitError",
    "RetryPolicy",
    "RuntimeContext",
    "ScriptedModel",
    "ScriptedResponse",
    "ScriptedToolCall",
    "SearchIndex",
    "SessionLogStore",
    "ShellConfig",
    "SourceFailurePolicy",
    "SqliteSearchIndex",
    "StateBlock",
    "StateConflictError",
    "SubagentSpec",
    "Subagents",
    "TantivySearchIndex",
    "TaskContextState",
    "TaskContractConfig",
    "TaskRevisionConflictError",
    "TextBlock",
    "TextDeltaEvent",
    "ThinkingBlock",
    "ThinkingDeltaEvent",
    "TiktokenEstimator",
    "TodoItem",
    "Tool",
    "ToolCallEvent",
    "ToolContext",
    "ToolError",
    "ToolPairingError",
    "ToolResultBlock",
    "ToolResultEvent",
    "ToolResultEvictionConfig",
    "ToolUseBlock",
    "TruncateArgsConfig",
    "Workspace",
    "resolve_model",
    "tool",
    "__version__",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harnessed' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
