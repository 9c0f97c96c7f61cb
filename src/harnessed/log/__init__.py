"""The session log: an append-only record of everything that happened in a session.

This package holds what every back end shares: the records (:mod:`~harnessed.log.record`), the
store protocol (:mod:`~harnessed.log.store`), the search protocol and its matching rules
(:mod:`~harnessed.log.search`), views and checkpoints. The back ends themselves live in
:mod:`harnessed.stores` (local files, fsspec, memory, PostgreSQL).
"""

from harnessed.log.record import NewRecord, RecordType, SessionRecord
from harnessed.log.search import MatchMode, SearchHit, SearchIndex, SearchOrder
from harnessed.log.store import SessionCatalog, SessionInfo, SessionLogStore

__all__ = [
    "MatchMode",
    "NewRecord",
    "RecordType",
    "SearchHit",
    "SearchIndex",
    "SearchOrder",
    "SessionCatalog",
    "SessionInfo",
    "SessionLogStore",
    "SessionRecord",
]
