"""Consolidation (ledger entries → a rewritten ``MEMORY.md``) and maintenance.

Consolidation takes the ledger text after the watermark (current and archived ledgers, oldest
first, in chunks the model can read at once) and asks for the complete new ``MEMORY.md`` under
the token cap. Each accepted answer is written, then the watermark moves past the entries it
merged. An empty answer, or one still over the cap after one request to shorten it, changes
nothing: ``MEMORY.md`` and the watermark stay as they were and the entries stay pending.

Maintenance moves ledgers older than ``archive_after_days`` to ``memory/archive/``, then
consolidates, and records when it ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Literal

from harnessed.memory.auxiliary import AuxiliaryModel, Emit
from harnessed.memory.config import MemoryConfig
from harnessed.memory.ledger import Ledger, Watermark
from harnessed.memory.prompts import CONSOLIDATE_INSTRUCTIONS, consolidate_prompt, parse_document
from harnessed.runtime import RuntimeContext
from harnessed.tokens import TokenEstimator

__all__ = [
    "ConsolidationError",
    "ConsolidationResult",
    "MaintenanceResult",
    "consolidate",
    "maintain",
]

CHUNK_TOKENS = 16_000
"""The most ledger text one consolidation request reads."""


class ConsolidationError(Exception):
    """A consolidation answer could not be used; ``MEMORY.md`` was left unchanged."""


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    status: Literal["merged", "up_to_date"]
    requests: int = 0
    memory_tokens: int = 0
    watermark: Watermark = field(default_factory=Watermark)


@dataclass(frozen=True, slots=True)
class MaintenanceResult:
    archived: tuple[str, ...]
    consolidation: ConsolidationResult | None


def _chunks(
    pending: list[tuple[str, int, str]], budget: int, estimator: TokenEstimator
) -> list[tuple[str, Watermark]]:
    """Pending ledger text cut at line ends into pieces of about ``budget`` tokens, each with
    the watermark that marks it merged."""
    chunks: list[tuple[str, Watermark]] = []
    parts: list[str] = []
    used = 0
    last = Watermark()
    for name, start, text in pending:
        offset = start
        parts.append(f"### {name}\n")
        for line in text.splitlines(keepends=True):
            cost = estimator.count_text(line)
            if used and used + cost > budget:
                chunks.append(("".join(parts), Watermark(name, offset)))
                parts, used = [f"### {name} (continued)\n"], 0
            parts.append(line)
            used += cost
            offset += len(line)
        if not text.endswith("\n"):
            parts.append("\n")
        last = Watermark(name, offset)
    if used:
        chunks.append(("".join(parts), last))
    return chunks


async def _merge(
    current: str,
    entries: str,
    *,
    aux: AuxiliaryModel,
    config: MemoryConfig,
    estimator: TokenEstimator,
    runtime: RuntimeContext,
    emit: Emit,
) -> tuple[str, int, int]:
    """The new document, its tokens and the number of requests it took."""
    cap = config.memory_max_tokens
    note = ""
    for attempt in (1, 2):
        answer = await aux.ask(
            runtime,
            CONSOLIDATE_INSTRUCTIONS,
            consolidate_prompt(current, entries, cap, note),
            max_output_tokens=cap + cap // 2,
            emit=emit,
        )
        document = parse_document(answer)
        if not document.strip():
            raise ConsolidationError(
                "the consolidation model returned an empty MEMORY.md; nothing was changed"
            )
        tokens = estimator.count_text(document)
        if tokens <= cap:
            return document, tokens, attempt
        note = (
            f"Your previous answer was about {tokens} tokens, over the limit of {cap}. "
            "Return a shorter file: merge related facts and drop the least useful ones."
        )
    raise ConsolidationError(
        f"the consolidated MEMORY.md stayed over its cap of {cap} tokens (about {tokens}); "
        "nothing was changed and the ledger entries stay pending"
    )


async def consolidate(
    ledger: Ledger,
    *,
    aux: AuxiliaryModel,
    config: MemoryConfig,
    estimator: TokenEstimator,
    runtime: RuntimeContext,
    emit: Emit,
) -> ConsolidationResult:
    """Merge pending ledger entries into the scope's ``MEMORY.md`` (caller holds the lock)."""
    state = await ledger.state()
    pending = await ledger.pending(state.watermark)
    if not pending:
        return ConsolidationResult("up_to_date", watermark=state.watermark)
    path = ledger.place.memory_file
    current = await ledger.read(path)
    requests = tokens = 0
    for entries, mark in _chunks(pending, CHUNK_TOKENS, estimator):
        current, tokens, used = await _merge(
            current,
            entries,
            aux=aux,
            config=config,
            estimator=estimator,
            runtime=runtime,
            emit=emit,
        )
        requests += used
        await ledger.fs.write_text(path, current)
        state = replace(state, watermark=mark)
        await ledger.save_state(state)
    return ConsolidationResult("merged", requests, tokens, state.watermark)


async def maintain(
    ledger: Ledger,
    *,
    today: date,
    now: float,
    aux: AuxiliaryModel,
    config: MemoryConfig,
    estimator: TokenEstimator,
    runtime: RuntimeContext,
    emit: Emit,
) -> MaintenanceResult:
    """Archive old ledgers, then consolidate; records ``now`` as the last maintenance when
    there was something to do (a scope without memory files gets none written)."""
    archived = await ledger.archive_before(today - timedelta(days=config.archive_after_days))
    result = None
    worked = bool(archived)
    try:
        if config.consolidate:
            result = await consolidate(
                ledger,
                aux=aux,
                config=config,
                estimator=estimator,
                runtime=runtime,
                emit=emit,
            )
            worked = worked or result.status == "merged"
    except BaseException:
        worked = True  # an attempt counts: the next one waits for the interval
        raise
    finally:
        if worked:
            state = await ledger.state()
            await ledger.save_state(replace(state, maintained_at=now))
    return MaintenanceResult(tuple(archived), result)
