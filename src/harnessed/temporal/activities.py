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
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from harnessed.messages import Msg, new_id
from harnessed.models.errors import ContextOverflowError
from harnessed.runtime import SessionRef
from harnessed.temporal.schema import (
    FAIL,
    MODEL,
    STOP,
    TASK,
    TOOL,
    WAKEUP_DONE,
    WAKEUP_PREPARE,
    WAKEUP_START,
    WAKEUP_WOKEN,
    ModelStepInput,
    StepOutcome,
    StopInput,
    TaskInput,
    ToolInput,
    TurnInput,
    TurnResult,
    WakeupDue,
    WakeupFiring,
    WakeupStart,
    WakeupWoken,
)
from harnessed.temporal.steps import StepRun
from harnessed.temporal.wakeups import TemporalWakeupScheduler
from harnessed.temporal.woken_hooks import OnWokenHook, call_woken_hooks
from harnessed.turns.lease import turn_lease

__all__ = ["TaskHost", "TurnActivities", "step_key"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_PERMANENT = (ValueError, TypeError, KeyError, ContextOverflowError)
"""Errors a retry cannot fix: the turn ends with the error at once."""


class TaskHost(Protocol):
    """What runs an agent's background sub-agent tasks (its sub-agents capability)."""

    async def run_task(self, user_id: str, session_id: str, data: Mapping[str, Any]) -> Any:
        """Run the task to its end (or find how it ended); its outcome (with ``status``)."""
        ...

    async def deliver_task(
        self, user_id: str, session_id: str, data: Mapping[str, Any], outcome: Any
    ) -> bool:
        """Save the outcome in the parent session's records (once)."""
        ...


def task_host(agent: Any) -> TaskHost | None:
    """The capability of ``agent`` that runs its background tasks, if it has one."""
    for capability in agent.capabilities:
        if callable(getattr(capability, "run_task", None)) and callable(
            getattr(capability, "deliver_task", None)
        ):
            found: TaskHost = capability
            return found
    return None


def step_key(agent: str, user_id: str, session_id: str) -> str:
    """The turn-gate key of a session's steps on the Temporal runtime (one at a time)."""
    return SessionRef(agent, user_id, session_id).token + "/temporal-step"


class TurnActivities:
    """The activities for the agents of one worker (by agent name)."""

    def __init__(
        self,
        agents: Mapping[str, Any],
        *,
        max_per_user: int | None = None,
        on_woken: OnWokenHook | None = None,
    ) -> None:
        if max_per_user is not None and max_per_user < 1:
            raise ValueError("TurnActivities max_per_user must be at least 1")
        self.agents = dict(agents)
        self.max_per_user = max_per_user
        self.on_woken = on_woken
        """A hook of this worker for every agent's woken turns, besides each agent's own."""
        self._users: dict[str, tuple[asyncio.Semaphore, int]] = {}

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.model,
            self.tool,
            self.stop,
            self.fail,
            self.task,
            self.wakeup_prepare,
            self.wakeup_start,
            self.wakeup_done,
            self.wakeup_woken,
        ]

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

    @activity.defn(name=TASK)
    async def task(self, task: TaskInput) -> str:
        """A background sub-agent task: run to its end (a retry continues it from the
        sub-agent's log), then its outcome saved in the parent's records between the parent's
        steps. Returns the task's end status."""
        agent = self._agent(task.agent)
        host = task_host(agent)
        if host is None:
            raise ApplicationError(
                f"agent {task.agent!r} on this worker has no sub-agents capability",
                non_retryable=True,
            )
        async with _heartbeats(), self._user_slot(task.user_id):
            outcome = await host.run_task(task.user_id, task.session_id, task.record)
            key = step_key(agent.name, task.user_id, task.session_id)
            async with turn_lease(agent.turn_gate, key, _stopper(task.session_id)):
                await host.deliver_task(task.user_id, task.session_id, task.record, outcome)
        return str(outcome.status)

    @activity.defn(name=WAKEUP_PREPARE)
    async def wakeup_prepare(self, due: WakeupDue) -> list[TurnInput]:
        """The turn a firing of a wake-up starts (none: the wake-up was cancelled); for runs
        started before :meth:`wakeup_start`."""
        return [start.turn for start in await self._wakeup_turn(due)]

    @activity.defn(name=WAKEUP_START)
    async def wakeup_start(self, due: WakeupDue) -> list[WakeupStart]:
        """The turn a firing of a wake-up starts, with the wake-up (none: it was cancelled)."""
        return await self._wakeup_turn(due)

    async def _wakeup_turn(self, due: WakeupDue) -> list[WakeupStart]:
        firing = due.firing
        host, scheduler = self._wakeups(firing.agent)
        listed = await scheduler.book.pending(firing.agent, firing.user_id, firing.session_id)
        wakeup = next((w for w in listed if w.id == firing.wakeup_id), None)
        if wakeup is None:
            return []
        if due.scheduled_at is not None:
            wakeup = dataclasses.replace(wakeup, due_at=due.scheduled_at)
        message: Msg = host.woken_message(wakeup)
        turn = TurnInput(
            agent=firing.agent,
            user_id=firing.user_id,
            session_id=firing.session_id,
            run_id=new_id("run_"),
            turn_id=message.id,
            messages=[message.to_dict()],
            options=firing.options,
        )
        return [WakeupStart(turn, wakeup.to_dict())]

    @activity.defn(name=WAKEUP_DONE)
    async def wakeup_done(self, firing: WakeupFiring) -> None:
        """After a firing started its turn: a once wake-up leaves the session's list."""
        _, scheduler = self._wakeups(firing.agent)
        listed = await scheduler.book.pending(firing.agent, firing.user_id, firing.session_id)
        wakeup = next((w for w in listed if w.id == firing.wakeup_id), None)
        if wakeup is not None and not wakeup.cron:
            await scheduler.book.cancel(
                firing.agent, firing.user_id, firing.session_id, firing.wakeup_id
            )

    @activity.defn(name=WAKEUP_WOKEN)
    async def wakeup_woken(self, woken: WakeupWoken) -> bool:
        """A woken turn ended: call the agent's ``on_woken`` hook and this worker's (once per
        firing, kept in the session log). ``False`` when a previous attempt called them."""
        host, _ = self._wakeups(woken.firing.agent)
        agent = self._agent(woken.firing.agent)
        turn = woken.turn
        key = step_key(agent.name, turn.user_id, turn.session_id)

        def lease() -> contextlib.AbstractAsyncContextManager[Any]:
            return turn_lease(agent.turn_gate, key, _stopper(turn.session_id))

        async with _heartbeats():
            return await call_woken_hooks(agent, host, woken, self.on_woken, lease)

    # ---------------------------------------------------------------- common
    def _wakeups(self, name: str) -> tuple[Any, TemporalWakeupScheduler]:
        agent = self._agent(name)
        for capability in agent.capabilities:
            store = getattr(capability, "store", None)
            if isinstance(store, TemporalWakeupScheduler):
                return capability, store
        raise ApplicationError(
            f"agent {name!r} on this worker has no wake-ups on the Temporal runtime",
            non_retryable=True,
        )

    def _agent(self, name: str) -> Any:
        agent = self.agents.get(name)
        if agent is None:
            raise ApplicationError(f"this worker does not serve agent {name!r}", non_retryable=True)
        return agent

    async def _run(self, turn: TurnInput, part: Callable[[StepRun], Awaitable[T]]) -> T:
        agent = self._agent(turn.agent)
        key = step_key(agent.name, turn.user_id, turn.session_id)
        async with (
            _heartbeats(),
            self._user_slot(turn.user_id),
            turn_lease(agent.turn_gate, key, _stopper(turn.session_id)),
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


def _stopper(session_id: str) -> Callable[[], None]:
    """What to do when another attempt took the session's step lease: stop this one (it
    writes nothing more)."""
    task = asyncio.current_task()
    assert task is not None

    def lost() -> None:
        logger.error("lost the step lease of session %r; stopping this attempt", session_id)
        task.cancel()

    return lost


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
