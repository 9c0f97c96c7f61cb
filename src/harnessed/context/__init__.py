"""The context compiler: every model request rebuilt from state, fitted, validated, explained."""

from harnessed.capabilities.hooks import (
    FactsInContext,
    FactsRequest,
    HistoryBudget,
    HistoryOutcome,
    HistoryTransform,
    HistoryView,
    MemoryFlusher,
)
from harnessed.capabilities.seam import PrepareInfo, RequestPreparer, passthrough
from harnessed.capabilities.sources import (
    ContextBlock,
    ContextRequest,
    ContextSource,
    ContextSourceError,
    SourceFailurePolicy,
    SourceResultError,
)
from harnessed.context.compiler import ContextCompiler, ManifestSink
from harnessed.context.errors import (
    ContextBudgetExceededError,
    ContextConflictError,
    ContextError,
    ToolPairingError,
)
from harnessed.context.manifest import ContextManifest, ManifestItem
from harnessed.context.materials import Material
from harnessed.context.pairs import group_boundaries, tool_pair_problems
from harnessed.context.policy import FALLBACK_INPUT_LIMIT, ContextPolicy
from harnessed.context.render import PROJECTION_KEY, escape

__all__ = [
    "FALLBACK_INPUT_LIMIT",
    "PROJECTION_KEY",
    "ContextBlock",
    "ContextBudgetExceededError",
    "ContextCompiler",
    "ContextConflictError",
    "ContextError",
    "ContextManifest",
    "ContextPolicy",
    "ContextRequest",
    "ContextSource",
    "ContextSourceError",
    "FactsInContext",
    "FactsRequest",
    "HistoryBudget",
    "HistoryOutcome",
    "HistoryTransform",
    "HistoryView",
    "MemoryFlusher",
    "ManifestItem",
    "ManifestSink",
    "Material",
    "PrepareInfo",
    "RequestPreparer",
    "SourceFailurePolicy",
    "SourceResultError",
    "ToolPairingError",
    "escape",
    "group_boundaries",
    "passthrough",
    "tool_pair_problems",
]
