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
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["STALE_AFTER", "remove_stale_temp_files", "write_atomically"]

logger = logging.getLogger(__name__)

STALE_AFTER = 600.0
"""Seconds after which a leftover temporary file is taken as abandoned."""

_SUFFIX = ".tmp"
_checked: set[Path] = set()
_checked_lock = threading.Lock()


def remove_stale_temp_files(directory: Path, older_than: float = STALE_AFTER) -> int:
    """Delete ``.<name>.<random>.tmp`` files in ``directory`` not touched for ``older_than``
    seconds; returns how many were removed."""
    removed = 0
    limit = time.time() - older_than
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(_SUFFIX)):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < limit:
                os.unlink(entry.path)
                removed += 1
    if removed:
        logger.info("removed %d abandoned temporary file(s) in %s", removed, directory)
    return removed


def _clean_once(directory: Path) -> None:
    with _checked_lock:
        if directory in _checked:
            return
        _checked.add(directory)
    remove_stale_temp_files(directory)


def write_atomically(target: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``target`` with ``data`` (permissions ``mode`` when given), all or nothing."""
    _clean_once(target.parent)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
