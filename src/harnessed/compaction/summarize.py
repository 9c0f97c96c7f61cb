"""Summarizing a prefix of the history with a model.

The summary request is an auxiliary request (``purpose="summary"``) prepared through a
:class:`~harnessed.compaction.requests.SummaryRequests`: the agent's context compiler (the
request then gets the system instructions and nothing else — no sources, references, task
state or compaction — and a manifest of its own), or the agent's own ``prepare=``. A prefix
too long for one request is summarized in chunks, each chunk together with the running summary
of the ones before; when the model or the preparer says a chunk is too big, the chunks are
halved and tried again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harnessed.capabilities.hooks import HistoryBudget
from harnessed.capabilities.seam import USAGE_SINK, PrepareInfo
from harnessed.compaction.config import CompactionConfig
from harnessed.compaction.prompts import MESSAGES_PLACEHOLDER, SUMMARY_SYSTEM
from harnessed.compaction.requests import SummaryRequests
from harnessed.compaction.transcript import chunk_entries
from harnessed.context.errors import ContextBudgetExceededError
from harnessed.context.xml import escape
from harnessed.messages import Msg, new_id
from harnessed.models.base import Model, ModelRequest, collect
from harnessed.models.errors import ContextOverflowError
from harnessed.models.registry import resolve_model

__all__ = ["EmptySummaryError", "SummaryResult", "Summarizer"]

_MIN_CHUNK_TOKENS = 256


class EmptySummaryError(Exception):
    """The summary model answered without any text."""


@dataclass(frozen=True, slots=True)
class SummaryResult:
    text: str
    requests: int
    """How many summary requests it took (more than one for a chunked prefix)."""
    in_context: bool = False
    """Written by a request that repeated the conversation's cached prefix."""
    facts: str | None = None
    """The memory facts part of an in-context answer that was asked for one (``None``: not
    asked, or missing from the answer)."""


class Summarizer:
    """Writes the summary of a list of messages with the configured (or the agent's) model."""

    def __init__(self, config: CompactionConfig, requests: Callable[[], SummaryRequests]) -> None:
        self.config = config
        self._requests = requests
        try:
            self.model: Model | None = (
                resolve_model(config.model) if config.model is not None else None
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"CompactionConfig.model: {exc}") from None

    async def summarize(
        self, messages: Sequence[Msg], budget: HistoryBudget, max_tokens: int
    ) -> SummaryResult:
        """The summary text of ``messages``; raises when no usable summary could be made."""
        preparer = self._requests()
        model = self.model or budget.info.model
        count_text = preparer.count_text
        room = preparer.summary_room(model, max_tokens)
        fixed = count_text(self.config.summary_prompt) + count_text(SUMMARY_SYSTEM)
        # Room for the transcript, the running summary and the framing the preparer adds.
        chunk_budget = int((room - fixed - max_tokens) * 0.85)
        scale = 1.0
        running: str | None = None
        requests = 0
        remaining = list(messages)
        chunks = chunk_entries(remaining, count_text, max(chunk_budget, _MIN_CHUNK_TOKENS), scale)
        rejected: list[str] | None = None
        while chunks:
            entries = chunks[0]
            if running is not None:
                entries = [f"[earlier summary]\n{running}", *entries]
            if entries != rejected:
                try:
                    requests += 1
                    running = await self._request(model, entries, budget, max_tokens)
                except (ContextOverflowError, ContextBudgetExceededError):
                    rejected = entries
                else:
                    remaining = remaining[len(chunks[0]) :]
                    chunks = chunks[1:]
                    continue
            # The model's real window is smaller than it says (or our estimate is low): halve
            # the chunks until one is accepted or they cannot get any smaller.
            if chunk_budget <= _MIN_CHUNK_TOKENS:
                raise ContextOverflowError(
                    "the summary model rejected even the smallest transcript chunk as too long"
                )
            chunk_budget //= 2
            scale = max(scale / 2, 0.05)
            chunks = chunk_entries(
                remaining, count_text, max(chunk_budget, _MIN_CHUNK_TOKENS), scale
            )
        if running is None:
            raise EmptySummaryError("there was nothing to summarize")
        return SummaryResult(running, requests)

    async def _request(
        self, model: Model, entries: list[str], budget: HistoryBudget, max_tokens: int
    ) -> str:
        # The transcript sits inside <transcript> tags: escaped, no text in it can close them.
        transcript = escape("\n\n".join(entries))
        prompt = self.config.summary_prompt.replace(MESSAGES_PLACEHOLDER, transcript)
        info = summary_info(budget.info, model)
        draft = ModelRequest(
            messages=(Msg.system(SUMMARY_SYSTEM), Msg.user(prompt)),
            max_output_tokens=max_tokens,
            purpose="summary",
            call_id=info.model_call_id,
        )
        request = await self._requests().prepare_summary(budget.state, draft, info)
        response = await collect(model, request)
        count = info.run_cache.get(USAGE_SINK)
        if callable(count):  # the summary is paid for by the call it was made for
            count(
                response.usage, (response.model, model.name), getattr(model, "provider_name", None)
            )
        text = response.message.text.strip()
        if not text:
            raise EmptySummaryError(f"the summary model {model.name!r} returned no text")
        return text


def summary_info(parent: PrepareInfo, model: Model) -> PrepareInfo:
    """What a summary request to ``model`` is prepared with, made during ``parent``'s request."""
    return PrepareInfo(
        agent_name=parent.agent_name,
        runtime=parent.runtime,
        model=model,
        model_call_id=new_id("mc_"),
        iteration=parent.iteration,
        purpose="summary",
        emit=parent.emit,
        run_cache=parent.run_cache,
    )
