"""The state store an agent uses unless told otherwise.

* local workspace: :class:`JsonFileStateStore` (atomic writes, a file lock across processes);
* memory or object-store workspace (``memory://``, ``s3://`` …): :class:`FilesystemStateStore`
  through the workspace filesystem, so the state lives as long as the workspace;
* no workspace: process memory.
"""

from __future__ import annotations

from harnessed.state.store import AgentStateStore, InMemoryStateStore, JsonFileStateStore
from harnessed.stores.fsspec.state import FilesystemStateStore
from harnessed.workspace.layout import Workspace

__all__ = ["STATE_DIR", "default_state_store"]

STATE_DIR = ".harnessed/state"


def default_state_store(workspace: Workspace | None) -> AgentStateStore:
    if workspace is None:
        return InMemoryStateStore()
    if workspace.data_root is not None:
        return JsonFileStateStore(workspace.data_root / STATE_DIR)
    return FilesystemStateStore(workspace.fs, STATE_DIR)
