"""The task contract as a capability: :class:`TaskContract` shows the session's task —
objective, and as configured its requirements and verification results — and the task list in
``TASK_STATE``. Every agent has one (the application can begin a task at any time); with
proposals allowed it gives the model ``task_requirement_propose``."""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.capabilities.base import Capability
from harnessed.capabilities.state_blocks import StateBlock
from harnessed.contract.render import task_state_text
from harnessed.contract.state import TASK, TaskContractConfig
from harnessed.contract.tools import task_tools
from harnessed.state.agent_state import AgentState
from harnessed.todos.state import TODOS
from harnessed.tools.base import Tool

__all__ = ["TaskContract"]


class TaskContract(Capability):
    """``TASK_STATE``: the task contract and the task list (see ``task_contract=``)."""

    name = "task_contract"

    def __init__(self, config: TaskContractConfig | None = None) -> None:
        if config is not None and not isinstance(config, TaskContractConfig):
            raise TypeError("task_contract must be a TaskContractConfig")
        self.config = config or TaskContractConfig()

    def tools(self) -> Sequence[Tool]:
        return task_tools() if self.config.allow_requirement_proposals else ()

    def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
        if state.get(TASK) is None and not state.get(TODOS):
            return ()
        return (StateBlock("TASK_STATE", task_state_text(state, self.config)),)
