"""The less common settings of :class:`~harnessed.HarnessAgent`, as typed keyword arguments.

``HarnessAgent(name, model, ...)`` names its everyday parameters; everything else is one of
these, passed the same way (``HarnessAgent("a", model, shell=True, prune=None)``) and checked
by type checkers through ``**Unpack[AgentOptions]``. An unknown keyword raises ``TypeError``
naming it, as for any Python call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from harnessed.builtins import MCPResources, MCPServers, Sandbox, SubagentsArg, WebArg
from harnessed.capabilities.seam import RequestPreparer
from harnessed.compaction import PruneConfig
from harnessed.contract.state import TaskContractConfig
from harnessed.cost.limits import UsageLimits
from harnessed.cost.prices import PriceTable
from harnessed.log import SessionLogStore
from harnessed.log.search import SearchIndex
from harnessed.permissions import PermissionMode, PermissionRule
from harnessed.permissions.policy import ToolPermissionCheck
from harnessed.runtime import TurnRuntime
from harnessed.sandbox.process import ShellConfig
from harnessed.state.store import AgentStateStore
from harnessed.tools.toolkit import ToolGuard
from harnessed.workspace import IsolationScope

__all__ = ["FEATURES_OFF", "SHORTCUT_OPTIONS", "AgentOptions", "check_arguments"]


class AgentOptions(TypedDict, total=False):
    """Optional keyword arguments of :class:`~harnessed.HarnessAgent` (defaults in brackets)."""

    isolation_scope: IsolationScope
    """How the workspace separates runtime data: ``"user"`` (default), ``"session"``,
    ``"agent"`` or ``"global"``."""
    state_store: AgentStateStore | None
    """Where structured state is kept [files in the workspace, else memory]."""
    session_store: SessionLogStore | None
    """Where the session log is kept [JSONL files in the workspace, else memory]."""
    search_index: SearchIndex | None
    """The session log's search index [SQLite next to the log files]."""
    max_output_tokens: int | None
    """Tokens the model may write per request [the model's own limit]."""
    max_context_tokens: int
    """Budget of the workspace context files (AGENTS.md, MEMORY.md ...) [8,000]."""
    context_files: Sequence[str]
    """More workspace files to show in every request []."""
    prepare: RequestPreparer | None
    """Replaces the context compiler's request preparation."""
    tool_guard: ToolGuard | None
    """The application's check before each tool call (after capabilities and permissions);
    returns ``None`` or the text of an error result."""
    prune: PruneConfig | None
    """Pruning of old tool results [on; ``None`` turns it off]."""
    file_tools: bool
    """Read, list, search and edit the workspace [True]."""
    shell: bool | ShellConfig | Sandbox | None
    """``execute`` in a sandbox [on where a sandbox is usable]."""
    memory_tools: bool
    """``memory_search`` / ``memory_get`` [True, with memory]."""
    readable_session_agents: Sequence[str]
    """Other agents whose sessions the session tools may read []."""
    enable_plan_mode: bool
    """Plan mode and its tools [False]."""
    task_contract: TaskContractConfig | None
    """The task contract [off]."""
    permission_mode: PermissionMode | str | None
    """The permission mode [``"default"``]."""
    permission_rules: Sequence[PermissionRule]
    """Allow / ask / deny rules []."""
    permission_checks: Mapping[str, ToolPermissionCheck] | None
    """Per-tool permission checks."""
    confirmation_timeout: float | None
    """Seconds an approval may wait before it counts as declined [no limit]."""
    subagents: SubagentsArg
    """Sub-agents: the general-purpose one and the workspace's ``subagents/*.md`` [on with a
    workspace]; ``False`` turns them off, a :class:`~harnessed.subagents.Subagents` configures
    them."""
    web: WebArg
    """``web_fetch`` (and ``web_search`` with a provider) [on with a workspace and the ``web``
    extra]; ``False`` turns it off."""
    mcp_servers: MCPServers
    """MCP servers whose tools the agent offers []."""
    mcp_resources: MCPResources
    """MCP resources shown as context []."""
    usage_limits: UsageLimits | None
    """Limits of each call: requests, tokens, USD (sub-agents count toward them) [none]."""
    session_usage_limits: UsageLimits | None
    """Limits of each session, over all its calls [none]."""
    prices: PriceTable | None
    """The price table costing each request [genai-prices' table]."""
    output_type: Any
    """Every call's typed final answer: a pydantic model, dataclass, TypedDict or plain type
    [free text]; a call may override it (:mod:`harnessed.output`)."""
    output_retries: int
    """Invalid typed answers sent back to the model before the call fails [2]."""
    runtime: TurnRuntime | None
    """Where turns run: this process [``None``] or a runtime such as
    :class:`harnessed.temporal.TemporalRuntime` (workflows on Temporal workers)."""


SHORTCUT_OPTIONS = frozenset(
    {
        "file_tools",
        "shell",
        "memory_tools",
        "readable_session_agents",
        "enable_plan_mode",
        "task_contract",
        "permission_mode",
        "permission_rules",
        "permission_checks",
        "confirmation_timeout",
        "mcp_servers",
        "mcp_resources",
    }
)
"""Options that only build a built-in capability (:class:`~harnessed.builtins.Shortcuts`)."""


FEATURES_OFF: Mapping[str, Any] = {
    "tools": (),
    "capabilities": (),
    "instructions": None,
    "enable_task_list": False,
    "memory": False,
    "skills": False,
    "file_tools": False,
    "shell": False,
    "memory_tools": False,
    "readable_session_agents": (),
    "enable_plan_mode": False,
    "task_contract": None,
    "permission_mode": None,
    "permission_rules": (),
    "permission_checks": None,
    "confirmation_timeout": None,
    "subagents": False,
    "web": False,
    "mcp_servers": (),
    "mcp_resources": (),
    "output_type": None,
}
"""The arguments that give an agent its tools, capabilities, instructions and built-in
features, each with the value that turns it off: ``agent.clone(features=False)`` starts from
these (a sub-agent gets what its declaration allows, never its parent's features blindly)."""


def check_arguments(name: object, max_iters: int, options: Mapping[str, object]) -> None:
    """Raise for a bad agent name or limit (``ValueError`` naming it) or for a keyword
    :class:`AgentOptions` does not have (``TypeError``)."""
    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):  # \w: isalnum, _
        raise ValueError(
            f"HarnessAgent name must be non-empty letters, digits, '_', '.' or '-': {name!r}"
        )
    unknown = sorted(set(options) - AgentOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"HarnessAgent() got an unexpected keyword argument {unknown[0]!r}")
    if max_iters < 1:
        raise ValueError(f"HarnessAgent max_iters must be at least 1, got {max_iters}")
    output = options.get("max_output_tokens")
    if output is not None and (not isinstance(output, int) or output <= 0):
        raise ValueError("HarnessAgent max_output_tokens must be positive")
    for label in ("usage_limits", "session_usage_limits"):
        value = options.get(label)
        if value is not None and not isinstance(value, UsageLimits):
            raise TypeError(f"HarnessAgent {label} must be a UsageLimits or None, got {value!r}")
    window = options.get("max_context_tokens", 8_000)
    if not isinstance(window, int) or window <= 0:
        raise ValueError("HarnessAgent max_context_tokens must be positive")
