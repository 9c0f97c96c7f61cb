"""The session log: an append-only record of everything that happened in a session."""

from harnessed.session.jsonl import JsonlSessionLogStore
from harnessed.session.memory import InMemorySessionLogStore
from harnessed.session.record import NewRecord, RecordType, SessionKey, SessionRecord
from harnessed.session.store import SessionInfo, SessionLogStore

__all__ = [
    "InMemorySessionLogStore",
    "JsonlSessionLogStore",
    "NewRecord",
    "RecordType",
    "SessionInfo",
    "SessionKey",
    "SessionLogStore",
    "SessionRecord",
]
