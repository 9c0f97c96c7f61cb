"""The sandbox lifecycle of §10: acquire per call, keep in step, snapshot at the end.

:class:`SandboxManager` gives each session (agent, user, session) its sandbox:

* **acquire** (first ``execute`` of a call): a live sandbox of this process is reused; else a
  new one is started and, when it has its own storage, restored from the session's last
  snapshot (written by whichever process served the previous call), else it starts cold.
* **keep in step** (own storage only; a *bound* sandbox mounts the workspace itself): before
  each command the model's view of the workspace is projected in — a file is copied only when
  its SHA-256 differs from what the sandbox holds, so static assets (``AGENTS.md``,
  ``skills/``, ``subagents/``, ``knowledge/``) and unchanged files cost a listing, not a copy;
  after each command the files the command created, changed or deleted are written back to
  the workspace through the same view (instruction files and hidden areas are refused there as
  they are for the file tools). So ``read_file`` sees what ``execute`` made, and the reverse.
* **release** (end of the call): the sandbox's ``/workspace`` is archived (tar) to the
  workspace storage, under the session's hidden runtime area, so a call on another server (or
  a new agent object) restores it — modes, symlinks and all.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from harnessed.runtime import RuntimeContext
from harnessed.sandbox.base import ExecResult, Sandbox, SandboxSession, SandboxSpec
from harnessed.sandbox.events import AcquireMode, SandboxAcquire, SandboxSnapshot, backend_name
from harnessed.workspace import FileInfo, Filesystem, Workspace, WorkspaceError
from harnessed.workspace.paths import encode_part, join
from harnessed.workspace.view import ViewFilesystem, ViewPolicy

__all__ = ["MountSource", "SandboxLease", "SandboxManager"]

logger = logging.getLogger(__name__)

MountSource = Callable[[RuntimeContext], Awaitable[Sequence[tuple[str, str]]]]
"""What a caller's sandbox shows read-only: ``(host path, sandbox path)`` pairs."""

AcquireReport = Callable[[SandboxAcquire], None]
SnapshotReport = Callable[[SandboxSnapshot], None]

SNAPSHOT_DIR = "sandboxes"
"""Below ``agents/<agent>/``: ``sandboxes/<user>/<session>.tar.gz`` (hidden from the model)."""


@dataclass
class SandboxLease:
    """A session's sandbox while this process holds it, and what both sides last agreed on."""

    key: tuple[str, str, str]
    session: SandboxSession
    view: ViewFilesystem
    known: dict[str, str] = field(default_factory=dict)
    """path -> SHA-256 of the content the workspace and the sandbox both hold."""
    workspace_seen: dict[str, tuple[int, float | None]] = field(default_factory=dict)
    sandbox_seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    used: bool = False
    """A command ran since the last snapshot."""
    notes: list[str] = field(default_factory=list)

    async def execute(
        self,
        command: str,
        timeout: float,
        *,
        max_output_bytes: int = 100_000,
        mounts: Sequence[tuple[str, str]] = (),
    ) -> tuple[ExecResult, list[str]]:
        """Run a command with the workspace projected in before and written back after.

        Returns the result and notes about files that could not be written back.
        """
        async with self.lock:
            self.used = True
            if self.session.bound:
                return await self.session.execute(
                    command, timeout, max_output_bytes=max_output_bytes, mounts=mounts
                ), []
            await self.sync_in()
            result = await self.session.execute(
                command, timeout, max_output_bytes=max_output_bytes, mounts=mounts
            )
            return result, await self.sync_out()

    async def sync_in(self) -> None:
        """Copy what changed in the workspace view into the sandbox (SHA-256 gated)."""
        files = {i.path: i for i in await self.view.glob("**/*") if not i.is_dir}
        for path, info in files.items():
            signature = (info.size, info.modified)
            if self.workspace_seen.get(path) == signature and path in self.known:
                continue
            data = await self.view.read(path)
            digest = _sha(data)
            self.workspace_seen[path] = signature
            if self.known.get(path) != digest:
                await self.session.upload(path, data)
                self.known[path] = digest
        for path in [p for p in self.workspace_seen if p not in files]:
            del self.workspace_seen[path]
            if self.known.pop(path, None) is not None and await self.session.exists(path):
                await self.session.delete(path)
        # what the sandbox now holds is known: do not copy it back
        self.sandbox_seen = {e.path: (e.size, e.modified_ns) for e in await self.session.list()}

    async def sync_out(self) -> list[str]:
        """Write what the command changed back to the workspace view; notes on refusals."""
        notes: list[str] = []
        entries = {e.path: e for e in await self.session.list()}
        for path, entry in entries.items():
            signature = (entry.size, entry.modified_ns)
            if self.sandbox_seen.get(path) == signature:
                continue
            self.sandbox_seen[path] = signature
            data = await self.session.download(path)
            digest = _sha(data)
            if self.known.get(path) == digest:
                continue
            self.known[path] = digest
            try:
                await self.view.write(path, data)
            except (WorkspaceError, OSError) as exc:
                notes.append(f"{path}: kept in the sandbox only ({exc})")
                continue
            self.workspace_seen[path] = _signature(await self.view.stat(path))
        for path in [p for p in self.sandbox_seen if p not in entries]:
            del self.sandbox_seen[path]
            if self.known.pop(path, None) is None:
                continue
            try:
                await self.view.delete(path)
            except (WorkspaceError, OSError) as exc:
                notes.append(f"{path}: deleted in the sandbox only ({exc})")
            self.workspace_seen.pop(path, None)
        return notes


