"""The session log: an append-only record of everything that happened in a session, and its
search index."""

from typing import TYPE_CHECKING

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


def __getattr__(name: str) -> object:
    # the SQLite and tantivy indexes are imported when first asked for (``import sqlite3``
    # alone is a noticeable part of ``import harnessed``)
    if name == "SqliteSearchIndex":
        from harnessed.session.sqlite_index import SqliteSearchIndex

        return SqliteSearchIndex
    if name == "TantivySearchIndex":
        from harnessed.session.tantivy_index import TantivySearchIndex

        return TantivySearchIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
