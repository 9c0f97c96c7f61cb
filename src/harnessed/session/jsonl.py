"""The default session log store: one append-only JSONL file per session on local disk.

``<root>/<agent>/sessions/<user>/<session>.log.jsonl`` (``root`` is the workspace's ``agents``
directory). Appends hold an exclusive ``flock`` on the file while they read the last sequence
number and write, so concurrent writers — threads, tasks or processes — never interleave lines
or reuse a number. A torn last line left by a crash is ignored on read and fenced off with a
newline by the next append, which continues the sequence after the last complete record. An
unreadable line is reported once per store (with its line number), not on every read.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, cast
from urllib.parse import unquote

from harnessed.durability import fsync_directory
from harnessed.session.group_commit import GroupCommit
from harnessed.session.index_files import user_session_file
from harnessed.session.record import NewRecord, SessionKey, SessionRecord
from harnessed.session.store import SessionInfo
from harnessed.workspace.paths import encode_part

__all__ = ["JsonlSessionLogStore"]

logger = logging.getLogger(__name__)

_SUFFIX = ".log.jsonl"
_TAIL_CHUNK = 64 * 1024


class JsonlSessionLogStore:
    """Session logs as JSONL files under ``root``."""

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = False) -> None:
        """Every append is one ``write`` under the file's lock: once it returns, the records
        survive the process being killed. ``durable=True`` also waits for ``fsync`` (they
        survive power loss too); concurrent appends to one session share a write and an fsync
        (group commit)."""
        self.root = Path(root)
        self.durable = durable
        self._paths: dict[SessionKey, Path] = {}  # ids encoded once, not on every append
        self._tails: dict[Path, tuple[int, int]] = {}  # path -> (file size, last seq)
        self._reported: set[tuple[Path, int]] = set()  # unreadable lines already warned about
        self._groups: GroupCommit[Sequence[NewRecord], list[SessionRecord]] = GroupCommit(
            lambda path, groups: asyncio.to_thread(
                self._append, cast(Path, path), groups, sync=True
            )
        )

    def path_for(self, key: SessionKey) -> Path:
        path = self._paths.get(key)
        if path is None:
            name = f"{encode_part(key.session_id, 'session id')}{_SUFFIX}"
            path = user_session_file(self.root, key.agent_id, key.user_id, name)
            if len(self._paths) >= 4_096:
                self._paths.clear()
            self._paths[key] = path
        return path

    # ---------------------------------------------------------------- write
    async def append(self, key: SessionKey, records: Sequence[NewRecord]) -> list[SessionRecord]:
        """Append records atomically as a group; returns them with their sequence numbers."""
        if not records:
            return []
        path = self.path_for(key)
        if self.durable:
            return await self._groups.submit(path, records)
        return (await asyncio.to_thread(self._append, path, [records], sync=False))[0]

    def _append(
        self, path: Path, groups: Sequence[Sequence[NewRecord]], *, sync: bool
    ) -> list[list[SessionRecord]]:
        """Write groups of records with one ``write`` (and one ``fsync`` when ``sync``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            last_seq, torn = self._tail(path, fd, size)
            out: list[list[SessionRecord]] = []
            for records in groups:
                out.append(
                    [SessionRecord.assign(last_seq + i + 1, r) for i, r in enumerate(records)]
                )
                last_seq += len(records)
            lines = "".join(r.to_json() + "\n" for stored in out for r in stored)
            payload = (("\n" if torn else "") + lines).encode("utf-8")
            written = 0
            while written < len(payload):
                written += os.write(fd, payload[written:])
            if sync:
                os.fsync(fd)
                if size == 0:
                    fsync_directory(path.parent)  # a new file: make its name durable too
            self._tails[path] = (size + len(payload), last_seq)
            return out
        finally:
            os.close(fd)  # closing releases the lock

    def _tail(self, path: Path, fd: int, size: int) -> tuple[int, bool]:
        """The last complete record's seq, and whether the file ends in a torn line."""
        cached = self._tails.get(path)
        if cached is not None and cached[0] == size:
            return cached[1], False
        if size == 0:
            return 0, False
        chunk = _TAIL_CHUNK
        while True:
            start = max(0, size - chunk)
            data = os.pread(fd, size - start, start)
            torn = not data.endswith(b"\n")
            lines = data.split(b"\n")
            if start > 0:
                lines = lines[1:]  # the first line of a chunk may be partial
            for line in reversed(lines):
                record = _parse(line)
                if record is not None:
                    return record.seq, torn
            if start == 0:
                return 0, torn
            chunk *= 4

    # ----------------------------------------------------------------- read
    async def read(
        self,
        key: SessionKey,
        *,
        after_seq: int = 0,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Complete records in order (a torn or corrupt line is skipped)."""
        return await asyncio.to_thread(self._read, self.path_for(key), after_seq, types, limit)

    def _read(
        self, path: Path, after_seq: int, types: Sequence[str] | None, limit: int | None
    ) -> list[SessionRecord]:
        wanted = set(types) if types else None
        out: list[SessionRecord] = []
        for record in self._records_after(path, after_seq):
            if wanted is not None and record.type not in wanted:
                continue
            out.append(record)
            if limit is not None and len(out) >= limit:
                break
        return out

    def _records_after(self, path: Path, after_seq: int) -> list[SessionRecord]:
        """Records with ``seq > after_seq``. When ``after_seq`` is the last record this store
        wrote or read, only the bytes after it are read (what other writers appended since)."""
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return []
        with handle:
            size = os.fstat(handle.fileno()).st_size
            cached = self._tails.get(path)
            start, known = 0, 0
            if after_seq and cached is not None and cached[1] == after_seq and cached[0] <= size:
                start, known = cached[0], after_seq  # the file ends with record after_seq there
            elif after_seq:
                start = _line_before(handle, size, after_seq)
            if start == size:
                return []
            handle.seek(start)
            data = handle.read(size - start)
        out: list[SessionRecord] = []
        offset = start
        end, last = start, known
        lines = data.split(b"\n")
        for number, line in enumerate(lines):
            at, offset = offset, offset + len(line) + 1
            record = _parse(line)
            if record is None:
                if line.strip() and (path, at) not in self._reported:
                    self._reported.add((path, at))  # warned about once per process
                    complete = number < len(lines) - 1
                    torn = "" if complete else " (torn by a crash; the next write fences it)"
                    where = f"line {number + 1}" if start == 0 else f"the line at byte {at}"
                    logger.warning("skipping unreadable %s of %s%s", where, path, torn)
                continue
            if number < len(lines) - 1:  # complete: its newline was written
                end, last = offset, record.seq
            if record.seq > after_seq:
                out.append(record)
        if last:
            self._tails[path] = (end, last)
        return out

    async def tail(
        self, key: SessionKey, count: int, *, types: Sequence[str] | None = None
    ) -> list[SessionRecord]:
        """The last ``count`` records (of the given types)."""
        records = await self.read(key, types=types)
        return records[-count:] if count > 0 else []

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        """The user's sessions of this agent, most recently written first."""
        folder = user_session_file(self.root, agent_id, user_id, "")
        return await asyncio.to_thread(_list_sessions, folder)

    async def users(self, agent_id: str) -> list[str]:
        """The users who have session logs with ``agent_id``, sorted."""
        folder = self.root / encode_part(agent_id, "agent id") / "sessions"
        return await asyncio.to_thread(_list_users, folder)


def _list_sessions(folder: Path) -> list[SessionInfo]:
    if not folder.is_dir():
        return []
    infos = []
    for path in folder.iterdir():
        if not path.name.endswith(_SUFFIX):
            continue
        stat = path.stat()
        infos.append(
            SessionInfo(
                session_id=unquote(path.name[: -len(_SUFFIX)]),
                updated_at=stat.st_mtime,
                size_bytes=stat.st_size,
            )
        )
    return sorted(infos, key=lambda i: (-i.updated_at, i.session_id))


def _list_users(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(unquote(p.name) for p in folder.iterdir() if p.is_dir())


def _line_before(handle: BinaryIO, size: int, after_seq: int) -> int:
    """The offset of a line at or before the first record with ``seq > after_seq``, found by
    reading back from the end in growing chunks (records are in ``seq`` order), so reading what
    follows ``after_seq`` costs what follows it, not the whole log."""
    chunk = _TAIL_CHUNK
    while chunk < size:
        start = size - chunk
        handle.seek(start)
        data = handle.read(chunk)
        cut = data.find(b"\n")  # the first line of a chunk may be partial
        if cut >= 0:
            for line in data[cut + 1 :].split(b"\n"):
                record = _parse(line)
                if record is not None:
                    if record.seq <= after_seq + 1:
                        return start + cut + 1
                    break
        chunk *= 4
    return 0


def _parse(line: bytes) -> SessionRecord | None:
    line = line.strip()
    if not line:
        return None
    try:
        return SessionRecord.from_dict(json.loads(line))
    except (ValueError, KeyError, TypeError):
        return None
