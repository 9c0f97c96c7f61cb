"""Requests forwarded from sub-agents: a sub-agent's confirmation request or question shown in
its parent's stream (tagged with its source) and answered by the parent's ``respond``.

The sub-agent's run waits for the answer in its own broker; the parent's gate keeps, per parent
session, how to hand an answer on (:class:`ForwardedRequest`) until it is given or the
sub-agent's task ends. The request is also logged beside the parent session's log
(:class:`ForwardedLog`), so another process sharing the stores lists it and answers it there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from harnessed.log.record import NewRecord, RecordType, SessionRecord
from harnessed.log.store import SessionLogStore
from harnessed.permissions.broker import Answer, SessionId
from harnessed.runtime import SessionRef
from harnessed.state.parked import PendingConfirmation

__all__ = ["ForwardedLog", "ForwardedRequest", "ForwardedRequests", "Relay"]

Relay = Callable[[bool, str | None, Any], Awaitable[None]]
"""Answers the request in the sub-agent: ``(approved, feedback, answer)``."""


@dataclass(frozen=True, slots=True)
class ForwardedRequest:
    request: PendingConfirmation
    source: str
    """The sub-agent's path (``reviewer:1``, nested: ``reviewer:1/helper:2``)."""
    relay: Relay


class ForwardedRequests:
    """Per agent object: the requests its sub-agents are waiting on, by parent session."""

    def __init__(self) -> None:
        self._by_session: dict[SessionId, dict[str, ForwardedRequest]] = {}

    def add(self, session: SessionId, forwarded: ForwardedRequest) -> None:
        self._by_session.setdefault(session, {})[forwarded.request.request_id] = forwarded

    def get(self, session: SessionId, request_id: str) -> ForwardedRequest | None:
        return self._by_session.get(session, {}).get(request_id)

    def discard(self, session: SessionId, request_id: str) -> None:
        found = self._by_session.get(session)
        if found is not None:
            found.pop(request_id, None)
            if not found:
                del self._by_session[session]

    def waiting(self, session: SessionId) -> list[ForwardedRequest]:
        return list(self._by_session.get(session, {}).values())


# ------------------------------------------------------------ across processes
FORWARDED = "forwarded"
"""``permission/changed`` action: a sub-agent's request shown in this session."""
FORWARDED_ANSWERED = "forwarded_answered"
FORWARDED_CLOSED = "forwarded_closed"
"""The sub-agent's task ended (or stopped waiting) without an answer."""

POLL_SECONDS = 0.25
"""How often a process whose sub-agent waits looks for an answer given in another process."""

LOOK_BACK = 1000
"""How many records of the side log are read to find open requests."""

SIDE_AGENT = "{agent}#requests"
"""The agent id of the side log that holds a session's forwarded requests: a log of their own
(two small records per request) is read whole in a moment, where the session's log can be
megabytes; and no listing of the agent's sessions shows it."""


class ForwardedLog:
    """Forwarded requests in a side log of the parent session, so that any process sharing the
    stores lists and answers them: the process whose sub-agent waits logs the request
    (:meth:`announce`), another logs its answer (:meth:`answer`), and the first, which watches
    the log meanwhile (:meth:`watch`), hands the answer on to the sub-agent."""

    def __init__(self, log: SessionLogStore, session: SessionId) -> None:
        self.log = log
        agent, user, session_id = session
        self.ref = SessionRef(SIDE_AGENT.format(agent=agent), user, session_id)

    async def announce(self, forwarded: ForwardedRequest, task_id: str) -> int:
        """Log the request of the sub-agent task ``task_id``; returns its record's sequence
        number."""
        (stored,) = await self._append(
            {
                "action": FORWARDED,
                "source": forwarded.source,
                "task_id": task_id,
                **forwarded.request.to_dict(),
            }
        )
        return stored.seq

    async def answer(self, request_id: str, approved: bool, feedback: str | None) -> None:
        await self._append(
            {
                "action": FORWARDED_ANSWERED,
                "request_id": request_id,
                "approved": approved,
                "feedback": feedback,
            }
        )

    async def close(self, request_id: str) -> None:
        await self._append({"action": FORWARDED_CLOSED, "request_id": request_id})

    async def open_requests(self) -> list[PendingConfirmation]:
        """The logged requests nobody answered yet and whose sub-agent still waits."""
        return [request for request, _ in await self._open()]

    async def close_tasks(self, task_ids: set[str]) -> None:
        """Close the open requests of these tasks (their process stopped: a resumed task asks
        again)."""
        for request, task_id in await self._open():
            if task_id in task_ids:
                await self.close(request.request_id)

    async def _open(self) -> list[tuple[PendingConfirmation, str | None]]:
        records = await self.log.tail(self.ref, LOOK_BACK, types=[RecordType.PERMISSION_CHANGED])
        found: dict[str, tuple[PendingConfirmation, str | None]] = {}
        for record in records:
            action = record.payload.get("action")
            if action == FORWARDED:
                try:
                    request = PendingConfirmation.from_dict(record.payload)
                except (KeyError, TypeError, ValueError):
                    continue
                task_id = record.payload.get("task_id")
                found[request.request_id] = (request, task_id if isinstance(task_id, str) else None)
            elif action in (FORWARDED_ANSWERED, FORWARDED_CLOSED):
                found.pop(str(record.payload.get("request_id")), None)
        return list(found.values())

    async def find(self, request_id: str) -> PendingConfirmation | None:
        for request in await self.open_requests():
            if request.request_id == request_id:
                return request
        return None

    async def watch(self, request_id: str, after_seq: int) -> Answer | None:
        """Wait until the request is answered in the log (``None``: closed instead)."""
        while True:
            records = await self.log.read(
                self.ref, after_seq=after_seq, types=[RecordType.PERMISSION_CHANGED]
            )
            for record in records:
                after_seq = max(after_seq, record.seq)
                if record.payload.get("request_id") != request_id:
                    continue
                if record.payload.get("action") == FORWARDED_ANSWERED:
                    feedback = record.payload.get("feedback")
                    return Answer(
                        bool(record.payload.get("approved")),
                        feedback if isinstance(feedback, str) else None,
                    )
                if record.payload.get("action") == FORWARDED_CLOSED:
                    return None
            await asyncio.sleep(POLL_SECONDS)

    async def _append(self, payload: dict[str, Any]) -> list[SessionRecord]:
        return await self.log.append(self.ref, [NewRecord(RecordType.PERMISSION_CHANGED, payload)])
