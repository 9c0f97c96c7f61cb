"""Metadata keys that mark what compaction did to a message, so nothing is done twice.

Marked messages keep their id; the mark says what happened and how big the original was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessed.messages import Msg, ToolResultBlock

__all__ = [
    "ARGS_TRUNCATED_KEY",
    "OFFLOAD_FAILED_KEY",
    "OFFLOAD_KEY",
    "PRUNED_KEY",
    "SUMMARY_KEY",
    "SUMMARY_NAME",
    "has_long_result",
    "is_summary",
    "marks",
    "result_tool_name",
]

OFFLOAD_KEY = "harness_offload"
"""On a tool message whose result was written to a file: ``{call_id: {path, chars, sha256}}``."""
OFFLOAD_FAILED_KEY = "harness_offload_failed"
"""On a tool message whose large result could not be written: ``{call_id: error type}``."""
PRUNED_KEY = "harness_pruned"
"""On a tool message whose result was shortened: ``{call_id: original_chars}``."""
ARGS_TRUNCATED_KEY = "harness_args_truncated"
"""On an assistant message whose call arguments were cut: ``{call_id: [argument names]}``."""
SUMMARY_KEY = "harness_summary"
"""On a summary message: how many messages it stands for, and their first and last ids."""
SUMMARY_NAME = "conversation_summary"
"""The ``name`` of a summary message."""


def is_summary(message: Msg) -> bool:
    return SUMMARY_KEY in message.metadata


_NONE: Mapping[str, Any] = {}


def marks(message: Msg, key: str) -> Mapping[str, Any]:
    """The per-call marks of ``key`` on ``message`` (empty when unmarked)."""
    value = message.metadata.get(key)
    if value is None:
        return _NONE
    return value if isinstance(value, Mapping) else _NONE


def has_long_result(message: Msg, limit: int) -> bool:
    """Whether a tool message holds a result longer than ``limit`` characters."""
    for block in message.content:
        if isinstance(block, ToolResultBlock) and len(block.content) > limit:
            return True
    return False


def result_tool_name(message: Msg, block: ToolResultBlock) -> str | None:
    return block.name or message.name
