"""The turn gate: one turn per session at a time, across processes.

A turn holds a *lease* on its session while it runs. The holder renews the lease while it
works; a holder that crashed (or hangs) stops renewing and loses the lease once it expires, so
the session is never blocked for ever. :class:`FileTurnGate` keeps leases in small files beside
a local workspace (processes on one machine); a shared deployment plugs in another
:class:`TurnGate` (for example on PostgreSQL) without changing anything else. The gates here
also carry notes to a lease's holder (:class:`~harnessed.sessions.notes.TurnNotes`: steering
and interrupts sent from another process).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "InMemoryTurnGate",
    "LeaseLostError",
    "LeaseWaiter",
    "SessionBusyError",
    "TurnGate",
    "TurnLease",
    "busy_error",
    "holder_id",
    "holder_is_gone",
]

DEFAULT_LEASE_SECONDS = 30.0


class SessionBusyError(RuntimeError):
    """A turn of the session is running (or queued) and the caller asked not to wait."""


class LeaseLostError(RuntimeError):
    """The lease expired and another holder took the session (renewal came too late)."""


@dataclass(frozen=True, slots=True)
class TurnLease:
    """Proof that a holder may run a turn of ``session`` until ``expires_at`` (epoch s)."""

    session: str
    holder: str
    expires_at: float


@runtime_checkable
class TurnGate(Protocol):
    """Grants one lease per session at a time."""

    lease_seconds: float
    """How long a lease lasts without renewal (a crashed holder loses it after this)."""

    async def acquire(
        self, session: str, *, wait: bool = True, timeout: float | None = None
    ) -> TurnLease:
        """Take the session's lease; waits for the holder to finish, or (``wait=False``, or
        after ``timeout`` seconds) raises :class:`SessionBusyError`."""
        ...

    async def renew(self, lease: TurnLease) -> TurnLease:
        """Extend a held lease; raises :class:`LeaseLostError` when it was taken over."""
        ...

    async def release(self, lease: TurnLease) -> None:
        """Give the lease back (nothing happens if it was already taken over)."""
        ...


@functools.cache
def _host() -> str:
    """This host and pid namespace (a pid names the same process only inside one)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid").strip("pid:[]")
    except OSError:
        namespace = "0"
    return f"{socket.gethostname()}:{namespace}"


@functools.cache
def _this_process(pid: int) -> str:
    return f"{_host()}:{pid}"


def holder_id() -> str:
    """A lease holder's id: host, pid namespace, process and a random part (unique per
    acquire)."""
    return f"{_this_process(os.getpid())}:{os.urandom(6).hex()}"


def holder_is_gone(holder: object) -> bool:
    """Whether ``holder`` (a :func:`holder_id`) names a process of this host and pid namespace
    that no longer exists: its lease can be taken at once instead of after it expires (a
    process killed mid-turn does not block its sessions). Anything else — another host or
    namespace, a live or unknown process, an id of another form — counts as alive."""
    if not isinstance(holder, str):
        return False
    parts = holder.split(":")
    if len(parts) != 4 or f"{parts[0]}:{parts[1]}" != _host():
        return False
    try:
        pid = int(parts[2])
    except ValueError:
        return False
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's process) or cannot be asked
    return False


def busy_error(session: str, detail: str = "") -> SessionBusyError:
    """The error of a turn that asked not to wait for a busy session."""
    return SessionBusyError(
        f"session {session!r} is busy: another turn is running{detail}; wait for it, "
        "or submit with wait=True to queue this turn"
    )


