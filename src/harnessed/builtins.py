"""The keyword shortcuts of :class:`~harnessed.HarnessAgent`, turned into capabilities.

``enable_task_list=True`` is :class:`~harnessed.todos.TaskList`, ``permission_mode=...`` configures
:class:`~harnessed.permissions.Permissions`, and so on. The agent's capabilities are, in order:
permissions (always first: others give their tools checks through it), the built-ins the
keywords ask for, the plan status and the task contract (every agent shows and enforces its
state; a ``TaskContract`` passed in ``capabilities`` keeps its place there instead), then the
application's ``capabilities``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from harnessed.capabilities.base import Capability
from harnessed.contract.capability import TaskContract
from harnessed.contract.state import TaskContractConfig
from harnessed.files import FileTools
from harnessed.memory.capability import Memory
from harnessed.memory.config import MemoryConfig
from harnessed.permissions.capability import Permissions
from harnessed.permissions.policy import ToolPermissionCheck
from harnessed.permissions.rules import PermissionMode, PermissionRule
from harnessed.plan import PlanMode, PlanStatus
from harnessed.sandbox import Sandbox
from harnessed.session_tools.capability import SessionTools
from harnessed.shell import Shell, ShellConfig
from harnessed.todos import TaskList
from harnessed.tools_json import ToolsJson, read_tools_json
from harnessed.workspace.layout import Workspace

if TYPE_CHECKING:
    from harnessed.capabilities.registry import CapabilitySet
    from harnessed.mcp import MCPResource, MCPServer
    from harnessed.skills import Skills
    from harnessed.subagents import Subagents
    from harnessed.web import Web

__all__ = [  # keyword types, too
    "MCPResources",
    "MCPServers",
    "Sandbox",
    "Shortcuts",
    "SkillsArg",
    "SubagentsArg",
    "WebArg",
]

MCPServers: TypeAlias = "Sequence[MCPServer | str]"
"""``mcp_servers=``: server configurations, URLs or command lines (the ``mcp`` extra)."""
MCPResources: TypeAlias = "Sequence[MCPResource | str]"
"""``mcp_resources=``: resources of those servers shown to the model as references."""
SkillsArg: TypeAlias = "Skills | bool | None"
"""``skills=``: Agent Skills (:class:`~harnessed.skills.Skills`); ``None`` (the default) = the
workspace's skills when there is a workspace, ``True`` = ``Skills()``, ``False`` = none."""
WebArg: TypeAlias = "Web | bool | None"
"""``web=``: the web tools (:class:`~harnessed.web.Web`); ``None`` (the default) = ``web_fetch``
when there is a workspace and the ``web`` extra is installed, ``True`` = ``Web()``, ``False`` =
none."""
SubagentsArg: TypeAlias = "Subagents | bool | None"
"""``subagents=``: sub-agents (:class:`~harnessed.subagents.Subagents`); ``None`` (the default)
= the general-purpose one and the workspace's ``subagents/*.md`` when there is a workspace,
``True`` = ``Subagents()``, ``False`` = none."""


C = TypeVar("C", bound=Capability)


