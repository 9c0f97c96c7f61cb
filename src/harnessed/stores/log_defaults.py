"""The session log store and search index an agent uses unless told otherwise.

* local workspace: JSONL files under ``agents/`` and an SQLite FTS5 index beside them;
* memory or object-store workspace (``memory://``, ``s3://`` …): segment files through the
  workspace filesystem, searched by scanning (no local file can hold an index);
* no workspace: process memory, searched by scanning.
"""

from __future__ import annotations

from harnessed.log.search import SearchIndex
from harnessed.log.store import SessionLogStore
from harnessed.stores.fsspec.log import FilesystemSessionLogStore
from harnessed.stores.local.indexed import IndexedSessionLogStore
from harnessed.stores.local.jsonl import JsonlSessionLogStore
from harnessed.stores.memory.log import InMemorySessionLogStore
from harnessed.stores.scan_index import ScanSearchIndex
from harnessed.workspace.layout import Workspace

__all__ = ["default_search_index", "default_session_store", "indexed_session_store"]


def default_session_store(workspace: Workspace | None) -> SessionLogStore:
    if workspace is None:
        return InMemorySessionLogStore()
    if workspace.data_root is not None:
        return JsonlSessionLogStore(workspace.data_root / Workspace.AGENTS_DIR)
    return FilesystemSessionLogStore(workspace.fs, Workspace.AGENTS_DIR)


def default_search_index(workspace: Workspace | None, store: SessionLogStore) -> SearchIndex:
    if workspace is not None and workspace.data_root is not None:
        from harnessed.stores.local.sqlite_index import SqliteSearchIndex

        return SqliteSearchIndex(workspace.data_root / Workspace.AGENTS_DIR)
    return ScanSearchIndex(store)


def indexed_session_store(
    workspace: Workspace | None,
    store: SessionLogStore | None = None,
    index: SearchIndex | None = None,
) -> IndexedSessionLogStore:
    """The agent's session store with its search index (the defaults where ``None``)."""
    store = default_session_store(workspace) if store is None else store
    if isinstance(store, IndexedSessionLogStore):
        if index is not None:
            raise ValueError("pass search_index or an already indexed session_store, not both")
        return store
    return IndexedSessionLogStore(store, index or default_search_index(workspace, store))
