"""What compaction needs from whoever prepares the agent's requests to make a summary.

The summarizer does not know the context compiler: it sizes its transcript chunks and sends
each summary request through a :class:`SummaryRequests`. The compiler is one (the default);
:class:`PreparerSummaries` makes one of any :class:`~harnessed.capabilities.seam.RequestPreparer`,
so an agent created with ``prepare=`` sends its summary requests through that preparer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harnessed.capabilities.seam import PrepareInfo, RequestPreparer
from harnessed.models.base import Model, ModelRequest
from harnessed.state.agent_state import AgentState
from harnessed.tokens import TokenEstimator

__all__ = ["PreparerSummaries", "SummaryRequests"]


class SummaryRequests(Protocol):
    """Counts, sizes and prepares summary requests (``purpose="summary"``)."""

    def count_text(self, text: str) -> int:
        """The tokens of ``text``, in the units of :meth:`summary_room`."""
        ...

    def summary_room(self, model: Model, max_output_tokens: int) -> int:
        """The input tokens one summary request to ``model`` may use for its own messages:
        the input limit less what preparing it adds (the agent's instructions, say)."""
        ...

    async def prepare_summary(
        self, state: AgentState, draft: ModelRequest, info: PrepareInfo
    ) -> ModelRequest:
        """The request to send for ``draft`` (a system message and the summary prompt)."""
        ...


@dataclass(frozen=True, slots=True)
class PreparerSummaries:
    """Summary requests through any request preparer (an agent's ``prepare=``).

    ``input_limit(context_window, max_output_tokens)`` gives the most input tokens a request
    may use (the agent's context policy's); what the preparer adds is not known, so it is not
    reserved: a request that turns out too big is split further (see
    :class:`~harnessed.compaction.summarize.Summarizer`).
    """

    preparer: RequestPreparer
    estimator: TokenEstimator
    input_limit: Callable[[int | None, int | None], int]

    def count_text(self, text: str) -> int:
        return self.estimator.count_text(text)

    def summary_room(self, model: Model, max_output_tokens: int) -> int:
        return self.input_limit(model.context_window, max_output_tokens)

    async def prepare_summary(
        self, state: AgentState, draft: ModelRequest, info: PrepareInfo
    ) -> ModelRequest:
        return await self.preparer(state, draft, info)
