"""Requests forwarded from sub-agents: a sub-agent's confirmation request or question shown in
its parent's stream (tagged with its source) and answered by the parent's ``respond``.

The sub-agent's run waits for the answer in its own broker; the parent's gate keeps, per parent
session, how to hand an answer on (:class:`ForwardedRequest`) until it is given or the
sub-agent's task ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from harnessed.permissions.broker import SessionId
from harnessed.state.parked import PendingConfirmation

__all__ = ["ForwardedRequest", "ForwardedRequests", "Relay"]

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
