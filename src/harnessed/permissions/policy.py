"""The permission check: which calls run, which are refused and which need the user's answer.

Order of evaluation for one call (the first that decides wins):

1. deny rules → deny
2. ask rules → ask
3. the tool's own check (e.g. ``plan_exit`` always asks to approve the plan) → its decision
4. allow rules → allow; then grants (allow rules the session gained by activating something,
   e.g. a skill's ``allowed-tools``) → allow, except that a grant naming a command never
   covers an ``execute`` command that chains, pipes, redirects or substitutes others
5. ``bypass`` mode → allow
6. the mode's default: read-only tools and the harness's state tools run; ``accept_edits`` also
   runs file edits; ``explore`` denies everything else; other modes ask.

In ``dont_ask`` mode every "ask" becomes "deny". Permissions are opt-in: with no mode and no
rules (for the agent and the session) only step 3 applies, so every tool runs as it would
without a permission system, except tools whose own check asks and tools marked
``destructive`` (which ask).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harnessed.messages import ToolUseBlock
from harnessed.permissions.rules import PermissionDecision, PermissionMode, PermissionRule
from harnessed.state.agent_state import AgentState
from harnessed.tools.base import Tool

__all__ = [
    "EDIT_TOOLS",
    "HARNESS_STATE_TOOLS",
    "PermissionSettings",
    "ToolPermissionCheck",
    "evaluate",
]

HARNESS_STATE_TOOLS = frozenset(
    {"todo_write", "plan_enter", "plan_write", "plan_exit", "task_requirement_propose"}
)
"""Tools that only change the harness's own task and plan state; they run like read-only tools."""
EDIT_TOOLS = frozenset({"write_file", "edit_file"})
_CHAINING = re.compile(r"[;&|`\n\r<>]|\$\(")
"""Shell syntax that runs or feeds more than the one command a grant names."""
"""File edits that ``accept_edits`` mode lets run without asking."""


class ToolPermissionCheck(Protocol):
    """A tool's own permission check: a decision, or ``None`` to leave it to rules and mode."""

    async def __call__(
        self, call: ToolUseBlock, state: AgentState
    ) -> PermissionDecision | None: ...


@dataclass(frozen=True, slots=True)
class PermissionSettings:
    """The mode and rules in force for one session (``mode=None``: permissions are off)."""

    mode: PermissionMode | None = None
    rules: tuple[PermissionRule, ...] = ()
    grants: tuple[PermissionRule, ...] = ()
    """Allow rules the session gained by activating something (a skill's ``allowed-tools``):
    they pre-approve calls the mode would ask about, never turn permissions on by themselves,
    and deny and ask rules still win over them."""

    @property
    def active(self) -> bool:
        return self.mode is not None or bool(self.rules)

    @property
    def effective_mode(self) -> PermissionMode:
        return self.mode or PermissionMode.DEFAULT

    @classmethod
    def resolve(
        cls,
        agent_mode: PermissionMode | None,
        agent_rules: Sequence[PermissionRule],
        session: Mapping[str, Any],
    ) -> PermissionSettings:
        """The agent's configuration with the session's own mode and rules applied on top.

        ``session`` is the state's permissions section
        (:data:`~harnessed.permissions.PERMISSIONS`): ``{"mode": ..., "rules": [...],
        "grants": [...]}``. Bad data raises ``ValueError`` naming the problem.
        """
        mode = agent_mode
        raw_mode = session.get("mode")
        if raw_mode is not None:
            mode = PermissionMode.parse(raw_mode, "the session's permission mode")
        raw_rules = session.get("rules") or []
        if not isinstance(raw_rules, list):
            raise ValueError("the session's permission rules must be a list")
        rules = (*(PermissionRule.from_dict(r) for r in raw_rules), *agent_rules)
        raw_grants = session.get("grants") or []
        if not isinstance(raw_grants, list):
            raise ValueError("the session's permission grants must be a list")
        grants = tuple(PermissionRule.from_dict(g) for g in raw_grants)
        if any(g.behavior != "allow" for g in grants):
            raise ValueError("the session's permission grants may only allow")
        return cls(mode, tuple(rules), grants)


async def evaluate(
    call: ToolUseBlock,
    tool: Tool,
    state: AgentState,
    settings: PermissionSettings,
    check: ToolPermissionCheck | None = None,
) -> PermissionDecision:
    """Decide one call (see the module docstring for the order)."""
    decision = await _evaluate(call, tool, state, settings, check)
    if decision.behavior == "ask" and settings.mode is PermissionMode.DONT_ASK:
        return PermissionDecision.deny(
            f"{decision.reason} — but this session runs without asking (dont_ask mode), so the "
            "call is refused"
        )
    return decision


async def _evaluate(
    call: ToolUseBlock,
    tool: Tool,
    state: AgentState,
    settings: PermissionSettings,
    check: ToolPermissionCheck | None,
) -> PermissionDecision:
    first: dict[str, PermissionRule] = {}
    for rule in settings.rules:  # one pass: the first matching rule of each behaviour
        if rule.behavior not in first and rule.matches(call):
            first[rule.behavior] = rule
            if rule.behavior == "deny":
                break
    if "deny" in first:
        return PermissionDecision.deny(f"a rule denies {first['deny'].describe()}")
    if "ask" in first:
        return PermissionDecision.ask(f"a rule asks before running {first['ask'].describe()}")
    if check is not None:
        own = await check(call, state)
        if own is not None:
            return own
    if not settings.active:
        if tool.destructive and not tool.read_only:
            return PermissionDecision.ask(
                f"{call.name!r} is marked destructive (it may delete or overwrite data) and "
                "needs your approval"
            )
        return PermissionDecision.allow("no permission mode or rules are configured")
    if "allow" in first:
        return PermissionDecision.allow(f"a rule allows {first['allow'].describe()}")
    for grant in settings.grants:
        if grant.matches(call) and not _chains(grant, call):
            return PermissionDecision.allow(f"pre-approved ({grant.describe()})")
    mode = settings.effective_mode
    if mode is PermissionMode.BYPASS:
        return PermissionDecision.allow("bypass mode")
    if tool.read_only or call.name in HARNESS_STATE_TOOLS:
        return PermissionDecision.allow(f"{call.name!r} does not change anything outside the agent")
    if mode is PermissionMode.ACCEPT_EDITS and call.name in EDIT_TOOLS:
        return PermissionDecision.allow("accept_edits mode runs file edits")
    if mode is PermissionMode.EXPLORE:
        return PermissionDecision.deny(
            f"explore mode runs only read-only tools, the plan tools and todo_write, and "
            f"{call.name!r} can change things"
        )
    return PermissionDecision.ask(f"{call.name!r} can change things and needs your approval")


def _chains(grant: PermissionRule, call: ToolUseBlock) -> bool:
    """Whether a grant that names a command (``Bash(git:*)``) would also pass on others: an
    ``execute`` command with ``;``, ``&&``, ``|``, redirections or substitutions is not
    pre-approved by it (it falls through to the mode, which asks)."""
    command = call.input.get("command")
    return bool(grant.args) and isinstance(command, str) and bool(_CHAINING.search(command))
