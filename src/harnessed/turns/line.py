"""The line of turns waiting for a session's lease: first come, first served.

A turn that finds its session busy (or other turns already waiting for it) takes a *ticket*,
its place at the end of the session's line. A free lease goes to the first ticket in line; a
turn that asks later — also the holder that has just given the lease back and asks again —
queues behind every ticket already there, so no waiter is passed over, whichever process it
runs in. A waiter renews its ticket each time it looks again; a ticket not renewed for a
lease's length, or one of a process of this host that no longer exists, loses its place, so
a waiter that died never blocks the line for long. A waiter that gives up (its ``timeout``
passed, or it was cancelled) leaves the line at once.

Each gate keeps the line beside the lease (in the lease file, in a table, in a dict), changes
both together atomically, and decides with :func:`serve`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from harnessed.turns.holders import holder_is_gone

__all__ = ["Served", "Ticket", "live_tickets", "serve", "without"]


class Ticket(NamedTuple):
    """A waiter's place in a session's line, kept until ``expires_at`` (epoch s) unless
    renewed."""

    holder: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class Served:
    """What asking for a session's lease gave."""

    take: bool
    """The asker takes the lease now."""
    line: list[Ticket]
    """The line afterwards (the asker's ticket gone when it takes the lease)."""
    ahead: int
    """How many tickets are before the asker's place (0 when it takes the lease)."""
    changed: bool
    """The line differs from the one asked with (a ticket joined, was renewed or left)."""


def live_tickets(raw: object, now: float) -> list[Ticket]:
    """The tickets of ``raw`` (``[holder, expires_at]`` pairs in the order they came, as a gate
    stores them) that still hold a place: malformed and expired ones, a holder's second
    ticket, and tickets of processes of this host that are gone are dropped."""
    if not isinstance(raw, list | tuple) or not raw:
        return []
    line: list[Ticket] = []
    seen: set[str] = set()
    for entry in raw:
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            continue
        holder, expires_at = entry
        if (
            not isinstance(holder, str)
            or isinstance(expires_at, bool)
            or not isinstance(expires_at, int | float)
            or not expires_at > now  # also drops NaN
            or holder in seen
            or holder_is_gone(holder)
        ):
            continue
        seen.add(holder)
        line.append(Ticket(holder, float(expires_at)))
    return line


def serve(
    line: list[Ticket], holder: str, *, busy: bool, queue: bool, now: float, lease_seconds: float
) -> Served:
    """``holder`` asks for a lease that is ``busy`` (or free) while ``line`` (live tickets, in
    order) waits: it takes a free lease when no ticket is before its place; otherwise, with
    ``queue``, it joins the end of the line, or renews its ticket once a third of
    ``lease_seconds`` has passed since it last did (so most looks change nothing)."""
    place = next((i for i, ticket in enumerate(line) if ticket.holder == holder), None)
    ahead = len(line) if place is None else place
    if not busy and ahead == 0:
        if place is None:
            return Served(True, line, 0, changed=False)
        return Served(True, line[1:], 0, changed=True)
    if not queue:
        return Served(False, line, ahead, changed=False)
    ticket = Ticket(holder, now + lease_seconds)
    if place is None:
        return Served(False, [*line, ticket], ahead, changed=True)
    if line[place].expires_at - now > lease_seconds * 2 / 3:
        return Served(False, line, ahead, changed=False)
    return Served(False, [*line[:place], ticket, *line[place + 1 :]], ahead, changed=True)


def without(line: list[Ticket], holder: str) -> list[Ticket]:
    """``line`` after ``holder`` left it."""
    return [ticket for ticket in line if ticket.holder != holder]
