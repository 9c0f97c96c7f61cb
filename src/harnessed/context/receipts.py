"""Superseded ``todo_write`` receipts: a request-only view of the history.

The current task list is in ``TASK_STATE`` at every request. Earlier ``todo_write`` calls in the
conversation still carry the lists they sent, and their results the receipts of those lists;
a model reading them could act on a list that no longer exists. This view shows every
``todo_write`` call answered before the latest successful one as superseded: its arguments and
its result are replaced by a short marker pointing to ``TASK_STATE``. The stored history is
never changed (the compiler applies views to the request only), message ids and the tool-call
structure are kept, and a marker never replaces text shorter than itself, so the view never
makes a request larger than the compiler measured.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from harnessed.context.render import PROJECTION_KEY
from harnessed.messages import ContentBlock, Msg, ToolResultBlock, ToolUseBlock
from harnessed.state.agent_state import AgentState

__all__ = ["SupersededTodoReceipts"]

RESULT_MARKER = "[superseded by a later todo_write; the current list is in TASK_STATE]"
ARGS_MARKER = {"superseded": "see TASK_STATE"}
_ARGS_MARKER_CHARS = len(json.dumps(ARGS_MARKER))


class SupersededTodoReceipts:
    """A :class:`~harnessed.context.hooks.HistoryView` for the ``todo_write`` tool."""

    def __init__(self, tool_name: str = "todo_write") -> None:
        self.tool_name = tool_name

    def __call__(self, history: Sequence[Msg], state: AgentState) -> Sequence[Msg]:
        latest = self._latest_success(history)
        if latest is None:
            return history
        superseded: set[str] = set()
        for message in history[:latest]:
            if message.role == "tool":
                for block in message.content:
                    if isinstance(block, ToolResultBlock) and block.name == self.tool_name:
                        superseded.add(block.tool_use_id)
        if not superseded:
            return history
        shown = list(history)
        for index in range(latest):
            message = shown[index]
            if message.role == "tool" or message.role == "assistant":
                changed = self._mark(message, superseded)
                if changed is not message:
                    shown[index] = changed
        return shown

    def _latest_success(self, history: Sequence[Msg]) -> int | None:
        for index in range(len(history) - 1, -1, -1):
            message = history[index]
            if message.role != "tool":
                continue
            for block in message.content:
                if (
                    isinstance(block, ToolResultBlock)
                    and block.name == self.tool_name
                    and not block.is_error
                ):
                    return index
        return None

    def _mark(self, message: Msg, superseded: set[str]) -> Msg:
        blocks: list[ContentBlock] = []
        changed = False
        for block in message.content:
            if (
                isinstance(block, ToolResultBlock)
                and block.tool_use_id in superseded
                and len(block.content) > len(RESULT_MARKER)
            ):
                block = ToolResultBlock(
                    block.tool_use_id, RESULT_MARKER, is_error=block.is_error, name=block.name
                )
                changed = True
            elif (
                isinstance(block, ToolUseBlock)
                and block.id in superseded
                and len(json.dumps(dict(block.input), ensure_ascii=False)) > _ARGS_MARKER_CHARS
            ):
                block = ToolUseBlock(block.id, block.name, dict(ARGS_MARKER))
                changed = True
            blocks.append(block)
        if not changed:
            return message
        return message.replace(
            content=tuple(blocks),
            metadata={**message.metadata, PROJECTION_KEY: "superseded_receipt"},
        )
