"""Argument truncation: long string arguments of old tool calls are cut short (no model call).

Tool calls such as ``write_file`` carry whole files in their arguments; once the call is old,
the model rarely needs them again. Outside the kept tail, each string argument (at any depth)
longer than ``max_arg_length`` keeps its first ``keep_chars`` characters plus a marker. The
message keeps its id and metadata (plus a mark), the call keeps its id, and the session log
keeps the original call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harnessed.compaction.config import TruncateArgsConfig
from harnessed.compaction.markers import ARGS_TRUNCATED_KEY, marks
from harnessed.messages import ContentBlock, Msg, ToolUseBlock

__all__ = ["TRUNCATE_TRANSFORM", "Truncated", "truncate_tool_args"]

TRUNCATE_TRANSFORM = "tool_args_truncate"


@dataclass(frozen=True, slots=True)
class Truncated:
    history: Sequence[Msg]
    calls: int
    """How many tool calls had arguments cut."""


def truncate_tool_args(
    history: Sequence[Msg], config: TruncateArgsConfig, before: int
) -> Truncated:
    """Truncate long string arguments of the calls in ``history[:before]``."""
    out: list[Msg] | None = None
    calls = 0
    for index in range(min(before, len(history))):
        message = history[index]
        if message.role != "assistant":
            continue
        uses = message.tool_uses
        if not uses:
            continue
        done = marks(message, ARGS_TRUNCATED_KEY)
        blocks: list[ContentBlock] = list(message.content)
        new_marks = dict(done)
        for position, block in enumerate(message.content):
            if not isinstance(block, ToolUseBlock) or block.id in done:
                continue
            cut: list[str] = []
            arguments = {key: _cut(value, config, cut, key) for key, value in block.input.items()}
            if cut:
                blocks[position] = ToolUseBlock(block.id, block.name, arguments)
                new_marks[block.id] = cut
                calls += 1
        if len(new_marks) != len(done):
            if out is None:
                out = list(history)
            out[index] = message.replace(
                content=tuple(blocks),
                metadata={**message.metadata, ARGS_TRUNCATED_KEY: new_marks},
            )
    return Truncated(out if out is not None else history, calls)


def _cut(value: Any, config: TruncateArgsConfig, cut: list[str], where: str) -> Any:
    if isinstance(value, str):
        if len(value) > config.max_arg_length:
            cut.append(where)
            return value[: config.keep_chars] + config.marker
        return value
    if isinstance(value, Mapping):
        return {k: _cut(v, config, cut, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(v, config, cut, f"{where}[{i}]") for i, v in enumerate(value)]
    return value
