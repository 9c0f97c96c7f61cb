"""The ``Sandbox`` protocol: where ``execute`` runs, and the lifecycle around it (§10).

A :class:`Sandbox` is a backend (bubblewrap, a remote runtime, the host). For each session it
*starts* a :class:`SandboxSession`: a live sandbox whose ``/workspace`` holds the model's view
of the workspace. A session runs commands and moves files in and out (the runtime API of the
reference: execute, upload, download, list, exists) and can be snapshotted to a tar archive and
restored from one, so a call served by another process finds the files of the last call.

Two kinds of session:

* **bound** (``session.bound is True``): its ``/workspace`` *is* the local workspace, seen
  through bind mounts of the model's view. Nothing to copy, snapshot or restore.
* **own storage**: the sandbox has its own directory (a remote container, or bubblewrap over a
  workspace on S3). :class:`~harnessed.sandbox.manager.SandboxManager` then restores it from
  the last snapshot, projects the static assets into it (SHA-256 gated), keeps it in step with
  the workspace around every command, and snapshots it at the end of the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harnessed.sandbox.process import CommandResult
from harnessed.workspace.view import ViewPolicy

__all__ = [
    "ExecResult",
    "Sandbox",
    "SandboxEntry",
    "SandboxError",
    "SandboxSession",
    "SandboxSpec",
    "SandboxUnavailableError",
]


class SandboxError(Exception):
    """A sandbox operation failed (the message says which and why)."""


class SandboxUnavailableError(SandboxError):
    """No sandbox can be made here (no ``bwrap``, no user namespaces, a server that is down)."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one command did."""

    output: str
    """Standard output and standard error, interleaved as written, possibly cut in the middle."""
    exit_code: int | None
    """The exit status (negative: killed by that signal; ``None``: unknown)."""
    timed_out: bool = False
    truncated: bool = False
    total_bytes: int = 0
    """All the output the command produced, kept or not."""
    runaway: bool = False
    """Stopped because it produced far too much output."""
    pipe_left_open: bool = False
    """Background processes still held the output when the command ended (host only: a
    sandbox kills them)."""
    notes: tuple[str, ...] = ()
    """What the sandbox did about the command (stopped it at the workspace quota, removed
    setuid bits ...), one sentence each."""

    @classmethod
    def of(cls, result: CommandResult) -> ExecResult:
        """The outcome of a local process run (:func:`~harnessed.sandbox.process.run_command`)."""
        return cls(
            output=result.output,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            truncated=result.truncated,
            total_bytes=result.total_bytes,
            runaway=result.runaway,
            pipe_left_open=result.pipe_left_open,
        )


@dataclass(frozen=True, slots=True)
class SandboxEntry:
    """A file in a sandbox's ``/workspace`` (``list``)."""

    path: str
    """Relative to ``/workspace``."""
    size: int
    modified_ns: int


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """What a backend needs to start one session's sandbox."""

    key: tuple[str, str, str]
    """``(agent, user, session)``."""
    policy: ViewPolicy
    """The caller's view of the workspace (what a bound sandbox mounts, and how)."""
    local_root: str | None
    """The workspace directory when the workspace is on local disk, else ``None``."""


@runtime_checkable
class SandboxSession(Protocol):
    """One live sandbox (acquired at call start, released at call end)."""

    @property
    def bound(self) -> bool:
        """True when ``/workspace`` is the local workspace itself (nothing to sync)."""
        ...

    async def execute(
        self,
        command: str,
        timeout: float,
        *,
        max_output_bytes: int = 100_000,
        mounts: Sequence[tuple[str, str]] = (),
    ) -> ExecResult:
        """Run ``/bin/sh -c command`` in ``/workspace``; every process is gone when it returns.

        ``mounts`` are ``(host path, sandbox path)`` pairs to show read-only (skill folders);
        a backend that cannot mount host paths ignores them (see ``Sandbox.supports_mounts``).
        """
        ...

    async def upload(self, path: str, data: bytes) -> None: ...

    async def download(self, path: str) -> bytes: ...

    async def list(self, path: str = "") -> list[SandboxEntry]:
        """Every file below ``path`` (recursively)."""
        ...

    async def exists(self, path: str) -> bool: ...

    async def delete(self, path: str) -> None: ...

    async def snapshot(self) -> bytes:
        """A tar archive of the whole ``/workspace``."""
        ...

    async def restore(self, archive: bytes) -> None:
        """Replace ``/workspace`` with the contents of a :meth:`snapshot` archive."""
        ...

    async def close(self) -> None:
        """Release the sandbox (its files may be kept for the next acquire)."""
        ...


@runtime_checkable
class Sandbox(Protocol):
    """A sandbox backend."""

    @property
    def isolated(self) -> bool:
        """False only for :class:`~harnessed.sandbox.unisolated.HostSandbox`."""
        ...

    @property
    def supports_mounts(self) -> bool:
        """True when sessions can show host folders read-only at given paths."""
        ...

    def unavailable_reason(self) -> str | None:
        """Why this backend cannot run commands here, or ``None`` when it can."""
        ...

    async def start(self, spec: SandboxSpec) -> SandboxSession:
        """Acquire the sandbox of one session (a live one when the backend keeps them)."""
        ...

    async def aclose(self) -> None:
        """Release everything the backend holds."""
        ...
