"""Every back end of the session log, the agent state and the turn gate, by deployment.

* :mod:`harnessed.stores.local`: JSONL logs with a SQLite (or tantivy) search index, JSON state
  files and the file turn gate — the embedded default.
* :mod:`harnessed.stores.fsspec`: logs and state on any fsspec filesystem (object stores,
  network mounts).
* :mod:`harnessed.stores.memory`: in memory, for tests and short-lived agents.
* :mod:`harnessed.stores.postgres`: logs (with full-text search), states and the turn gate in
  PostgreSQL, shared by many app servers (the ``postgres`` extra).

:mod:`harnessed.stores.choice` picks an agent's stores from its ``store=`` setting and
workspace. Every name here is imported when first used.
"""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessed.stores.choice import AgentStores, SharedStore, agent_stores, open_store
    from harnessed.stores.fsspec.log import FilesystemSessionLogStore
    from harnessed.stores.fsspec.state import FilesystemStateStore
    from harnessed.stores.local.indexed import IndexedSessionLogStore
    from harnessed.stores.local.jsonl import JsonlSessionLogStore
    from harnessed.stores.local.sqlite_index import SqliteSearchIndex
    from harnessed.stores.local.tantivy_index import TantivySearchIndex
    from harnessed.stores.memory.log import InMemorySessionLogStore
    from harnessed.stores.scan_index import ScanSearchIndex

_LAZY = {
    "AgentStores": "harnessed.stores.choice",
    "SharedStore": "harnessed.stores.choice",
    "agent_stores": "harnessed.stores.choice",
    "open_store": "harnessed.stores.choice",
    "FilesystemSessionLogStore": "harnessed.stores.fsspec.log",
    "FilesystemStateStore": "harnessed.stores.fsspec.state",
    "IndexedSessionLogStore": "harnessed.stores.local.indexed",
    "JsonlSessionLogStore": "harnessed.stores.local.jsonl",
    "SqliteSearchIndex": "harnessed.stores.local.sqlite_index",
    "TantivySearchIndex": "harnessed.stores.local.tantivy_index",
    "InMemorySessionLogStore": "harnessed.stores.memory.log",
    "ScanSearchIndex": "harnessed.stores.scan_index",
}

__all__ = [
    "AgentStores",
    "FilesystemSessionLogStore",
    "FilesystemStateStore",
    "InMemorySessionLogStore",
    "IndexedSessionLogStore",
    "JsonlSessionLogStore",
    "ScanSearchIndex",
    "SharedStore",
    "SqliteSearchIndex",
    "TantivySearchIndex",
    "agent_stores",
    "open_store",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
