"""The transcript a summary model reads: messages as plain, labelled text, in chunks that fit.

Each message becomes one entry (``[user]``, ``[assistant]`` with its tool calls, ``[result of
tool …]``, ``[earlier summary]``). Long text is clipped to a head and tail, since the session log
keeps the full text; tool output is clipped harder than what people and the model wrote.
Entries are grouped into chunks under a token budget, so a prefix of any length can be
summarized piece by piece.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from harnessed.compaction.markers import is_summary, result_tool_name
from harnessed.messages import ImageBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["MAX_OUTPUT_CHARS", "MAX_TEXT_CHARS", "chunk_entries", "clip", "render_entry"]

MAX_TEXT_CHARS = 8_000
"""Most characters of a user, assistant or summary text shown in a transcript entry."""
MAX_OUTPUT_CHARS = 3_000
"""Most characters of a tool result or of a call's arguments shown in a transcript entry."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: head and tail around an omission note."""
    if len(text) <= limit:
        return text
    head = max(limit * 2 // 3, 0)
    tail = max(limit - head, 0)
    omitted = len(text) - head - tail
    return f"{text[:head]}\n… [{omitted:,} characters omitted] …\n{text[len(text) - tail :]}"


def render_entry(message: Msg, scale: float = 1.0) -> str:
    """One transcript entry. ``scale`` < 1 clips harder (used when chunks must shrink)."""
    text_limit = max(int(MAX_TEXT_CHARS * scale), 200)
    output_limit = max(int(MAX_OUTPUT_CHARS * scale), 200)
    if is_summary(message):
        return f"[earlier summary]\n{clip(message.text, text_limit * 2)}"
    lines: list[str] = []
    if message.role == "tool":
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                name = result_tool_name(message, block) or "tool"
                status = ", failed" if block.is_error else ""
                lines.append(f"[result of {name} (call {block.tool_use_id}){status}]")
                lines.append(clip(block.content, output_limit))
        return "\n".join(lines)
    lines.append(f"[{message.role}]")
    for block in message.content:
        if isinstance(block, TextBlock) and block.text.strip():
            lines.append(clip(block.text, text_limit))
        elif isinstance(block, ToolUseBlock):
            arguments = json.dumps(dict(block.input), ensure_ascii=False, default=str)
            lines.append(
                f"→ calls {block.name} (call {block.id}) with {clip(arguments, output_limit)}"
            )
        elif isinstance(block, ImageBlock):
            lines.append("[an image]")
    return "\n".join(lines)


def chunk_entries(
    messages: Sequence[Msg], count_text: Callable[[str], int], budget: int, scale: float = 1.0
) -> list[list[str]]:
    """Group the entries of ``messages`` into chunks of at most ``budget`` tokens each.

    An entry larger than the whole budget is clipped further until it fits, so every chunk
    respects the budget.
    """
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for message in messages:
        entry = render_entry(message, scale)
        size = count_text(entry) + 2
        while size > budget and len(entry) > 400:
            entry = clip(entry, len(entry) // 2)
            size = count_text(entry) + 2
        if current and used + size > budget:
            chunks.append(current)
            current, used = [], 0
        current.append(entry)
        used += size
    if current:
        chunks.append(current)
    return chunks
