"""TemporalRuntime: an agent's turns run as Temporal workflows on workers.

The application keeps calling the agent as before (``call``, ``stream_events``, an
:class:`~harnessed.AgentSession`, the gateway); with ``runtime=TemporalRuntime(...)`` the call
starts the session's turn workflow and follows it. Events are read back from the session log
(messages, tool results and custom events as they are written; text deltas are not streamed),
and the call ends with the workflow's result. The turn does not depend on the caller: if the
calling process goes away, the turn still completes and its records are in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    ModelCallEndEvent,
    ToolResultEvent,
)
from harnessed.log.record import RecordType, SessionRecord
from harnessed.log.store import SessionLogStore
from harnessed.messages import Msg, ToolResultBlock, new_id
from harnessed.run.deps import HARNESS_RECORDS
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.temporal.schema import (
    INTERRUPT,
    STEER,
    TASK_WORKFLOW,
    WORKFLOW,
    ActivityOptions,
    TaskInput,
    TurnInput,
    TurnResult,
)
from harnessed.temporal.steps import TOOL_START
from harnessed.temporal.tasks import task_workflow_id
from harnessed.turns.control import TurnControl
from harnessed.turns.gate import SessionBusyError

__all__ = ["TemporalRuntime", "TemporalUnavailableError", "TurnFailedError", "workflow_id"]

_RECORD_EVENTS = {record_type: name for name, record_type in HARNESS_RECORDS.items()}


class TemporalUnavailableError(ConnectionError):
    """The Temporal server could not be reached (the call did not start a turn)."""


class TurnFailedError(RuntimeError):
    """The turn's workflow ended with an error (recorded in the session log)."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type


def workflow_id(agent: str, user_id: str, session_id: str) -> str:
    """The id of a session's turn workflow: one turn per session at a time, cluster-wide."""
    return f"harnessed/{json.dumps([agent, user_id, session_id], ensure_ascii=True)}"


