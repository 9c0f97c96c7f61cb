"""``LocalFilesystem``: a directory on this machine, and nothing outside it.

Every path is normalized by the shared policy and then resolved on disk; a path whose real
location (after following symlinks) is outside the root is refused with
:class:`~harnessed.workspace.errors.PathOutsideWorkspaceError`. An absolute path is accepted
only when it lies inside the root, and is then treated as the matching relative path. Writes
go to a temporary file beside the target and are renamed over it, so readers never see half a
file. Walks never follow directory symlinks, and skip file symlinks that lead outside.

The checks run before each operation; a process that swaps a directory for a symlink in
between could still race them, so the root should not be shared with untrusted writers.
"""

from __future__ import annotations

import os
import shutil
import stat as stat_mod
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO

from harnessed.workspace import paths
from harnessed.workspace.atomic import write_atomically
from harnessed.workspace.base import BaseFilesystem
from harnessed.workspace.errors import (
    NotADirectoryInWorkspaceError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)
from harnessed.workspace.filesystem import FileInfo

__all__ = ["LocalFilesystem"]


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_current_umask()


class LocalFilesystem(BaseFilesystem):
    """A workspace in a local directory (created when missing, unless ``create=False``)."""

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True) -> None:
        super().__init__()
        given = Path(root).expanduser().absolute()
        if create:
            given.mkdir(parents=True, exist_ok=True)
        if not given.is_dir():
            raise NotADirectoryError(f"workspace root {str(given)!r} is not a directory")
        self.root: Path = given.resolve()
        """The resolved workspace directory."""
        self._given = Path(os.path.normpath(given))

    def __repr__(self) -> str:
        return f"LocalFilesystem({str(self.root)!r})"

    # ------------------------------------------------------------ path policy
    def normalize(self, path: str) -> str:
        if isinstance(path, str) and path.strip().startswith("/"):
            absolute = Path(os.path.normpath(path.strip()))
            for base in (self.root, self._given):
                if absolute == base or absolute.is_relative_to(base):
                    return paths.normalize_path(absolute.relative_to(base).as_posix())
            raise PathOutsideWorkspaceError(
                path, "it is outside the workspace; use a path relative to the workspace root"
            )
        return paths.normalize_path(path)

    def resolve(self, path: str) -> Path:
        """The real local path of a workspace path, after the policy and symlink checks."""
        return self._real(self.normalize(path))

    def _real(self, rel: str) -> Path:
        candidate = self.root / rel if rel else self.root
        try:
            real = candidate.resolve()
        except (RuntimeError, OSError) as exc:
            raise WorkspaceError(f"cannot resolve {rel!r}: {exc}") from exc
        if real != self.root and not real.is_relative_to(self.root):
            raise PathOutsideWorkspaceError(
                rel, "it leads outside the workspace through a symbolic link"
            )
        return real

    def _inside(self, path: Path) -> bool:
        try:
            real = path.resolve()
        except (RuntimeError, OSError):
            return False
        return real == self.root or real.is_relative_to(self.root)

    # ------------------------------------------------------------ primitives
    def _info(self, rel: str) -> FileInfo | None:
        try:
            st = self._real(rel).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _file_info(rel, st)

    def _list_dir(self, rel: str) -> list[FileInfo]:
        entries: list[FileInfo] = []
        with os.scandir(self._real(rel)) as it:
            for entry in it:
                child = paths.join(rel, entry.name)
                try:
                    entries.append(_file_info(child, entry.stat()))
                except OSError:  # a dangling symlink: show it as an empty file
                    entries.append(FileInfo(child, False, 0, None))
        return entries

    def _walk(self, rel: str) -> Iterator[FileInfo]:
        top = self._real(rel)
        for dirpath, _dirnames, filenames in os.walk(top, followlinks=False):
            sub = Path(dirpath).relative_to(top).as_posix()
            for name in filenames:
                full = Path(dirpath, name)
                if full.is_symlink() and not self._inside(full):
                    continue
                try:
                    st = full.stat()
                except OSError:
                    continue
                if stat_mod.S_ISDIR(st.st_mode):
                    continue
                yield _file_info(paths.join(rel, sub, name), st)

    def _read(self, rel: str) -> bytes:
        return self._real(rel).read_bytes()

    def _write(self, rel: str, data: bytes) -> None:
        target = self._real(rel)
        self._make_parent(rel, target)
        try:
            mode = stat_mod.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = _FILE_MODE
        write_atomically(target, data, mode)

    def _append(self, rel: str, data: bytes) -> None:
        target = self._real(rel)
        self._make_parent(rel, target)
        with open(target, "ab") as out:
            out.write(data)

    def _delete(self, rel: str, is_dir: bool) -> None:
        parent, _, name = rel.rpartition("/")
        location = self._real(parent) / name  # the entry itself, not a symlink's target
        if location.is_symlink() or not is_dir:
            location.unlink()
        else:
            shutil.rmtree(location)

    def _makedirs(self, rel: str) -> None:
        try:
            self._real(rel).mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise NotADirectoryInWorkspaceError(
                rel, "create directory", "it or one of its parents is a file"
            ) from exc

    def _open(self, rel: str) -> AbstractContextManager[BinaryIO]:
        return open(self._real(rel), "rb")

    def _make_parent(self, rel: str, target: Path) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise NotADirectoryInWorkspaceError(
                rel, "write", "one of its parent directories is a file"
            ) from exc


def _file_info(rel: str, st: os.stat_result) -> FileInfo:
    is_dir = stat_mod.S_ISDIR(st.st_mode)
    return FileInfo(rel, is_dir, 0 if is_dir else st.st_size, st.st_mtime)
