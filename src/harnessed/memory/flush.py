"""One memory flush: durable facts of a message window → today's ledger.

The model sees the newest messages (up to ``flush_window_tokens``; summaries left out, since
their facts were flushed before the messages they replaced), what ``MEMORY.md`` says and what
today's ledger already noted. Its new bullets are appended to today's ledger under a heading
naming the time, the session and the reason; an answer without new bullets writes nothing.

Before a summary written in context, the flush can instead be a part of that summary request
(:func:`facts_in_context`): the model has the whole conversation in front of it, served from the
provider's cache, and no transcript is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from harnessed.capabilities.hooks import FactsRequest
from harnessed.compaction.markers import is_summary
from harnessed.context.workspace_refs import fit_to_tokens
from harnessed.memory.auxiliary import AuxiliaryModel, Emit
from harnessed.memory.config import MemoryConfig
from harnessed.memory.ledger import Ledger
from harnessed.memory.prompts import (
    FLUSH_INSTRUCTIONS,
    flush_prompt,
    in_context_flush_prompt,
    parse_facts,
    readable_facts,
    transcript,
)
from harnessed.messages import Msg
from harnessed.runtime import RuntimeContext
from harnessed.tokens import TokenEstimator

__all__ = [
    "FlushResult",
    "facts_in_context",
    "flush_window",
    "flush_windows",
    "known_memory",
    "run_flush",
    "write_facts",
]

logger = logging.getLogger(__name__)

FlushStatus = Literal["written", "nothing", "empty", "failed"]


@dataclass(frozen=True, slots=True)
class FlushResult:
    """What a flush did: ``written`` facts, ``nothing`` new, ``empty`` (no messages to read,
    no model call) or ``failed`` (``error`` names the exception; nothing was written)."""

    status: FlushStatus
    facts: tuple[str, ...] = ()
    path: str | None = None
    error: str | None = None

    def payload(self, reason: str, session_id: str) -> dict[str, Any]:
        return {
            "reason": reason,
            "session_id": session_id,
            "status": self.status,
            "facts": len(self.facts),
            "path": self.path,
            "error_type": self.error,
        }


def _usable(messages: Sequence[Msg]) -> list[Msg]:
    return [m for m in messages if m.role != "system" and not is_summary(m) and m.content]


def _cost(message: Msg, estimator: TokenEstimator) -> int:
    """What the message costs in the flush prompt (its transcript clips long tool output)."""
    return estimator.count_text(transcript([message]))


def flush_window(
    messages: Sequence[Msg], budget_tokens: int, estimator: TokenEstimator
) -> list[Msg]:
    """The newest conversation messages within ``budget_tokens`` (at least one)."""
    window: list[Msg] = []
    used = 0
    for message in reversed(_usable(messages)):
        cost = _cost(message, estimator)
        if window and used + cost > budget_tokens:
            break
        window.append(message)
        used += cost
    window.reverse()
    return window


def flush_windows(
    messages: Sequence[Msg], budget_tokens: int, estimator: TokenEstimator
) -> list[list[Msg]]:
    """Every conversation message, oldest first, cut into consecutive windows of at most
    ``budget_tokens`` (a single larger message is a window of its own).

    A compaction flushes the whole prefix this way, so facts from its beginning are not lost
    behind a few large tool results near its end.
    """
    windows: list[list[Msg]] = []
    current: list[Msg] = []
    used = 0
    for message in _usable(messages):
        cost = _cost(message, estimator)
        if current and used + cost > budget_tokens:
            windows.append(current)
            current, used = [], 0
        current.append(message)
        used += cost
    if current:
        windows.append(current)
    return windows


async def run_flush(
    messages: Sequence[Msg],
    *,
    ledger: Ledger,
    aux: AuxiliaryModel,
    config: MemoryConfig,
    estimator: TokenEstimator,
    runtime: RuntimeContext,
    clock: Callable[[], datetime],
    reason: str,
    emit: Emit,
    write_lock: Callable[[], AbstractAsyncContextManager[None]],
    run_cache: MutableMapping[str, Any] | None = None,
) -> FlushResult:
    """Ask for the facts of ``messages`` and append them to the ledger of the day they are
    written (``clock`` is read again after the model answered, so a flush that spans midnight
    writes to the new day's ledger, which consolidation has not passed yet).

    ``write_lock`` serializes the append with the scope's other ledger writers (facts another
    flush wrote meanwhile are dropped again). Errors propagate (the caller records them).
    """
    window = flush_window(messages, config.flush_window_tokens, estimator)
    conversation = transcript(window)
    if not conversation.strip():
        return FlushResult("empty")
    known_parts, today_text = await known_memory(ledger, config, estimator, clock)
    answer = await aux.ask(
        runtime,
        FLUSH_INSTRUCTIONS,
        flush_prompt(conversation, "\n\n".join(known_parts), today_text),
        max_output_tokens=config.max_output_tokens,
        emit=emit,
        run_cache=run_cache,
    )
    facts = parse_facts(answer, [*known_parts, today_text])
    return await write_facts(
        facts, ledger=ledger, runtime=runtime, clock=clock, reason=reason, write_lock=write_lock
    )


async def known_memory(
    ledger: Ledger, config: MemoryConfig, estimator: TokenEstimator, clock: Callable[[], datetime]
) -> tuple[list[str], str]:
    """What a flush is shown of memory: the curated files (each within
    ``known_memory_tokens``) and the end of today's ledger."""
    budget = config.known_memory_tokens
    known_parts = []
    for path in ledger.place.curated_files() if budget else []:
        text = await ledger.read(path)
        if text.strip():
            note = f"[{path} continues; the rest is known too]"
            known_parts.append(fit_to_tokens(text, budget, estimator, note))
    today_path = ledger.place.ledger(clock().date())
    today_text = await ledger.read(today_path) if budget else ""
    if estimator.count_text(today_text) > budget:
        today_text = "[earlier entries of today omitted]\n" + today_text[-budget * 3 :]
    return known_parts, today_text


