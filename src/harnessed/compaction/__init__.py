"""Keeping long histories inside the window: eviction, pruning, argument truncation, summaries.

* :class:`ToolResultEvictor` writes tool results that are too large to workspace files
  (``ToolResultEvictionConfig``).
* :class:`HistoryCompactor` prunes old tool output (``PruneConfig``), truncates old tool
  arguments (``TruncateArgsConfig``) and summarizes the earlier history (``CompactionConfig``),
  cheap steps first.
* :func:`compact_session` (``HarnessAgent.compact``) summarizes on request, between turns
  (:class:`CompactionReport` says what it did).

Both plug into the context compiler's history hooks; nothing they do is stored unless the
request they shaped is valid, and the session log always keeps the original messages. Summary
requests are prepared through the small :class:`SummaryRequests` protocol, not through the
compiler itself.
"""

from harnessed.compaction.config import (
    DEFAULT_EVICTION_EXCLUDED_TOOLS,
    DEFAULT_PRUNE_EXCLUDED_TOOLS,
    CompactionConfig,
    PruneConfig,
    ToolResultEvictionConfig,
    TruncateArgsConfig,
)
from harnessed.compaction.eviction import OFFLOAD_TRANSFORM, ToolResultEvictor
from harnessed.compaction.manual import CompactionReport, compact_session
from harnessed.compaction.markers import (
    ARGS_TRUNCATED_KEY,
    OFFLOAD_KEY,
    PRUNED_KEY,
    SUMMARY_KEY,
    SUMMARY_NAME,
    is_summary,
)
from harnessed.compaction.pipeline import COMPACTION_TRANSFORM, HistoryCompactor
from harnessed.compaction.prompts import DEFAULT_SUMMARY_PROMPT
from harnessed.compaction.prune import PRUNE_TRANSFORM, prune_tool_output
from harnessed.compaction.recovery import overflow_not_recovered
from harnessed.compaction.requests import PreparerSummaries, SummaryRequests
from harnessed.compaction.summarize import EmptySummaryError, Summarizer
from harnessed.compaction.truncate import TRUNCATE_TRANSFORM, truncate_tool_args
from harnessed.compaction.wiring import HistoryTransforms, history_transforms

__all__ = [
    "ARGS_TRUNCATED_KEY",
    "COMPACTION_TRANSFORM",
    "DEFAULT_EVICTION_EXCLUDED_TOOLS",
    "DEFAULT_PRUNE_EXCLUDED_TOOLS",
    "DEFAULT_SUMMARY_PROMPT",
    "OFFLOAD_KEY",
    "OFFLOAD_TRANSFORM",
    "PRUNED_KEY",
    "PRUNE_TRANSFORM",
    "SUMMARY_KEY",
    "SUMMARY_NAME",
    "TRUNCATE_TRANSFORM",
    "CompactionConfig",
    "CompactionReport",
    "EmptySummaryError",
    "HistoryCompactor",
    "HistoryTransforms",
    "PreparerSummaries",
    "PruneConfig",
    "Summarizer",
    "SummaryRequests",
    "ToolResultEvictionConfig",
    "ToolResultEvictor",
    "TruncateArgsConfig",
    "compact_session",
    "history_transforms",
    "is_summary",
    "overflow_not_recovered",
    "prune_tool_output",
    "truncate_tool_args",
]
