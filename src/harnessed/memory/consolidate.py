"""Consolidation (ledger entries → a rewritten ``MEMORY.md``) and maintenance.

Consolidation takes the ledger text after the watermark (current and archived ledgers, oldest
first, in chunks the model can read at once) and asks for the complete new ``MEMORY.md`` under
the token cap. Each accepted answer is written, then the watermark moves past the entries it
merged. An answer that is no file changes nothing: empty, one that only says there is nothing
(``NOTHING``, the flush's word, or no word at all), one far shorter than the file it would
replace (under :data:`MIN_KEPT_FRACTION` of it, or of the cap when the file is over the cap),
or one still over the cap after one request to shorten it. ``MEMORY.md`` and the watermark
stay as they were, the entries stay pending (the next consolidation retries them) and
:class:`ConsolidationError` says why.

Before the first answer replaces ``MEMORY.md``, the text it held is kept in
``memory/archive/MEMORY-<UTC time>-<n>.md`` (names sort by time; a second version in the same
second gets the next ``n``, nothing is overwritten); the newest
``MemoryConfig.memory_versions_kept`` versions are kept.

Maintenance moves ledgers older than ``archive_after_days`` to ``memory/archive/``, then
consolidates, and records when it ran.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from harnessed.memory.auxiliary import AuxiliaryModel, Emit
from harnessed.memory.config import MemoryConfig
from harnessed.memory.ledger import Ledger, Watermark
from harnessed.memory.prompts import (
    CONSOLIDATE_INSTRUCTIONS,
    consolidate_prompt,
    parse_document,
    says_nothing,
)
from harnessed.runtime import RuntimeContext
from harnessed.tokens import TokenEstimator
from harnessed.workspace.paths import join

__all__ = [
    "ConsolidationError",
    "ConsolidationResult",
    "MaintenanceResult",
    "consolidate",
    "keep_version",
    "maintain",
    "versions",
]

CHUNK_TOKENS = 16_000
"""The most ledger text one consolidation request reads."""
MIN_KEPT_FRACTION = 0.2
"""An answer under this fraction of the file it replaces (or of the cap, if smaller) is
refused as a lost file, once the file has at least :data:`SMALL_MEMORY_TOKENS`."""
SMALL_MEMORY_TOKENS = 50
"""A ``MEMORY.md`` this small may shrink freely (an answer that says nothing is still refused)."""
VERSION_PREFIX = "MEMORY-"


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
        if says_nothing(document):
            raise ConsolidationError(
                f"the consolidation model answered {_clip(document)!r} instead of a MEMORY.md; "
                "nothing was changed and the ledger entries stay pending"
            )
        tokens = estimator.count_text(document)
        before = estimator.count_text(current) if current.strip() else 0
        if before >= SMALL_MEMORY_TOKENS and tokens < MIN_KEPT_FRACTION * min(before, cap):
            raise ConsolidationError(
                f"the consolidation model answered a MEMORY.md of about {tokens} tokens for one "
                f"of about {before}: far shorter than the file it would replace, so most of it "
                "would be lost; nothing was changed and the ledger entries stay pending"
            )
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


def _clip(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def keep_version(ledger: Ledger, text: str, now: float | None, kept: int) -> str:
    """Store ``text`` (the ``MEMORY.md`` about to be replaced) as the newest version in the
    archive, drop versions beyond the newest ``kept``; returns the version's path."""
    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    base = f"{VERSION_PREFIX}{stamp:%Y%m%dT%H%M%S}Z-"
    folder = ledger.place.archive_dir
    same_second = [
        posixpath.basename(p)[len(base) : -len(".md")]
        for p in await versions(ledger)
        if posixpath.basename(p).startswith(base)
    ]  # the next number after the last one of this second (a pruned gap is never reused)
    number = 1 + max((int(n) for n in same_second if n.isdigit()), default=0)
    path = join(folder, f"{base}{number:04d}.md")
    await ledger.fs.write_text(path, text)
    for old in (await versions(ledger))[:-kept]:
        await ledger.fs.delete(old)
    return path


async def versions(ledger: Ledger) -> list[str]:
    """The kept previous versions of the scope's ``MEMORY.md``, oldest first."""
    folder = ledger.place.archive_dir
    if not await ledger.fs.exists(folder):
        return []
    names = [
        i.path
        for i in await ledger.fs.ls(folder)
        if not i.is_dir
        and posixpath.basename(i.path).startswith(VERSION_PREFIX)
        and i.path.endswith(".md")
    ]
    return sorted(names, key=posixpath.basename)


async def consolidate(
    ledger: Ledger,
    *,
    aux: AuxiliaryModel,
    config: MemoryConfig,
    estimator: TokenEstimator,
    runtime: RuntimeContext,
    emit: Emit,
    now: float | None = None,
) -> ConsolidationResult:
    """Merge pending ledger entries into the scope's ``MEMORY.md`` (caller holds the lock);
    ``now`` (seconds since the epoch, default: the clock) names the kept previous version."""
    state = await ledger.state()
    pending = await ledger.pending(state.watermark)
    if not pending:
        return ConsolidationResult("up_to_date", watermark=state.watermark)
    path = ledger.place.memory_file
    current = original = await ledger.read(path)
    requests = tokens = 0
    for entries, mark in _chunks(pending, CHUNK_TOKENS, estimator):
        previous = current
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
        if current != previous:
            if original.strip():  # the text it replaces is kept before the first write
                await keep_version(ledger, original, now, config.memory_versions_kept)
                original = ""
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
                now=now,
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
