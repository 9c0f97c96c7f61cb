"""The turn gate: one turn per session at a time, across processes.

A turn holds a *lease* on its session while it runs. The holder renews the lease while it
works; a holder that crashed (or hangs) stops renewing and loses the lease once it expires, so
the session is never blocked for ever. Turns waiting for a busy session are served first come,
first served, across processes (:mod:`harnessed.turns.line`). :class:`FileTurnGate` keeps
leases in small files beside a local workspace (processes on one machine); a shared deployment
plugs in another :class:`TurnGate` (for example on PostgreSQL) without changing anything else.
The gates here also carry notes to a lease's holder
(:class:`~harnessed.turns.notes.TurnNotes`: steering and interrupts sent from another
process).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar, runtime_checkable

from harnessed.turns.holders import holder_id, holder_is_gone
from harnessed.turns.line import Ticket, live_tickets, serve, without

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
    "to_the_end",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

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
        """Take the session's lease; waits its turn behind the holder and the turns that
        asked before it (first come, first served), or (``wait=False``, or after ``timeout``
        seconds) raises :class:`SessionBusyError`."""
        ...

    async def renew(self, lease: TurnLease) -> TurnLease:
        """Extend a held lease; raises :class:`LeaseLostError` when it was taken over."""
        ...

    async def release(self, lease: TurnLease) -> None:
        """Give the lease back (nothing happens if it was already taken over)."""
        ...


def busy_error(session: str, detail: str = "") -> SessionBusyError:
    """The error of a turn that asked not to wait for a busy session."""
    return SessionBusyError(
        f"session {session!r} is busy: another turn is running{detail}; wait for it, "
        "or submit with wait=True to queue this turn"
    )


Attempt: TypeAlias = Callable[[str, bool], Awaitable["TurnLease | int"]]
"""A gate's try at a session's lease for a holder: ``attempt(holder, queue)`` returns the lease,
or how many tickets are before the holder's place in the session's line; with ``queue`` the
holder joins the line (or renews its ticket), atomically with the lease check. It runs to its
end even when its caller is cancelled."""


class LeaseWaiter:
    """Waiting in a session's line (:mod:`harnessed.turns.line`): asking again with back-off,
    woken early when a lease is released in this process, and sooner when the line moves."""

    def __init__(self, poll_interval: float, lease_seconds: float) -> None:
        # a ticket expires when not renewed for a lease's length: look again well before
        self.poll_interval = min(poll_interval, lease_seconds / 4)
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
        attempt: Attempt,
        leave: Callable[[str], Awaitable[None]],
        *,
        wait: bool,
        timeout: float | None,
    ) -> TurnLease:
        """A gate's ``acquire``: ``attempt(holder, wait)``, then (a busy session) again until
        the holder is served, ``timeout`` passes or (``wait=False``) at once
        :class:`SessionBusyError`. A waiter that gives up calls ``leave(holder)``: its ticket
        leaves the line, and a lease an attempt took for it meanwhile is given back. An attempt
        runs to its end when the waiter is cancelled (see :func:`to_the_end`), so leaving comes
        after whatever it took."""
        holder = holder_id()
        try:
            got = await attempt(holder, wait)
            if isinstance(got, TurnLease):
                return got
            if not wait:
                raise busy_error(session, _waiting(got))
            deadline = None if timeout is None else time.monotonic() + timeout
            tries = 0
            while True:
                if not await self.until(session, deadline, tries):
                    raise busy_error(session, _waiting(got))
                ahead = got
                got = await attempt(holder, True)
                if isinstance(got, TurnLease):
                    return got
                tries = 0 if got < ahead else tries + 1  # the line moved: look again soon
        except BaseException:
            if wait:
                try:
                    await asyncio.shield(leave(holder))
                except Exception:  # its ticket then expires unrenewed
                    logger.warning("could not leave the line of %s", session, exc_info=True)
            raise

    def released(self, session: str) -> None:
        event = self._released.pop(session, None)
        if event is not None:
            event.set()


async def to_the_end(step: Awaitable[_T]) -> _T:
    """Await ``step``; when the caller is cancelled meanwhile, ``step`` still finishes before
    the cancellation goes on (a lease attempt that may put its holder in line, or give it the
    lease, is never left running behind the waiter's back)."""
    future = asyncio.ensure_future(step)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait([future])
        raise


def _waiting(ahead: int) -> str:
    return f", {ahead} more waiting for it" if ahead > 0 else ""


class InMemoryTurnGate:
    """Leases kept in this process (for agents without a local workspace)."""

    def __init__(
        self, *, lease_seconds: float = DEFAULT_LEASE_SECONDS, poll_interval: float = 0.1
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError("InMemoryTurnGate.lease_seconds must be positive")
        self.lease_seconds = lease_seconds
        self._leases: dict[str, TurnLease] = {}
        self._lines: dict[str, list[Ticket]] = {}
        self._notes: dict[str, list[tuple[str, str, float]]] = {}
        self._waiting = LeaseWaiter(poll_interval, lease_seconds)

    async def acquire(
        self, session: str, *, wait: bool = True, timeout: float | None = None
    ) -> TurnLease:
        async def attempt(holder: str, queue: bool) -> TurnLease | int:
            now = time.time()
            current = self._leases.get(session)
            busy = current is not None and current.expires_at > now
            line = self._lines.get(session)
            if not busy and not line:  # the usual case: free, and nobody waits
                lease = TurnLease(session, holder, now + self.lease_seconds)
                self._leases[session] = lease
                return lease
            served = serve(
                live_tickets(line, now),
                holder,
                busy=busy,
                queue=queue,
                now=now,
                lease_seconds=self.lease_seconds,
            )
            self._keep_line(session, served.line)
            if not served.take:
                return served.ahead
            lease = self._leases[session] = TurnLease(session, holder, now + self.lease_seconds)
            return lease

        async def leave(holder: str) -> None:
            self._keep_line(session, without(self._lines.get(session, []), holder))
            current = self._leases.get(session)
            if current is not None and current.holder == holder:
                del self._leases[session]
            self._waiting.released(session)

        return await self._waiting.acquire(session, attempt, leave, wait=wait, timeout=timeout)

    def _keep_line(self, session: str, line: list[Ticket]) -> None:
        if line:
            self._lines[session] = line
        else:
            self._lines.pop(session, None)

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
        from harnessed.turns.notes import encode_note

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
