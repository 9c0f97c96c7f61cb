"""Permissions: which tool calls run, which are refused, and asking the user for the rest."""

from harnessed.permissions.broker import ConfirmationError
from harnessed.permissions.capability import Permissions
from harnessed.permissions.flow import ConfirmationMode
from harnessed.permissions.gate import ApprovalGate
from harnessed.permissions.policy import (
    EDIT_TOOLS,
    HARNESS_STATE_TOOLS,
    PermissionSettings,
    ToolPermissionCheck,
    evaluate,
)
from harnessed.permissions.rules import (
    PermissionBehavior,
    PermissionDecision,
    PermissionMode,
    PermissionRule,
)
from harnessed.permissions.state import PERMISSIONS
from harnessed.state.parked import ParkedStep, PendingConfirmation

__all__ = [
    "Permissions",
    "EDIT_TOOLS",
    "HARNESS_STATE_TOOLS",
    "PERMISSIONS",
    "ApprovalGate",
    "ConfirmationError",
    "ConfirmationMode",
    "ParkedStep",
    "PendingConfirmation",
    "PermissionBehavior",
    "PermissionDecision",
    "PermissionMode",
    "PermissionRule",
    "PermissionSettings",
    "ToolPermissionCheck",
    "evaluate",
]