@dataclass(frozen=True, slots=True)
class Shortcuts:
    """The keyword arguments of ``HarnessAgent`` that only build capabilities."""

    file_tools: bool = True
    shell: bool | ShellConfig | Sandbox | None = None
    """The sandboxed ``execute``: ``None`` = on when bubblewrap works here (else off, logged
    once), ``True`` = required, ``False`` = off, a :class:`ShellConfig` (required, with its
    timeouts and caps) or a :class:`~harnessed.sandbox.Sandbox` to run commands in
    (``HostSandbox()``: on the host, unisolated). ``Shell(config, sandbox=...)`` in
    ``capabilities`` gives both."""
    memory: MemoryConfig | bool = True
    memory_tools: bool = True
    readable_session_agents: Sequence[str] = ()
    enable_task_list: bool = False
    enable_plan_mode: bool = False
    task_contract: TaskContractConfig | None = None
    permission_mode: PermissionMode | str | None = None
    permission_rules: Sequence[PermissionRule] = ()
    permission_checks: Mapping[str, ToolPermissionCheck] | None = None
    confirmation_timeout: float | None = None
    mcp_servers: MCPServers = ()
    mcp_resources: MCPResources = ()

    @staticmethod
    def given_capabilities(
        capabilities: object,
        skills: object,
        subagents: object = None,
        workspace: Workspace | None = None,
        web: object = None,
    ) -> list[Capability]:
        """``HarnessAgent``'s ``capabilities=``, ``skills=`` and ``subagents=`` checked and
        joined; a wrong value is a ``TypeError`` naming the argument. With a workspace, skills
        and sub-agents are on unless turned off (or given as capabilities already)."""
        if isinstance(capabilities, Capability):
            name = type(capabilities).__name__
            raise TypeError(
                f"HarnessAgent capabilities must be a list of capabilities, got one {name} object: "
                f"write capabilities=[{name}(...)]"
            )
        if isinstance(capabilities, str | bytes | Mapping) or not isinstance(
            capabilities, Iterable
        ):
            raise TypeError(
                "HarnessAgent capabilities must be a list of Capability objects, got "
                f"{type(capabilities).__name__}"
            )
        found = list(capabilities)
        for i, item in enumerate(found):
            if not isinstance(item, Capability):
                raise TypeError(
                    "HarnessAgent capabilities must be Capability objects: "
                    f"capabilities[{i}] is a {type(item).__name__}"
                )
        defaults: list[Capability] = []
        wanted = (
            ("skills", skills, _skills_class, "Skills([...folders...])"),
            ("subagents", subagents, _subagents_class, "Subagents()"),
            ("web", web, _web_class, "Web(WebFetchConfig(...))"),
        )
        for arg, value, load, example in wanted:
            if value is False or (value is None and workspace is None):
                continue  # off, or nothing to find (and nothing imported)
            if value is None and arg == "web" and not _web_extra():
                continue  # web_fetch by default only where the `web` extra is installed
            kind: type[Capability] = load()
            if isinstance(value, kind):
                found.append(value)
            elif value is not None and value is not True:
                raise TypeError(
                    f"HarnessAgent {arg} must be True, False or a {kind.__name__} object, got "
                    f"{type(value).__name__} {value!r}: write {arg}={example}"
                )
            elif not any(isinstance(c, kind) for c in found):
                defaults.append(kind())  # the reference's default: on with a workspace
        return [*found, *defaults]

    @staticmethod
    def skills_of(capabilities: CapabilitySet) -> Skills | None:
        """The ``Skills`` capability among ``capabilities``. The skills package is imported by
        whoever makes a ``Skills``, not by ``import harnessed``: if it is not loaded, there is
        none."""
        module = sys.modules.get("harnessed.skills")
        kind: type[Skills] | None = None if module is None else module.Skills
        return None if kind is None else capabilities.find(kind)

    def capabilities(
        self, workspace: Workspace | None, given: Sequence[Capability]
    ) -> list[Capability]:
        """The agent's capabilities: those the keywords build, around those ``given``, and
        last the workspace's ``tools.json`` (read once; its MCP servers join ``mcp_servers``),
        which filters every other capability's tools."""
        given = list(given)
        tools_json = read_tools_json(workspace.local_root if workspace is not None else None)
        servers = [*self.mcp_servers, *(tools_json.servers() if tools_json else ())]
        permissions = _take(given, Permissions)
        if permissions is None:
            permissions = Permissions(
                self.permission_mode,
                self.permission_rules,
                self.permission_checks,
                self.confirmation_timeout,
            )
        elif self.permission_mode is not None or self.permission_rules or self.permission_checks:
            raise ValueError("pass Permissions in capabilities or permission_* keywords, not both")
        contracts: list[Capability] = []
        if not any(isinstance(c, TaskContract) for c in given):
            contracts.append(TaskContract(self.task_contract))
        elif self.task_contract is not None:
            raise ValueError("pass TaskContract in capabilities or task_contract=, not both")
        built: list[Capability] = [permissions]
        tracing = _tracing(given)  # OpenTelemetry spans
        if tracing is not None:
            built.append(tracing)
        if workspace is not None and self.file_tools:
            built.append(FileTools())
        if any(isinstance(c, Shell) for c in given):
            if self.shell not in (None, False):
                raise ValueError("pass Shell in capabilities or shell=, not both")
        elif self._shell_on(workspace):
            built.append(self._shell())
        if workspace is not None and self.memory_tools:
            built.append(SessionTools(self.readable_session_agents))
        if self.memory is not False and (workspace is not None or self.memory is not True):
            config = self.memory if isinstance(self.memory, MemoryConfig) else None
            built.append(Memory(config, tools=self.memory_tools))
        if self.enable_task_list:
            built.append(TaskList())
        if self.enable_plan_mode:
            built.append(PlanMode())
        built.extend(self._mcp(given, servers))
        last = [ToolsJson(tools_json)] if tools_json is not None else []
        return [*built, PlanStatus(), *contracts, *given, *last]

    def _mcp(
        self, given: Sequence[Capability], servers: Sequence[MCPServer | str]
    ) -> list[Capability]:
        if not servers:
            if self.mcp_resources:
                raise ValueError("mcp_resources needs mcp_servers that serve them")
            return []
        from harnessed.mcp import MCP  # the optional `mcp` extra is imported only when used

        if any(isinstance(c, MCP) for c in given):
            raise ValueError("pass MCP in capabilities or mcp_servers=, not both")
        return [MCP(servers, self.mcp_resources)]

    def _shell_on(self, workspace: Workspace | None) -> bool:
        shell = self.shell
        if workspace is None:
            if shell:
                raise ValueError("shell needs a workspace: pass workspace=... to HarnessAgent")
            return False
        # a workspace elsewhere needs a sandbox with its own storage, chosen explicitly
        return shell is not False and (shell is not None or workspace.local_root is not None)

    def _shell(self) -> Shell:
        shell = self.shell
        if shell is None or shell is True:
            return Shell(required=shell is True)
        if isinstance(shell, ShellConfig):
            return Shell(shell, required=True)
        if not isinstance(shell, Sandbox):
            raise TypeError(f"shell must be a bool, a ShellConfig or a Sandbox, got {shell!r}")
        return Shell(sandbox=shell, required=True)


