"""Plan mode's state: :class:`PlanState`, the ``plan`` section of the agent state, and the rule
that refuses changing calls while planning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harnessed.messages import ToolUseBlock
from harnessed.state.agent_state import AgentState
from harnessed.state.sections import StateSection
from harnessed.tools.base import Tool

__all__ = ["PLAN", "PLAN_MODE_TOOLS", "PlanState", "plan_mode_block"]


@dataclass(frozen=True, slots=True)
class PlanState:
    """Plan mode: whether it is active and where the plan file lives."""

    active: bool = False
    plan_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"active": self.active, "plan_file": self.plan_file}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanState:
        return cls(bool(data.get("active", False)), data.get("plan_file"))


def _decode(data: Any) -> PlanState:
    if not isinstance(data, Mapping):
        raise ValueError(f"the plan section must be a JSON object, got {type(data).__name__}")
    return PlanState.from_dict(data)


def _encode(plan: PlanState) -> dict[str, Any] | None:
    return plan.to_dict() if plan.active or plan.plan_file else None


PLAN: StateSection[PlanState] = StateSection(
    "plan", decode=_decode, encode=_encode, default=PlanState
)
"""Whether the session is in plan mode, and its plan file."""

PLAN_MODE_TOOLS = frozenset({"todo_write", "plan_enter", "plan_write", "plan_exit"})
"""Besides read-only tools, the only tools that run in plan mode."""


def plan_mode_block(call: ToolUseBlock, tool: Tool, state: AgentState) -> str | None:
    """The refusal for a call that plan mode blocks, or ``None``."""
    if tool.read_only or call.name in PLAN_MODE_TOOLS or not state.get(PLAN).active:
        return None
    return (
        f"Blocked in plan mode: {call.name!r} can change things, and while planning only "
        "read-only tools, the plan tools and todo_write run. Write the plan with plan_write, "
        "then call plan_exit to ask the user to approve it."
    )
