"""How a batch of appends reaches the JSONL session files (blocking; run in a worker thread).

A batch holds appends to any number of sessions. Each file gets one ``write`` of all its
records, made under an exclusive ``flock`` held while the last sequence number is read and the
new lines are written, so writers in other threads and processes never interleave lines or
reuse a number. The lock is released as soon as the bytes are written; then, for a durable
store, all the batch's files are ``fsync``\\ ed at once (in parallel: the file system commits
them together), and the directory of a file that was just created too. An append whose file
could not be written or synced fails alone; the other appends of the batch still succeed. (The
bytes of an append whose fsync failed were written: readers may still find its records, as
after any I/O error whose outcome is unknown. Nothing acknowledged is lost and the sequence
stays gapless.)
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Sequence
from pathlib import Path

from harnessed._internal.durability import fsync_all, fsync_directory
from harnessed._internal.group_commit import Failed
from harnessed.log.record import NewRecord, SessionRecord, jsonl_bytes

__all__ = ["Append", "TailCache", "parse_line", "write_batch"]

TailCache = dict[Path, tuple[int, int]]
"""What a store knows of its files' ends: path -> (file size, seq of its last record)."""

_TAIL_CHUNK = 64 * 1024

Append = tuple[Path, Sequence[NewRecord]]


def write_batch(
    tails: TailCache, appends: Sequence[Append], *, sync: bool
) -> list[list[SessionRecord] | Failed]:
    """Write ``appends`` (file, records) — one write per file — and, when ``sync``, fsync the
    files; returns each append's stored records in order, or its failure."""
    results: list[list[SessionRecord] | Failed] = [Failed(RuntimeError("not written"))] * len(
        appends
    )
    by_path: dict[Path, list[int]] = {}
    for i, (path, _) in enumerate(appends):
        by_path.setdefault(path, []).append(i)
    written: list[tuple[int, Path, bool, list[int]]] = []  # fd, path, file is new, appends
    try:
        for path, indices in by_path.items():
            try:
                fd, new, stored = _write_file(tails, path, [appends[i][1] for i in indices])
            except Exception as exc:
                for i in indices:
                    results[i] = Failed(exc)
                continue
            written.append((fd, path, new, indices))
            for i, records in zip(indices, stored, strict=True):
                results[i] = records
        if sync and written:
            errors = fsync_all([fd for fd, _, _, _ in written])
            for (_, path, new, indices), error in zip(written, errors, strict=True):
                if error is not None:
                    for i in indices:
                        results[i] = Failed(error)
                elif new:
                    fsync_directory(path.parent)  # a new file: make its name durable too
    finally:
        for fd, _, _, _ in written:
            os.close(fd)
    return results


def _write_file(
    tails: TailCache, path: Path, appends: Sequence[Sequence[NewRecord]]
) -> tuple[int, bool, list[list[SessionRecord]]]:
    """Number and write the records of ``appends`` to ``path`` with one write under the file's
    lock; returns the still open file (unlocked), whether it was new, and the stored records."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        last_seq, torn = _last_seq(tails, path, fd, size)
        stored: list[list[SessionRecord]] = []
        for records in appends:
            stored.append([SessionRecord.assign(last_seq + i, r) for i, r in enumerate(records, 1)])
            last_seq += len(records)
        # a line a crash left torn is fenced off with a newline
        payload = jsonl_bytes((r for out in stored for r in out), "\n" if torn else "")
        written = 0
        while written < len(payload):
            written += os.write(fd, payload[written:])
        tails[path] = (size + len(payload), last_seq)
        fcntl.flock(fd, fcntl.LOCK_UN)  # other writers may go on while this one syncs
    except BaseException:
        os.close(fd)  # closing releases the lock
        raise
    return fd, size == 0, stored


def _last_seq(tails: TailCache, path: Path, fd: int, size: int) -> tuple[int, bool]:
    """The last complete record's seq, and whether the file ends in a torn line."""
    cached = tails.get(path)
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
            record = parse_line(line)
            if record is not None:
                return record.seq, torn
        if start == 0:
            return 0, torn
        chunk *= 4


def parse_line(line: bytes) -> SessionRecord | None:
    """The record of one log line; ``None`` for a blank, torn or corrupt line."""
    line = line.strip()
    if not line:
        return None
    try:
        return SessionRecord.from_dict(json.loads(line))
    except (ValueError, KeyError, TypeError):
        return None
