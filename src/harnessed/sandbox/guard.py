"""What a sandboxed command leaves in the workspace: owner, setuid bits, size.

Around each command, :class:`WorkspaceGuard` walks the parts of the host directory the command
can write (the *areas*):

* **before**: with an unprivileged host identity (a root agent, :mod:`harnessed.sandbox.hostuser`)
  every entry not owned by it is given to it, so the command can change what the file tools
  (which run as root) wrote; and the areas' size is measured;
* **while it runs**: the free space of the filesystem is polled (one ``statvfs``, cheap); when
  it has shrunk by more than the quota the areas are measured, and a command that grew them by
  more than ``workspace_quota_bytes`` is stopped;
* **after**: setuid and setgid bits are removed from every file (a second line behind the
  unprivileged identity and the ``nosuid`` mounts: such a bit must never survive on the host),
  and the growth is measured once more.

The walk trusts nothing it finds: every directory is opened relative to its parent with
``O_NOFOLLOW``, owners are changed without following links and modes through an open
descriptor, so another sandbox swapping a directory for a symlink meanwhile cannot redirect it.
Sizes count allocated blocks or the apparent size, whichever is larger (a sparse file counts
at its full length), hard links once. Not counted: space held by files a command deleted while
still holding them open (``RLIMIT_FSIZE`` caps each of those).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Area", "GuardReport", "WorkspaceGuard"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_SPECIAL = stat.S_ISUID | stat.S_ISGID
POLL_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class Area:
    """A part of the directory a command can write."""

    path: str
    """Relative to the directory (``""``: the directory itself)."""
    skip: frozenset[str] = frozenset()
    """Case-folded names directly below ``path`` that are not part of it."""
    grant: bool = True
    """Give its entries to the command's host identity (``False``: read-only to the command)."""


@dataclass(slots=True)
class GuardReport:
    """What one walk found."""

    size: int = 0
    stripped: list[str] = field(default_factory=list)
    """Files whose setuid/setgid bits were removed."""


Visit = Callable[[int, str, os.stat_result, str], None]


class WorkspaceGuard:
    """Owner, setuid bits and size of the writable areas of ``directory`` (module docstring)."""

    def __init__(
        self,
        directory: Path,
        areas: Sequence[Area],
        *,
        owner: int | None,
        quota: int,
    ) -> None:
        self.directory = directory
        self.areas = tuple(areas)
        self.owner = owner
        self.quota = quota
        self.baseline = 0
        self.exceeded: int | None = None
        """The growth measured when the command was stopped for it (else ``None``)."""

    # ------------------------------------------------------------ around the command
    def before(self) -> None:
        """Give the areas to the command's identity and measure them (blocking)."""
        self.baseline = self._walk(grant=True, strip=False).size
        self.exceeded = None

    def after(self) -> tuple[int, list[str]]:
        """Strip setuid/setgid bits; the growth during the command and what was stripped."""
        report = self._walk(grant=False, strip=True)
        return report.size - self.baseline, report.stripped

    async def watch(self, stop: asyncio.Event) -> None:
        """Until cancelled: set ``stop`` when the command has grown the areas past the quota."""
        try:
            free = _free_bytes(self.directory)
        except OSError:
            return
        threshold = self.quota
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                shrunk = free - _free_bytes(self.directory)
            except OSError:
                return
            if shrunk <= threshold:
                continue
            # the filesystem lost more than the quota: measure what this command did
            size = (await asyncio.to_thread(self._walk, grant=False, strip=False)).size
            growth = size - self.baseline
            if growth > self.quota:
                self.exceeded = growth
                stop.set()
                return
            threshold = shrunk + (self.quota - growth)  # someone else wrote: look again later

    # ------------------------------------------------------------ the walk
    def _walk(self, *, grant: bool, strip: bool) -> GuardReport:
        report = GuardReport()
        seen: set[tuple[int, int]] = set()
        try:
            root = os.open(self.directory, _DIR_FLAGS)
        except OSError:
            return report
        try:
            for area in self.areas:
                give = grant and area.grant and self.owner is not None
                self._walk_area(root, area, give, strip, report, seen)
        finally:
            os.close(root)
        return report

    def _walk_area(
        self,
        root: int,
        area: Area,
        give: bool,
        strip: bool,
        report: GuardReport,
        seen: set[tuple[int, int]],
    ) -> None:
        parts = [p for p in area.path.split("/") if p]
        fd = os.dup(root)
        try:
            for part in parts[:-1]:  # the way to the area: never followed through a link
                fd = _reopen(fd, part)
                if fd < 0:
                    return
            if parts:
                info = _lstat(fd, parts[-1])
                if info is None:
                    return
                self._visit(fd, parts[-1], info, area.path, give, strip, report, seen)
                if not stat.S_ISDIR(info.st_mode):
                    return
                fd = _reopen(fd, parts[-1])
                if fd < 0:
                    return
            else:
                info = os.fstat(fd)
                self._visit(fd, "", info, "", give, strip, report, seen)
            self._walk_dir(fd, area.path, area.skip, give, strip, report, seen)
        finally:
            if fd >= 0:
                os.close(fd)

    def _walk_dir(
        self,
        top: int,
        top_path: str,
        skip: frozenset[str],
        give: bool,
        strip: bool,
        report: GuardReport,
        seen: set[tuple[int, int]],
    ) -> None:
        stack: list[tuple[int, str, frozenset[str]]] = [(os.dup(top), top_path, skip)]
        try:
            while stack:
                fd, path, skip_here = stack.pop()
                try:
                    with os.scandir(fd) as entries:
                        names = [e.name for e in entries]
                    for name in names:
                        if name.casefold() in skip_here:
                            continue
                        info = _lstat(fd, name)
                        if info is None:
                            continue
                        rel = f"{path}/{name}" if path else name
                        self._visit(fd, name, info, rel, give, strip, report, seen)
                        if stat.S_ISDIR(info.st_mode):
                            child = _reopen(os.dup(fd), name)
                            if child >= 0:
                                stack.append((child, rel, frozenset()))
                except OSError:
                    pass
                finally:
                    os.close(fd)
        finally:
            for fd, _, _ in stack:
                os.close(fd)

    def _visit(
        self,
        parent: int,
        name: str,
        info: os.stat_result,
        rel: str,
        give: bool,
        strip: bool,
        report: GuardReport,
        seen: set[tuple[int, int]],
    ) -> None:
        key = (info.st_dev, info.st_ino)
        if key not in seen:
            seen.add(key)
            if not stat.S_ISDIR(info.st_mode):
                report.size += max(info.st_size, info.st_blocks * 512)
        owner = self.owner
        if give and owner is not None and (info.st_uid != owner or info.st_gid != owner):
            with contextlib.suppress(OSError):
                if name:
                    os.chown(name, owner, owner, dir_fd=parent, follow_symlinks=False)
                else:
                    os.fchown(parent, owner, owner)
        special = stat.S_ISREG(info.st_mode) and info.st_mode & _SPECIAL
        if strip and special and _strip(parent, name):
            report.stripped.append(rel)


def _reopen(fd: int, name: str) -> int:
    """Open directory ``name`` below ``fd`` without following a link, closing ``fd``; ``-1``
    when it is not a directory (any more)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError:
        return -1
    finally:
        os.close(fd)


def _lstat(fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None


def _strip(parent: int, name: str) -> bool:
    """Remove setuid/setgid from the regular file ``name`` through a descriptor of it."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not info.st_mode & _SPECIAL:
            return False
        os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~_SPECIAL)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _free_bytes(directory: Path) -> int:
    info = os.statvfs(directory)
    return info.f_bfree * info.f_frsize