class LeaseWaiter:
    """Polling with back-off, woken early when a lease is released in this process."""

    def __init__(self, poll_interval: float) -> None:
        self.poll_interval = poll_interval
        self._released: dict[str, asyncio.Event] = {}

    async def until(self, session: str, deadline: float | None, attempt: int) -> bool:
        """Sleep before the next attempt; ``False`` once ``deadline`` has passed."""
        delay = min(self.poll_interval, 0.005 * (2**attempt))
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            delay = min(delay, left)
        event = self._released.setdefault(session, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), delay)
        return True

    async def acquire(
        self,
        session: str,
        take: Callable[[str], Awaitable[TurnLease | None]],
        *,
        wait: bool,
        timeout: float | None,
    ) -> TurnLease:
        """A gate's ``acquire``: ``take(holder)`` (a lease, or ``None`` while another holds the
        session) tried until it succeeds, ``timeout`` passes or, with ``wait=False``, once."""
        holder = holder_id()
        deadline = None if timeout is None else time.monotonic() + timeout
        attempt = 0
        while True:
            lease = await take(holder)
            if lease is not None:
                return lease
            if not wait or not await self.until(session, deadline, attempt):
                raise busy_error(session)
            attempt += 1

    def released(self, session: str) -> None:
        event = self._released.pop(session, None)
        if event is not None:
            event.set()


class InMemoryTurnGate:
    """Leases kept in this process (for agents without a local workspace)."""

    def __init__(
        self, *, lease_seconds: float = DEFAULT_LEASE_SECONDS, poll_interval: float = 0.1
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError("InMemoryTurnGate.lease_seconds must be positive")
        self.lease_seconds = lease_seconds
        self._leases: dict[str, TurnLease] = {}
        self._notes: dict[str, list[tuple[str, str, float]]] = {}
        self._waiting = LeaseWaiter(poll_interval)

    async def acquire(
        self, session: str, *, wait: bool = True, timeout: float | None = None
    ) -> TurnLease:
        async def take(holder: str) -> TurnLease | None:
            now = time.time()
            current = self._leases.get(session)
            if current is not None and current.expires_at > now:
                return None
            lease = self._leases[session] = TurnLease(session, holder, now + self.lease_seconds)
            return lease

        return await self._waiting.acquire(session, take, wait=wait, timeout=timeout)

    async def renew(self, lease: TurnLease) -> TurnLease:
        current = self._leases.get(lease.session)
        if current is None or current.holder != lease.holder:
            raise LeaseLostError(f"the lease on session {lease.session!r} was lost")
        renewed = TurnLease(lease.session, lease.holder, time.time() + self.lease_seconds)
        self._leases[lease.session] = renewed
        return renewed

    async def release(self, lease: TurnLease) -> None:
        current = self._leases.get(lease.session)
        if current is not None and current.holder == lease.holder:
            del self._leases[lease.session]
        self._waiting.released(lease.session)

    # ----------------------------------------------------------------- notes
    async def holder(self, session: str) -> TurnLease | None:
        current = self._leases.get(session)
        return current if current is not None and current.expires_at > time.time() else None

    async def post(self, session: str, note: dict[str, Any]) -> TurnLease | None:
        from harnessed.sessions.notes import encode_note

        line = encode_note(note)
        current = await self.holder(session)
        if current is not None:
            self._notes.setdefault(session, []).append((current.holder, line, time.time()))
        return current

    async def collect(self, lease: TurnLease) -> list[dict[str, Any]]:
        waiting = self._notes.pop(lease.session, None)
        if not waiting:
            return []
        live = await self.holder(lease.session)
        mine, kept = _sort_notes(waiting, lease.holder, live.holder if live else None)
        if kept:
            self._notes[lease.session] = kept
        return mine


STALE_NOTE_SECONDS = 60.0
"""Notes left for a holder whose lease is gone are dropped once this old (by whoever collects
next): younger ones wait, as their holder collects once more after giving its lease back."""


def _sort_notes(
    notes: list[tuple[str, str, float]], mine: str, live: str | None
) -> tuple[list[dict[str, Any]], list[tuple[str, str, float]]]:
    """``(holder, line, posted_at)`` notes split into the ones for ``mine`` (decoded) and the
    ones kept for other holders: the ``live`` one's, and recent ones; older ones are dropped."""
    taken: list[dict[str, Any]] = []
    kept: list[tuple[str, str, float]] = []
    stale = time.time() - STALE_NOTE_SECONDS
    for holder, line, posted_at in notes:
        if holder == mine:
            with contextlib.suppress(ValueError):
                note = json.loads(line)
                if isinstance(note, dict):
                    taken.append(note)
        elif holder == live or posted_at > stale:
            kept.append((holder, line, posted_at))
    return taken, kept
