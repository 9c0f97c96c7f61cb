"""The session log: an append-only record of everything that happened in a session, and its
search index."""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports
from harnessed.log.record import NewRecord, RecordType, SessionKey, SessionRecord
from harnessed.log.search import MatchMode, SearchHit, SearchIndex, SearchOrder
from harnessed.log.store import SessionCatalog, SessionInfo, SessionLogStore
from harnessed.stores.fsspec.log import FilesystemSessionLogStore
from harnessed.stores.local.indexed import IndexedSessionLogStore
from harnessed.stores.local.jsonl import JsonlSessionLogStore
from harnessed.stores.memory.log import InMemorySessionLogStore
from harnessed.stores.scan_index import ScanSearchIndex

if TYPE_CHECKING:
    from harnessed.stores.local.sqlite_index import SqliteSearchIndex
    from harnessed.stores.local.tantivy_index import TantivySearchIndex

__all__ = [
    "FilesystemSessionLogStore",
    "InMemorySessionLogStore",
    "IndexedSessionLogStore",
    "JsonlSessionLogStore",
    "MatchMode",
    "NewRecord",
    "RecordType",
    "ScanSearchIndex",
    "SearchHit",
    "SearchIndex",
    "SearchOrder",
    "SessionCatalog",
    "SessionInfo",
    "SessionKey",
    "SessionLogStore",
    "SessionRecord",
    "SqliteSearchIndex",
    "TantivySearchIndex",
]


# the SQLite and tantivy indexes are imported when first asked for (``import sqlite3`` alone is
# a noticeable part of an import)
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SqliteSearchIndex": "harnessed.stores.local.sqlite_index",
        "TantivySearchIndex": "harnessed.stores.local.tantivy_index",
    },
)
