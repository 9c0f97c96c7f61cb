"""A turn read after its end: what a hook gets for a turn that ran somewhere else.

A :class:`~harnessed.sessions.Turn` is the live handle of a turn this process queued. A turn
that ran in other processes (on Temporal, its steps ran on the workers) is known here only
by how it ended; :class:`EndedTurn` offers the same read API (:class:`TurnView`) over that
end, so code written for a live turn — a channel's ``follow``, an ``on_woken`` hook awaiting
``turn.result()`` — reads it unchanged. Its events are its end only: the text as it streamed,
the model requests and tool calls are in the session log, not repeated here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from harnessed.events import AgentEndEvent, Event
from harnessed.messages import Msg

__all__ = ["EndedTurn", "TurnView"]


@runtime_checkable
class TurnView(Protocol):
    """What a reader of a turn uses (a live :class:`~harnessed.sessions.Turn` has it all)."""

    id: str
    end: AgentEndEvent | None
    error: BaseException | None

    @property
    def done(self) -> bool: ...

    def events(self) -> AsyncIterator[Event]: ...

    def batches(self, idle: float | None = None) -> AsyncIterator[list[Event]]: ...

    async def result(self) -> AgentEndEvent: ...


class EndedTurn:
    """A turn that has ended: its end event, or the error it failed with.

    Args:
        turn_id: The run id of the turn (``run_id`` of its session log records).
        end: How it ended (``None`` when it failed without an end).
        error: Why it failed (with ``end=None``).
        messages: Its input messages.
    """

    def __init__(
        self,
        turn_id: str,
        end: AgentEndEvent | None,
        *,
        error: BaseException | None = None,
        messages: Sequence[Msg] = (),
    ) -> None:
        if not isinstance(turn_id, str) or not turn_id:
            raise ValueError("EndedTurn needs the turn's id")
        if (end is None) == (error is None):
            raise ValueError("EndedTurn needs either its end or its error")
        self.id = turn_id
        self.end = end
        self.error = error
        self.messages: tuple[Msg, ...] = tuple(messages)
        self.status: str = end.status if end is not None else "error"

    def __repr__(self) -> str:
        return f"EndedTurn({self.id!r}, status={self.status!r})"

    @property
    def done(self) -> bool:
        return True

    @property
    def published(self) -> tuple[Event, ...]:
        return (self.end,) if self.end is not None else ()

    async def events(self) -> AsyncIterator[Event]:
        for event in self.published:
            yield event

    async def batches(self, idle: float | None = None) -> AsyncIterator[list[Event]]:
        if self.end is not None:
            yield [self.end]

    async def result(self) -> AgentEndEvent:
        """The end; raises the error of a failed turn (as ``Turn.result`` does)."""
        if self.end is None:
            assert self.error is not None
            raise self.error
        return self.end
