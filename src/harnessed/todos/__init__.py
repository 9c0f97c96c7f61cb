"""The task list: the model's ``todo_write`` (a capability) and the ``todos`` state section."""

from harnessed.todos.capability import TaskList
from harnessed.todos.state import TODOS, TodoItem, TodoStatus

__all__ = ["TODOS", "TaskList", "TodoItem", "TodoStatus"]
