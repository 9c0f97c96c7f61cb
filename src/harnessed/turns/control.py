"""TurnControl: how the outside reaches a running turn — steering messages and interrupts.

A :class:`TurnControl` is handed to one run (``agent.stream_events(..., control=...)``). The
run takes steering messages at its next reasoning step and checks for an interrupt at its safe
points: between stream chunks, while it waits for tools, approvals or request preparation, and
before each model request.
"""

from __future__ import annotations

import asyncio

from harnessed.messages import Msg

__all__ = ["TurnControl", "steering_text"]


def steering_text(text: object) -> str:
    """``text`` checked as a steering message (non-blank text)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a steering message must be non-blank text")
    return text


class TurnControl:
    """The steering inbox and the interrupt flag of one running turn."""

    def __init__(self) -> None:
        self._inbox: list[Msg] = []
        self._interrupt = asyncio.Event()
        self.reason: str | None = None

    # ------------------------------------------------------------- steering
    def steer(self, text: str, *, id: str | None = None) -> Msg:
        """Queue a user message the turn sees at its next reasoning step (``id``: the
        message's id, chosen by a sender in another process; a fresh one by default)."""
        text = steering_text(text)
        extra = {} if id is None else {"id": id}
        message = Msg.user(text, metadata={"steer": True}, **extra)
        self._inbox.append(message)
        return message

    def take_steering(self) -> list[Msg]:
        """The steering messages not yet seen by the turn (the inbox is emptied)."""
        taken, self._inbox = self._inbox, []
        return taken

    @property
    def has_steering(self) -> bool:
        return bool(self._inbox)

    # ------------------------------------------------------------ interrupt
    def interrupt(self, reason: str = "the user stopped the turn") -> None:
        """Ask the turn to stop at its next safe point (idempotent)."""
        if self.reason is None:
            self.reason = reason
        self._interrupt.set()

    @property
    def interrupted(self) -> bool:
        return self._interrupt.is_set()

    async def wait_interrupted(self) -> None:
        await self._interrupt.wait()
