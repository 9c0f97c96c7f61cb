"""HistoryCompactor: keeps the history inside its budget, cheap steps before expensive ones.

It is the compiler's ``compactor`` hook, called before every reasoning request with the
history budget. In order, stopping as soon as the history no longer meets a trigger:

1. prune old tool output, only with ``PruneConfig(cache_aware=False)`` (its own trigger:
   enough old prunable output);
2. when a summary is due (``trigger_messages`` / ``trigger_tokens``): with
   ``cache_aware=False``, prune again without the minimum (if it was the token trigger); then
   truncate old tool arguments (if configured);
3. summarize everything before the kept tail into one summary message (chained with the
   summary before it), letting the memory flusher save that prefix's facts. The summary
   request repeats the last reasoning request's cached prefix when it can
   (:mod:`harnessed.compaction.in_context`), and asks for memory's facts too when memory can
   read them from there (:mod:`harnessed.compaction.flush`); otherwise memory flushes first on
   its own and the summary reads a transcript, and cache-aware pruning (the default) shortens
   that prefix's long output first, since the summary replaces it;
4. if the history still exceeds the budget, prune harder (all old output, then the last step's).

A forced run (overflow recovery) skips the triggers and keeps only the last message group plus
the summary; the last group's long tool output is cut to a preview as well when nothing could
be summarized or when that group alone is more than a quarter of the budget.

A summary that fails or comes back empty changes nothing and is reported as a failed
compaction (a ``compaction_end`` event with status ``failed``; the manifest lists only the
transforms that were applied). After failures, due summaries of that session wait a growing
number of steps (:mod:`harnessed.compaction.backoff`; the manifest says
``summary_deferred:<failures>``). The compiler commits the result only if the final request is
valid.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harnessed.capabilities.hooks import HistoryBudget, HistoryOutcome, MemoryFlusher
from harnessed.compaction.backoff import SummaryBackoff
from harnessed.compaction.config import CompactionConfig, PruneConfig
from harnessed.compaction.cut import cut_for_messages, cut_for_tokens, last_group_start
from harnessed.compaction.flush import PreSummaryFlush
from harnessed.compaction.in_context import summarize_in_context
from harnessed.compaction.markers import SUMMARY_KEY, SUMMARY_NAME, is_summary
from harnessed.compaction.prompts import summary_message_text
from harnessed.compaction.prune import PRUNE_TRANSFORM, PruneMemo, prune_tool_output
from harnessed.compaction.requests import SummaryRequests
from harnessed.compaction.summarize import EmptySummaryError, Summarizer, SummaryResult
from harnessed.compaction.truncate import TRUNCATE_TRANSFORM, truncate_tool_args
from harnessed.context.compiler import ContextCompiler
from harnessed.context.errors import ContextBudgetExceededError
from harnessed.messages import Msg
from harnessed.models.errors import ContextOverflowError

__all__ = ["COMPACTION_TRANSFORM", "HistoryCompactor"]

logger = logging.getLogger(__name__)

COMPACTION_TRANSFORM = "history_compaction"
_SESSIONS_KEPT = 2_048


class HistoryCompactor:
    """The compiler's ``compactor``: pruning, argument truncation and summaries."""

    def __init__(
        self,
        *,
        prune: PruneConfig | None,
        compaction: CompactionConfig | None,
        summaries: Callable[[], SummaryRequests],
        flusher: Callable[[], MemoryFlusher | None] = lambda: None,
    ) -> None:
        self.prune = prune
        self.compaction = compaction
        self.flusher = flusher
        self.summaries = summaries
        self.summarizer = Summarizer(compaction, summaries) if compaction is not None else None
        self._memos: OrderedDict[tuple[str, ...], PruneMemo] = OrderedDict()
        self.backoff = SummaryBackoff()

    def _session_memos(self, session: tuple[str, ...]) -> PruneMemo:
        """The session's running prunable-token counts, so an unchanged prefix of the history
        is not scanned again (token totals come from the compiler's memo via the budget)."""
        memos = self._memos.pop(session, None) or PruneMemo()
        self._memos[session] = memos
        while len(self._memos) > _SESSIONS_KEPT:
            self._memos.popitem(last=False)
        return memos

    async def __call__(self, history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        info = budget.info
        session = (info.agent_name, info.runtime.user_id, info.runtime.session)
        run = _Run(list(history), budget, self._session_memos(session))
        forced = budget.force and self.compaction is not None
        if self.prune is not None:
            if forced:
                run.prune(self.prune, protect=0, minimum=0, before=last_group_start(run.history))
            elif not self.prune.cache_aware:
                run.prune(self.prune)
        config = self.compaction
        if config is not None:
            reason = "overflow" if forced else self._due(run, config)
            waiting = self.backoff.skip(session) if reason not in (None, "overflow") else 0
            if waiting:
                run.transforms.append(f"summary_deferred:{waiting}")
            elif reason is not None:
                await self._compact(run, config, reason)
                if run.summary_failed:
                    self.backoff.failed(session)
                elif run.summarized:
                    self.backoff.succeeded(session)
        if self.prune is not None:
            if forced and (not run.summarized or run.last_group_tokens() > budget.tokens // 4):
                # The provider rejected the request: when the summary could not help, or the
                # last step is itself a large part of the budget, shorten its output too.
                run.prune(self.prune, protect=0, minimum=0)
            elif run.tokens() > budget.tokens:
                run.prune(self.prune, protect=0, minimum=0, before=last_group_start(run.history))
                if run.tokens() > budget.tokens:
                    run.prune(self.prune, protect=0, minimum=0)
        return HistoryOutcome(run.history, tuple(run.transforms))

    async def compact_now(self, history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        """Summarize now, whatever the triggers say (an application's or a user's request):
        everything before the tail the configuration keeps (before the last exchange, from
        the last user message on, when that keeps it all). The history comes back unchanged
        unless a summary was made: a failed summary (reported by its ``compaction_end``
        event) leaves nothing half done."""
        config = self.compaction
        if config is None:
            return HistoryOutcome(history)
        run = _Run(list(history), budget, PruneMemo())
        cut = self._cut(run, config, forced=False)
        if cut == 0 or (cut == 1 and is_summary(run.history[0])):
            cut = _last_exchange_start(run.history)
        prefix = run.history[:cut]
        if not prefix or (len(prefix) == 1 and is_summary(prefix[0])):
            return HistoryOutcome(history)
        if config.truncate_args is not None:
            truncated = truncate_tool_args(run.history, config.truncate_args, cut)
            if truncated.calls:
                run.update(truncated.history, TRUNCATE_TRANSFORM)
        if self.prune is not None and self.prune.cache_aware:
            run.prune(self.prune, protect=0, minimum=0, before=cut)
        await self._summarize(run, config, cut, "manual")
        if not run.summarized:
            return HistoryOutcome(history)
        session = (budget.info.agent_name, budget.info.runtime.user_id, budget.info.runtime.session)
        self.backoff.succeeded(session)
        return HistoryOutcome(run.history, tuple(run.transforms))

    # ------------------------------------------------------------- stages
    def _due(self, run: _Run, config: CompactionConfig) -> str | None:
        if len(run.history) >= config.trigger_messages:
            return "messages"
        if run.tokens() >= config.trigger_for(run.budget.tokens):
            return "tokens"
        return None

    async def _compact(self, run: _Run, config: CompactionConfig, reason: str) -> None:
        prune = self.prune
        if reason == "tokens" and prune is not None and not prune.cache_aware:
            run.prune(prune, minimum=0)
            if self._due(run, config) is None:
                return
        cut = self._cut(run, config, forced=reason == "overflow")
        if config.truncate_args is not None and cut > 0:
            truncated = truncate_tool_args(run.history, config.truncate_args, cut)
            if truncated.calls:
                run.update(truncated.history, TRUNCATE_TRANSFORM)
                if reason != "overflow" and self._due(run, config) is None:
                    return
        prefix = run.history[:cut]
        if not prefix or (len(prefix) == 1 and is_summary(prefix[0])):
            return  # nothing (new) to summarize
        await self._summarize(run, config, cut, reason)

    def _cut(self, run: _Run, config: CompactionConfig, *, forced: bool) -> int:
        if forced:
            return last_group_start(run.history)
        if config.keep_tokens == 0:
            return cut_for_messages(run.history, config.keep_messages)
        keep = (
            config.keep_tokens if config.keep_tokens > 0 else config.dynamic_keep(run.budget.tokens)
        )
        return cut_for_tokens(run.history, run.budget.count, keep)

    def _in_context(self, config: CompactionConfig, reason: str) -> bool:
        """Whether a summary is first tried in context (it may still fall back)."""
        assert self.summarizer is not None
        return config.in_context and reason != "overflow" and self.summarizer.model is None

    async def _summary(
        self,
        run: _Run,
        config: CompactionConfig,
        cut: int,
        reason: str,
        max_tokens: int,
        flush: PreSummaryFlush,
    ) -> SummaryResult:
        """The summary of ``run.history[:cut]``: in context (from the cached prefix) when it
        applies, memory's facts asked for in the same request when memory can; else memory
        flushes on its own and the summary is written from a transcript of the prefix."""
        assert self.summarizer is not None
        budget = run.budget
        summaries = self.summaries()
        if self._in_context(config, reason) and isinstance(summaries, ContextCompiler):
            # (a custom preparer keeps no prefixes: its summaries read transcripts)
            facts = await flush.facts_request()
            try:
                result = await summarize_in_context(
                    summaries, run.history, cut, budget, max_tokens, facts
                )
            except (ContextOverflowError, ContextBudgetExceededError, EmptySummaryError) as exc:
                logger.info("in-context summary not possible (%s); summarizing a transcript", exc)
            else:
                if result is not None:
                    await flush.save(facts, result.facts)
                    return result
        await flush.on_its_own()
        prune = self.prune
        if prune is not None and prune.cache_aware and reason != "overflow":
            # the summary replaces the prefix, so shortening its output first breaks no cached
            # prefix and makes the transcript smaller (the log keeps every result whole)
            run.prune(prune, protect=0, minimum=0, before=cut)
        return await self.summarizer.summarize(run.history[:cut], budget, max_tokens)

    async def _summarize(self, run: _Run, config: CompactionConfig, cut: int, reason: str) -> None:
        assert self.summarizer is not None
        budget = run.budget
        info = budget.info
        prefix = run.history[:cut]
        before = {"messages_before": len(run.history), "tokens_before": run.tokens()}
        info.emit(
            "compaction_start",
            {
                "model_call_id": info.model_call_id,
                "reason": reason,
                **before,
                "summarized_messages": len(prefix),
            },
        )
        started = time.monotonic()
        end: dict[str, Any] = {"model_call_id": info.model_call_id, "reason": reason, **before}
        flusher = self.flusher() if config.flush_before_compact else None
        flush = PreSummaryFlush(flusher, prefix, info, end)
        max_tokens = min(config.max_summary_tokens, max(budget.tokens // 4, 64))
        kept = run.history
        try:
            result = await self._summary(run, config, cut, reason, max_tokens, flush)
        except Exception as exc:
            await flush.on_its_own()  # facts are kept even when the summary fails
            logger.warning("summary for compaction failed; history left unchanged: %s", exc)
            if run.history is not kept:
                run.revert(kept)
            run.summary_failed = True
            info.emit(
                "compaction_end",
                {
                    **end,
                    "status": "failed",
                    "messages_after": len(run.history),
                    "tokens_after": run.tokens(),
                    "error_type": type(exc).__name__,
                    "error": str(exc)[:500],
                    "duration_ms": round((time.monotonic() - started) * 1000, 3),
                },
            )
            return
        end["in_context"] = result.in_context
        represented = sum(_represented(m) for m in prefix)
        summary = Msg.user(
            summary_message_text(result.text, represented),
            name=SUMMARY_NAME,
            metadata={
                SUMMARY_KEY: {
                    "messages": represented,
                    "first_id": prefix[0].id,
                    "last_id": prefix[-1].id,
                    "chained": any(is_summary(m) for m in prefix),
                    "requests": result.requests,
                    "reason": reason,
                }
            },
        )
        run.update([summary, *run.history[cut:]], COMPACTION_TRANSFORM)
        run.summarized = True
        info.emit(
            "compaction_end",
            {
                **end,
                "status": "completed",
                "messages_after": len(run.history),
                "tokens_after": run.tokens(),
                "summary_requests": result.requests,
                "duration_ms": round((time.monotonic() - started) * 1000, 3),
            },
        )


def _last_exchange_start(history: Sequence[Msg]) -> int:
    """Where the last exchange begins: the last user message that is not a summary."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "user" and not is_summary(message):
            return index
    return 0


def _represented(message: Msg) -> int:
    """How many original messages ``message`` stands for (a summary stands for many)."""
    if is_summary(message):
        data = message.metadata.get(SUMMARY_KEY)
        if isinstance(data, Mapping) and isinstance(data.get("messages"), int):
            return int(data["messages"])
    return 1


class _Run:
    """The history being transformed in one preparation, and the transforms it earned."""

    def __init__(
        self,
        history: list[Msg],
        budget: HistoryBudget,
        prunable: PruneMemo,
    ) -> None:
        self.history = history
        self.budget = budget
        self.prunable = prunable
        self.transforms: list[str] = []
        self.summarized = False
        self.summary_failed = False
        self._tokens: int | None = None

    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = self.budget.total(self.history)
        return self._tokens

    def last_group_tokens(self) -> int:
        start = last_group_start(self.history)
        return sum(self.budget.count(m) for m in self.history[start:])

    def revert(self, history: list[Msg]) -> None:
        """Undo a tentative transform (its transform name goes too)."""
        self.history = history
        self._tokens = None
        if PRUNE_TRANSFORM in self.transforms:
            self.transforms.remove(PRUNE_TRANSFORM)

    def update(self, history: Sequence[Msg], transform: str) -> None:
        self.history = list(history)
        self._tokens = None
        if transform not in self.transforms:
            self.transforms.append(transform)

    def prune(
        self,
        config: PruneConfig,
        *,
        protect: int | None = None,
        minimum: int | None = None,
        before: int | None = None,
    ) -> None:
        pruned = prune_tool_output(
            self.history,
            config,
            self.budget.count,
            protect_tokens=protect,
            minimum_tokens=minimum,
            before=before,
            memo=self.prunable,
        )
        if pruned.results:
            self.update(pruned.history, PRUNE_TRANSFORM)
