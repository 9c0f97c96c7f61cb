"""Sub-agents and background tasks (BEHAVIOUR.md §11): delegate work to other agents.

``HarnessAgent(..., capabilities=[Subagents()])`` gives the model ``agent_spawn``,
``agent_send``, ``agent_list``, ``task_output``, ``task_cancel`` and ``task_list``. Sub-agents
are declared in code (:class:`SubagentSpec`, or any :class:`~harnessed.HarnessAgent`), as
workspace files ``subagents/<id>.md``, or are the built-in ``general-purpose``.
"""

from harnessed.subagents.capability import Subagents
from harnessed.subagents.child import ChildLink, ChildRun
from harnessed.subagents.core import TaskFinished
from harnessed.subagents.records import TaskRecord, TaskStatus, child_session_id
from harnessed.subagents.spec import GENERAL_PURPOSE, SpecError, SubagentSpec, parse_spec_file

__all__ = [
    "GENERAL_PURPOSE",
    "ChildLink",
    "ChildRun",
    "SpecError",
    "SubagentSpec",
    "Subagents",
    "TaskFinished",
    "TaskRecord",
    "TaskStatus",
    "child_session_id",
    "parse_spec_file",
]
