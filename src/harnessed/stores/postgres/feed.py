"""The turn feed on PostgreSQL: running turns (``harnessed_turn_runs``) and their events
(``harnessed_turn_events``), with ``NOTIFY`` telling the other servers when more was written.

A turn runs while its row is open and the turn gate's lease it names is live (a server that
died leaves an open row whose lease ran out: not running). Each write is one transaction: the
events and a ``NOTIFY`` on the schema's channel with the turn id, delivered at commit. Every
server listens on one connection of its own per event loop and wakes the readers of that
turn; readers also look again every ``poll_seconds``, so a notification lost with a dropped
connection delays an event, never loses it. Turns that ended more than ``keep_seconds`` ago
are deleted when another one ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from harnessed.runtime import SessionRef
from harnessed.turns.feed import FeedEntry
from harnessed.turns.gate import TurnLease

if TYPE_CHECKING:
    from harnessed.stores.postgres.connection import PostgresStore

__all__ = ["PostgresTurnFeed"]

logger = logging.getLogger(__name__)

_NOW = "extract(epoch FROM clock_timestamp())"
_LIVE = (
    "JOIN harnessed_turns t ON t.session = r.lease AND t.holder = r.holder"
    f" AND t.expires_at > {_NOW}"
)
_PAGE = 500
_INSERT = (
    "ins AS (INSERT INTO harnessed_turn_events (turn_id, seq, kind, data)"
    " SELECT %(turn)s, u.seq, u.kind, u.data FROM unnest(%(seqs)s::integer[],"
    " %(kinds)s::text[], %(datas)s::text[]) AS u(seq, kind, data) ON CONFLICT DO NOTHING)"
)
_WRITE = f"WITH {_INSERT} SELECT pg_notify(%(channel)s, %(turn)s)"
_WRITE_ENDED = (
    f"WITH {_INSERT}, ended AS (UPDATE harnessed_turn_runs SET ended_at = {_NOW}"
    " WHERE turn_id = %(turn)s) SELECT pg_notify(%(channel)s, %(turn)s)"
)


class _Listener:
    """One ``LISTEN`` connection of an event loop, waking the readers of each turn."""

    def __init__(self, feed: PostgresTurnFeed) -> None:
        self.feed = feed
        self.waiters: dict[str, set[asyncio.Event]] = {}
        self.task = asyncio.create_task(self._listen(), name="turn-feed-listener")

    def watch(self, turn_id: str) -> asyncio.Event:
        event = asyncio.Event()
        self.waiters.setdefault(turn_id, set()).add(event)
        return event

    def unwatch(self, turn_id: str, event: asyncio.Event) -> None:
        waiting = self.waiters.get(turn_id)
        if waiting is not None:
            waiting.discard(event)
            if not waiting:
                del self.waiters[turn_id]

    async def _listen(self) -> None:
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.feed.store.url, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {self.feed.channel}".encode())
                    self._wake_all()  # anything written while not listening is read now
                    async for note in conn.notifies():
                        for event in self.waiters.get(note.payload, ()):
                            event.set()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("turn feed: LISTEN connection lost; reconnecting", exc_info=True)
            await asyncio.sleep(self.feed.poll_seconds)

    def _wake_all(self) -> None:
        for waiting in self.waiters.values():
            for event in waiting:
                event.set()


class PostgresTurnFeed:
    """A :class:`~harnessed.turns.feed.TurnFeed` on PostgreSQL
    (``PostgresStore.turn_feed()``).

    Args:
        store: The database.
        poll_seconds: The longest a reader waits before looking again without a notification.
        keep_seconds: How long the events of an ended turn stay readable.
    """

    def __init__(
        self, store: PostgresStore, *, poll_seconds: float = 1.0, keep_seconds: float = 3600.0
    ) -> None:
        if not poll_seconds > 0:
            raise ValueError(f"PostgresTurnFeed.poll_seconds must be positive, got {poll_seconds}")
        if not keep_seconds > 0:
            raise ValueError(f"PostgresTurnFeed.keep_seconds must be positive, got {keep_seconds}")
        self.store = store
        self.poll_seconds = float(poll_seconds)
        self.keep_seconds = float(keep_seconds)
        self.channel = f"harnessed_turns_{store.schema}"
        """Channels are per database, not per schema: the schema's name keeps them apart."""
        self._listeners: dict[asyncio.AbstractEventLoop, _Listener] = {}

    def __repr__(self) -> str:
        return f"PostgresTurnFeed(schema={self.store.schema!r})"

    # ----------------------------------------------------------------- writing
    async def begin(self, key: SessionRef, turn_id: str, lease: TurnLease) -> None:
        async with self.store.connection() as conn:
            await conn.execute(
                "INSERT INTO harnessed_turn_runs (turn_id, lease, holder, agent_id, user_id,"
                f" session_id, started_at) VALUES (%s, %s, %s, %s, %s, %s, {_NOW})"
                " ON CONFLICT (turn_id) DO UPDATE SET lease = EXCLUDED.lease,"
                " holder = EXCLUDED.holder, ended_at = NULL",
                (turn_id, lease.session, lease.holder, key.agent_id, key.user_id, key.session_id),
            )

    async def write(self, turn_id: str, entries: Sequence[FeedEntry]) -> None:
        if not entries:
            return
        seqs = [e.seq for e in entries]
        kinds = [e.kind for e in entries]
        datas = [json.dumps(e.data, ensure_ascii=False, separators=(",", ":")) for e in entries]
        ended = "end" in kinds
        # one statement (atomic without a transaction that a cancelled task could leave open):
        # the rows, the end mark, and the notification, delivered when it commits
        async with self.store.connection() as conn:
            await conn.execute(
                _WRITE_ENDED if ended else _WRITE,
                {
                    "turn": turn_id,
                    "seqs": seqs,
                    "kinds": kinds,
                    "datas": datas,
                    "channel": self.channel,
                },
            )
            if ended:
                await conn.execute(
                    "DELETE FROM harnessed_turn_runs WHERE turn_id <> %s AND"
                    f" (ended_at < {_NOW} - %s OR (ended_at IS NULL AND started_at < {_NOW} - %s))",
                    (turn_id, self.keep_seconds, max(self.keep_seconds, 7 * 86_400.0)),
                )

    # ----------------------------------------------------------------- reading
    async def running(self, key: SessionRef) -> str | None:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                f"SELECT r.turn_id FROM harnessed_turn_runs r {_LIVE}"
                " WHERE r.agent_id = %s AND r.user_id = %s AND r.session_id = %s"
                " AND r.ended_at IS NULL ORDER BY r.started_at DESC LIMIT 1",
                (key.agent_id, key.user_id, key.session_id),
            )
            row = await cursor.fetchone()
        return str(row[0]) if row is not None else None

    async def running_in(self, agent: str, user_id: str) -> dict[str, str]:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                f"SELECT r.session_id, r.turn_id FROM harnessed_turn_runs r {_LIVE}"
                " WHERE r.agent_id = %s AND r.user_id = %s AND r.ended_at IS NULL"
                " ORDER BY r.started_at",
                (agent, user_id),
            )
            return {str(s): str(t) for s, t in await cursor.fetchall()}

    async def known(self, key: SessionRef, turn_id: str) -> bool:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT 1 FROM harnessed_turn_runs WHERE turn_id = %s AND agent_id = %s"
                " AND user_id = %s AND session_id = %s",
                (turn_id, key.agent_id, key.user_id, key.session_id),
            )
            return await cursor.fetchone() is not None

    async def follow(
        self, key: SessionRef, turn_id: str, idle: float | None = None
    ) -> AsyncIterator[list[FeedEntry]]:
        listener = self._listener()
        woken = listener.watch(turn_id)  # before the first read: no write is missed
        last = 0
        quiet = 0.0
        try:
            while True:
                woken.clear()
                batch = await self._read(turn_id, last)
                if batch:
                    quiet = 0.0
                    last = batch[-1].seq
                    yield batch
                    if batch[-1].kind == "end":
                        return
                    continue
                if not await self._alive(key, turn_id):
                    batch = await self._read(turn_id, last)  # it may have ended just now
                    if batch:
                        continue
                    yield [_lost(last + 1)]
                    return
                wait = self.poll_seconds if idle is None else min(self.poll_seconds, idle - quiet)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(wait, 0.0)):
                        await woken.wait()
                    quiet = 0.0
                    continue
                quiet += wait
                if idle is not None and quiet >= idle:
                    quiet = 0.0
                    yield []
        finally:
            listener.unwatch(turn_id, woken)

    async def _read(self, turn_id: str, after: int) -> list[FeedEntry]:
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                "SELECT seq, kind, data FROM harnessed_turn_events WHERE turn_id = %s"
                " AND seq > %s ORDER BY seq LIMIT %s",
                (turn_id, after, _PAGE),
            )
            rows = await cursor.fetchall()
        entries: list[FeedEntry] = []
        for seq, kind, data in rows:
            if seq != after + len(entries) + 1:
                break  # a later batch committed first: read the gap again next time
            entries.append(
                FeedEntry(int(seq), "end" if kind == "end" else "event", json.loads(data))
            )
        return entries

    async def _alive(self, key: SessionRef, turn_id: str) -> bool:
        """Whether the turn may still write: it has not ended and its lease is live."""
        async with self.store.connection() as conn:
            cursor = await conn.execute(
                f"SELECT 1 FROM harnessed_turn_runs r {_LIVE} WHERE r.turn_id = %s"
                " AND r.ended_at IS NULL",
                (turn_id,),
            )
            return await cursor.fetchone() is not None

    def _listener(self) -> _Listener:
        loop = asyncio.get_running_loop()
        listener = self._listeners.get(loop)
        if listener is None or listener.task.done():
            for ended in [other for other in self._listeners if other.is_closed()]:
                del self._listeners[ended]
            listener = self._listeners[loop] = _Listener(self)
        return listener

    async def close(self) -> None:
        """Stop listening (the listener of the running event loop)."""
        with contextlib.suppress(RuntimeError):
            listener = self._listeners.pop(asyncio.get_running_loop(), None)
            if listener is not None:
                listener.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener.task


def _lost(seq: int) -> FeedEntry:
    message = "the server running the turn stopped before it ended (resume it)"
    data: dict[str, Any] = {"status": "error", "error_type": "TurnLostError", "message": message}
    return FeedEntry(seq, "end", data)
