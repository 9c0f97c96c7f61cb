"""Session logs on a workspace :class:`~harnessed.workspace.Filesystem` (memory, S3, any fsspec).

The layout is the JSONL store's (``agents/<agent>/sessions/<user>/<session>.log.jsonl``), written
through :class:`~harnessed.workspace.AppendLog`: on filesystems that append in place the log is
that one file; on object stores, where an append would rewrite the object, each append is a new
segment object under ``<session>.log.jsonl.segments/`` and the log is the segments in name
order. Records are parsed once and cached per session; a read only fetches what is new (a
grown file, segments not seen yet), so reading a long log again is cheap.

Within one process appends to a session are serialized and the sequence stays gapless. Object
stores offer no lock to share between processes, so two *processes* appending to the *same*
session at the same moment could both take the next number: keep each session's calls on one
process (the agent already serializes calls per session inside a process).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from harnessed.log.record import NewRecord, SessionRecord
from harnessed.log.store import SessionInfo
from harnessed.runtime import SessionLocks, SessionRef
from harnessed.workspace.appendlog import SEGMENTS_SUFFIX, AppendLog
from harnessed.workspace.filesystem import Filesystem
from harnessed.workspace.paths import encode_part, join, session_dir_parts

__all__ = ["FilesystemSessionLogStore"]

logger = logging.getLogger(__name__)

_SUFFIX = ".log.jsonl"
_CACHED_SESSIONS = 256


@dataclass(slots=True)
class _Log:
    """What is known of one session's log."""

    log: AppendLog
    records: list[SessionRecord] = field(default_factory=list)
    base_size: int = -1
    """Bytes of the log file already parsed (-1: not read yet)."""
    base_torn: bool = False
    """The log file ends without a newline (a torn write)."""
    segments: list[str] = field(default_factory=list)
    """Segment paths already parsed, in order."""

    last_seq: int = 0

    def add(self, records: list[SessionRecord]) -> None:
        self.records.extend(records)
        self.last_seq = max([self.last_seq, *(r.seq for r in records)])


