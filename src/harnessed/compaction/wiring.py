"""Building an agent's history transforms from its configuration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harnessed.capabilities.hooks import HistoryTransform, MemoryFlusher
from harnessed.compaction.config import (
    CompactionConfig,
    PruneConfig,
    ToolResultEvictionConfig,
)
from harnessed.compaction.eviction import ToolResultEvictor
from harnessed.compaction.pipeline import HistoryCompactor
from harnessed.compaction.requests import SummaryRequests
from harnessed.workspace.layout import Workspace

__all__ = ["HistoryTransforms", "history_transforms"]


@dataclass(frozen=True, slots=True)
class HistoryTransforms:
    """The compiler hooks: ``evictor`` (before measuring) and ``compactor`` (within budget)."""

    evictor: HistoryTransform | None
    compactor: HistoryTransform | None


def history_transforms(
    *,
    agent_name: str,
    workspace: Workspace | None,
    eviction: ToolResultEvictionConfig | None,
    prune: PruneConfig | None,
    compaction: CompactionConfig | None,
    summaries: Callable[[], SummaryRequests],
    flusher: Callable[[], MemoryFlusher | None] = lambda: None,
) -> HistoryTransforms:
    """The evictor and compactor for an agent; ``None`` where the feature is off.

    Eviction needs a workspace (an agent without one keeps large results in context).
    ``summaries`` (who prepares the summary requests, see
    :class:`~harnessed.compaction.requests.SummaryRequests`) and ``flusher`` are looked up when
    a summary is made, so the agent can create its compiler (which needs these hooks) and
    attach a memory flusher afterwards.
    """
    for name, value, kind in (
        ("tool_result_eviction", eviction, ToolResultEvictionConfig),
        ("prune", prune, PruneConfig),
        ("compaction", compaction, CompactionConfig),
    ):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__} or None, got {value!r}")
    evictor = (
        ToolResultEvictor(eviction, workspace, agent_name)
        if eviction is not None and workspace is not None
        else None
    )
    compactor = (
        HistoryCompactor(prune=prune, compaction=compaction, summaries=summaries, flusher=flusher)
        if prune is not None or compaction is not None
        else None
    )
    return HistoryTransforms(evictor, compactor)
