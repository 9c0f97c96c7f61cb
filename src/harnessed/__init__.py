"""harnessed: a harness for long-running LLM agents.

Every model request is rebuilt from the agent's state, fitted to the window, validated and
described; an append-only log keeps everything that happened.
"""

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
from harnessed.tools import Tool, ToolContext, ToolError, tool

__version__ = "0.1.0"

__all__ = [
    "AgentEndEvent",
    "AgentInput",
    "AgentStartEvent",
    "AgentState",
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
    "HarnessAgent",
    "ImageBlock",
    "MaxItersEvent",
    "MemoryConfig",
    "ModelCall",
    "ModelCallEndEvent",
    "ModelCallStartEvent",
    "ModelError",
    "Msg",
    "PruneConfig",
    "PendingConfirmation",
    "PermissionDecision",
    "PermissionMode",
    "PermissionRule",
    "RateLimitError",
    "RuntimeContext",
    "SourceFailurePolicy",
    "StateBlock",
    "StateConflictError",
    "TaskContextState",
    "TaskContractConfig",
    "TaskRevisionConflictError",
    "TextBlock",
    "TextDeltaEvent",
    "ThinkingBlock",
    "ThinkingDeltaEvent",
    "TodoItem",
    "Tool",
    "ToolCallEvent",
    "ToolContext",
    "ToolError",
    "ToolResultBlock",
    "ToolResultEvent",
    "ToolResultEvictionConfig",
    "ToolUseBlock",
    "TruncateArgsConfig",
    "__version__",
    "tool",
]
