"""Eviction: a tool result too large for the context is written to a workspace file.

Runs before every reasoning request as the compiler's ``evictor``. A result longer than
``max_result_chars`` (or than ``max_window_share`` of the input limit; from a tool not in
``excluded_tools``) is written to
``<path>/<scope dirs>/<call-id>-<16 hex of its SHA-256>`` and replaced, in the working history
only, by a notice with its size, the path, how to read it, and a head and tail preview. The
session log keeps the original message.

The file name is derived from the content, so preparing the same request twice writes the file
once. A failed write leaves the result in the history as it was (and emits a
``tool_result_offload_failed`` event); it is marked so that, should it not fit the budget,
pruning's head-and-tail preview tells the model it could not be saved and where the full text
is (the session log). An evicted result is marked in its message's metadata and never evicted
again.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Sequence

from harnessed.capabilities.hooks import HistoryBudget, HistoryOutcome
from harnessed.compaction.config import ToolResultEvictionConfig
from harnessed.compaction.markers import (
    OFFLOAD_FAILED_KEY,
    OFFLOAD_KEY,
    PRUNED_KEY,
    has_long_result,
    marks,
    result_tool_name,
)
from harnessed.compaction.prompts import eviction_notice
from harnessed.context.meter import shared_prefix
from harnessed.messages import ContentBlock, Msg, ToolResultBlock
from harnessed.workspace.layout import Workspace
from harnessed.workspace.paths import encode_part, join

__all__ = ["OFFLOAD_FAILED_EVENT", "OFFLOAD_TRANSFORM", "ToolResultEvictor"]

logger = logging.getLogger(__name__)

OFFLOAD_TRANSFORM = "tool_result_offload"
_SESSIONS_KEPT = 1_024
OFFLOAD_FAILED_EVENT = "tool_result_offload_failed"
"""Custom event emitted when a large result could not be written (it stays in context)."""


class ToolResultEvictor:
    """The compiler's ``evictor``: writes large tool results out of the context."""

    def __init__(
        self, config: ToolResultEvictionConfig, workspace: Workspace, agent_name: str
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.agent_name = agent_name
        self._checked: OrderedDict[tuple[str, str], list[Msg]] = OrderedDict()
        """Per (user, session): the leading messages already checked, to skip next time."""

    def directory(self, user_id: str, session_id: str) -> str:
        """Where this agent's evicted results go for one user and session (by scope)."""
        ws = self.workspace
        scoped = ws.large_tool_results_dir(self.agent_name, user_id, session_id)
        below = scoped[len(ws.LARGE_TOOL_RESULTS_DIR) :]  # "" or "/<agent>/…"
        return join(self.config.path, below)

    async def __call__(self, history: Sequence[Msg], budget: HistoryBudget) -> HistoryOutcome:
        config = self.config
        runtime = budget.info.runtime
        max_chars = config.limit(budget.tokens)
        preview = config.preview(budget.tokens)
        directory: str | None = None
        changed: list[Msg] | None = None
        offloaded = 0
        session = (runtime.user_id, runtime.session)
        start = shared_prefix(self._checked.pop(session, []), history)
        failed_at: int | None = None
        for index in range(start, len(history)):
            message = history[index]
            if message.role != "tool" or not has_long_result(message, max_chars):
                continue
            done = marks(message, OFFLOAD_KEY)
            candidates = [
                (position, block)
                for position, block in enumerate(message.content)
                if isinstance(block, ToolResultBlock)
                and len(block.content) > max_chars
                and block.tool_use_id not in done
                and block.tool_use_id not in marks(message, PRUNED_KEY)
                and result_tool_name(message, block) not in config.excluded_tools
            ]
            if not candidates:
                continue
            if directory is None:
                directory = self.directory(runtime.user_id, runtime.session)
            blocks: list[ContentBlock] = list(message.content)
            new_marks = dict(done)
            unsaved = dict(marks(message, OFFLOAD_FAILED_KEY))
            for position, block in candidates:
                digest = _digest(block.content)
                path, error = await self._write(directory, block, digest, budget)
                if path is None:
                    failed_at = index if failed_at is None else failed_at
                    unsaved[block.tool_use_id] = error
                    continue
                blocks[position] = ToolResultBlock(
                    block.tool_use_id,
                    eviction_notice(path, block.content, preview),
                    is_error=block.is_error,
                    name=block.name,
                )
                new_marks[block.tool_use_id] = {
                    "path": path,
                    "chars": len(block.content),
                    "sha256": digest,
                }
                offloaded += 1
            if len(new_marks) == len(done) and unsaved == marks(message, OFFLOAD_FAILED_KEY):
                continue
            if changed is None:
                changed = list(history)
            metadata = {**message.metadata, OFFLOAD_KEY: new_marks}
            if unsaved:
                metadata[OFFLOAD_FAILED_KEY] = unsaved
            if not new_marks:
                metadata.pop(OFFLOAD_KEY)
            changed[index] = message.replace(content=tuple(blocks), metadata=metadata)
        result = changed if changed is not None else history
        # Remember what needs no second look (a failed write is tried again next time).
        self._checked[session] = list(result[: len(result) if failed_at is None else failed_at])
        while len(self._checked) > _SESSIONS_KEPT:
            self._checked.popitem(last=False)
        transforms = (OFFLOAD_TRANSFORM,) if offloaded else ()
        return HistoryOutcome(result, transforms)

    async def _write(
        self, directory: str, block: ToolResultBlock, digest: str, budget: HistoryBudget
    ) -> tuple[str | None, str]:
        """Write the full text once; its path, or ``None`` and why it could not be saved."""
        name = f"{encode_part(block.tool_use_id, 'tool call id')}-{digest[:16]}"
        path = join(directory, name)
        fs = self.workspace.fs
        try:
            if not await fs.exists(path):
                await fs.write_text(path, block.content)
        except Exception as exc:  # any backend failure: keep the result in context instead
            logger.warning(
                "could not write the large result of tool call %s (%d chars) to %s: %s; it "
                "stays in the history, and if it does not fit the budget the model sees only "
                "its beginning and end (the session log keeps it in full)",
                block.tool_use_id,
                len(block.content),
                path,
                exc,
            )
            budget.info.emit(
                OFFLOAD_FAILED_EVENT,
                {
                    "call_id": block.tool_use_id,
                    "path": path,
                    "chars": len(block.content),
                    "error_type": type(exc).__name__,
                    "error": str(exc)[:500],
                    "kept": "history",
                },
            )
            return None, type(exc).__name__
        return path, ""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
