"""Plan mode tools: ``plan_enter``, ``plan_write`` and ``plan_exit``.

In plan mode the agent explores with read-only tools, writes its plan to ``PLAN.md`` in the
caller's own scope (:meth:`Workspace.plan_file`: ``agents/<agent>/users/<user>/plans/PLAN.md``
with the default user scope, ``plans/PLAN.md`` only for the global scope; through the workspace
filesystem, so any backend works; the caller's file tools and sandbox see it at that path,
other users never do) and keeps its task list; every other
tool is blocked until the user approves the plan. ``plan_exit`` is that approval: its own
permission check always asks the application (see :func:`plan_exit_check`), and the mode only
changes when the user says yes. A plan is never approved by the model alone.
"""

from __future__ import annotations

import hashlib

from harnessed.messages import ToolUseBlock
from harnessed.permissions.rules import PermissionDecision
from harnessed.plan.state import PLAN, PlanState
from harnessed.state.agent_state import AgentState
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.toolset import Toolset, toolset_tool
from harnessed.workspace import Workspace
from harnessed.workspace.errors import WorkspaceError

__all__ = ["PLAN_PREVIEW_CHARS", "PlanToolset", "plan_exit_check", "plan_path", "plan_tools"]

PLAN_PREVIEW_CHARS = 20_000
"""How much of the plan a confirmation request carries for the application's UI."""


def _changed(ctx: ToolContext, action: str, **extra: object) -> None:
    ctx.emit(
        "plan_changed",
        {"action": action, "plan": ctx.state.get(PLAN).to_dict(), "by": "agent", **extra},
    )


def plan_path(workspace: Workspace, agent_name: str, user_id: str, session_id: str) -> str:
    """Where plan mode keeps the plan of this caller (its own isolation scope)."""
    return workspace.plan_file(agent_id=agent_name, user_id=user_id, session_id=session_id)


def current_plan(workspace: Workspace, ctx: ToolContext) -> str:
    """The session's plan file: the one its state records (a session that entered plan mode
    before plans were scoped keeps its ``plans/PLAN.md``), else the caller's own."""
    return ctx.state.get(PLAN).plan_file or plan_path(
        workspace, ctx.agent_name, ctx.user_id, ctx.runtime.session_id or ctx.agent_name
    )


def plan_tools(workspace: Workspace) -> list[Tool]:
    """The three plan tools of a :class:`PlanToolset` over ``workspace``."""
    return PlanToolset(workspace).tools()


class PlanToolset(Toolset):
    """The three plan tools, writing the plan into the caller's scope of ``workspace``."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def own_plan(self, ctx: ToolContext) -> str:
        """The caller's own plan file (where ``plan_write`` writes)."""
        session = ctx.runtime.session_id or ctx.agent_name
        return plan_path(self.workspace, ctx.agent_name, ctx.user_id, session)

    @toolset_tool()
    async def plan_enter(self, ctx: ToolContext) -> str:
        """Switch to plan mode to investigate and plan before changing anything.

        Use it when the work is large, risky or unclear. In plan mode only read-only tools,
        the plan tools and todo_write run.
        """
        state = ctx.state
        if state.get(PLAN).active:
            return f"Already in plan mode. The plan file is {current_plan(self.workspace, ctx)}."
        plan_file = self.own_plan(ctx)
        state.put(PLAN, PlanState(active=True, plan_file=plan_file))
        _changed(ctx, "enter")
        return (
            f"Plan mode is on. Investigate with read-only tools, write the plan with plan_write "
            f"(it is saved to {plan_file}), keep the task list current with todo_write, then "
            "call plan_exit to ask the user to approve the plan. Tools that change files or "
            "run commands are blocked until then."
        )

    @toolset_tool()
    async def plan_write(self, content: str, ctx: ToolContext) -> str:
        """Write the plan (the whole text, replacing any earlier version) to the plan file.

        Args:
            content: The plan in markdown: the goal, the steps, the files involved and how
                the result will be checked.
        """
        if not content.strip():
            raise ToolError("the plan is blank; write the whole plan as markdown")
        plan_file = self.own_plan(ctx)
        try:
            await self.workspace.fs.write_text(plan_file, content)
        except (WorkspaceError, OSError, ValueError) as exc:
            raise ToolError(f"could not write the plan to {plan_file}: {exc}") from exc
        state = ctx.state
        if state.get(PLAN).plan_file != plan_file:
            state.put(PLAN, PlanState(active=state.get(PLAN).active, plan_file=plan_file))
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
        _changed(ctx, "write", chars=len(content), sha256=digest)
        lines = content.count("\n") + 1
        follow = " Call plan_exit when it is ready for approval." if state.get(PLAN).active else ""
        return f"Plan saved to {plan_file} ({lines} lines).{follow}"

    @toolset_tool()
    async def plan_exit(self, ctx: ToolContext) -> str:
        """Ask the user to approve the plan and leave plan mode.

        Write the plan with plan_write first. If the user approves, you are back in build mode
        and should carry out the plan; if not, revise it.
        """
        state = ctx.state
        if not state.get(PLAN).active:
            raise ToolError("not in plan mode; there is nothing to approve")
        plan_file = current_plan(self.workspace, ctx)
        if not await self.workspace.fs.exists(plan_file):
            raise ToolError(f"there is no plan yet: write it to {plan_file} with plan_write first")
        state.put(PLAN, PlanState(active=False, plan_file=plan_file))
        _changed(ctx, "exit", approved=True)
        return (
            f"The user approved the plan. You are in build mode now: carry out the plan in "
            f"{plan_file} and keep the task list current."
        )


def plan_exit_check(workspace: Workspace) -> _PlanExitCheck:
    """``plan_exit``'s own permission check: ask the user to approve the written plan."""
    return _PlanExitCheck(workspace)


class _PlanExitCheck:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def __call__(self, call: ToolUseBlock, state: AgentState) -> PermissionDecision | None:
        plan_file = state.get(PLAN).plan_file  # set by plan_enter / enter_plan_mode
        if not state.get(PLAN).active or not plan_file:
            return None  # the tool reports "not in plan mode"
        try:
            plan = await self.workspace.fs.read_text(plan_file)
        except (WorkspaceError, OSError, ValueError, UnicodeDecodeError):
            return None  # the tool reports that there is no plan yet
        return PermissionDecision.ask(
            f"approve the plan in {plan_file} and let the agent start working on it",
            details={
                "plan_file": plan_file,
                "plan": plan[:PLAN_PREVIEW_CHARS],
                "truncated": len(plan) > PLAN_PREVIEW_CHARS,
            },
            declined_message=(
                "The user did not approve the plan, so you are still in plan mode. Ask what "
                "to change or revise the plan with plan_write, then call plan_exit again."
            ),
        )
