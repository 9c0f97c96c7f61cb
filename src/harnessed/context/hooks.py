"""Plug points for history transforms: eviction before measuring, compaction within budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from harnessed.context.seam import PrepareInfo
from harnessed.messages import Msg
from harnessed.state.agent_state import AgentState

__all__ = ["HistoryBudget", "HistoryOutcome", "HistoryTransform", "unchanged"]


@dataclass(frozen=True, slots=True)
class HistoryBudget:
    """What a history transform may use.

    ``tokens`` is the history budget in the estimator's units (for eviction, which runs before
    the budget is known, it is the whole input limit). ``count`` measures one message with the
    same estimator the compiler uses. ``force`` asks for the most aggressive compaction
    (overflow recovery). ``state`` is the live state: read it, never change it — the compiler
    commits the returned history only if the final request is valid.
    """

    tokens: int
    count: Callable[[Msg], int]
    info: PrepareInfo
    state: AgentState
    force: bool = False


@dataclass(frozen=True, slots=True)
class HistoryOutcome:
    """The transformed history and the manifest transforms it earned."""

    history: Sequence[Msg]
    transforms: tuple[str, ...] = ()


class HistoryTransform(Protocol):
    async def __call__(self, history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome: ...


async def unchanged(history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
    """The identity transform (the default until compaction is configured)."""
    return HistoryOutcome(history)
