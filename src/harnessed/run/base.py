"""The base of a run: events, session log records, the state, and work that yields events."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from harnessed.capabilities.base import CallContext
from harnessed.capabilities.seam import USAGE_SINK
from harnessed.cost.meter import LateSink, UsageMeter
from harnessed.events import AgentEndEvent, CustomEvent, Event, ToolResultEvent
from harnessed.log.record import NewRecord, RecordType
from harnessed.log.store import SessionLogStore
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock, new_id
from harnessed.models.usage import UsageTotals
from harnessed.output.spec import OutputSpec
from harnessed.run.approvals import ConfirmationMode, RunApprovals
from harnessed.run.deps import HARNESS_RECORDS, Interrupted, LoopHost, quietly, result_msg
from harnessed.run.fair import checkpoint
from harnessed.run.inbox import EventInbox
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.turns.control import TurnControl

__all__ = ["RunBase"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class RunBase:
    """One call's run: its events, records and state, and running work while queued events
    flow (the parts of :class:`~harnessed.run.AgentRun` build on it)."""

    state: AgentState
    call: CallContext
    """The call as capabilities see it (set once the state is loaded)."""

    def __init__(
        self,
        agent: LoopHost,
        ctx: RuntimeContext,
        confirmations: ConfirmationMode = "wait",
        control: TurnControl | None = None,
        meter: UsageMeter | None = None,
        output: OutputSpec[Any] | None = None,
    ) -> None:
        self.agent = agent
        self.output = output
        """The typed final answer the call must produce (``None``: free text)."""
        self.control = control
        self.partial: Msg | None = None
        """The assistant message cut short by an interrupt (saved as it was)."""
        self.caps = agent.capabilities
        self.meter = meter or UsageMeter(parent=UsageMeter.of_parent(ctx))
        """What the call spends, and its limits (``CallContext.values[METER_KEY]`` for the
        capabilities: the sub-agents' calls count toward it)."""
        self.ctx = ctx
        self.key = SessionRef(agent.name, ctx.user_id, ctx.session)
        self.run_id = ctx.run_id or new_id("run_")
        self.turn_id = new_id("turn_")
        self.pending: EventInbox[Event] = EventInbox()
        self.records: list[NewRecord] = []
        self.run_cache: dict[str, Any] = {USAGE_SINK: self.meter.add}
        self.base: dict[str, Any] = {"run_id": self.run_id, "session_id": ctx.session}
        self.approvals: RunApprovals = agent.approvals.for_run(
            (agent.name, ctx.user_id, ctx.session),
            mode=confirmations,
            base=self.base,
            queue_event=self.pending.put_nowait,
            record=self.record,
            app_guard=agent.tool_guard,
        )
        self.ended: AgentEndEvent | None = None
        """How the run ended (set once it has: the loop stops)."""
        self.iterations = 0
        """Model requests made so far."""
        self.stream_over = False
        """``after_call`` is running: events go to the capabilities, not the ended stream."""
        self.summary_error: str | None = None
        """The last failed compaction of this run (named when overflow recovery fails)."""
        self._metered = 0
        self._work: asyncio.Future[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    # ------------------------------------------------------ events, records
    def emit(self, name: str, data: Mapping[str, Any]) -> None:
        """Queue a custom event (yielded at the next opportunity) and its log record."""
        event = CustomEvent(name=name, data=dict(data), **self.base)
        if self.stream_over:
            self.caps.observe(self.call, event)
        else:
            self.pending.put_nowait(event)
        if name == "compaction_end" and data.get("status") == "failed":
            self.summary_error = f"{data.get('error_type')}: {data.get('error')}"
        record_type = HARNESS_RECORDS.get(name)
        if record_type is not None:
            self.record(record_type, data)
        else:
            self.record("custom", {"name": name, "data": dict(data)})

    def _emit_from_anywhere(self, name: str, data: Mapping[str, Any]) -> None:
        """:meth:`emit` for tools and capabilities: sync tools run in worker threads."""
        self._on_loop(self.emit, name, data)

    def _publish(self, event: Event) -> None:
        self._on_loop(self.pending.put_nowait, event)

    def _on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def record(self, record_type: str, payload: Mapping[str, Any]) -> None:
        self.records.append(NewRecord(record_type, dict(payload), self.run_id, self.turn_id))
        if record_type == RecordType.RUN_END:  # it holds the spending so far: what comes
            self.meter.close(_late_usage(self.agent.session_store, self.key, self.run_id))

    def record_messages(self, *messages: Msg) -> None:
        for message in messages:
            self.records.append(
                NewRecord.message(message, run_id=self.run_id, turn_id=self.turn_id)
            )

    async def flush(self) -> None:
        """Write the queued records to the session log."""
        if self.records:
            batch, self.records = self.records, []
            await self.agent.conversation.append(self.key, batch)

    def _drain(self) -> list[Event]:
        events: list[Event] = []
        while not self.pending.empty():
            events.append(self.pending.get_nowait())
        return events

    # ------------------------------------ state: the only place it is loaded and saved
    async def _load_state(self) -> AgentState:
        """The session's state at the start of the call (a fresh one for a new session): its
        history is the session log's, settled (tool calls a stopped process left unanswered
        get their "interrupted" result)."""
        key = SessionRef(self.agent.name, self.ctx.user_id, self.ctx.session)
        return await self.agent.conversation.load(key, settle=True)

    async def _commit_step(self) -> None:
        """A step is complete: append its records to the session log (with a checkpoint if
        the working history was replaced), then save the state if its structured parts
        changed."""
        batch, self.records = self.records, []
        await self.agent.conversation.commit(self.state, batch)

    def _add_messages(self, messages: Sequence[Msg]) -> None:
        self.record_messages(*messages)
        self.state.append(*messages)

    async def _pump(self, work: Awaitable[T], out: list[T]) -> AsyncIterator[Event]:
        """Run ``work``, yielding queued events while it runs; its result goes to ``out``.

        An interrupt (``control``) cancels ``work`` and raises :class:`Interrupted`.
        """
        task = self._work = asyncio.ensure_future(_in_turn(work))
        stop = (
            asyncio.ensure_future(self.control.wait_interrupted())
            if self.control is not None
            else None
        )
        pending = self.pending
        task.add_done_callback(pending.wake)
        if stop is not None:
            stop.add_done_callback(pending.wake)
        try:
            while True:
                while not pending.empty():
                    yield pending.get_nowait()
                if task.done():
                    break
                if stop is not None and stop.done():
                    task.cancel()
                    await quietly(task)
                    raise Interrupted
                await pending.wait()
            out.append(task.result())
        finally:
            task.remove_done_callback(pending.wake)
            if self._work is task:  # the task's context refers back to this run
                self._work = None
            if stop is not None:
                stop.cancel()
            if not task.done():
                task.cancel()
                await quietly(task)

    def _interrupted_result(self, call: ToolUseBlock) -> ToolResultBlock:
        result = ToolResultBlock(
            call.id,
            "Interrupted: the user stopped the turn before this call finished, so it did not "
            "run or ran only in part. Check its effects before relying on them.",
            is_error=True,
            name=call.name,
        )
        self.pending.put_nowait(ToolResultEvent(result=result, duration_ms=0.0, **self.base))
        self.record(
            RecordType.TOOL_EXECUTION,
            {"call_id": call.id, "tool": call.name, "is_error": True, "interrupted": True},
        )
        return result

    def _append_interrupted(
        self, message: Msg, calls: list[ToolUseBlock], *, logged: bool = False
    ) -> None:
        """Add ``message`` (to the log too unless ``logged``) to the history with an
        interrupted result for each of ``calls``."""
        tool_messages = [result_msg(self._interrupted_result(c)) for c in calls]
        self.record_messages(*(tool_messages if logged else [message, *tool_messages]))
        self.state.append(message, *tool_messages)


async def _in_turn(work: Awaitable[T]) -> T:
    """``work`` once the loop's checkpoint lets it go (see :mod:`harnessed.run.fair`)."""
    try:
        await checkpoint()
    except BaseException:
        if inspect.iscoroutine(work):
            work.close()  # never started: no "never awaited" warning
        raise
    return await work


def _late_usage(store: SessionLogStore, key: SessionRef, run_id: str) -> LateSink:
    """Writes spending after the call's end as a ``usage`` record of the session."""

    async def write(late: UsageTotals) -> None:
        await store.append(key, [NewRecord(RecordType.USAGE, {"usage": late.to_dict()}, run_id)])

    return write