def _tracing(given: list[Capability]) -> Capability | None:
    """A ``Tracing`` passed in, or one for the tracer provider the application installed.
    With neither (no ``Tracing`` imported, no OpenTelemetry in use), OpenTelemetry is not
    imported at all."""
    otel_in_use = (
        "opentelemetry.trace" in sys.modules or "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
    )
    if "harnessed.tracing.spans" not in sys.modules and not otel_in_use:
        return None
    from harnessed.tracing.spans import Tracing

    return _take(given, Tracing) or Tracing.when_configured()


def _skills_class() -> type[Skills]:
    """``Skills`` (imported here, at the first agent given ``skills=``, not by ``import
    harnessed``)."""
    from harnessed.skills import Skills

    return Skills


def _web_class() -> type[Capability]:
    """``Web`` (imported at the first agent that has it)."""
    from harnessed.web import Web

    return Web


@functools.cache
def _web_extra() -> bool:
    return importlib.util.find_spec("trafilatura") is not None


def _subagents_class() -> type[Subagents]:
    """``Subagents`` (imported at the first agent that has them)."""
    from harnessed.subagents import Subagents

    return Subagents


def _take(given: list[Capability], kind: type[C]) -> C | None:
    found = [c for c in given if isinstance(c, kind)]
    if len(found) > 1:
        raise ValueError(f"pass at most one {kind.__name__} capability")
    if found:
        given.remove(found[0])
        return found[0]
    return None
