"""Context windows learned from servers' errors, remembered for later processes.

When a server rejects a request as too long, the model adapter learns its window (stated in
the error, or assumed below the rejected size). A self-hosted server that reports its window
nowhere else (llama-cpp-python: no ``/props``) would be learned again by every new process,
each failing its first long request. The command line keeps what was learned in
``$XDG_CACHE_HOME/harnessed/context_windows.json``, per server URL and model name, and gives
it to the model of the next process as its window.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Any

from harnessed.cli.paths import cache_dir

__all__ = ["CACHE_FILE", "remember_window", "remembered_window"]

CACHE_FILE = "context_windows.json"
_LEARNED = ("server_error", "rejected_request")
_MOST = 200
"""Entries kept (the most recent)."""


def _key(model: Any) -> str | None:
    model = getattr(model, "wrapped", model)  # run's recording wrapper
    base = getattr(model, "base_url", None)
    name = getattr(model, "name", None)
    if not isinstance(base, str) or not base or not isinstance(name, str):
        return None
    return f"{base.rstrip('/')}|{name}"


def _load() -> dict[str, int]:
    try:
        data = json.loads((cache_dir() / CACHE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        k: v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0
    }


def remembered_window(model: Any) -> int | None:
    """The window learned earlier for ``model``'s server and name, if any and if the model
    knows no better (it was not given one, nor did its server report one)."""
    if getattr(model, "context_window_source", None) not in ("published", "unknown"):
        return None
    key = _key(model)
    return None if key is None else _load().get(key)


def remember_window(model: Any) -> None:
    """Keep ``model``'s window if it was learned from an error (best effort)."""
    inner = getattr(model, "wrapped", model)
    if getattr(inner, "context_window_source", None) not in _LEARNED:
        return
    key, tokens = _key(inner), getattr(inner, "context_window", None)
    if key is None or not isinstance(tokens, int) or tokens <= 0:
        return
    known = _load()
    known.pop(key, None)
    known[key] = tokens
    kept = dict(list(known.items())[-_MOST:])
    folder = cache_dir()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".windows-")
        with os.fdopen(fd, "w") as file:
            json.dump(kept, file, indent=1)
        os.replace(tmp, folder / CACHE_FILE)