class FilesystemSessionLogStore:
    """Append-only session logs on any workspace filesystem.

    Args:
        fs: The workspace filesystem.
        root: The directory of the logs inside the workspace (default ``agents``).
        segmented: Write one object per append (default: when ``fs`` cannot append in place).
    """

    def __init__(
        self, fs: Filesystem, root: str = "agents", *, segmented: bool | None = None
    ) -> None:
        self.fs = fs
        self.root = fs.normalize(root)
        self.segmented = segmented
        self._logs: OrderedDict[SessionRef, _Log] = OrderedDict()
        self._locks = SessionLocks()

    def __repr__(self) -> str:
        return f"FilesystemSessionLogStore({self.fs!r}, {self.root!r})"

    def _user_dir(self, agent_id: str, user_id: str) -> str:
        return join(self.root, *session_dir_parts(agent_id, user_id))

    def path_for(self, key: SessionRef) -> str:
        name = encode_part(key.session_id, "session id") + _SUFFIX
        return join(self._user_dir(key.agent_id, key.user_id), name)

    # ---------------------------------------------------------------- cache
    def _entry(self, key: SessionRef) -> _Log:
        entry = self._logs.get(key)
        if entry is None:
            entry = _Log(AppendLog(self.fs, self.path_for(key), segmented=self.segmented))
            self._logs[key] = entry
        self._logs.move_to_end(key)
        while len(self._logs) > _CACHED_SESSIONS:
            self._logs.popitem(last=False)
        return entry

    async def _sync(self, key: SessionRef) -> _Log:
        """Bring the cached records of a session up to date with storage."""
        entry = self._entry(key)
        fs, path = self.fs, entry.log.path
        size = await fs.size(path) if await fs.exists(path) else 0
        segments = await entry.log.segments()
        known = len(entry.segments)
        if size < entry.base_size or segments[:known] != entry.segments:
            entry = _Log(entry.log)  # rewritten or reordered underneath: read everything again
            self._logs[key] = entry
        if size != entry.base_size:
            data = await fs.read(path) if size else b""
            entry.records, entry.last_seq = [], 0
            entry.add(_parse(data, path))
            entry.base_size = len(data)
            entry.base_torn = bool(data) and not data.endswith(b"\n")
            entry.segments = []
        for segment in segments[len(entry.segments) :]:
            entry.add(_parse(await fs.read(segment), segment))
            entry.segments.append(segment)
        return entry

    # ---------------------------------------------------------------- write
    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        """Append records as one write; returns them with their sequence numbers."""
        if not records:
            return []
        async with self._locks.hold(key.agent_id, key.user_id, key.session_id):
            entry = await self._sync(key)
            last = entry.last_seq
            stored = [SessionRecord.assign(last + i + 1, r) for i, r in enumerate(records)]
            body = "".join(r.to_json() + "\n" for r in stored)
            fence = "\n" if entry.base_torn and not entry.log.segmented else ""
            written = await entry.log.append(fence + body)
            if entry.log.segmented and written is not None:
                entry.segments.append(written)
            else:
                entry.base_size += len((fence + body).encode("utf-8"))
                entry.base_torn = False
            entry.add(stored)
            return stored

    # ----------------------------------------------------------------- read
    async def read(
        self,
        key: SessionRef,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Complete records in order (a torn or corrupt line is skipped)."""
        async with self._locks.hold(key.agent_id, key.user_id, key.session_id):
            entry = await self._sync(key)
            wanted = set(types) if types else None
            out = [
                r
                for r in entry.records
                if r.seq > after_seq and (wanted is None or r.type in wanted)
            ]
        return out[:limit] if limit is not None else out

    async def tail(
        self, key: SessionRef, count: int, *, types: Sequence[str] | None = None
    ) -> list[SessionRecord]:
        records = await self.read(key, types=types)
        return records[-count:] if count > 0 else []

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        """The user's sessions of this agent, most recently written first."""
        folder = self._user_dir(agent_id, user_id)
        if not await self.fs.exists(folder):
            return []
        found: dict[str, SessionInfo] = {}
        for info in await self.fs.ls(folder):
            name = info.name
            if not info.is_dir and name.endswith(_SUFFIX):
                updated, size = info.modified or 0.0, info.size
            elif info.is_dir and name.endswith(_SUFFIX + SEGMENTS_SUFFIX):
                name = name[: -len(SEGMENTS_SUFFIX)]
                parts = await self.fs.glob("*.part", info.path)
                if not parts:
                    continue
                updated = _segment_time(parts[-1].name)
                size = sum(p.size for p in parts)
            else:
                continue
            session_id = unquote(name[: -len(_SUFFIX)])
            before = found.get(session_id)
            if before is not None:
                updated = max(updated, before.updated_at)
                size += before.size_bytes
            found[session_id] = SessionInfo(session_id, updated, size)
        return sorted(found.values(), key=lambda i: (-i.updated_at, i.session_id))

    async def users(self, agent_id: str) -> list[str]:
        """The users who have session logs with ``agent_id``, sorted."""
        folder = join(self.root, encode_part(agent_id, "agent id"), "sessions")
        if not await self.fs.exists(folder):
            return []
        return sorted(unquote(i.name) for i in await self.fs.ls(folder) if i.is_dir)


def _segment_time(name: str) -> float:
    """Seconds since the epoch encoded in a segment name (``<nanoseconds>-<random>.part``)."""
    stamp = name.partition("-")[0]
    return int(stamp) / 1e9 if stamp.isdigit() else 0.0


def _parse(data: bytes, where: str) -> list[SessionRecord]:
    records: list[SessionRecord] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        text = line.strip()
        if not text:
            continue
        try:
            records.append(SessionRecord.from_dict(json.loads(text)))
        except (ValueError, KeyError, TypeError):
            logger.warning("skipping unreadable line %d of %s", number, where)
    return records
