"""``HostSandbox``: commands run directly on this machine — **no isolation at all**.

A command runs as ``/bin/sh -c`` with the agent's user id, in the workspace directory, with a
minimal environment (``PATH``, ``HOME``, ``LANG``). Nothing stops it from reading any file the
agent's user can read (other users' data in the workspace, ``~/.ssh``, ``/proc/<agent>/environ``
with the agent's API keys), writing anywhere that user can write, reaching the network, or
leaving processes behind. Choose it only for a trusted, single-user, local setup; it is never a
default.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from harnessed.sandbox.base import ExecResult, SandboxSpec
from harnessed.sandbox.localdir import DirectorySession
from harnessed.sandbox.process import ShellConfig, run_command
from harnessed.workspace.paths import encode_part

__all__ = ["HostSandbox"]


class HostSandbox:
    """Run ``execute`` on the host, unisolated (see the module docstring before using it)."""

    isolated = False
    supports_mounts = False

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.env = dict(env or {})
        self.inherit_env = inherit_env
        self._state_dir = Path(state_dir) if state_dir is not None else None

    def __repr__(self) -> str:
        return "HostSandbox()"

    def unavailable_reason(self) -> str | None:
        return None

    async def start(self, spec: SandboxSpec) -> HostSession:
        if spec.local_root is not None:
            return HostSession(self, Path(spec.local_root), bound=True)
        if self._state_dir is None:
            self._state_dir = Path(tempfile.gettempdir()) / f"harnessed-host-{os.geteuid()}"
        parts = [encode_part(k) for k in spec.key]
        directory = self._state_dir.joinpath(*parts)
        await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
        return HostSession(self, directory, bound=False)

    async def aclose(self) -> None:
        return None


class HostSession(DirectorySession):
    """Commands in one directory of the host."""

    def __init__(self, backend: HostSandbox, directory: Path, *, bound: bool) -> None:
        super().__init__(directory, bound=bound)
        self.backend = backend

    async def execute(
        self,
        command: str,
        timeout: float,
        *,
        max_output_bytes: int = 100_000,
        mounts: Sequence[tuple[str, str]] = (),
    ) -> ExecResult:
        config = ShellConfig(
            env=self.backend.env,
            inherit_env=self.backend.inherit_env,
            max_output_bytes=max_output_bytes,
            default_timeout=timeout,
            max_timeout=timeout,
        )
        result = await run_command(command, cwd=self.directory, timeout=timeout, config=config)
        return ExecResult.of(result)
