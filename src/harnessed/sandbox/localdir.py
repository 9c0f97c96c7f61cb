"""File operations on a sandbox's own local directory (its ``/workspace``).

Used by the bubblewrap and host backends when the sandbox has its own storage, and by
``harnessed sandbox-server``. Paths follow the workspace path policy and every open is the
race-free walk of :class:`~harnessed.workspace.LocalFilesystem`: commands in the sandbox
write this directory, so it is untrusted. Snapshots are tar archives; restoring one uses
tarfile's ``data`` filter, so an archive cannot write outside the directory either.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import tarfile
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from harnessed.sandbox.base import SandboxEntry, SandboxError
from harnessed.workspace import LocalFilesystem, WorkspaceError

__all__ = ["DirectorySession", "LocalDirectory"]

T = TypeVar("T")


class LocalDirectory:
    """Upload, download, list, exists, delete, snapshot and restore on one directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.fs = LocalFilesystem(root)
        self.root: Path = self.fs.root

    async def upload(self, path: str, data: bytes) -> None:
        await _wrap(self.fs.write(path, data), "upload", path)

    async def download(self, path: str) -> bytes:
        return await _wrap(self.fs.read(path), "download", path)

    async def list(self, path: str = "") -> list[SandboxEntry]:
        if not await self.exists(path):
            return []
        found = await _wrap(self.fs.glob("**/*", path), "list", path)
        return [
            SandboxEntry(i.path, i.size, int((i.modified or 0.0) * 1e9))
            for i in found
            if not i.is_dir
        ]

    async def exists(self, path: str) -> bool:
        try:
            return await self.fs.exists(path)
        except WorkspaceError:
            return False

    async def delete(self, path: str) -> None:
        await _wrap(self.fs.delete(path, recursive=True), "delete", path)

    async def snapshot(self) -> bytes:
        return await asyncio.to_thread(self._snapshot)

    async def restore(self, archive: bytes) -> None:
        await asyncio.to_thread(self._restore, archive)

    def _snapshot(self) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for entry in sorted(os.listdir(self.root)):
                tar.add(self.root / entry, arcname=entry, recursive=True)
        return buffer.getvalue()

    def _restore(self, archive: bytes) -> None:
        try:
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
                members = tar.getmembers()
                for entry in os.listdir(self.root):
                    target = self.root / entry
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target)
                    else:
                        target.unlink()
                tar.extractall(self.root, members=members, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise SandboxError(f"cannot restore the sandbox snapshot: {exc}") from exc


async def _wrap(op: Awaitable[T], what: str, path: str) -> T:
    try:
        return await op
    except (WorkspaceError, OSError, ValueError) as exc:
        raise SandboxError(f"{what} {path!r} failed: {exc}") from exc


class DirectorySession:
    """A sandbox session whose ``/workspace`` is a local directory; subclasses run commands."""

    def __init__(self, directory: Path, *, bound: bool) -> None:
        self.directory = directory
        self._bound = bound
        self._files = LocalDirectory(directory)

    @property
    def bound(self) -> bool:
        return self._bound

    def __repr__(self) -> str:
        kind = "bound" if self._bound else "own"
        return f"{type(self).__name__}({str(self.directory)!r}, {kind})"

    async def upload(self, path: str, data: bytes) -> None:
        await self._files.upload(path, data)

    async def download(self, path: str) -> bytes:
        return await self._files.download(path)

    async def list(self, path: str = "") -> list[SandboxEntry]:
        return await self._files.list(path)

    async def exists(self, path: str) -> bool:
        return await self._files.exists(path)

    async def delete(self, path: str) -> None:
        await self._files.delete(path)

    async def snapshot(self) -> bytes:
        return await self._files.snapshot()

    async def restore(self, archive: bytes) -> None:
        await self._files.restore(archive)

    async def close(self) -> None:
        return None
