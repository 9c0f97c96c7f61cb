"""Pruning: old, long tool output becomes a short head and tail preview (no model call).

Walking from the newest message back, whole tool results are kept in full until together they
reach ``protect_tokens``: the result that crosses the line is kept too. Older results longer
than ``max_output_chars`` are prunable; they are shortened only when together they reach
``minimum_tokens``, so the history changes in a few worthwhile batches (which also keeps
provider prompt caches warm) rather than a little at every step. An evicted result shrinks to
the pointer to its file. Excluded tools are neither counted nor pruned.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from harnessed.compaction.config import PruneConfig
from harnessed.compaction.markers import (
    OFFLOAD_FAILED_KEY,
    OFFLOAD_KEY,
    PRUNED_KEY,
    has_long_result,
    marks,
    result_tool_name,
)
from harnessed.compaction.prompts import eviction_header, prune_marker
from harnessed.context.meter import HistoryMemo
from harnessed.messages import ContentBlock, Msg, ToolResultBlock

__all__ = ["PRUNE_TRANSFORM", "PruneMemo", "Pruned", "prune_tool_output"]

PRUNE_TRANSFORM = "tool_output_prune"


@dataclass(frozen=True, slots=True)
class Pruned:
    history: Sequence[Msg]
    results: int
    """How many tool results were shortened."""


def prune_tool_output(
    history: Sequence[Msg],
    config: PruneConfig,
    count: Callable[[Msg], int],
    *,
    protect_tokens: int | None = None,
    minimum_tokens: int | None = None,
    before: int | None = None,
    memo: PruneMemo | None = None,
) -> Pruned:
    """Shorten old tool output; ``before`` limits pruning to ``history[:before]``.

    ``protect_tokens`` and ``minimum_tokens`` override the config (compaction asks for harder
    pruning when the history does not fit). With a ``memo`` (kept per session), a history
    that has too little prunable output is recognised by looking only at the protected tail
    and at the messages added since the last call.
    """
    protect = config.protect_tokens if protect_tokens is None else protect_tokens
    minimum = config.minimum_tokens if minimum_tokens is None else minimum_tokens
    if (
        memo is not None
        and before is None
        and minimum > 0
        and _prunable_at_most(history, config, count, protect, memo) < minimum
    ):
        return Pruned(history, 0)
    limit = len(history) if before is None else before
    protecting = protect > 0
    protected = 0
    prunable = 0
    victims: dict[int, list[int]] = {}  # message index -> block positions
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role != "tool":
            continue
        if not protecting and not has_long_result(message, config.max_output_chars):
            continue  # past the protected part, a message with nothing long does not matter
        done = marks(message, PRUNED_KEY)
        results = [
            (position, block)
            for position, block in enumerate(message.content)
            if isinstance(block, ToolResultBlock)
            and result_tool_name(message, block) not in config.excluded_tools
        ]
        if not results:
            continue
        if done and not protecting:
            break  # everything older was handled by the pass that pruned this message
        total_chars = sum(len(block.content) for _, block in results) or 1
        message_tokens = count(message)
        for position, block in reversed(results):
            tokens = message_tokens * len(block.content) // total_chars
            if protecting:
                if protected < protect:  # whole results: the one crossing the line is kept
                    protected += tokens
                    continue
                protecting = False
            if block.tool_use_id in done:
                continue
            if index < limit and len(block.content) > config.max_output_chars:
                victims.setdefault(index, []).append(position)
                prunable += tokens
        if done and not protecting:
            break  # (as above, once this message's results left the protected part)
    if not victims or prunable < minimum:
        return Pruned(history, 0)
    out = list(history)
    for index, positions in victims.items():
        out[index] = _shortened(history[index], positions, config.max_output_chars)
    return Pruned(out, sum(len(p) for p in victims.values()))


def _eligible_tokens(message: Msg, config: PruneConfig, count: Callable[[Msg], int]) -> int:
    """Tokens of ``message``'s results that pruning could shorten once they are old enough."""
    if message.role != "tool" or not has_long_result(message, config.max_output_chars):
        return 0
    results = [
        block
        for block in message.content
        if isinstance(block, ToolResultBlock)
        and result_tool_name(message, block) not in config.excluded_tools
    ]
    if not results:
        return 0
    done = marks(message, PRUNED_KEY)
    total_chars = sum(len(block.content) for block in results) or 1
    tokens = count(message)
    return sum(
        tokens * len(block.content) // total_chars
        for block in results
        if len(block.content) > config.max_output_chars and block.tool_use_id not in done
    )


class PruneMemo:
    """Running sums a session keeps between preparations (see :func:`prune_tool_output`)."""

    __slots__ = ("eligible", "weight")

    def __init__(self) -> None:
        self.eligible = HistoryMemo()
        """Tokens pruning could shorten, per message."""
        self.weight = HistoryMemo()
        """Tokens of tool output that counts toward the protected tail, per message."""


def _weight(message: Msg, config: PruneConfig, count: Callable[[Msg], int]) -> int:
    if message.role != "tool":
        return 0
    for block in message.content:
        if (
            isinstance(block, ToolResultBlock)
            and result_tool_name(message, block) not in config.excluded_tools
        ):
            return count(message)
    return 0


def _prunable_at_most(
    history: Sequence[Msg],
    config: PruneConfig,
    count: Callable[[Msg], int],
    protect: int,
    memo: PruneMemo,
) -> int:
    """An upper bound of what :func:`prune_tool_output` would find prunable.

    Both running sums only measure the messages added since the last call; the message where
    the protected tail ends is found by bisection and counted whole.
    """
    memo.eligible.total(history, lambda m: _eligible_tokens(m, config, count))
    total = memo.weight.total(history, lambda m: _weight(m, config, count))
    if total <= protect:
        return 0
    boundary = bisect_left(memo.weight.cumulative, total - protect)
    older = memo.eligible.cumulative[boundary - 1] if boundary > 0 else 0
    return _eligible_tokens(history[boundary], config, count) + older


def _shortened(message: Msg, positions: list[int], keep: int) -> Msg:
    blocks: list[ContentBlock] = list(message.content)
    pruned = dict(marks(message, PRUNED_KEY))
    offloaded = marks(message, OFFLOAD_KEY)
    unsaved_results = marks(message, OFFLOAD_FAILED_KEY)
    for position in positions:
        block = blocks[position]
        assert isinstance(block, ToolResultBlock)
        text = block.content
        offload = offloaded.get(block.tool_use_id)
        if isinstance(offload, Mapping) and "path" in offload:
            short = eviction_header(str(offload["path"]), int(offload.get("chars", len(text))))
            original = int(offload.get("chars", len(text)))
        else:
            head = keep // 2
            tail = keep - head
            unsaved = unsaved_results.get(block.tool_use_id)
            marker = prune_marker(len(text) - keep, str(unsaved) if unsaved else None)
            short = text[:head] + marker + text[len(text) - tail :]
            original = len(text)
        blocks[position] = ToolResultBlock(
            block.tool_use_id, short, is_error=block.is_error, name=block.name
        )
        pruned[block.tool_use_id] = original
    return message.replace(content=tuple(blocks), metadata={**message.metadata, PRUNED_KEY: pruned})
