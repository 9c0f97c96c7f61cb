"""The default turn gate of a local workspace: leases (with the line of turns waiting for them,
and the notes for their holders) in small files, changed only under an exclusive ``flock``."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from harnessed.turns.gate import (
    DEFAULT_LEASE_SECONDS,
    InMemoryTurnGate,
    LeaseLostError,
    LeaseWaiter,
    TurnGate,
    TurnLease,
    _sort_notes,
    holder_is_gone,
    to_the_end,
)
from harnessed.turns.line import Ticket, live_tickets, serve, without

__all__ = ["FileTurnGate", "default_turn_gate"]

_T = TypeVar("_T")

_LEASE_THREADS = 4


@functools.cache
def _lease_executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(_LEASE_THREADS, thread_name_prefix="harnessed-turn-gate")


async def _off_loop(fn: Callable[..., _T], *args: object) -> _T:
    """Run a lease operation that has to wait for a file lock on the gate's own threads: it
    never waits behind the stores' file work (appends and fsyncs) queued on the default
    executor."""
    return await asyncio.get_running_loop().run_in_executor(_lease_executor(), fn, *args)


@functools.lru_cache(maxsize=4096)
def _lease_path(root: Path, session: str) -> Path:
    digest = hashlib.sha256(session.encode()).hexdigest()[:32]
    return root / f"{digest}.lease"


class FileTurnGate:
    """Leases in files under ``root``: one small JSON file per session, changed only under an
    exclusive ``flock``, so processes on one machine (or one shared POSIX filesystem) agree.
    The file also holds the session's line of waiting turns (``"queue"``: ``[holder,
    expires_at]`` pairs in the order they came).

    An operation whose lock is free (the usual case: a lock is held for a few system calls)
    runs at once on the event loop, a handful of system calls on a small local file, cheaper
    than a hop to a thread; one that finds the lock taken by another process waits for it on
    the gate's own threads, never on the loop.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        poll_interval: float = 0.1,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError("FileTurnGate.lease_seconds must be positive")
        if poll_interval <= 0:
            raise ValueError("FileTurnGate.poll_interval must be positive")
        self.root = Path(root)
        self.lease_seconds = lease_seconds
        self._waiting = LeaseWaiter(poll_interval, lease_seconds)

    def path_for(self, session: str) -> Path:
        return _lease_path(self.root, session)

    def notes_path_for(self, session: str) -> Path:
        """The file of notes to the session's holder (JSON lines, present only while notes
        wait; changed only under the lease file's lock)."""
        return _lease_path(self.root, session).with_suffix(".notes")

    async def acquire(
        self, session: str, *, wait: bool = True, timeout: float | None = None
    ) -> TurnLease:
        async def attempt(holder: str, queue: bool) -> TurnLease | int:
            return await self._locked_op(self._take, session, session, holder, queue)

        async def leave(holder: str) -> None:
            await self._locked_op(self._leave, session, session, holder)
            self._waiting.released(session)

        return await self._waiting.acquire(session, attempt, leave, wait=wait, timeout=timeout)

    async def renew(self, lease: TurnLease) -> TurnLease:
        return await self._locked_op(self._renew, lease.session, lease)

    async def release(self, lease: TurnLease) -> None:
        await self._locked_op(self._release, lease.session, lease)
        self._waiting.released(lease.session)

    # ----------------------------------------------------------------- notes
    async def holder(self, session: str) -> TurnLease | None:
        return await self._locked_op(self._holder, session, session)

    async def post(self, session: str, note: dict[str, Any]) -> TurnLease | None:
        from harnessed.turns.notes import encode_note

        line = encode_note(note)
        return await self._locked_op(self._post, session, session, line)

    async def collect(self, lease: TurnLease) -> list[dict[str, Any]]:
        try:  # the usual case, no notes: one stat, no lock
            if os.stat(self.notes_path_for(lease.session)).st_size == 0:
                return []
        except FileNotFoundError:
            return []
        return await self._locked_op(self._collect, lease.session, lease)

    def _live(self, fd: int, session: str) -> TurnLease | None:
        current, _ = self._read(fd)
        return _lease_in(current, session, time.time())

    def _holder(self, fd: int, session: str) -> TurnLease | None:
        return self._live(fd, session)

    def _post(self, fd: int, session: str, line: str) -> TurnLease | None:
        current = self._live(fd, session)
        if current is not None:
            # a leading newline ends a line torn by a sender that crashed (or hit a full
            # disk) mid-append, so it never swallows this one (empty lines are skipped)
            entry = b"\n" + json.dumps([current.holder, line, time.time()]).encode() + b"\n"
            notes = os.open(
                self.notes_path_for(session), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
            )
            try:
                view = memoryview(entry)
                while view:  # a short write (disk full) must not pass for a posted note
                    view = view[os.write(notes, view) :]
            finally:
                os.close(notes)
        return current

    def _collect(self, fd: int, lease: TurnLease) -> list[dict[str, Any]]:
        path = self.notes_path_for(lease.session)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        waiting: list[tuple[str, str, float]] = []
        rows = [row for row in raw.splitlines() if row.strip()]
        for row in rows:
            with contextlib.suppress(ValueError, TypeError):  # torn by a crashed sender
                holder, line, posted_at = json.loads(row)
                waiting.append((str(holder), str(line), float(posted_at)))
        live = self._live(fd, lease.session)
        mine, kept = _sort_notes(waiting, lease.holder, live.holder if live else None)
        if not kept:
            path.unlink(missing_ok=True)
        elif len(kept) < len(rows):  # rewritten only when a note (or a torn line) went
            tmp = path.with_suffix(".notes-tmp")
            tmp_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(tmp_fd, "wb") as out:  # private like the lease files
                out.write(b"".join(json.dumps(list(k)).encode() + b"\n" for k in kept))
            os.replace(tmp, path)
        return mine

    # ---------------------------------------------------------------- files
    async def _locked_op(self, fn: Callable[..., _T], session: str, *args: object) -> _T:
        """``fn(fd, *args)`` with the session's lease file locked: here when the lock is free,
        on the gate's threads when another holder has it locked."""
        fd = self._open(session)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # waited for on a thread, and finished there even if cancelled
            return await to_the_end(_off_loop(self._blocking_op, fn, session, *args))
        except BaseException:
            os.close(fd)
            raise
        try:
            return fn(fd, *args)
        finally:
            os.close(fd)  # closing drops the flock

    def _blocking_op(self, fn: Callable[..., _T], session: str, *args: object) -> _T:
        fd = self._open(session)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return fn(fd, *args)
        finally:
            os.close(fd)

    def _open(self, session: str) -> int:
        path = self.path_for(session)
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the first lease here (or the folder was removed)
            path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    @staticmethod
    def _read(fd: int) -> tuple[dict[str, object] | None, int]:
        """The lease in the file (``None``: free, nobody waiting) and the file's length."""
        raw = os.pread(fd, _READ, 0)
        while len(raw) % _READ == 0 and raw:  # a long line of waiting turns
            more = os.pread(fd, _READ, len(raw))
            if not more:
                break
            raw += more
        if not raw.strip():
            return None, len(raw)
        try:
            data = json.loads(raw)
        except ValueError:
            return None, len(raw)  # a torn write by a crashed holder: the lease is free
        return (data if isinstance(data, dict) else None), len(raw)

    @staticmethod
    def _write(fd: int, data: dict[str, object] | None, length: int) -> None:
        """Overwrite the file in place, padded with spaces to its old length: truncating a
        file costs the filesystem far more than this whole operation otherwise does (done
        only when a long line of waiting turns has gone)."""
        payload = json.dumps(data).encode() if data else b""
        if length > _READ and len(payload) * 4 < length:
            os.pwrite(fd, payload, 0)
            os.ftruncate(fd, len(payload))
            return
        os.pwrite(fd, payload.ljust(length), 0)

    def _take(self, fd: int, session: str, holder: str, queue: bool) -> TurnLease | int:
        current, length = self._read(fd)
        now = time.time()
        busy = _lease_in(current, session, now) is not None
        waiting = current.get("queue") if current is not None else None
        lease = TurnLease(session, holder, now + self.lease_seconds)
        if not busy and not waiting:  # the usual case: free, and nobody waits
            self._write(fd, _record(lease, []), length)
            return lease
        line = live_tickets(waiting, now)
        served = serve(
            line, holder, busy=busy, queue=queue, now=now, lease_seconds=self.lease_seconds
        )
        if served.take:
            self._write(fd, _record(lease, served.line), length)
        elif served.changed or _pruned(waiting, line):  # joined, renewed, or some left
            self._write(fd, {**(current or {}), "queue": _stored(served.line)}, length)
        return lease if served.take else served.ahead

    def _leave(self, fd: int, session: str, holder: str) -> None:
        """``holder`` gave up waiting: its ticket leaves the line, and a lease taken for it
        by an attempt whose answer it no longer waited for is given back."""
        current, length = self._read(fd)
        if current is None:
            return
        data = dict(current)
        if data.get("holder") == holder:
            for key in ("session", "holder", "expires_at"):
                data.pop(key, None)
        waiting = data.pop("queue", None)
        line = without(live_tickets(waiting, time.time()), holder)
        if line:
            data["queue"] = _stored(line)
        if data != current:
            self._write(fd, data, length)

    def _renew(self, fd: int, lease: TurnLease) -> TurnLease:
        current, length = self._read(fd)
        if current is None or current.get("holder") != lease.holder:
            raise LeaseLostError(
                f"the lease on session {lease.session!r} expired and was taken over"
            )
        renewed = TurnLease(lease.session, lease.holder, time.time() + self.lease_seconds)
        self._write(fd, {**current, "expires_at": renewed.expires_at}, length)  # line kept
        return renewed

    def _release(self, fd: int, lease: TurnLease) -> None:
        current, length = self._read(fd)
        if current is not None and current.get("holder") == lease.holder:
            waiting = current.get("queue")  # the line stays: its first turn is next
            self._write(fd, {"queue": waiting} if waiting else None, length)


