"""Where the command line keeps its own files: the XDG base directories.

Data (chat history; the sessions of ``run`` and ``chat`` when no ``--workspace`` is given, one
folder per project, see :func:`project_data_dir`) goes under
``$XDG_DATA_HOME/harnessed`` (default ``~/.local/share/harnessed``), caches under
``$XDG_CACHE_HOME/harnessed`` (``~/.cache/harnessed``) and the user's ``harnessed.toml`` under
``$XDG_CONFIG_HOME/harnessed`` (``~/.config/harnessed``). A relative or empty variable is
ignored, as the XDG spec says.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

__all__ = ["cache_dir", "config_dir", "data_dir", "project_data_dir"]


def _base(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable, "")
    root = Path(value) if value and os.path.isabs(value) else Path.home() / fallback
    return root / "harnessed"


def data_dir() -> Path:
    """The user's data directory for harnessed (not created here)."""
    return _base("XDG_DATA_HOME", ".local/share")


def cache_dir() -> Path:
    """The user's cache directory for harnessed (not created here)."""
    return _base("XDG_CACHE_HOME", ".cache")


def config_dir() -> Path:
    """The user's configuration directory for harnessed (not created here)."""
    return _base("XDG_CONFIG_HOME", ".config")


def project_data_dir(project: str | os.PathLike[str]) -> Path:
    """Where ``run`` and ``chat`` keep the runtime data (session logs, state, leases) of the
    agent working in ``project``: ``<data dir>/projects/<folder name>-<hash of its path>``."""
    real = Path(project).expanduser().resolve()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", real.name).strip("._") or "root"
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:12]
    return data_dir() / "projects" / f"{name[:40]}-{digest}"
