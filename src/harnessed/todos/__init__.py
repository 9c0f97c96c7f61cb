"""The task list and the task contract (capabilities; the state lives in ``harnessed.state``)."""

from harnessed.todos.capability import TaskContract, TaskList

__all__ = ["TaskContract", "TaskList"]