async def write_facts(
    facts: Sequence[str],
    *,
    ledger: Ledger,
    runtime: RuntimeContext,
    clock: Callable[[], datetime],
    reason: str,
    write_lock: Callable[[], AbstractAsyncContextManager[None]],
) -> FlushResult:
    """Append ``facts`` to the ledger of the day it is now, minus those another writer put
    there meanwhile."""
    if not facts:
        return FlushResult("nothing")
    async with write_lock():  # only the append waits for other writers, never the model
        now = clock()
        day = now.date()
        current = await ledger.read(ledger.place.ledger(day))
        kept = parse_facts("\n".join(f"- {f}" for f in facts), [current])
        if not kept:
            return FlushResult("nothing")
        heading = f"{now:%H:%M} · session {runtime.session} · {reason}"
        path = await ledger.append(day, heading, kept)
    return FlushResult("written", tuple(kept), path)


async def facts_in_context(
    *,
    ledger: Ledger,
    config: MemoryConfig,
    estimator: TokenEstimator,
    runtime: RuntimeContext,
    clock: Callable[[], datetime],
    emit: Emit,
    write_lock: Callable[[], AbstractAsyncContextManager[None]],
) -> FactsRequest:
    """The flush before compaction as part of a summary request written in context.

    The instruction shows what memory holds, as a transcript flush would; the answer is read
    as a flush answer (:func:`~harnessed.memory.prompts.parse_facts`) and written with a
    ``memory_flush`` event (``in_context: true``). An answer that is no flush answer (empty,
    prose without bullets) writes nothing and reports ``False``: the caller flushes from a
    transcript instead.
    """
    known_parts, today_text = await known_memory(ledger, config, estimator, clock)

    async def save(answer: str) -> bool:
        if not readable_facts(answer):
            return False
        try:
            facts = parse_facts(answer, [*known_parts, today_text])
            result = await write_facts(
                facts,
                ledger=ledger,
                runtime=runtime,
                clock=clock,
                reason="compaction",
                write_lock=write_lock,
            )
        except Exception as exc:
            logger.warning(
                "memory flush (compaction) of session %s failed; nothing was written",
                runtime.session,
                exc_info=True,
            )
            result = FlushResult("failed", error=type(exc).__name__)
        emit("memory_flush", {**result.payload("compaction", runtime.session), "in_context": True})
        return True

    return FactsRequest(
        in_context_flush_prompt("\n\n".join(known_parts), today_text),
        config.max_output_tokens,
        save,
    )
