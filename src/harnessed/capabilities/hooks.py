"""Plug points for history transforms: eviction before measuring, compaction within budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from harnessed.capabilities.seam import PrepareInfo
from harnessed.messages import Msg
from harnessed.state.agent_state import AgentState

__all__ = [
    "HistoryBudget",
    "HistoryOutcome",
    "HistoryTransform",
    "HistoryView",
    "MemoryFlusher",
    "unchanged",
]


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
    measure: Callable[[Sequence[Msg]], int] | None = None
    """Total tokens of a history; the compiler passes one that reuses what it measured for
    the session already (only messages it has not seen are counted)."""

    def total(self, history: Sequence[Msg]) -> int:
        """Total tokens of ``history`` with ``measure``, or message by message."""
        if self.measure is not None:
            return self.measure(history)
        return sum(self.count(m) for m in history)


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


class HistoryView(Protocol):
    """Changes how the history is *shown* in one request, never what is stored.

    Called after validation with the history about to be sent; returns the messages to send in
    its place (same tool-call structure). Used for projections such as marking superseded
    receipts; the state keeps the original messages.
    """

    def __call__(self, history: Sequence[Msg], state: AgentState) -> Sequence[Msg]: ...


class MemoryFlusher(Protocol):
    """Extracts durable facts from messages into long-term memory (implemented by memory/).

    ``reason`` is ``"compaction"`` (the prefix about to be summarized; awaited before the
    summary is made) or ``"call_end"`` (background work after a call).
    """

    async def flush(self, messages: Sequence[Msg], info: PrepareInfo, *, reason: str) -> None: ...
