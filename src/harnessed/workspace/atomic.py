"""Atomic file replacement on local disk, and cleaning up after writers that crashed.

A write goes to ``.<name>.<random>.tmp`` beside the target, is flushed to disk and renamed over
the target, so readers see the old file or the new one, never half of one. A process killed
between creating and renaming the temporary file leaves it behind; the first write into a
directory in each process removes such leftovers older than :data:`STALE_AFTER` seconds (a
live writer's file is never that old), so they do not pile up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat as stat_mod
import threading
import time
from pathlib import Path

__all__ = ["STALE_AFTER", "remove_stale_temp_files", "write_atomically", "write_atomically_at"]

logger = logging.getLogger(__name__)

STALE_AFTER = 600.0
"""Seconds after which a leftover temporary file is taken as abandoned."""

_SUFFIX = ".tmp"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_checked: set[Path] = set()
_checked_lock = threading.Lock()


def remove_stale_temp_files(directory: Path, older_than: float = STALE_AFTER) -> int:
    """Delete ``.<name>.<random>.tmp`` files in ``directory`` not touched for ``older_than``
    seconds; returns how many were removed."""
    try:
        fd = os.open(directory, _DIR)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    try:
        return _remove_stale_at(fd, str(directory), older_than)
    finally:
        os.close(fd)


def _remove_stale_at(dir_fd: int, label: str, older_than: float = STALE_AFTER) -> int:
    removed = 0
    limit = time.time() - older_than
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            if not (entry.name.startswith(".") and entry.name.endswith(_SUFFIX)):
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if stat_mod.S_ISREG(st.st_mode) and st.st_mtime < limit:
                    os.unlink(entry.name, dir_fd=dir_fd)
                    removed += 1
    if removed:
        logger.info("removed %d abandoned temporary file(s) in %s", removed, label)
    return removed


def _clean_once(directory: Path, dir_fd: int) -> None:
    with _checked_lock:
        if directory in _checked:
            return
        _checked.add(directory)
    _remove_stale_at(dir_fd, str(directory))


def write_atomically(target: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``target`` with ``data`` (permissions ``mode`` when given, else 0600), all or
    nothing."""
    dir_fd = os.open(target.parent, _DIR)
    try:
        write_atomically_at(dir_fd, target.name, data, mode, directory=target.parent)
    finally:
        os.close(dir_fd)


def write_atomically_at(
    dir_fd: int, name: str, data: bytes, mode: int | None = None, *, directory: Path
) -> None:
    """:func:`write_atomically` inside an already open directory: no path is resolved again, so
    a directory swapped for a symlink meanwhile cannot redirect the write. ``directory`` names
    it (for the once-per-process cleanup of abandoned temporary files)."""
    _clean_once(directory, dir_fd)
    tmp = f".{name[:200]}.{secrets.token_hex(6)}{_SUFFIX}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
            if mode is not None:
                os.fchmod(out.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