_READ = 1 << 16


def _lease_in(current: dict[str, object] | None, session: str, now: float) -> TurnLease | None:
    """The live lease a lease file holds (``None``: free — also when it expired, is malformed
    or its holder was a process of this host that is gone)."""
    if current is None:
        return None
    holder = current.get("holder")
    if not isinstance(holder, str):
        return None
    try:
        expires_at = float(str(current.get("expires_at", 0)))
    except ValueError:
        return None
    if not expires_at > now or holder_is_gone(holder):
        return None
    return TurnLease(session, holder, expires_at)


def _pruned(waiting: object, line: list[Ticket]) -> bool:
    """Whether tickets of the stored line ``waiting`` are not in ``line`` (its live ones)."""
    return waiting is not None and (not isinstance(waiting, list) or len(waiting) != len(line))


def _record(lease: TurnLease, line: list[Ticket]) -> dict[str, object]:
    data: dict[str, object] = {
        "session": lease.session,
        "holder": lease.holder,
        "expires_at": lease.expires_at,
    }
    if line:
        data["queue"] = _stored(line)
    return data


def _stored(line: list[Ticket]) -> list[list[object]]:
    return [[ticket.holder, ticket.expires_at] for ticket in line]


def default_turn_gate(local_root: Path | None) -> TurnGate:
    """Lease files under ``<workspace>/.harnessed/turns`` for a local workspace (every process
    using that workspace agrees); leases in this process otherwise."""
    if local_root is not None:
        return FileTurnGate(local_root / ".harnessed" / "turns")
    return InMemoryTurnGate()
