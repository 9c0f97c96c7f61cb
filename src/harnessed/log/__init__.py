"""The session log: an append-only record of everything that happened in a session, and its
search index."""

from typing import TYPE_CHECKING

from harnessed.lazy import lazy_exports
from harnessed.session.fs_store import FilesystemSessionLogStore
from harnessed.session.indexed import IndexedSessionLogStore
from harnessed.session.jsonl import JsonlSessionLogStore
from harnessed.session.memory import InMemorySessionLogStore
from harnessed.session.record import NewRecord, RecordType, SessionKey, SessionRecord
from harnessed.session.scan import ScanSearchIndex
from harnessed.session.search import MatchMode, SearchHit, SearchIndex, SearchOrder
from harnessed.session.store import SessionCatalog, SessionInfo, SessionLogStore

if TYPE_CHECKING:
    from harnessed.session.sqlite_index import SqliteSearchIndex
    from harnessed.session.tantivy_index import TantivySearchIndex

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
        "SqliteSearchIndex": "harnessed.session.sqlite_index",
        "TantivySearchIndex": "harnessed.session.tantivy_index",
    },
)
