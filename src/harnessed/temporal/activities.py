"""The activities of a turn, run by workers on the agents they serve.

Each activity heartbeats while it works, so a worker that dies (``kill -9``, a lost machine)
is noticed after the heartbeat timeout and the activity is retried on another worker; the
parts of :mod:`harnessed.temporal.steps` make every retry safe. Each part holds a lease on
its session's steps (the agent's turn gate, under a key of its own), so an attempt Temporal
gave up on too early (a worker that stalled past the heartbeat timeout) and its retry never
work on the log at once: the retry waits, then finds what the first one wrote. A worker may
cap how many activities of one user run on it at once (``max_per_user``); the rest wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from harnessed.messages import Msg
from harnessed.models.errors import ContextOverflowError
from harnessed.runtime import SessionRef
from harnessed.temporal.schema import (
    FAIL,
    MODEL,
    STOP,
    TOOL,
    ModelStepInput,
    StepOutcome,
    StopInput,
    ToolInput,
    TurnInput,
    TurnResult,
)
from harnessed.temporal.steps import StepRun
from harnessed.turns.lease import turn_lease

__all__ = ["TurnActivities"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_PERMANENT = (ValueError, TypeError, KeyError, ContextOverflowError)
"""Errors a retry cannot fix: the turn ends with the error at once."""


class TurnActivities:
    """The activities for the agents of one worker (by agent name)."""

    def __init__(self, agents: Mapping[str, Any], *, max_per_user: int | None = None) -> None:
        if max_per_user is not None and max_per_user < 1:
            raise ValueError("TurnActivities max_per_user must be at least 1")
        self.agents = dict(agents)
        self.max_per_user = max_per_user
        self._users: dict[str, tuple[asyncio.Semaphore, int]] = {}

    def all(self) -> list[Callable[..., Any]]:
        return [self.model, self.tool, self.stop, self.fail]

    @activity.defn(name=MODEL)
    async def model(self, step: ModelStepInput) -> StepOutcome:
        """A model request; the first one of a turn starts the turn (one activity less)."""
        steering = [Msg.from_dict(m) for m in step.steering]

        async def part(run: StepRun) -> StepOutcome:
            if step.iteration == 1:
                await run.begin([Msg.from_dict(m) for m in step.turn.messages])
                run = StepRun(run.agent, step.turn)
            return await run.model(step.iteration, steering)

        return await self._run(step.turn, part)

    @activity.defn(name=TOOL)
    async def tool(self, call: ToolInput) -> None:
        await self._run(call.turn, lambda run: run.tool(call.iteration, call.call_id))

    @activity.defn(name=STOP)
    async def stop(self, end: StopInput) -> TurnResult:
        """End an interrupted turn (one interrupted before its first request starts first)."""

        async def part(run: StepRun) -> TurnResult:
            if end.iteration <= 1:
                await run.begin([Msg.from_dict(m) for m in end.turn.messages])
                run = StepRun(run.agent, end.turn)
            return await run.stop(end.iteration, end.status, end.reason, None)

        return await self._run(end.turn, part)

    @activity.defn(name=FAIL)
    async def fail(self, end: StopInput) -> TurnResult:
        return await self._run(
            end.turn,
            lambda run: run.stop(end.iteration, "error", end.reason, end.error_type),
        )

    # ---------------------------------------------------------------- common
    async def _run(self, turn: TurnInput, part: Callable[[StepRun], Awaitable[T]]) -> T:
        agent = self.agents.get(turn.agent)
        if agent is None:
            raise ApplicationError(
                f"this worker does not serve agent {turn.agent!r}", non_retryable=True
            )
        task = asyncio.current_task()
        assert task is not None

        def lost() -> None:  # another attempt took the session's step: this one writes nothing
            logger.error(
                "lost the step lease of session %r; stopping this attempt", turn.session_id
            )
            task.cancel()

        key = SessionRef(agent.name, turn.user_id, turn.session_id).token + "/temporal-step"
        async with (
            _heartbeats(),
            self._user_slot(turn.user_id),
            turn_lease(agent.turn_gate, key, lost),
        ):
            try:
                return await part(StepRun(agent, turn))
            except _PERMANENT as exc:
                raise ApplicationError(
                    str(exc), type=type(exc).__name__, non_retryable=True
                ) from exc

    @contextlib.asynccontextmanager
    async def _user_slot(self, user_id: str) -> AsyncIterator[None]:
        if self.max_per_user is None:
            yield
            return
        semaphore, users = self._users.get(user_id, (None, 0))
        if semaphore is None:
            semaphore = asyncio.Semaphore(self.max_per_user)
        self._users[user_id] = (semaphore, users + 1)
        try:
            async with semaphore:
                yield
        finally:
            _, users = self._users[user_id]
            if users <= 1:
                del self._users[user_id]
            else:
                self._users[user_id] = (semaphore, users - 1)


@contextlib.asynccontextmanager
async def _heartbeats() -> AsyncIterator[None]:
    """Heartbeat a third of the heartbeat timeout apart while the activity works (a
    cancellation, such as an interrupt of the turn, reaches the activity with one)."""
    info = activity.info()
    timeout = info.heartbeat_timeout.total_seconds() if info.heartbeat_timeout else 0.0
    if timeout <= 0:
        yield
        return

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(timeout / 3)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
