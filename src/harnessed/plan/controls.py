"""The application's side of plan mode (the agent offers these methods).

Entering and leaving plan mode from application code (the model uses the plan tools) runs under
the session lock and is written to the session log as ``plan/changed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harnessed.log.record import RecordType
from harnessed.plan.capability import PlanMode
from harnessed.plan.state import PLAN, PlanState
from harnessed.plan.tools import plan_path
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import StateEditor

__all__ = ["PlanControls"]

Records = list[tuple[str, Mapping[str, Any]]]


class PlanControls:
    """Plan mode controls: a part of :class:`~harnessed.HarnessAgent`."""

    def __init__(
        self,
        name: str,
        editor: StateEditor,
        capability: Callable[[type[PlanMode]], PlanMode | None],
    ) -> None:
        self.name = name
        self._editor = editor
        self.capability = capability

    # --------------------------------------------------------------- plan mode
    async def enter_plan_mode(self, ctx: RuntimeContext | None = None) -> PlanState:
        """Put the session in plan mode (needs ``enable_plan_mode=True``)."""
        plan_mode = self.capability(PlanMode)
        if plan_mode is None or plan_mode.workspace is None:
            raise RuntimeError(
                "plan mode is not enabled: create the agent with enable_plan_mode=True"
            )
        resolved = (ctx or RuntimeContext()).resolved(self.name)
        plan_file = plan_path(plan_mode.workspace, self.name, resolved.user_id, resolved.session)
        return await self._set_plan(ctx, "enter", PlanState(active=True, plan_file=plan_file))

    async def exit_plan_mode(self, ctx: RuntimeContext | None = None) -> PlanState:
        """Leave plan mode (the application's approval; the plan file stays)."""
        return await self._set_plan(ctx, "exit", PlanState(active=False))

    async def _set_plan(
        self, ctx: RuntimeContext | None, action: str, plan: PlanState
    ) -> PlanState:
        def change(state: AgentState) -> Records | None:
            target = PlanState(plan.active, plan.plan_file or state.get(PLAN).plan_file)
            if state.get(PLAN) == target:
                return None
            state.put(PLAN, target)
            return [(RecordType.PLAN_CHANGED, {"action": action, "plan": target.to_dict()})]

        return (await self._editor.change(ctx, change)).get(PLAN)