class SandboxManager:
    """The sandboxes of one agent's sessions (see the module docstring)."""

    def __init__(
        self,
        sandbox: Sandbox,
        workspace: Workspace,
        agent_name: str,
        *,
        writable_instructions: bool | Sequence[str] = False,
        max_live: int = 64,
        mounts: MountSource | None = None,
    ) -> None:
        if max_live < 1:
            raise ValueError("SandboxManager max_live must be at least 1")
        self.sandbox = sandbox
        self.workspace = workspace
        self.agent_name = agent_name
        self.writable_instructions = writable_instructions
        self.max_live = max_live
        self.mounts = mounts
        """Read-only host folders to show in a caller's sandbox (skill folders)."""
        self._live: OrderedDict[tuple[str, str, str], SandboxLease] = OrderedDict()
        self._starting = asyncio.Lock()

    def snapshot_path(self, user_id: str, session_id: str) -> str:
        """Where the session's snapshot is kept in the workspace storage."""
        return join(
            self.workspace.AGENTS_DIR,
            encode_part(self.agent_name, "agent"),
            SNAPSHOT_DIR,
            encode_part(user_id, "user_id"),
            encode_part(session_id, "session_id") + ".tar.gz",
        )

    async def acquire(
        self, user_id: str, session_id: str, *, report: AcquireReport | None = None
    ) -> SandboxLease:
        """The session's sandbox: live → restored from its snapshot → started cold.

        ``report`` hears how it was acquired (``sandbox_acquire`` event data).
        """
        key = (self.agent_name, user_id, session_id)
        started = time.perf_counter()
        async with self._starting:
            lease = self._live.get(key)
            if lease is not None:
                self._live.move_to_end(key)
                self._report(report, "live", started)
                return lease
            policy = ViewPolicy.for_caller(
                self.workspace,
                *key,
                writable_instructions=self.writable_instructions,
            )
            local = self.workspace.local_root
            spec = SandboxSpec(key, policy, str(local) if local is not None else None)
            session = await self.sandbox.start(spec)
            view = self.workspace.view(*key, writable_instructions=self.writable_instructions)
            lease = SandboxLease(key, session, view)
            restored = not session.bound and await self._restore(lease)
            self._live[key] = lease
            while len(self._live) > self.max_live:
                _, old = self._live.popitem(last=False)
                await old.session.close()
            self._report(report, "restore" if restored else "cold", started)
            return lease

    def _report(self, report: AcquireReport | None, mode: AcquireMode, started: float) -> None:
        if report is not None:
            duration = _ms_since(started)
            report({"mode": mode, "backend": backend_name(self.sandbox), "duration_ms": duration})

    async def _restore(self, lease: SandboxLease) -> bool:
        path = self.snapshot_path(*lease.key[1:])
        fs: Filesystem = self.workspace.fs
        if not await fs.exists(path):
            return False  # cold start
        await lease.session.restore(await fs.read(path))
        logger.debug("sandbox of %s restored from %s", lease.key, path)
        return True

    async def release(
        self, user_id: str, session_id: str, *, report: SnapshotReport | None = None
    ) -> None:
        """End of a call: snapshot a sandbox with its own storage to the workspace.

        With ``report``, a failed snapshot is reported (``sandbox_snapshot`` event data) and
        logged instead of raised; the sandbox stays live and is snapshotted again next time.
        """
        lease = self._live.get((self.agent_name, user_id, session_id))
        if lease is None or lease.session.bound or not lease.used:
            return
        path = self.snapshot_path(user_id, session_id)
        started = time.perf_counter()
        backend = backend_name(self.sandbox)
        async with lease.lock:
            try:
                archive = await lease.session.snapshot()
                await self.workspace.fs.write(path, archive)
            except Exception as exc:
                if report is None:
                    raise
                logger.warning("snapshot of the sandbox of %s failed: %s", lease.key, exc)
                report(
                    {
                        "status": "failed",
                        "backend": backend,
                        "duration_ms": _ms_since(started),
                        "path": path,
                        "error_type": type(exc).__name__,
                        "error": str(exc)[:500],
                    }
                )
                return
            lease.used = False
        if report is not None:
            report(
                {
                    "status": "completed",
                    "backend": backend,
                    "duration_ms": _ms_since(started),
                    "bytes": len(archive),
                    "path": path,
                }
            )

    async def aclose(self) -> None:
        while self._live:
            _, lease = self._live.popitem()
            await lease.session.close()
        await self.sandbox.aclose()


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _signature(info: FileInfo) -> tuple[int, float | None]:
    return (info.size, info.modified)
