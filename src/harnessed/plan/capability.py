"""Plan mode as capabilities: the plan tools (:class:`PlanMode`), and the mode shown in
``RUNTIME_STATE`` and enforced at each tool call (:class:`PlanStatus`).

While the session is in plan mode, every call that could change something — not read-only,
not a plan tool, not ``todo_write`` — is refused before it runs (checked at each call: an
earlier call of the same step may have entered plan mode). ``plan_exit`` asks the user to
approve the plan through the agent's permissions.
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.capabilities.base import CallContext, Capability, CapabilityHost
from harnessed.capabilities.state_blocks import StateBlock
from harnessed.context.xml import escape
from harnessed.messages import ToolUseBlock
from harnessed.permissions.capability import Permissions
from harnessed.plan.state import PLAN, plan_mode_block
from harnessed.plan.tools import plan_exit_check, plan_tools
from harnessed.state.agent_state import AgentState
from harnessed.tools.base import Tool
from harnessed.workspace import Workspace

__all__ = ["PlanMode", "PlanStatus"]


class PlanMode(Capability):
    """``plan_enter``, ``plan_write`` and ``plan_exit`` (``enable_plan_mode=True``); needs a
    workspace, where the plan is written (``PLAN.md`` in the caller's own scope, see
    :meth:`~harnessed.workspace.Workspace.plan_file`)."""

    name = "plan_mode"

    def __init__(self) -> None:
        self.workspace: Workspace | None = None
        self._tools: list[Tool] = []

    def setup(self, host: CapabilityHost) -> None:
        if host.workspace is None:
            raise ValueError(
                "PlanMode: enable_plan_mode needs a workspace (the plan is written to "
                "the caller's scope): pass workspace=... to HarnessAgent"
            )
        self.workspace = host.workspace
        self._tools = plan_tools(host.workspace)
        permissions = host.capability(Permissions)
        if permissions is not None:
            exit_tool = next(t for t in self._tools if t.name == "plan_exit")
            permissions.add_tool_check(exit_tool, plan_exit_check(host.workspace))

    def tools(self) -> Sequence[Tool]:
        return self._tools


class PlanStatus(Capability):
    """Shows the session's mode (PLAN or BUILD) and plan file in ``RUNTIME_STATE`` whenever the
    state has any, and refuses changing calls while in plan mode. Every agent has one (plan
    state is part of every ``AgentState``, whoever set it)."""

    name = "plan_status"

    def setup(self, host: CapabilityHost) -> None:
        permissions = host.capability(Permissions)
        if permissions is not None:  # a call plan mode refuses is never put to the user
            permissions.add_refusal(plan_mode_block)

    async def before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        return plan_mode_block(tool_call, tool, call.state)

    def state_blocks(self, state: AgentState) -> Sequence[StateBlock]:
        plan = state.get(PLAN)
        if not (plan.active or plan.plan_file):
            return ()
        lines = [f"mode: {'PLAN' if plan.active else 'BUILD'}"]
        if plan.plan_file:
            lines.append(f"plan file: {escape(plan.plan_file)}")
        lines.append(
            "This reports the current mode only. It is not an approval of any plan and not "
            "proof that any work is done."
        )
        if plan.active:
            lines.append(
                "In PLAN mode only read-only tools, the plan tools and todo_write run; write the "
                "plan, then ask to leave plan mode."
            )
        return (StateBlock("RUNTIME_STATE", "\n".join(lines)),)
