"""``task_requirement_propose``: the model suggests a requirement; the application decides.

Registered only when the agent allows proposals
(``TaskContractConfig(allow_requirement_proposals=True)``, which also shows the requirements in
``TASK_STATE``). A proposal becomes a *candidate* requirement of the current task; it binds
nobody until application code confirms it (``agent.confirm_requirement``) and may be rejected
with a note the model will see.
"""

from __future__ import annotations

from typing import Literal

from harnessed.contract.state import TASK, RequirementKind
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool

__all__ = ["task_tools"]


def task_tools() -> list[Tool]:
    @tool
    async def task_requirement_propose(
        kind: Literal["constraint", "acceptance_criterion"], text: str, ctx: ToolContext
    ) -> str:
        """Propose a requirement for the current task, for the user's application to confirm.

        Propose what the task must respect (a constraint) or how its success will be judged
        (an acceptance criterion) when it is missing from the task. A proposal is only a
        candidate: it is not binding until confirmed, and it may be rejected.

        Args:
            kind: constraint or acceptance_criterion.
            text: The requirement in one clear sentence.
        """
        state = ctx.state
        task = state.get(TASK)
        if task is None:
            raise ToolError("there is no task contract to add requirements to")
        requirement_kind: RequirementKind = kind
        try:
            changed = task.add_requirement(requirement_kind, text, source="model")
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        state.put(TASK, changed)
        new = changed.requirements[-1]
        ctx.emit(
            "task_changed",
            {
                "action": "propose",
                "by": "agent",
                "requirement": new.to_dict(),
                "revision": changed.revision,
                "task": changed.to_dict(),
            },
        )
        return (
            f"Proposed {new.id} ({new.kind.replace('_', ' ')}). It stays a candidate until the "
            "application confirms or rejects it; do not treat it as agreed."
        )

    return [task_requirement_propose]
