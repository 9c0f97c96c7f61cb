"""Where a running sub-agent's requests go: the parent's gate (answered by the parent's
``respond`` in this process) and, for a child of a top-level call, the session's side log
(listed and answered by any process sharing the stores), watched for an answer meanwhile."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from harnessed.events import ConfirmationRequestEvent
from harnessed.permissions.answers import decode_answer, is_question
from harnessed.permissions.controls import NO_ANSWER
from harnessed.permissions.forwarded import (
    ForwardedLog,
    ForwardedRequest,
    ForwardedRequests,
    Relay,
)
from harnessed.state.parked import PendingConfirmation
from harnessed.subagents.board import Owner

__all__ = ["ForwardingRoutes"]

logger = logging.getLogger(__name__)


class ForwardingRoutes:
    """A child's forwarded requests in the parent's gate, under the parent's session, and —
    for a sub-agent of a top-level call (``log`` set) — in that session's side log, watched for an
    answer given in another process."""

    def __init__(
        self,
        forwarded: ForwardedRequests,
        owner: Owner,
        path: str,
        log: ForwardedLog | None,
        task_id: str,
    ) -> None:
        self.forwarded, self.owner, self.path, self.log = forwarded, owner, path, log
        self.task_id = task_id
        self._logged: dict[str, asyncio.Task[int | None]] = {}
        """The append of each request's record (its sequence number; ``None``: failed)."""
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._answered: set[str] = set()

    def add(self, event: ConfirmationRequestEvent, relay: Relay) -> None:
        source = self.path if event.source is None else f"{self.path}/{event.source}"
        request = PendingConfirmation(
            event.request_id, event.call, event.reason, {**event.details, "source": source}
        )
        request_id = request.request_id

        async def answered_here(approved: bool, feedback: str | None, answer: Any) -> None:
            await relay(approved, feedback, answer)  # a wrong answer raises: still open
            self._answered.add(request_id)
            self._stop(request_id)
            if await self._seq(request_id) is not None:  # other processes stop listing it
                assert self.log is not None
                await self.log.answer(request_id, approved, feedback)

        forwarded = ForwardedRequest(request, source, answered_here)
        self.forwarded.add(self.owner, forwarded)
        if self.log is not None:
            self._logged[request_id] = asyncio.ensure_future(self._announce(forwarded))
            self._watchers[request_id] = asyncio.create_task(
                self._watch(forwarded, relay), name=f"forwarded:{request_id}"
            )

    async def _announce(self, forwarded: ForwardedRequest) -> int | None:
        assert self.log is not None
        try:
            return await self.log.announce(forwarded, self.task_id)
        except Exception:
            logger.warning("cannot log request %s", forwarded.request.request_id, exc_info=True)
            return None

    async def _seq(self, request_id: str) -> int | None:
        """The sequence number of the request's record once it is written (never cancelled
        half-way: an answer or close is always logged after the request)."""
        logged = self._logged.get(request_id)
        return None if logged is None else await asyncio.shield(logged)

    async def _watch(self, forwarded: ForwardedRequest, relay: Relay) -> None:
        """Wait for an answer logged by another process and hand it on."""
        assert self.log is not None
        request = forwarded.request
        seq = await self._seq(request.request_id)
        if seq is None:
            return
        try:
            answer = await self.log.watch(request.request_id, seq)
        except Exception:
            logger.warning("cannot watch request %s", request.request_id, exc_info=True)
            return
        if answer is None or request.request_id in self._answered:
            return
        self._answered.add(request.request_id)
        self.forwarded.discard(self.owner, request.request_id)
        given = (
            decode_answer(answer.feedback or "")
            if answer.approved and is_question(request.details)
            else NO_ANSWER
        )
        try:
            await relay(answer.approved, answer.feedback, given)
        except Exception:
            logger.warning("cannot hand on the answer to %s", request.request_id, exc_info=True)

    def _stop(self, request_id: str) -> None:
        watcher = self._watchers.pop(request_id, None)
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()

    async def discard(self, request_id: str) -> None:
        self.forwarded.discard(self.owner, request_id)
        self._stop(request_id)
        seq = await self._seq(request_id)
        self._logged.pop(request_id, None)
        if seq is not None and request_id not in self._answered:
            assert self.log is not None
            try:  # the task ended without an answer: other processes stop listing it
                await self.log.close(request_id)
            except Exception:
                logger.warning("cannot log the end of request %s", request_id, exc_info=True)
        self._answered.discard(request_id)
