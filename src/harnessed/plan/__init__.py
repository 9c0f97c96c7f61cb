"""Plan mode: investigate and write a plan before changing anything (a capability), and the
``plan`` state section."""

from harnessed.plan.capability import PlanMode, PlanStatus
from harnessed.plan.state import PLAN, PLAN_MODE_TOOLS, PlanState

__all__ = ["PLAN", "PLAN_MODE_TOOLS", "PlanMode", "PlanState", "PlanStatus"]
