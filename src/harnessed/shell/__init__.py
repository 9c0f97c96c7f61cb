"""``execute`` as a capability: shell commands in the workspace's local directory."""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.capabilities.base import Capability, CapabilityHost
from harnessed.tools.base import Tool
from harnessed.tools.shell import ShellConfig, shell_tools

__all__ = ["Shell", "ShellConfig"]


class Shell(Capability):
    """The ``execute`` tool; needs a workspace on local disk (see :class:`ShellConfig`)."""

    name = "shell"

    def __init__(self, config: ShellConfig | None = None) -> None:
        if config is not None and not isinstance(config, ShellConfig):
            raise TypeError(f"Shell config must be a ShellConfig, got {config!r}")
        self.config = config
        self._tools: list[Tool] = []

    def setup(self, host: CapabilityHost) -> None:
        workspace = host.workspace
        if workspace is None:
            raise ValueError("shell needs a workspace: pass workspace=... to HarnessAgent")
        if workspace.local_root is None:
            raise ValueError(
                "shell=True needs a workspace on local disk; this workspace is "
                f"{workspace!r} (commands cannot run inside a remote filesystem)"
            )
        self._tools = shell_tools(workspace, config=self.config)

    def tools(self) -> Sequence[Tool]:
        return self._tools
