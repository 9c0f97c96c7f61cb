"""Plug points for history transforms: eviction before measuring, compaction within budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harnessed.capabilities.seam import PrepareInfo
from harnessed.messages import Msg
from harnessed.state.agent_state import AgentState

__all__ = [
    "FactsInContext",
    "FactsRequest",
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


@dataclass(frozen=True, slots=True)
class FactsRequest:
    """A memory flush folded into a summary written in context (see :class:`FactsInContext`).

    ``instruction`` asks for the facts of the part being summarized (it is added to the summary
    request, after the summary instruction); ``max_output_tokens`` is the room the answer
    needs. ``save`` is given that part of the answer and writes the facts; it returns ``False``
    when the answer could not be read, and the caller then flushes from a transcript.
    """

    instruction: str
    max_output_tokens: int
    save: Callable[[str], Awaitable[bool]]


@runtime_checkable
class FactsInContext(Protocol):
    """A :class:`MemoryFlusher` that can read the conversation from the summary request itself.

    Before a summary written in context, compaction asks it for a :class:`FactsRequest`
    (``None``: not this time, e.g. memory uses another model than ``info.model``, which has
    no cache of the conversation); with one, the summary request asks for the facts too and
    no separate flush request is sent. Without one, or when the summary falls back to a
    transcript, :meth:`MemoryFlusher.flush` is called as usual.
    """

    async def facts_request(self, info: PrepareInfo) -> FactsRequest | None: ...
