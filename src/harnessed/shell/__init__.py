"""``execute`` as a capability: shell commands in a sandbox (BEHAVIOUR.md §10).

:class:`Shell` resolves the sandbox when the agent is built (bubblewrap by default; without a
usable one there is no ``execute``, and the reason is logged once), gives the model the
``execute`` tool bound to a :class:`~harnessed.sandbox.SandboxManager`, snapshots a session's
sandbox at the end of each call (``after_call``; ``sandbox_acquire`` / ``sandbox_snapshot``
events tell how, see :mod:`harnessed.sandbox.events`) and releases every sandbox on ``close``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harnessed.capabilities.base import CallContext, CallEnd, Capability, CapabilityHost
from harnessed.capabilities.queries import SkillFolders, SkillsSandbox
from harnessed.files import model_editable_instructions
from harnessed.sandbox.base import Sandbox
from harnessed.sandbox.events import SANDBOX_SNAPSHOT, SandboxSnapshot
from harnessed.sandbox.process import ShellConfig
from harnessed.tools.base import Tool

if TYPE_CHECKING:
    from harnessed.sandbox.manager import MountSource, SandboxManager

__all__ = ["Shell", "ShellConfig"]


class Shell(Capability):
    """The sandboxed ``execute`` tool.

    Args:
        config: Timeouts and output caps (:class:`ShellConfig`).
        sandbox: Where commands run (default :class:`~harnessed.sandbox.BubblewrapSandbox`);
            ``HostSandbox()`` runs them on the host, unisolated.
        required: Raise at construction when the sandbox is unusable, instead of leaving
            ``execute`` out.
    """

    name = "shell"

    def __init__(
        self,
        config: ShellConfig | None = None,
        *,
        sandbox: Sandbox | None = None,
        required: bool = False,
    ) -> None:
        if config is not None and not isinstance(config, ShellConfig):
            raise TypeError(f"Shell config must be a ShellConfig, got {config!r}")
        self.config = config
        self.sandbox = sandbox
        self.required = required
        self.manager: SandboxManager | None = None
        """The sessions' sandboxes (``None`` until set up, or when no sandbox is usable)."""
        self._tools: list[Tool] = []
        self._mounts_skills = False

    def views(self) -> Sequence[object]:
        return (SkillsSandbox(lambda: self._mounts_skills),)

    def setup(self, host: CapabilityHost) -> None:
        workspace = host.workspace
        if workspace is None:
            raise ValueError("shell needs a workspace: pass workspace=... to HarnessAgent")
        if workspace.local_root is None and self.sandbox is None:
            raise ValueError(
                "shell=True needs a workspace on local disk, or an explicit sandbox= (e.g. "
                f"BubblewrapSandbox()) to keep the files of {workspace!r} in step with"
            )
        # the back ends and the lifecycle are imported by the agents that offer ``execute``
        from harnessed.sandbox.manager import SandboxManager
        from harnessed.shell.tool import execute_tool, resolve_sandbox

        chosen = resolve_sandbox(self.sandbox, required=self.required)
        if chosen is None:
            return
        self.manager = SandboxManager(
            chosen,
            workspace,
            host.agent_name,
            writable_instructions=model_editable_instructions(host),
            mounts=self._skill_mounts(host.query(SkillFolders), chosen),
        )
        self._tools = [execute_tool(self.manager, self.config)]

    def _skill_mounts(self, skills: SkillFolders | None, sandbox: Sandbox) -> MountSource | None:
        """Skill folders, mounted read-only where the model is told to find them (the skills
        learn it from this capability's :class:`SkillsSandbox` view)."""
        if skills is None or not sandbox.supports_mounts:
            return None
        self._mounts_skills = True
        return skills.mounts

    def tools(self) -> Sequence[Tool]:
        return self._tools

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        if self.manager is not None:  # snapshot a sandbox with its own storage

            def report(data: SandboxSnapshot) -> None:
                call.emit(SANDBOX_SNAPSHOT, data)

            await self.manager.release(call.user_id, call.session_id, report=report)

    async def close(self) -> None:
        if self.manager is not None:
            await self.manager.aclose()
