"""Built-in memory tools: ``memory_search``, ``memory_get`` and ``memory_save``.

They work on the calling user's memory scope (``MEMORY.md``, the shared workspace
``MEMORY.md`` and the daily ledgers) as placed by the workspace's isolation scope;
``memory_get`` reads nothing else, and the scope comes from the call's identity, never from the
model's arguments.
"""

from __future__ import annotations

from harnessed.memory.config import MemoryConfig
from harnessed.memory.lookup import MemoryPathError
from harnessed.memory.manager import MemoryManager
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool
from harnessed.workspace.errors import WorkspaceError

__all__ = ["MEMORY_TOOL_NAMES", "memory_tools", "save_description"]

MEMORY_TOOL_NAMES = ("memory_search", "memory_get", "memory_save")
MAX_MEMORY_RESULTS = 100


def memory_tools(memory: MemoryManager) -> list[Tool]:
    """The three memory tools over ``memory`` (search and get are read-only)."""

    @tool(read_only=True)
    async def memory_search(ctx: ToolContext, query: str, max_results: int = 20) -> str:
        """Search long-term memory (MEMORY.md, memory/*.md), ignoring case.

        Lines with every word match (else lines with any). A result ``path#line: text`` is read
        around with memory_get.

        Args:
            max_results: 1-100.
        """
        if not 1 <= max_results <= MAX_MEMORY_RESULTS:
            raise ToolError(
                f"max_results must be between 1 and {MAX_MEMORY_RESULTS}, got {max_results}"
            )
        try:
            found, every_word = await memory.search(ctx.runtime, query, max_results=max_results)
        except (ValueError, WorkspaceError) as exc:
            raise ToolError(str(exc)) from exc
        if not found:
            return f"Nothing in memory matches {query!r}."
        head = (
            f"{len(found)} line(s) matching {query!r}:"
            if every_word
            else f"No line has every word of {query!r}; {len(found)} line(s) with some of them:"
        )
        return "\n".join([head, *(str(m) for m in found)])

    @tool(read_only=True)
    async def memory_get(
        ctx: ToolContext, path: str, start_line: int = 1, end_line: int | None = None
    ) -> str:
        """Read lines of a memory file (a path from memory_search), with line numbers.

        Args:
            path: e.g. ``MEMORY.md``.
            end_line: Default: up to 500 lines on.
        """
        try:
            return await memory.get(ctx.runtime, path, start_line, end_line)
        except (MemoryPathError, ValueError, WorkspaceError) as exc:
            raise ToolError(str(exc)) from exc

    @tool(description=save_description(memory.config))
    async def memory_save(ctx: ToolContext, content: str) -> str:
        """Append facts to today's ledger (the model reads :func:`save_description`).

        Args:
            content: One fact per line, each clear on its own.
        """
        try:
            path = await memory.save(ctx.runtime, content)
        except (ValueError, WorkspaceError) as exc:
            raise ToolError(str(exc)) from exc
        return f"Saved to {path}."

    return [memory_search, memory_get, memory_save]


def save_description(config: MemoryConfig) -> str:
    """What ``memory_save`` tells the model: it writes the daily ledger, never ``MEMORY.md``,
    and when (if ever) the ledger reaches ``MEMORY.md`` under this configuration."""
    head = (
        "Save durable facts (preferences, decisions, commitments, names, dates) to today's "
        "memory ledger, memory/YYYY-MM-DD.md; memory_search finds them at once. It never edits "
        "MEMORY.md (shown at the start of every conversation). "
    )
    minutes = config.maintenance_interval_minutes
    if not config.consolidate:
        tail = "Nothing copies them into MEMORY.md automatically."
    elif minutes is None:
        tail = "They reach MEMORY.md only when the application runs a consolidation."
    elif minutes == 0:
        tail = "A consolidation after each conversation turn merges them into MEMORY.md."
    else:
        tail = f"A consolidation merges them into MEMORY.md at most once every {minutes:g} minutes."
    return head + tail
