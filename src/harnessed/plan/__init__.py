"""Plan mode: investigate and write a plan before changing anything (a capability)."""

from harnessed.plan.capability import PlanMode, PlanStatus

__all__ = ["PlanMode", "PlanStatus"]
