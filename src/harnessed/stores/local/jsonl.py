"""The default session log store: one append-only JSONL file per session on local disk.

``<root>/<agent>/sessions/<user>/<session>.log.jsonl`` (``root`` is the workspace's ``agents``
directory). Appends hold an exclusive ``flock`` on the file while they read the last sequence
number and write, so concurrent writers — threads, tasks or processes — never interleave lines
or reuse a number. Appends made at the same time, to any sessions, are written in batches by
one worker thread (see :mod:`harnessed.stores.local.jsonl_files`). A torn last line left by a crash
is ignored on read and fenced off with a newline by the next append, which continues the
sequence after the last complete record. An unreadable line is reported once per store (with
its line number), not on every read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

from harnessed._internal.gcpause import gc_paused
from harnessed._internal.group_commit import Failed, GroupCommit
from harnessed.log.record import NewRecord, SessionRecord
from harnessed.log.store import SessionInfo, Stored
from harnessed.runtime import SessionRef
from harnessed.stores.local.index_files import user_session_file
from harnessed.stores.local.jsonl_files import TailCache, parse_line, write_batch
from harnessed.workspace.paths import encode_part

__all__ = ["JsonlSessionLogStore"]

logger = logging.getLogger(__name__)

_SUFFIX = ".log.jsonl"
_TAIL_CHUNK = 64 * 1024


_BULK_BYTES = 1 << 20
"""A read of at least this many bytes of log is parsed with the cyclic collector paused."""


class JsonlSessionLogStore:
    """Session logs as JSONL files under ``root``."""

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = False) -> None:
        """Once an append returns, its records were written to the file: they survive the
        process being killed. ``durable=True`` also waits for ``fsync`` of the file (and of its
        directory when the file is new): they survive a power loss too. Concurrent appends, to
        one session or many, go out in batches: one thread hand-off per batch, one ``write``
        per file, and the files' fsyncs at once (group commit)."""
        self.root = Path(root)
        self.durable = durable
        self._paths: dict[SessionRef, Path] = {}  # ids encoded once, not on every append
        self._tails: TailCache = {}
        self._reported: set[tuple[Path, int]] = set()  # unreadable lines already warned about
        self._batches: GroupCommit[tuple[SessionRef, Sequence[NewRecord]], list[SessionRecord]]
        self._batches = GroupCommit(lambda _, appends: self.append_batch(appends))

    def path_for(self, key: SessionRef) -> Path:
        path = self._paths.get(key)
        if path is None:
            name = f"{encode_part(key.session_id, 'session id')}{_SUFFIX}"
            path = user_session_file(self.root, key.agent_id, key.user_id, name)
            if len(self._paths) >= 4_096:
                self._paths.clear()
            self._paths[key] = path
        return path

    # ---------------------------------------------------------------- write
    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        """Append records atomically as a group; returns them with their sequence numbers."""
        if not records:
            return []
        return await self._batches.submit(None, (key, records))

    async def append_batch(
        self,
        appends: Sequence[tuple[SessionRef, Sequence[NewRecord]]],
        *,
        then: Callable[[Stored], None] | None = None,
    ) -> list[list[SessionRecord] | Failed]:
        """Several appends (to any sessions) in one batch: one worker thread hand-off, one
        ``write`` per file, the files' fsyncs at once (see :class:`BatchAppendStore`)."""
        return await asyncio.to_thread(self._write, appends, then)

    def _write(
        self,
        appends: Sequence[tuple[SessionRef, Sequence[NewRecord]]],
        then: Callable[[Stored], None] | None,
    ) -> list[list[SessionRecord] | Failed]:
        results: list[list[SessionRecord] | Failed] = []
        files, written = [], []
        for i, (key, records) in enumerate(appends):
            try:
                files.append((self.path_for(key), records))
            except Exception as exc:  # an id that cannot name a file fails its own append
                results.append(Failed(exc))
            else:
                results.append([])
                written.append(i)
        stored = write_batch(self._tails, files, sync=self.durable)
        for i, result in zip(written, stored, strict=True):
            results[i] = result
        if then is not None:
            done = [
                (key, stored)
                for (key, _), stored in zip(appends, results, strict=True)
                if not isinstance(stored, Failed) and stored
            ]
            try:
                then(done)
            except Exception:
                logger.exception("the work after a session log batch failed (the batch did not)")
        return results

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
        path = self.path_for(key)
        if after_seq:
            cached = self._tails.get(path)
            if cached is not None and cached[1] == after_seq:
                try:  # the usual question of a warm session: has anyone appended since?
                    unchanged = os.stat(path).st_size == cached[0]
                except FileNotFoundError:
                    return []
                if unchanged:
                    return []  # answered by one stat here, no worker hand-off
        return await asyncio.to_thread(self._read, path, after_seq, types, limit)

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
        lines = data.split(b"\n")
        # a long log read whole is a bulk load: parsed without the cyclic collector rescanning
        # the heap it builds (short reads, the usual, are not paused)
        with gc_paused() if len(data) >= _BULK_BYTES else contextlib.nullcontext():
            self._parse(path, lines, start, known, after_seq, out)
        return out

    def _parse(
        self,
        path: Path,
        lines: list[bytes],
        start: int,
        known: int,
        after_seq: int,
        out: list[SessionRecord],
    ) -> None:
        offset = start
        end, last = start, known
        for number, line in enumerate(lines):
            at, offset = offset, offset + len(line) + 1
            record = parse_line(line)
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

    async def tail(
        self, key: SessionRef, count: int, *, types: Sequence[str] | None = None
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
                record = parse_line(line)
                if record is not None:
                    if record.seq <= after_seq + 1:
                        return start + cut + 1
                    break
        chunk *= 4
    return 0
