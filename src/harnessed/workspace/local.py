"""``LocalFilesystem``: a directory on this machine, and nothing outside it.

Every path is normalized by the shared policy and then *walked* from the root one component at
a time: each directory is opened relative to the one before it with ``O_NOFOLLOW``
(``openat``), and the final open happens relative to the last directory. A symbolic link met on
the way is never followed by the kernel; its target is read and resolved here, against the
workspace, and the walk starts again from the root. So a path component swapped for a symlink
between two operations cannot redirect a read or a write outside the root: there is no window
between a check and an open.

Symbolic links that stay inside the workspace work as usual; one that leads outside is refused
with :class:`~harnessed.workspace.errors.PathOutsideWorkspaceError`. An absolute path is
accepted only when it lies inside the root, and is then treated as the matching relative path.
Writes go to a temporary file beside the target and are renamed over it, so readers never see
half a file. Walks never follow directory symlinks, and skip file symlinks that lead outside.

``data_root`` with ``data_names`` keeps some top-level folders elsewhere: a path whose first
component is one of ``data_names`` lives under ``data_root`` instead of the root (the same
relative path below it). Workspaces use it to keep the harness's runtime data (session logs,
state) out of a user's project; listings and walks of the root show only the root's own files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import shutil
import stat as stat_mod
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harnessed.workspace import paths
from harnessed.workspace.atomic import write_atomically_at
from harnessed.workspace.base import BaseFilesystem, LinkCheck
from harnessed.workspace.errors import (
    FileNotFoundInWorkspaceError,
    IsADirectoryInWorkspaceError,
    NotADirectoryInWorkspaceError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)
from harnessed.workspace.filesystem import FileInfo

__all__ = ["LinkCheck", "LocalFilesystem"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40
"""Symlinks one path may pass through (the kernel's own limit)."""


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_current_umask()


@dataclass(slots=True)
class _Located:
    """Where a walk ended: an open directory, the last name in it, and the real path."""

    dir_fd: int
    name: str
    """The final component (``""`` when the path is the root itself)."""
    real: str
    """The workspace-relative path after following symlinks."""

    def close(self) -> None:
        os.close(self.dir_fd)


class LocalFilesystem(BaseFilesystem):
    """A workspace in a local directory (created when missing, unless ``create=False``).

    ``exists`` and ``stat`` walk the path on the calling thread (a few microseconds on a local
    disk; a hand-off to a worker thread costs far more); pass ``metadata_inline=False`` for a
    directory on a network mount that may stall, to keep them off the event loop as well.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        create: bool = True,
        link_check: LinkCheck | None = None,
        metadata_inline: bool = True,
        data_root: str | os.PathLike[str] | None = None,
        data_names: Collection[str] = (),
    ) -> None:
        super().__init__()
        if not isinstance(metadata_inline, bool):
            raise TypeError(f"metadata_inline must be True or False, got {metadata_inline!r}")
        self.metadata_inline = metadata_inline
        given = Path(root).expanduser().absolute()
        if create:
            given.mkdir(parents=True, exist_ok=True)
        if not given.is_dir():
            raise NotADirectoryError(f"workspace root {str(given)!r} is not a directory")
        self.root: Path = given.resolve()
        """The resolved workspace directory."""
        self._given = Path(os.path.normpath(given))
        self._link_check = link_check
        self.data_root: Path | None = None
        """Where the top-level folders of :attr:`data_names` live (``None``: in the root)."""
        self.data_names: frozenset[str] = frozenset(data_names)
        if data_root is not None:
            if not self.data_names:
                raise ValueError("data_root needs data_names: the folders that live there")
            for name in self.data_names:
                if not name or "/" in name or name in (".", ".."):
                    raise ValueError(f"data_names must be top-level folder names, got {name!r}")
            self.data_root = Path(data_root).expanduser().absolute()
            if self.data_root.exists():
                self.data_root = self.data_root.resolve()
            if self.data_root == self.root:
                self.data_root = None  # the root itself: nothing is elsewhere
        elif self.data_names:
            raise ValueError("data_names without data_root: say where those folders live")

    def __repr__(self) -> str:
        return f"LocalFilesystem({str(self.root)!r})"

    def with_link_check(self, link_check: LinkCheck) -> LocalFilesystem:
        """The same directory (and edit locks), with every symlink a walk follows checked by
        ``link_check`` after the checks this filesystem already makes (see :data:`LinkCheck`)."""
        previous = self._link_check
        checked = LocalFilesystem(
            self.root,
            create=False,
            link_check=link_check if previous is None else _both(previous, link_check),
            metadata_inline=self.metadata_inline,
            data_root=self.data_root,
            data_names=self.data_names if self.data_root is not None else (),
        )
        checked._given = self._given  # absolute links through the given path still resolve
        checked._locks = self._locks
        return checked

    # ------------------------------------------------------------ path policy
    def normalize(self, path: str) -> str:
        if isinstance(path, str) and path.strip().startswith("/"):
            return self._relative(path.strip(), path)
        return paths.normalize_path(path)

    def _relative(self, absolute_text: str, shown: str) -> str:
        absolute = Path(os.path.normpath(absolute_text))
        data = self.data_root
        if data is not None and absolute.is_relative_to(data) and absolute != data:
            rel = absolute.relative_to(data).as_posix()
            if rel.split("/", 1)[0] in self.data_names:
                return paths.normalize_path(rel)
        for base in (self.root, self._given):
            if absolute == base or absolute.is_relative_to(base):
                return paths.normalize_path(absolute.relative_to(base).as_posix())
        raise PathOutsideWorkspaceError(
            shown, "it is outside the workspace; use a path relative to the workspace root"
        )

    def real_path(self, path: str) -> str:
        rel = self.normalize(path)
        try:
            located = self._locate(rel)
        except FileNotFoundError:  # a missing component is no link: the rest stays as given
            if not rel:
                raise
            head, _, name = rel.rpartition("/")
            return paths.join(self.real_path(head) if head else "", name)
        located.close()
        return located.real

    def resolve(self, path: str) -> Path:
        """The real local path of a workspace path, after the policy and symlink checks."""
        located = self._locate(self.normalize(path))
        located.close()
        return self._base(located.real) / located.real if located.real else self.root

    def _base(self, rel: str) -> Path:
        """The directory ``rel`` (workspace-relative) is below: the root or :attr:`data_root`."""
        if self.data_root is not None and rel.split("/", 1)[0] in self.data_names:
            return self.data_root
        return self.root

    def _open_top(self, parts: list[str], create: bool) -> int:
        base = self._base(parts[0]) if parts else self.root
        try:
            return os.open(base, _DIR)
        except FileNotFoundError:
            if base == self.root or not create:
                raise
        base.mkdir(parents=True, exist_ok=True)  # the data root, made with its first write
        return os.open(base, _DIR)

    # ------------------------------------------------------------ the walk
    def _locate(self, rel: str, *, create: bool = False, follow: bool = True) -> _Located:
        """Open the directory holding ``rel`` by an ``O_NOFOLLOW`` walk from the root.

        Symlinks in the middle (and at the end when ``follow``) are resolved against the
        workspace and the walk restarts; ``create`` makes missing directories on the way.
        """
        parts = rel.split("/") if rel else []
        for _ in range(_MAX_LINKS + 1):
            fd, done, redirect = self._descend(parts, create)
            last = parts[-1] if parts else ""
            if redirect is None and follow and last:
                try:
                    redirect = self._link_at(fd, last, done, [])
                except BaseException:
                    os.close(fd)
                    raise
            if redirect is None:
                return _Located(fd, last, "/".join([*done, last]) if last else "/".join(done))
            os.close(fd)
            parts = redirect
        raise WorkspaceError(f"cannot resolve {rel!r}: too many levels of symbolic links")

    def _descend(self, parts: list[str], create: bool) -> tuple[int, list[str], list[str] | None]:
        """Open the root and walk the directories of ``parts[:-1]``.

        Returns the open directory reached, the names walked, and a new path to walk instead
        when a symlink was met (the directory is then the one holding the link).
        """
        fd = self._open_top(parts, create)
        done: list[str] = []
        try:
            for index, name in enumerate(parts[:-1]):
                while True:
                    try:
                        child = os.open(name, _DIR, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(name, 0o777, dir_fd=fd)
                        continue
                    except OSError as exc:
                        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                            raise
                        target = self._link_at(fd, name, done, parts[index + 1 :])
                        if target is None:
                            where = "/".join([*done, name])
                            raise NotADirectoryInWorkspaceError(
                                "/".join(parts), "open", f"{where!r} is a file, not a directory"
                            ) from exc
                        return fd, done, target
                    break
                os.close(fd)
                fd = child
                done.append(name)
        except BaseException:
            os.close(fd)
            raise
        return fd, done, None

    def _link_at(self, fd: int, name: str, done: list[str], rest: list[str]) -> list[str] | None:
        """The path to walk instead when ``name`` in ``fd`` is a symlink (its target inside the
        workspace followed by ``rest``, the components after it), or ``None`` if not a link.

        The link check sees that whole path, not just the target: a link to the root (or to
        any visible directory above a hidden one) must not open the hidden one to the path
        that goes on through it.
        """
        try:
            target = os.readlink(name, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # not a symlink
                return None
            raise
        shown = "/".join([*done, name])
        if target.startswith("/"):
            try:
                rel = self._relative(target, shown)
            except PathOutsideWorkspaceError:
                raise PathOutsideWorkspaceError(
                    shown, "it leads outside the workspace through a symbolic link"
                ) from None
        else:
            rel = posixpath.normpath(posixpath.join("/".join(done), target))
            if rel == ".." or rel.startswith("../"):
                raise PathOutsideWorkspaceError(
                    shown, "it leads outside the workspace through a symbolic link"
                )
            rel = "" if rel == "." else rel
        walked = [*(rel.split("/") if rel else []), *rest]
        if self._link_check is not None:
            self._link_check(shown, "/".join(walked))
        return walked

    def _open_dir(self, rel: str) -> tuple[int, str]:
        """An fd of the directory ``rel`` (symlinks resolved inside the workspace) and its real
        workspace path."""
        located = self._locate(rel)
        if not located.name:
            return located.dir_fd, located.real
        try:
            return os.open(located.name, _DIR, dir_fd=located.dir_fd), located.real
        finally:
            located.close()

    def _reached_check(self, rel: str, real: str) -> Callable[[str], bool] | None:
        """For a directory reached through a link (``real`` differs from ``rel``), a predicate
        telling which real paths below it a listing or a walk may show and enter; ``None`` when
        no check applies. The link check decides, as if each entry were a link's target."""
        check = self._link_check
        if check is None or real == rel:
            return None

        def allowed(path: str) -> bool:
            try:
                check(rel, path)
            except WorkspaceError:
                return False
            return True

        return allowed

    # ------------------------------------------------------------ primitives
    def _info(self, rel: str) -> FileInfo | None:
        try:
            located = self._locate(rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            if not located.name:
                st = os.fstat(located.dir_fd)
            else:
                st = os.stat(located.name, dir_fd=located.dir_fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        finally:
            located.close()
        return _file_info(rel, st)

    def _list_dir(self, rel: str) -> list[FileInfo]:
        fd, real = self._open_dir(rel)
        allowed = self._reached_check(rel, real)
        entries: list[FileInfo] = []
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    if allowed is not None and not allowed(paths.join(real, entry.name)):
                        continue  # reached through a link, and out of bounds there
                    child = paths.join(rel, entry.name)
                    info: FileInfo | None = None
                    if entry.is_symlink():
                        with contextlib.suppress(WorkspaceError, OSError):
                            info = self._info(child)
                        # a dangling link, or one leading out: an empty file, nothing followed
                        entries.append(info or FileInfo(child, False, 0, None))
                        continue
                    with contextlib.suppress(OSError):
                        info = _file_info(child, entry.stat(follow_symlinks=False))
                    if info is not None:
                        entries.append(info)
        finally:
            os.close(fd)
        return entries

    def _walk(self, rel: str) -> Iterator[FileInfo]:
        top, real = self._open_dir(rel)
        allowed = self._reached_check(rel, real)
        try:
            # fwalk opens every directory relative to its parent and never follows links.
            for dirpath, dirs, names, dir_fd in os.fwalk(".", dir_fd=top):
                sub = "" if dirpath == "." else dirpath[2:]
                if allowed is not None:  # reached through a link: prune what is out of bounds
                    dirs[:] = [d for d in dirs if allowed(paths.join(real, sub, d))]
                    names = [n for n in names if allowed(paths.join(real, sub, n))]
                for name in names:
                    child = paths.join(rel, sub, name)
                    try:
                        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat_mod.S_ISLNK(st.st_mode):
                        try:
                            info = self._info(child)
                        except (WorkspaceError, OSError):
                            continue  # leads outside (or out of view): skipped
                        if info is not None and not info.is_dir:
                            yield info
                        continue
                    if not stat_mod.S_ISDIR(st.st_mode):
                        yield _file_info(child, st)
        finally:
            os.close(top)

    def _read(self, rel: str) -> bytes:
        with self._open(rel) as stream:
            return stream.read()

    def _open(self, rel: str) -> AbstractContextManager[BinaryIO]:
        located = self._locate(rel)
        try:
            if not located.name:
                raise IsADirectoryInWorkspaceError(rel)
            try:
                fd = os.open(located.name, _FILE, dir_fd=located.dir_fd)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                # the file was swapped for a link after it was checked: O_NOFOLLOW refused it;
                # to a reader (and a walk) the file is gone, never followed
                raise FileNotFoundInWorkspaceError(rel) from exc
        finally:
            located.close()
        if stat_mod.S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise IsADirectoryInWorkspaceError(rel)
        return os.fdopen(fd, "rb")

    def _write(self, rel: str, data: bytes) -> None:
        located = self._locate_for_write(rel)
        fd, name = located.dir_fd, located.name
        try:
            try:
                mode = stat_mod.S_IMODE(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
            except FileNotFoundError:
                mode = _FILE_MODE
            parent = self._base(located.real) / posixpath.dirname(located.real)
            write_atomically_at(fd, name, data, mode, directory=parent)
        finally:
            located.close()

    def _append(self, rel: str, data: bytes) -> None:
        located = self._locate_for_write(rel)
        try:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(located.name, flags, _FILE_MODE, dir_fd=located.dir_fd)
        finally:
            located.close()
        with os.fdopen(fd, "ab") as out:
            out.write(data)

    def _locate_for_write(self, rel: str) -> _Located:
        try:
            return self._locate(rel, create=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise NotADirectoryInWorkspaceError(
                rel, "write", "one of its parent directories is a file"
            ) from exc

    def _delete(self, rel: str, is_dir: bool) -> None:
        located = self._locate(rel, follow=False)  # the entry itself, not a symlink's target
        try:
            st = os.stat(located.name, dir_fd=located.dir_fd, follow_symlinks=False)
            if stat_mod.S_ISDIR(st.st_mode):
                shutil.rmtree(located.name, dir_fd=located.dir_fd)
            else:
                os.unlink(located.name, dir_fd=located.dir_fd)
        finally:
            located.close()

    def _makedirs(self, rel: str) -> None:
        if not rel:
            return
        try:
            located = self._locate(rel, create=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise NotADirectoryInWorkspaceError(
                rel, "create directory", "it or one of its parents is a file"
            ) from exc
        try:
            os.mkdir(located.name, 0o777, dir_fd=located.dir_fd)
        except FileExistsError:
            st = os.stat(located.name, dir_fd=located.dir_fd)
            if not stat_mod.S_ISDIR(st.st_mode):
                raise NotADirectoryInWorkspaceError(
                    rel, "create directory", "it or one of its parents is a file"
                ) from None
        finally:
            located.close()


def _both(first: LinkCheck, second: LinkCheck) -> LinkCheck:
    def check(link: str, reached: str) -> None:
        first(link, reached)
        second(link, reached)

    return check


def _file_info(rel: str, st: os.stat_result) -> FileInfo:
    is_dir = stat_mod.S_ISDIR(st.st_mode)
    return FileInfo(rel, is_dir, 0 if is_dir else st.st_size, st.st_mtime)
