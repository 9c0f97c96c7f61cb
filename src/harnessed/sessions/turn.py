"""Turn: one submitted unit of work of a session, its events as they happen and its end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Literal, TypeAlias

from harnessed.events import AgentEndEvent, Event
from harnessed.messages import Msg
from harnessed.turns.control import TurnControl
from harnessed.turns.gate import TurnLease

__all__ = ["Turn", "TurnStatus"]

TurnStatus: TypeAlias = Literal[
    "queued",
    "running",
    "completed",
    "max_iters",
    "limit",
    "pending",
    "interrupted",
    "stopped",
    "error",
    "cancelled",
]


class Turn:
    """A turn handed to :meth:`AgentSession.submit` or :meth:`AgentSession.resume`.

    ``events()`` replays what the turn produced so far and then follows it live, so a reader
    that arrives late (a reconnecting web page) misses nothing; ``result()`` waits for the end.
    """

    def __init__(
        self,
        turn_id: str,
        messages: Sequence[Msg] | None,
        *,
        idempotency_key: str | None = None,
        fingerprint: str | None = None,
    ) -> None:
        self.id = turn_id
        """The run id of the turn (``run_id`` of its events and session log records)."""
        self.messages: tuple[Msg, ...] | None = tuple(messages) if messages is not None else None
        """The input (``None`` for a resumed turn)."""
        self.idempotency_key = idempotency_key
        self.fingerprint = fingerprint
        self.status: TurnStatus = "queued"
        self.end: AgentEndEvent | None = None
        self.error: BaseException | None = None
        self.control = TurnControl()
        self.lease: TurnLease | None = None
        self._events: list[Event] = []
        self._changed = asyncio.Event()
        self._done = asyncio.Event()

    def __repr__(self) -> str:
        return f"Turn({self.id!r}, status={self.status!r})"

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def published(self) -> tuple[Event, ...]:
        """The events the turn produced so far."""
        return tuple(self._events)

    @property
    def is_resume(self) -> bool:
        return self.messages is None

    # -------------------------------------------------------------- readers
    async def events(self) -> AsyncIterator[Event]:
        """Every event of the turn from its start, then live until it ends."""
        async for batch in self.batches():
            for event in batch:
                yield event

    async def batches(self, idle: float | None = None) -> AsyncIterator[list[Event]]:
        """Like :meth:`events`, in batches: everything that arrived since the last batch (a
        transport writes it at once). After ``idle`` seconds without an event an empty batch
        is yielded (a transport's cue to send a keep-alive)."""
        index = 0
        while True:
            changed = self._changed
            if index < len(self._events):
                batch = self._events[index:]
                index += len(batch)
                yield batch
                continue
            if self.done:
                return
            try:
                async with asyncio.timeout(idle):
                    await changed.wait()
            except TimeoutError:
                yield []

    async def result(self) -> AgentEndEvent:
        """Wait for the turn's end; raises the error of a failed turn."""
        await self._done.wait()
        if self.end is None:
            raise self.error or RuntimeError(f"turn {self.id} ended without a result")
        return self.end

    # -------------------------------------------------------------- writers
    def publish(self, event: Event) -> None:
        self._events.append(event)
        if isinstance(event, AgentEndEvent) and event.source is None:  # not a sub-agent's
            self.end = event
            self.status = event.status
        self._wake()

    def finish(self, error: BaseException | None = None) -> None:
        if self.done:
            return
        if error is not None:
            self.error = error
            self.status = "cancelled" if isinstance(error, asyncio.CancelledError) else "error"
        elif self.end is None:
            self.status = "error"
        self._done.set()
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
