"""Turns visible from every server: the running turn and its events, through a shared store.

A server running a turn writes its events, in order, to the store's :class:`TurnFeed`
(batched off the turn's path: the turn never waits for it, except for the last write before
its lease is given back). Any other server of the store then answers which turn runs in a
session and streams that turn's events from its first to its end: what was written is the
replay, and the store tells it when more was written (PostgreSQL: ``LISTEN/NOTIFY``).

A store without a feed (the embedded default: one process) costs nothing here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from harnessed.events import Event
from harnessed.runtime import SessionRef
from harnessed.turns.gate import TurnLease

if TYPE_CHECKING:
    from harnessed.sessions.session import AgentSession
    from harnessed.sessions.turn import Turn

__all__ = [
    "FeedEntry",
    "FeedWriter",
    "RemoteTurn",
    "TurnFeed",
    "feed_of",
    "remote_turn",
    "running_turn_id",
]

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 10.0
"""How long the end of a turn waits for its last events to be written to the feed."""


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One entry of a turn's feed: ``event`` (``data`` is the event's ``to_dict()``), or the
    ``end`` of the turn (``data``: ``status``, and ``error_type`` / ``message`` when it failed
    without an ``agent_end``)."""

    seq: int
    kind: Literal["event", "end"]
    data: Mapping[str, Any]


@runtime_checkable
class TurnFeed(Protocol):
    """A store's record of running turns and their events, readable by every server."""

    async def begin(self, key: SessionRef, turn_id: str, lease: TurnLease) -> None:
        """A turn holding ``lease`` started in the session ``key``."""
        ...

    async def write(self, turn_id: str, entries: Sequence[FeedEntry]) -> None:
        """Entries of a begun turn, in order (an ``end`` entry is its last)."""
        ...

    async def running(self, key: SessionRef) -> str | None:
        """The turn running in the session now on any server (its lease is live)."""
        ...

    async def running_in(self, agent: str, user_id: str) -> dict[str, str]:
        """Session id -> the turn running in it now, for every session of a user."""
        ...

    async def known(self, key: SessionRef, turn_id: str) -> bool:
        """Whether the session has (or lately had) that turn on some server."""
        ...

    def follow(
        self, key: SessionRef, turn_id: str, idle: float | None = None
    ) -> AsyncIterator[list[FeedEntry]]:
        """The turn's entries from its first, then live, until its ``end`` (one is made up
        when the turn's server died without writing it). After ``idle`` seconds without an
        entry an empty batch is yielded."""
        ...


def feed_of(agent: object) -> TurnFeed | None:
    """The feed of the agent's shared store (``None``: the store has none)."""
    make = getattr(getattr(agent, "store", None), "turn_feed", None)
    if not callable(make):
        return None
    feed = make()
    return feed if isinstance(feed, TurnFeed) else None


class FeedWriter:
    """Writes one turn's events to a feed in the background, in batches."""

    def __init__(self, feed: TurnFeed, key: SessionRef, turn_id: str, lease: TurnLease) -> None:
        self.feed = feed
        self.turn_id = turn_id
        self._pending: list[FeedEntry] = []
        self._seq = 0
        self._more = asyncio.Event()
        self._closed = False
        self._task = asyncio.create_task(self._write(key, lease), name=f"feed:{turn_id}")

    def add(self, event: Event) -> None:
        if self._task.done():  # the feed failed: nothing more is kept for it
            return
        self._seq += 1
        self._pending.append(FeedEntry(self._seq, "event", event.to_dict()))
        self._more.set()

    async def close(self, turn: Turn) -> None:
        """Write the end of ``turn`` and wait (at most :data:`FLUSH_SECONDS`) until the feed
        has everything."""
        end: dict[str, Any] = {"status": turn.status}
        if turn.end is None:
            error = turn.error
            end["error_type"] = type(error).__name__ if error else "RuntimeError"
            end["message"] = str(error) if error else "the turn ended without a result"
        self._seq += 1
        self._pending.append(FeedEntry(self._seq, "end", end))
        self._closed = True
        self._more.set()
        try:
            async with asyncio.timeout(FLUSH_SECONDS):
                await asyncio.shield(self._task)
        except TimeoutError:
            logger.warning("turn %s: its feed was not written in time", self.turn_id)
            self._task.cancel()
        except Exception:
            return  # logged by the writer

    async def _write(self, key: SessionRef, lease: TurnLease) -> None:
        try:
            await self.feed.begin(key, self.turn_id, lease)
            while True:
                await self._more.wait()
                self._more.clear()
                batch, self._pending = self._pending, []
                if batch:
                    await self.feed.write(self.turn_id, batch)
                if self._closed and not self._pending:
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.warning(
                "turn %s: other servers cannot follow it (feed failed)", self.turn_id, exc_info=True
            )
            raise


def _key(session: AgentSession) -> SessionRef:
    return SessionRef(session.agent.name, session.user_id, session.session_id)


def writer_for(session: AgentSession, turn_id: str, lease: TurnLease) -> FeedWriter | None:
    """A writer for a turn of ``session`` starting now (``None`` without a feed)."""
    feed = feed_of(session.agent)
    return FeedWriter(feed, _key(session), turn_id, lease) if feed is not None else None


async def running_turn_id(session: AgentSession) -> str | None:
    """The id of the turn running in ``session`` here or on any server of its store."""
    turn = session.running
    if turn is not None:
        return turn.id
    feed = feed_of(session.agent)
    if feed is None:
        return None
    with contextlib.suppress(Exception):  # a store that is down: as if nothing ran elsewhere
        return await feed.running(_key(session))
    return None


@dataclass(frozen=True, slots=True)
class RemoteTurn:
    """A turn running (or run lately) on another server, followed through the feed."""

    id: str
    feed: TurnFeed
    key: SessionRef

    def batches(self, idle: float | None = None) -> AsyncIterator[list[FeedEntry]]:
        return self.feed.follow(self.key, self.id, idle)


async def remote_turn(session: AgentSession, turn_id: str) -> RemoteTurn | None:
    """``turn_id`` of ``session`` from the feed (``None``: the feed knows no such turn of
    that session, or there is no feed)."""
    feed = feed_of(session.agent)
    if feed is None:
        return None
    key = _key(session)
    return RemoteTurn(turn_id, feed, key) if await feed.known(key, turn_id) else None