@dataclass(frozen=True)
class TemporalRuntime:
    """Run an agent's turns on Temporal workers serving ``task_queue``.

    Args:
        client: A connected ``temporalio.client.Client``, or the server's ``HOST:PORT``
            (connected on first use, so an agent module can be imported without a server).
        task_queue: The queue the workers (``harnessed worker``) listen on.
        namespace: The Temporal namespace (with an address).
        activity_options: Timeouts and retries of the turn's activities.
        poll_interval: Seconds between reads of the session log for new events; while
            nothing new comes the wait doubles, up to ``max_poll_interval``.
    """

    client: Client | str
    task_queue: str
    namespace: str = "default"
    activity_options: ActivityOptions = field(default_factory=ActivityOptions)
    poll_interval: float = 0.2
    max_poll_interval: float = 2.0
    _connected: list[Client] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.task_queue, str) or not self.task_queue:
            raise ValueError("TemporalRuntime.task_queue must be a non-empty string")
        if isinstance(self.client, str) and not self.client:
            raise ValueError("TemporalRuntime.client must be a Client or 'HOST:PORT'")
        if not self.poll_interval > 0:
            raise ValueError("TemporalRuntime.poll_interval must be positive")
        if self.max_poll_interval < self.poll_interval:
            raise ValueError("TemporalRuntime.max_poll_interval must be at least poll_interval")

    async def connect(self) -> Client:
        """The client (connecting once when given an address)."""
        if not isinstance(self.client, str):
            return self.client
        if not self._connected:
            try:
                client = await Client.connect(self.client, namespace=self.namespace)
            except (RuntimeError, RPCError) as exc:
                raise TemporalUnavailableError(
                    f"cannot reach the Temporal server at {self.client}: {exc}"
                ) from exc
            if not self._connected:
                self._connected.append(client)
        return self._connected[0]

    def handle(self, agent: str, ctx: RuntimeContext, client: Client) -> WorkflowHandle[Any, Any]:
        ctx = ctx.resolved(agent)
        return client.get_workflow_handle(workflow_id(agent, ctx.user_id, ctx.session))

    async def interrupt(
        self, agent: str, ctx: RuntimeContext, reason: str = "the user stopped the turn"
    ) -> None:
        """Ask the session's running turn to stop (its running activity is cancelled)."""
        await self.handle(agent, ctx, await self.connect()).signal(INTERRUPT, reason)

    async def steer(self, agent: str, ctx: RuntimeContext, text: str) -> Msg:
        """Add a user message the running turn sees at its next model request."""
        message = Msg.user(text, metadata={"steer": True})
        handle = self.handle(agent, ctx, await self.connect())
        await handle.signal(STEER, [message.to_dict()])
        return message

    # ------------------------------------------------------------ wake-ups
    def wakeup_scheduler(self, book: Any, config: Any) -> Any:
        """What the wake-ups capability keeps its wake-ups with on this runtime: listed in
        ``book`` (its store), fired by Temporal (see :mod:`harnessed.temporal.wakeups`)."""
        from harnessed.temporal.wakeups import TemporalWakeupScheduler

        return TemporalWakeupScheduler(self, book, getattr(config, "timezone", "UTC"))

    # ------------------------------------------------------------ background tasks
    async def start_task(
        self, agent: str, user_id: str, session_id: str, record: Mapping[str, Any]
    ) -> None:
        """Start the workflow of a background sub-agent task of a parent session (once: a
        task whose workflow runs or ran is left alone). Called by the sub-agents capability
        when a turn spawns a task in the background, and by every later turn of the session
        for its unfinished tasks."""
        task_id = str(record["task_id"])
        # on a worker, the worker's own client; elsewhere this runtime's
        client = activity.client() if activity.in_activity() else await self.connect()
        try:
            await client.start_workflow(
                TASK_WORKFLOW,
                TaskInput(agent, user_id, session_id, dict(record), self.activity_options),
                id=task_workflow_id(agent, user_id, session_id, task_id),
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
        except WorkflowAlreadyStartedError:
            return  # it ran already
        except RPCError as exc:
            raise TemporalUnavailableError(f"cannot start task {task_id}: {exc}") from exc

    async def cancel_task(self, agent: str, user_id: str, session_id: str, task_id: str) -> None:
        """Cancel a background task's workflow: its running attempt is cancelled at its next
        heartbeat (the sub-agent's log keeps what it did). Nothing happens when it ended."""
        client = activity.client() if activity.in_activity() else await self.connect()
        handle = client.get_workflow_handle(task_workflow_id(agent, user_id, session_id, task_id))
        try:
            await handle.cancel()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise TemporalUnavailableError(f"cannot cancel task {task_id}: {exc}") from exc

    # ------------------------------------------------------------ the turn
    async def stream(
        self,
        agent: Any,
        messages: list[Msg],
        ctx: RuntimeContext,
        control: TurnControl | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Start the turn's workflow and yield its events until it ends."""
        ctx = ctx.resolved(agent.name)
        assert ctx.run_id is not None
        key = SessionRef(agent.name, ctx.user_id, ctx.session)
        store = agent.session_store
        handle, seen = await self._start_turn(agent.name, store, key, messages, ctx)
        base: dict[str, Any] = {"run_id": ctx.run_id, "session_id": ctx.session}
        yield AgentStartEvent(
            agent=agent.name,
            user_id=ctx.user_id,
            input=messages[-1] if messages else None,
            **base,
        )
        result = asyncio.ensure_future(handle.result())
        stop = asyncio.ensure_future(control.wait_interrupted()) if control is not None else None
        sent_interrupt = False
        wait = self.poll_interval
        try:
            while True:
                waits = {result} if stop is None or sent_interrupt else {result, stop}
                await asyncio.wait(waits, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                done = result.done()
                wait = min(wait * 2, self.max_poll_interval)
                if control is not None:
                    sent_interrupt = await _signal_control(handle, control, sent_interrupt)
                records = await store.read(key, after_seq=seen)
                if records:
                    wait = self.poll_interval
                for record in records:
                    seen = record.seq
                    if record.run_id == ctx.run_id:
                        event = _event(record, base)
                        if event is not None:
                            yield event
                if done:
                    break
        finally:
            if stop is not None:
                stop.cancel()
            if not result.done():
                result.cancel()  # the turn goes on without this caller
                with contextlib.suppress(BaseException):
                    await result
        end: TurnResult = result.result()
        if control is not None:
            _steer_next_turn(control, end)
        reply = Msg.from_dict(end.reply)
        if end.status == "error":
            error_type, text = end.error_type or "Error", end.error or ""
            yield ErrorEvent(error_type=error_type, message=text, **base)
            raise TurnFailedError(error_type, text)
        yield AgentEndEvent(
            reply=reply,
            status=end.status,  # type: ignore[arg-type]
            iterations=end.iterations,
            pending=tuple(end.pending),
            **base,
        )

    async def _start_turn(
        self,
        agent: str,
        store: SessionLogStore,
        key: SessionRef,
        messages: list[Msg],
        ctx: RuntimeContext,
    ) -> tuple[WorkflowHandle[Any, TurnResult], int]:
        """Start the session's turn workflow; returns its handle and the sequence number of
        the session's last record before the turn (its events are the records after it)."""
        assert ctx.run_id is not None
        extras = dict(ctx.extras)
        try:
            json.dumps(extras)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"RuntimeContext.extras must be JSON values on the Temporal runtime: {exc}"
            ) from None
        client = await self.connect()
        last = await store.tail(key, 1)
        seen: int = last[-1].seq if last else 0
        turn = TurnInput(
            agent=agent,
            user_id=ctx.user_id,
            session_id=ctx.session,
            run_id=ctx.run_id,
            turn_id=messages[0].id if messages else new_id("turn_"),
            messages=[m.to_dict() for m in messages],
            extras=extras,
            options=self.activity_options,
        )
        try:
            handle = await client.start_workflow(
                WORKFLOW,
                turn,
                id=workflow_id(agent, ctx.user_id, ctx.session),
                task_queue=self.task_queue,
                result_type=TurnResult,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
        except WorkflowAlreadyStartedError:
            raise SessionBusyError(
                f"a turn of session {ctx.session!r} of user {ctx.user_id!r} is running"
            ) from None
        except RPCError as exc:
            raise TemporalUnavailableError(f"cannot start the turn: {exc}") from exc
        return handle, seen


async def _signal_control(
    handle: WorkflowHandle[Any, TurnResult], control: TurnControl, sent_interrupt: bool
) -> bool:
    """Pass the caller's interrupt (once) and steering messages on to the turn's workflow;
    returns whether the interrupt has been sent."""
    if control.interrupted and not sent_interrupt:
        sent_interrupt = True
        await handle.signal(INTERRUPT, control.reason)
    if control.has_steering and not sent_interrupt:
        steering = control.take_steering()
        await handle.signal(STEER, [m.to_dict() for m in steering])
    return sent_interrupt


def _steer_next_turn(control: TurnControl, end: TurnResult) -> None:
    """Steering that came too late for the turn is kept for the session's next turn."""
    for late in end.unused_steering:
        kept = Msg.from_dict(late)
        control.steer(kept.text, id=kept.id)


def _event(record: SessionRecord, base: Mapping[str, Any]) -> Event | None:
    """The event a session log record of the turn stands for (``None``: none)."""
    if record.type == RecordType.MESSAGE:
        message = record.message
        assert message is not None
        if message.role == "assistant":
            return ModelCallEndEvent(
                model_call_id=str(message.metadata.get("model_call_id", "")),
                message=message,
                usage=None,
                stop_reason=None,
                **base,
            )
        if message.role == "tool":
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    return ToolResultEvent(result=block, duration_ms=0.0, **base)
        return None
    if record.type == "custom":
        name = str(record.payload.get("name", ""))
        if name == TOOL_START:
            return None
        return CustomEvent(name=name, data=dict(record.payload.get("data") or {}), **base)
    harness = _RECORD_EVENTS.get(record.type)
    if harness is not None:
        return CustomEvent(name=harness, data=dict(record.payload), **base)
    return None
