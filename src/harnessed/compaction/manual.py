"""Compaction on request: summarize a session's earlier history now (``agent.compact(ctx)``).

The automatic compaction summarizes while a request is prepared, when a trigger says so. This
one runs between turns, when the application (or the user, with ``/compact``) asks: it loads
the session, has the agent's :class:`~harnessed.compaction.HistoryCompactor` summarize
everything before the tail the configuration keeps, and commits the shorter working history
with the same records an automatic compaction writes (``compaction/start``,
``compaction/end`` and the ``history/checkpoint`` that replaces the history). The session log
keeps every original message. A summary that fails changes nothing: its ``compaction/end``
record says ``failed`` and the working history stays as it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harnessed.capabilities.hooks import HistoryBudget
from harnessed.capabilities.seam import PrepareInfo
from harnessed.compaction.markers import SUMMARY_KEY, is_summary
from harnessed.log.record import NewRecord, RecordType
from harnessed.messages import new_id
from harnessed.runtime import RuntimeContext, SessionRef

if TYPE_CHECKING:
    from harnessed.compaction.pipeline import HistoryCompactor
    from harnessed.context.compiler import ContextCompiler
    from harnessed.models.base import Model
    from harnessed.state.conversation import ConversationStore

__all__ = ["CompactionReport", "compact_session"]

_RECORDS = {
    "compaction_start": RecordType.COMPACTION_START,
    "compaction_end": RecordType.COMPACTION_END,
    "context_build": RecordType.CONTEXT_BUILD,
}


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """What :meth:`HarnessAgent.compact <harnessed.HarnessAgent.compact>` did.

    ``status``: ``"compacted"`` (a summary replaced ``summarized_messages`` messages of the
    working history), ``"unchanged"`` (nothing to summarize: ``note`` says why) or
    ``"failed"`` (the summary request failed: ``error``; the history is as it was). Tokens
    are the compiler's estimates of the working history, before and after.
    """

    status: Literal["compacted", "unchanged", "failed"]
    summarized_messages: int
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    note: str = ""
    error: str | None = None


async def compact_session(
    compactor: HistoryCompactor | None,
    compiler: ContextCompiler,
    conversation: ConversationStore,
    model: Model,
    agent_name: str,
    ctx: RuntimeContext,
) -> CompactionReport:
    """Summarize the session's earlier history now. The caller holds the session's turn
    lease and lock (no turn may run meanwhile)."""
    key = SessionRef(agent_name, ctx.user_id, ctx.session)
    state = await conversation.load(key, settle=True)
    history = list(state.history)
    tokens = sum(compiler.meter.message(m) for m in history)
    unchanged = CompactionReport("unchanged", 0, len(history), len(history), tokens, tokens)
    if compactor is None or compactor.compaction is None:
        return _note(unchanged, "history summaries are off for this agent (compaction=None)")
    events: list[tuple[str, Mapping[str, Any]]] = []
    info = PrepareInfo(
        agent_name=agent_name,
        runtime=ctx,
        model=model,
        model_call_id=new_id("mc_"),
        iteration=0,
        emit=lambda name, data: events.append((name, dict(data))),
    )
    limit = compiler.policy.input_limit(model.context_window, model.max_output_tokens)
    budget = HistoryBudget(limit, compiler.meter.message, info, state)
    outcome = await compactor.compact_now(history, budget)
    records = [NewRecord(_RECORDS[name], data) for name, data in events if name in _RECORDS]
    failed = next(
        (d for n, d in events if n == "compaction_end" and d.get("status") == "failed"), None
    )
    changed = list(outcome.history) != history
    if changed:
        state.replace_history(list(outcome.history))
    if records or changed:
        await conversation.commit(state, records)
    if failed is not None:
        error = f"{failed.get('error_type')}: {failed.get('error')}"
        return CompactionReport(
            "failed", 0, len(history), len(history), tokens, tokens, error=error
        )
    if not changed:
        return _note(unchanged, "nothing to summarize yet: the history is one exchange")
    after = list(outcome.history)
    summary = next((m for m in after if is_summary(m)), None)
    summarized = len(history) - (len(after) - 1)
    if summary is not None:
        data = summary.metadata.get(SUMMARY_KEY)
        if isinstance(data, Mapping) and isinstance(data.get("messages"), int):
            summarized = int(data["messages"])
    return CompactionReport(
        "compacted",
        summarized,
        len(history),
        len(after),
        tokens,
        sum(compiler.meter.message(m) for m in after),
    )


def _note(report: CompactionReport, note: str) -> CompactionReport:
    return dataclasses.replace(report, note=note)
