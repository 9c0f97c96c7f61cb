"""The task list as a capability: :class:`TaskList` gives the model ``todo_write`` and shows
older ``todo_write`` calls as superseded in each request (the current list is in ``TASK_STATE``,
shown by :class:`~harnessed.contract.TaskContract`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.capabilities.base import Capability
from harnessed.capabilities.hooks import HistoryView
from harnessed.todos.receipts import SupersededTodoReceipts
from harnessed.todos.tools import todo_tools
from harnessed.tools.base import Tool

__all__ = ["TaskList"]


class TaskList(Capability):
    """The model keeps a task list with ``todo_write`` (``enable_task_list=True``)."""

    name = "task_list"

    def tools(self) -> Sequence[Tool]:
        return todo_tools()

    def history_views(self) -> Sequence[HistoryView]:
        return [SupersededTodoReceipts()]
