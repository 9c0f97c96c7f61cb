"""``todo_write``: the agent's task list, replaced as a whole on every call.

The model sends the complete list each time. Before anything changes the whole list is checked
— blank content, an unknown status, two items ``in_progress``, duplicate ids, too many items —
and a list with any problem is refused with every problem named, leaving the stored list as it
was. Ids are kept stable: an item sent with an existing id keeps it, an item sent without an id
takes the id of the current item with the same content, and only new items get new ids. The
list is shown to the model in ``TASK_STATE`` at every request, so the short receipt this tool
returns never has to be trusted later (older receipts are shown as superseded).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harnessed.todos.state import TODOS, TodoItem
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool

if TYPE_CHECKING:
    from harnessed.todos.entry import TodoEntry

__all__ = ["MAX_TODOS", "TODO_WRITE", "TodoEntry", "plan_todo_list", "todo_tools"]

TODO_WRITE = "todo_write"
MAX_TODOS = 100
"""The longest list ``todo_write`` accepts (the list is shown in every request)."""

_NUMBERED = re.compile(r"^t(\d+)$")


def plan_todo_list(current: Sequence[TodoItem], entries: Sequence[TodoEntry]) -> list[TodoItem]:
    """The new list for ``entries``, or :class:`ToolError` naming every problem."""
    problems: list[str] = []
    if len(entries) > MAX_TODOS:
        problems.append(f"the list has {len(entries)} items; at most {MAX_TODOS} are allowed")
    in_progress = [i for i, e in enumerate(entries, 1) if e.status == "in_progress"]
    if len(in_progress) > 1:
        listed = ", ".join(str(i) for i in in_progress)
        problems.append(f"items {listed} are all in_progress; at most one item may be")
    explicit: dict[str, int] = {}
    for number, entry in enumerate(entries, 1):
        if not entry.content.strip():
            problems.append(f"item {number} has blank content")
        wanted = (entry.id or "").strip()
        if wanted:
            if wanted in explicit:
                problems.append(f"items {explicit[wanted]} and {number} both use id {wanted!r}")
            else:
                explicit[wanted] = number
    if problems:
        raise ToolError(
            "The task list was not changed: " + "; ".join(problems) + ". Send the whole "
            "corrected list again."
        )

    by_content: dict[str, list[str]] = {}
    for item in current:
        by_content.setdefault(item.content.strip(), []).append(item.id)
    used = set(explicit)
    known = [*(t.id for t in current), *used]
    numbers = [int(m.group(1)) for i in known if (m := _NUMBERED.match(i))]
    next_number = max(numbers, default=0) + 1
    items: list[TodoItem] = []
    for entry in entries:
        content = entry.content.strip()
        item_id = (entry.id or "").strip()
        if not item_id:
            reusable = [i for i in by_content.get(content, []) if i not in used]
            if reusable:
                item_id = reusable[0]
            else:
                item_id = f"t{next_number}"
                next_number += 1
            used.add(item_id)
        items.append(TodoItem(item_id, content, entry.status))
    return items


def _receipt(items: Sequence[TodoItem], revision: int) -> str:
    if not items:
        return f"Task list cleared (task state revision {revision}); TASK_STATE shows no list now."
    counts = {s: sum(1 for i in items if i.status == s) for s in ("completed", "in_progress")}
    pending = len(items) - counts["completed"] - counts["in_progress"]
    ids = ", ".join(i.id for i in items)
    return (
        f"Task list saved (task state revision {revision}): {len(items)} items — "
        f"{counts['completed']} completed, {counts['in_progress']} in progress, {pending} "
        f"pending; ids {ids}. The current list is shown in TASK_STATE."
    )


def todo_tools() -> list[Tool]:
    """The ``todo_write`` tool (registered by ``HarnessAgent(enable_task_list=True)``)."""
    # the argument model needs pydantic, imported with the first tool rather than with
    # harnessed; the tool's type hints are resolved in this module's namespace
    globals()["TodoEntry"] = _todo_entry()

    @tool(name=TODO_WRITE)
    async def todo_write(todos: list[TodoEntry], ctx: ToolContext) -> str:
        """Replace your task list with the complete, updated list.

        Use it for work with several steps: write the steps, mark one item in_progress when
        you start it and completed as soon as it is done, and add or drop items as you learn
        more. Always send the whole list (items you leave out are removed) and keep the id of
        each existing item. The current list is shown to you in TASK_STATE before every step.
        Completing every item does not prove the task is done; say what was checked.

        Args:
            todos: The complete task list, in order.
        """
        state = ctx.state
        current = state.get(TODOS)
        items = plan_todo_list(current, todos)
        state.put(TODOS, tuple(items))
        ctx.emit(
            "task_changed",
            {
                "action": "todos",
                "todos": [i.to_dict() for i in items],
                "task_revision": state.task_revision,
            },
        )
        return _receipt(items, state.task_revision)

    return [todo_write]


def _todo_entry() -> type[Any]:
    from harnessed.todos.entry import TodoEntry

    return TodoEntry


def __getattr__(name: str) -> object:
    if name == "TodoEntry":
        return _todo_entry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
