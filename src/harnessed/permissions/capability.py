"""Permissions: the capability that owns an agent's approval gate.

Every agent has one (built from ``permission_mode``, ``permission_rules``, ``permission_checks``
and ``confirmation_timeout``, or passed in ``capabilities``); it is set up first so that other
capabilities can give their tools their own checks (:meth:`Permissions.add_tool_check`).
With no mode and no rules permissions are off and only tools' own checks ask. The loop asks
it for each run's approvals (:meth:`Permissions.for_run`, the
:class:`~harnessed.run.approvals.Approvals` protocol): they review each step's calls with
:attr:`Permissions.gate` before any of them runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harnessed.capabilities.base import Capability, CapabilityHost
from harnessed.events import Event
from harnessed.permissions.broker import SessionId
from harnessed.permissions.flow import ApprovalFlow
from harnessed.permissions.gate import ApprovalGate, Refusal
from harnessed.permissions.policy import ToolPermissionCheck
from harnessed.permissions.rules import PermissionMode, PermissionRule
from harnessed.run.approvals import ConfirmationMode
from harnessed.tools.base import Tool
from harnessed.tools.toolkit import ToolGuard

__all__ = ["Permissions"]


class _HostTools:
    def __init__(self, host: CapabilityHost) -> None:
        self.host = host

    def get(self, name: str) -> Tool | None:
        return self.host.tool(name)


class Permissions(Capability):
    """Permission mode, rules and per-tool checks, and the confirmation requests they raise.

    Args:
        mode: ``default``, ``accept_edits``, ``explore``, ``bypass`` or ``dont_ask``; ``None``
            with no rules leaves permissions off.
        rules: Allow / deny / ask rules.
        checks: Extra per-tool checks (tool name → check); they win over a tool's own check.
        confirmation_timeout: Seconds ``stream_events`` waits for answers before the call ends
            as ``pending`` (``None``: as long as the stream is read).
    """

    name = "permissions"

    def __init__(
        self,
        mode: PermissionMode | str | None = None,
        rules: Sequence[PermissionRule] = (),
        checks: Mapping[str, ToolPermissionCheck] | None = None,
        confirmation_timeout: float | None = None,
    ) -> None:
        # validated now, so a bad configuration fails where it is written
        self.gate = ApprovalGate(
            _NoTools(),
            mode=mode,
            rules=rules,
            checks=checks,
            confirmation_timeout=confirmation_timeout,
        )

        """Decides each step's tool calls before they run."""

    def setup(self, host: CapabilityHost) -> None:
        self.gate.toolkit = _HostTools(host)

    def add_tool_check(self, tool: Tool, check: ToolPermissionCheck) -> None:
        """Give ``tool`` its own check (see :meth:`ApprovalGate.add_tool_check`)."""
        self.gate.add_tool_check(tool, check)

    def set_mode(self, mode: PermissionMode | str | None) -> None:
        """Change the agent's own mode (what sessions without a mode of their own use; see
        :meth:`~harnessed.HarnessAgent.set_permission_mode` for one session's)."""
        self.gate.mode = PermissionMode.parse(mode) if mode is not None else None

    def add_answer_tool(self, name: str) -> None:
        """Calls to the tool ``name`` carry a person's answer in their approval (``ask_user``):
        the answer given with the approval is kept for the tool to read."""
        self.gate.answer_tools.add(name)

    def add_refusal(self, refusal: Refusal) -> None:
        """A rule of another capability that refuses calls before they run (plan mode): the
        calls it refuses are never put to the user (see :meth:`ApprovalGate.add_refusal`)."""
        self.gate.add_refusal(refusal)

    def for_run(
        self,
        session: SessionId,
        *,
        mode: ConfirmationMode,
        base: Mapping[str, Any],
        queue_event: Callable[[Event], None],
        record: Callable[[str, Mapping[str, Any]], None],
        app_guard: ToolGuard | None,
    ) -> ApprovalFlow:
        """One run's approvals (see :class:`~harnessed.run.approvals.Approvals`)."""
        return ApprovalFlow(
            self.gate,
            session,
            mode=mode,
            base=base,
            queue_event=queue_event,
            record=record,
            app_guard=app_guard,
        )


class _NoTools:
    def get(self, name: str) -> Tool | None:
        return None
