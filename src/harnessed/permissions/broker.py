"""The in-process meeting point of a run waiting for answers and ``agent.respond``.

A run that asks registers one future per request *before* it announces the request, so an
answer given right after the announcement (even from the same task, before the stream is read
further) is never missed. ``post`` hands an answer to a waiting run at once; when no run is
waiting yet, the answer stays in a mailbox that the next run of the session reads when it
registers, while ``respond`` records it in the stored state. Either way the answer is used
exactly once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from harnessed.state.parked import PendingConfirmation

__all__ = ["Answer", "ConfirmationBroker", "ConfirmationError", "Posted", "SessionId"]

SessionId = tuple[str, str, str]
"""(agent, user, session)"""


class ConfirmationError(ValueError):
    """A confirmation answer that cannot be accepted (unknown request, or answered otherwise)."""


@dataclass(frozen=True, slots=True)
class Answer:
    approved: bool
    feedback: str | None = None


@dataclass(slots=True)
class Posted:
    """An answer handed to the broker; ``consumed`` is set once a run has taken it."""

    answer: Answer
    consumed: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True, slots=True)
class _Waiter:
    request: PendingConfirmation
    future: asyncio.Future[Answer]


class ConfirmationBroker:
    """Per agent object; safe to share across sessions running concurrently."""

    def __init__(self) -> None:
        self._waiters: dict[SessionId, dict[str, _Waiter]] = {}
        self._mailbox: dict[SessionId, dict[str, Posted]] = {}
        self._parking: dict[SessionId, set[str]] = {}
        """Requests a live run stopped waiting for and is parking (until the run ends)."""

    def open(
        self, session: SessionId, requests: list[PendingConfirmation]
    ) -> dict[str, asyncio.Future[Answer]]:
        """Register a future per request (already resolved when an answer was posted)."""
        loop = asyncio.get_running_loop()
        waiting = self._waiters.setdefault(session, {})
        mailbox = self._mailbox.get(session, {})
        futures: dict[str, asyncio.Future[Answer]] = {}
        for request in requests:
            future: asyncio.Future[Answer] = loop.create_future()
            posted = mailbox.pop(request.request_id, None)
            if posted is not None:
                future.set_result(posted.answer)
                posted.consumed.set()
            waiting[request.request_id] = _Waiter(request, future)
            futures[request.request_id] = future
        if not mailbox:
            self._mailbox.pop(session, None)
        return futures

    def close(self, session: SessionId, request_ids: list[str]) -> None:
        """Forget the futures of these requests (cancelling any that are still open)."""
        waiting = self._waiters.get(session)
        if waiting is None:
            return
        for request_id in request_ids:
            waiter = waiting.pop(request_id, None)
            if waiter is not None and not waiter.future.done():
                waiter.future.cancel()
                self._parking.setdefault(session, set()).add(request_id)
        if not waiting:
            del self._waiters[session]

    def parking(self, session: SessionId) -> frozenset[str]:
        """Requests the session's running call gave up waiting for (being parked)."""
        return frozenset(self._parking.get(session, ()))

    def run_ended(self, session: SessionId) -> None:
        """The session's call ended: its parked requests are now answered through the state."""
        self._parking.pop(session, None)

    def waiting(self, session: SessionId) -> list[PendingConfirmation]:
        """The requests a live run of the session is waiting for."""
        return [w.request for w in self._waiters.get(session, {}).values() if not w.future.done()]

    def post(self, session: SessionId, request_id: str, answer: Answer) -> Posted:
        """Deliver an answer to the waiting run, or leave it in the mailbox.

        Raises :class:`ConfirmationError` when the waiting run already got another answer;
        the same answer again is accepted (a retried request).
        """
        posted = Posted(answer)
        waiter = self._waiters.get(session, {}).get(request_id)
        future = waiter.future if waiter is not None else None
        if future is not None and future.done() and not future.cancelled():
            if future.result().approved != answer.approved:
                raise ConfirmationError(
                    f"confirmation request {request_id!r} was already answered "
                    f"({'approved' if future.result().approved else 'declined'})"
                )
            posted.consumed.set()
        elif future is not None and not future.done():
            future.set_result(answer)
            posted.consumed.set()
        else:
            self._mailbox.setdefault(session, {})[request_id] = posted
        return posted

    def withdraw(self, session: SessionId, request_id: str, posted: Posted) -> None:
        """Remove a posted answer from the mailbox if it is still there."""
        mailbox = self._mailbox.get(session)
        if mailbox is not None and mailbox.get(request_id) is posted:
            del mailbox[request_id]
            if not mailbox:
                del self._mailbox[session]
