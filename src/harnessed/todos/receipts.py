"""Superseded ``todo_write`` receipts: a request-only view of the history.

The current task list is in ``TASK_STATE`` at every request. Earlier ``todo_write`` calls in the
conversation still carry the lists they sent, and their results the receipts of those lists;
a model reading them could act on a list that no longer exists. This view shows every
``todo_write`` call answered before the latest successful one as superseded: its arguments and
its result are replaced by a short marker pointing to ``TASK_STATE``. The stored history is
never changed (the compiler applies views to the request only), message ids and the tool-call
structure are kept, and a marker never replaces text shorter than itself, so the view never
makes a request larger than the compiler measured.

The view runs before every request, so it remembers per session what it found last time and
only looks at messages appended since (a compaction or eviction that replaced earlier messages
makes it look at everything again).
"""

from __future__ import annotations

import json
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from harnessed.context.render import PROJECTION_KEY
from harnessed.messages import ContentBlock, Msg, ToolResultBlock, ToolUseBlock, shared_prefix
from harnessed.runtime import SessionRef
from harnessed.state.agent_state import AgentState

__all__ = ["SupersededTodoReceipts"]

RESULT_MARKER = "[superseded by a later todo_write; the current list is in TASK_STATE]"
ARGS_MARKER = {"superseded": "see TASK_STATE"}
_ARGS_MARKER_CHARS = len(json.dumps(ARGS_MARKER))
_SESSIONS_KEPT = 2_048


@dataclass(frozen=True, slots=True)
class _Result:
    """A ``todo_write`` result found in the history."""

    index: int
    call_id: str
    ok: bool
    opener: int
    """Index of the assistant message holding the call (-1 if there is none)."""


@dataclass(slots=True)
class _Memo:
    messages: list[Msg] = field(default_factory=list)
    results: list[_Result] = field(default_factory=list)
    shown: list[Msg] = field(default_factory=list)
    """The projected messages before the latest successful result, as shown last time."""


class SupersededTodoReceipts:
    """A :class:`~harnessed.capabilities.hooks.HistoryView` for the ``todo_write`` tool."""

    def __init__(self, tool_name: str = "todo_write") -> None:
        self.tool_name = tool_name
        self._memos: OrderedDict[SessionRef, _Memo] = OrderedDict()
        # projected copies per original message: each old receipt is rebuilt only when the set
        # of its superseded calls changes
        self._marked: weakref.WeakKeyDictionary[Msg, tuple[frozenset[str], Msg]] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, history: Sequence[Msg], state: AgentState) -> Sequence[Msg]:
        memo = self._memo(state.key)
        shared = shared_prefix(memo.messages, history)
        results = [r for r in memo.results if r.index < shared]
        results.extend(self._scan(history, shared))
        latest = next((r.index for r in reversed(results) if r.ok), None)
        reuse = latest is not None and len(memo.shown) == latest and shared >= latest
        memo.messages, memo.results = list(history), results
        if latest is None:
            memo.shown = []
            return history
        if reuse:
            return [*memo.shown, *history[latest:]]
        prefix = self._project(history[:latest], [r for r in results if r.index < latest])
        memo.shown = prefix
        return [*prefix, *history[latest:]]

    def _memo(self, key: SessionRef) -> _Memo:
        memo = self._memos.get(key)
        if memo is None:
            memo = self._memos[key] = _Memo()
        self._memos.move_to_end(key)
        while len(self._memos) > _SESSIONS_KEPT:
            self._memos.popitem(last=False)
        return memo

    def _scan(self, history: Sequence[Msg], start: int) -> list[_Result]:
        opener = start - 1
        while opener >= 0 and history[opener].role == "tool":
            opener -= 1
        found: list[_Result] = []
        for index in range(start, len(history)):
            message = history[index]
            if message.role != "tool":
                opener = index
                continue
            for block in message.content:
                if isinstance(block, ToolResultBlock) and block.name == self.tool_name:
                    found.append(_Result(index, block.tool_use_id, not block.is_error, opener))
        return found

    def _project(self, prefix: Sequence[Msg], superseded: list[_Result]) -> list[Msg]:
        """``prefix`` with the superseded calls and results marked."""
        ids = {r.call_id for r in superseded}
        touched = dict.fromkeys(i for r in superseded for i in (r.opener, r.index) if i >= 0)
        shown = list(prefix)
        for index in touched:
            message = prefix[index]
            marked = frozenset(_block_ids(message) & ids)
            cached = self._marked.get(message)
            if cached is None or cached[0] != marked:
                cached = (marked, _mark(message, ids))
                self._marked[message] = cached
            shown[index] = cached[1]
        return shown


def _block_ids(message: Msg) -> set[str]:
    ids: set[str] = set()
    for block in message.content:
        if isinstance(block, ToolUseBlock):
            ids.add(block.id)
        elif isinstance(block, ToolResultBlock):
            ids.add(block.tool_use_id)
    return ids


def _mark(message: Msg, superseded: set[str]) -> Msg:
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
