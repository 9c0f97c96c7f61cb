"""Making file system changes durable (helpers shared by the local stores)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["fsync_directory"]


def fsync_directory(directory: Path) -> None:
    """Make a create, rename or unlink in ``directory`` durable (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
