"""Session log records: one line of the append-only history of a session."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harnessed._internal.clock import now_iso
from harnessed.messages import Msg, clean_text, new_id

__all__ = ["NewRecord", "RecordType", "SessionRecord", "jsonl_bytes"]

_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""One encoder for every record (``json.dumps`` with options builds a new one per call)."""


class RecordType:
    """The record types harnessed writes (applications may add their own)."""

    RUN_START = "run/start"
    RUN_END = "run/end"
    MESSAGE = "message"
    TOOL_EXECUTION = "tool/execution"
    CONTEXT_BUILD = "context/build"
    COMPACTION_START = "compaction/start"
    COMPACTION_END = "compaction/end"
    TASK_CHANGED = "task/changed"
    PLAN_CHANGED = "plan/changed"
    PERMISSION_CHANGED = "permission/changed"
    MEMORY_FLUSH = "memory/flush"
    MEMORY_FLUSHED = "memory/flushed"
    """An end-of-call flush succeeded: ``through`` (the id of the last message it read) and
    ``at`` (epoch seconds); every server reads it to continue after it and to throttle."""
    ERROR = "error"
    USAGE = "usage"
    """Spending after a call's ``run/end`` (a memory flush after the call, a sub-agent still
    running in the background): ``usage`` as in ``run/end``; the session's totals add both."""
    CHECKPOINT = "history/checkpoint"
    """The working history was replaced (summary, pruned or offloaded views): see
    :mod:`harnessed.log.checkpoint`."""


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record before the store assigned its sequence number."""

    type: str
    payload: Mapping[str, Any]
    run_id: str | None = None
    turn_id: str | None = None
    event_id: str = field(default_factory=lambda: new_id("ev_"))
    timestamp: str = field(default_factory=now_iso)
    msg: Msg | None = field(default=None, compare=False, repr=False)
    """The message object of a ``message`` record (kept in memory, never stored), so the
    working history can hold the very object the caller has."""

    @classmethod
    def message(cls, msg: Msg, *, run_id: str | None, turn_id: str | None) -> NewRecord:
        return cls(RecordType.MESSAGE, {"message": msg.to_dict()}, run_id, turn_id, msg=msg)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A stored record. ``seq`` is 1, 2, 3 … per session, without gaps."""

    seq: int
    event_id: str
    type: str
    timestamp: str
    run_id: str | None
    turn_id: str | None
    payload: Mapping[str, Any]

    @classmethod
    def assign(cls, seq: int, record: NewRecord) -> SessionRecord:
        return cls(
            seq,
            record.event_id,
            record.type,
            record.timestamp,
            record.run_id,
            record.turn_id,
            record.payload,
        )

    @property
    def message(self) -> Msg | None:
        """The message of a ``message`` record."""
        if self.type != RecordType.MESSAGE:
            return None
        return Msg.from_dict(self.payload["message"])

    def to_dict(self) -> dict[str, Any]:
        data = self._fields()
        data["payload"] = dict(self.payload)  # the caller's own copy
        return data

    def to_json(self) -> str:
        return clean_text(_JSON.encode(self._fields()))

    def _fields(self) -> dict[str, Any]:
        payload = self.payload
        return {
            "seq": self.seq,
            "event_id": self.event_id,
            "type": self.type,
            "timestamp": self.timestamp,
            "run_id": self.run_id,
            "turn_id": self.turn_id,
            "payload": payload if type(payload) is dict else dict(payload),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionRecord:
        return cls(
            seq=int(data["seq"]),
            event_id=str(data["event_id"]),
            type=str(data["type"]),
            timestamp=str(data["timestamp"]),
            run_id=data.get("run_id"),
            turn_id=data.get("turn_id"),
            payload=dict(data.get("payload") or {}),
        )


def jsonl_bytes(records: Iterable[SessionRecord], prefix: str = "") -> bytes:
    """``prefix`` and the records as UTF-8 JSON lines, each ending in a newline (what
    :meth:`SessionRecord.to_json` gives, for all records at once: broken UTF-16 surrogates
    are repaired only when the text has some)."""
    text = prefix + "".join([_JSON.encode(r._fields()) + "\n" for r in records])
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone or split surrogates: repaired as clean_text does
        return clean_text(text).encode("utf-8")
