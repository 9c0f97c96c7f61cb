"""AgentRun: one call of one session — the ReAct loop and the events and records it produces.

Per step: the capabilities' safe point → prepare the request (the context compiler) → stream
the model → review and run the requested tools → append the assistant message and its results
to the working history → write the step to the session log → save the state (the full order
of capability hooks is in :mod:`harnessed.capabilities.base`). A step is all or nothing: a
failure never leaves a tool call without its result in the saved state. The session log gets
every message in full (before any eviction or pruning), every tool execution, every context
build and custom event, the run's start and end, and errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    Sequence,
)
from typing import Any, Protocol, TypeVar

from harnessed.capabilities.base import CallContext, CallEnd, ModelCall
from harnessed.capabilities.registry import CapabilitySet
from harnessed.compaction.config import CompactionConfig
from harnessed.compaction.recovery import overflow_not_recovered
from harnessed.context.seam import PrepareInfo, RequestPreparer
from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    MaxItersEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    RunStatus,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harnessed.messages import ContentBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock, new_id
from harnessed.models.base import (
    Model,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    RetryNotice,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
)
from harnessed.models.errors import ContextOverflowError, ModelError
from harnessed.permissions.flow import (
    ApprovalFlow,
    ConfirmationMode,
    StepDecision,
    pending_reply,
)
from harnessed.permissions.gate import ApprovalGate
from harnessed.permissions.pending import ParkedStep
from harnessed.runtime import RuntimeContext
from harnessed.session.record import NewRecord, RecordType, SessionKey
from harnessed.session.store import SessionLogStore
from harnessed.sessions.control import TurnControl
from harnessed.state.agent_state import AgentState, StateKey
from harnessed.state.conversation import ConversationStore
from harnessed.state.store import AgentStateStore
from harnessed.tools.base import Tool
from harnessed.tools.context import ToolContext
from harnessed.tools.toolkit import ToolGuard, Toolkit
from harnessed.workspace.layout import Workspace

__all__ = ["AgentRun", "LoopHost"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Custom events the harness itself emits, and the session log record type of each.
_HARNESS_RECORDS = {
    "context_build": RecordType.CONTEXT_BUILD,
    "compaction_start": RecordType.COMPACTION_START,
    "compaction_end": RecordType.COMPACTION_END,
    "task_changed": RecordType.TASK_CHANGED,
    "plan_changed": RecordType.PLAN_CHANGED,
    "permission_changed": RecordType.PERMISSION_CHANGED,
    "memory_flush": RecordType.MEMORY_FLUSH,
}


class LoopHost(Protocol):
    """What the loop needs of its agent (:class:`~harnessed.HarnessAgent` is one)."""

    name: str
    model: Model
    max_iters: int
    compaction: CompactionConfig | None
    tool_guard: ToolGuard | None
    toolkit: Toolkit
    workspace: Workspace | None
    state_store: AgentStateStore
    conversation: ConversationStore
    capabilities: CapabilitySet
    prepare: RequestPreparer

    @property
    def session_store(self) -> SessionLogStore: ...

    @property
    def approval_gate(self) -> ApprovalGate: ...

    def draft_request(self, state: AgentState, model_call_id: str) -> ModelRequest: ...


class _Interrupted(Exception):
    """Raised inside a run when its :class:`TurnControl` asked it to stop (at a safe point)."""


class AgentRun:
    """Executes one call. Created by :meth:`HarnessAgent.stream_events` under the session lock."""

    state: AgentState
    call: CallContext
    """The call as capabilities see it (set once the state is loaded)."""

    def __init__(
        self,
        agent: LoopHost,
        ctx: RuntimeContext,
        confirmations: ConfirmationMode = "wait",
        control: TurnControl | None = None,
    ) -> None:
        self.agent = agent
        self.control = control
        self.partial: Msg | None = None
        """The assistant message cut short by an interrupt (saved as it was)."""
        self.caps = agent.capabilities
        self.ctx = ctx
        self.key = SessionKey(agent.name, ctx.user_id, ctx.session)
        self.run_id = ctx.run_id or new_id("run_")
        self.turn_id = new_id("turn_")
        self.pending: asyncio.Queue[Event] = asyncio.Queue()
        self.records: list[NewRecord] = []
        self.run_cache: dict[str, Any] = {}
        self.base: dict[str, Any] = {"run_id": self.run_id, "session_id": ctx.session}
        self.approvals = ApprovalFlow(
            agent.approval_gate,
            (agent.name, ctx.user_id, ctx.session),
            mode=confirmations,
            base=self.base,
            queue_event=self.pending.put_nowait,
            record=self.record,
            app_guard=agent.tool_guard,
        )
        self.ended: AgentEndEvent | None = None
        self.stream_over = False
        """``after_call`` is running: events go to the capabilities, not the ended stream."""
        self.summary_error: str | None = None
        """The last failed compaction of this run (named when overflow recovery fails)."""
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
        record_type = _HARNESS_RECORDS.get(name)
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
        key = StateKey(self.agent.name, self.ctx.user_id, self.ctx.session)
        return await self.agent.conversation.load(key, settle=True)

    async def _commit_step(self) -> None:
        """A step is complete: append its records to the session log (with a checkpoint if
        the working history was replaced), then save the state if its structured parts
        changed."""
        batch, self.records = self.records, []
        await self.agent.conversation.commit(self.state, batch)

    # ----------------------------------------------------------------- loop
    async def execute(self, messages: list[Msg]) -> AsyncGenerator[Event, None]:
        """Run the call; capabilities observe its events and hear how it ended."""
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        self.state = await self._load_state()
        self.call = CallContext(
            agent_name=self.agent.name,
            runtime=self.ctx,
            run_id=self.run_id,
            state=self.state,
            emit=self._emit_from_anywhere,
            record=self.record,
            publish=self._publish,
            add_messages=self._add_messages,
        )
        caps = self.caps
        if not (caps.on_event or caps.after_call):
            async with contextlib.aclosing(self._execute(messages)) as events:
                async for event in events:
                    yield event
            return
        end = CallEnd("closed")
        try:
            async with contextlib.aclosing(self._execute(messages)) as events:
                async for event in events:
                    if caps.on_event:
                        caps.observe(self.call, event)
                    if isinstance(event, AgentEndEvent) and event.source is None:
                        end = CallEnd(event.status, event.reply, event.iterations)
                    yield event
        except GeneratorExit:
            raise
        except (Exception, asyncio.CancelledError) as exc:
            cancelled = isinstance(exc, asyncio.CancelledError)
            end = CallEnd("cancelled" if cancelled else "error", error=exc)
            raise
        finally:
            if caps.after_call:
                await self._after_call(end)

    async def _after_call(self, end: CallEnd) -> None:
        """Capabilities hear how the call ended. The stream has ended: what they emit now
        (a sandbox snapshot) is observed by the capabilities at once and written to the log."""
        self.stream_over = True
        logged = len(self.records)  # an unfinished step's records stay out of the log
        await self.caps.run_after_call(self.call, end)
        batch = self.records[logged:]
        del self.records[logged:]
        if batch:
            try:
                await asyncio.shield(self.agent.conversation.append(self.key, batch))
            except Exception:
                logger.exception("could not log what ended run %s", self.run_id)

    def _add_messages(self, messages: Sequence[Msg]) -> None:
        self.record_messages(*messages)
        self.state.append(*messages)

    async def _safe_point(self) -> AsyncIterator[Event]:
        """Before a model request: capabilities may add messages or ask the call to stop."""
        if self.caps.before_model_request:
            await self.caps.run_before_model_request(self.call)
            for event in self._drain():
                yield event

    async def _execute(self, messages: list[Msg]) -> AsyncGenerator[Event, None]:
        agent, state = self.agent, self.state
        if messages:
            self.turn_id = messages[0].id
        yield AgentStartEvent(
            agent=agent.name,
            user_id=self.ctx.user_id,
            input=messages[-1] if messages else None,
            **self.base,
        )
        iterations = 0
        try:
            self.record(RecordType.RUN_START, {"agent": agent.name, "user_id": self.ctx.user_id})
            parked = self.approvals.parked(state)
            if parked is not None and messages:  # new input closes the step left waiting
                closing = self.approvals.close_parked(state, parked)
                self.record_messages(*closing)
                state.append(parked.message, *closing)
                parked = None
                # Settle the closed step at once: if this call fails later, a resumed call
                # must not find the cancelled step still waiting (and run what was approved).
                await self._commit_step()
            if not messages and parked is None and not state.history:
                raise ValueError(
                    f"nothing to continue: session {self.ctx.session!r} has no history yet; "
                    "pass the user's input"
                )
            self.record_messages(*messages)
            await self.flush()
            state.append(*messages)
            if self.caps.before_call:
                await self.caps.run_before_call(self.call)
            if parked is not None:  # no input: continue the step left waiting for answers
                async for resumed in self._act(parked.message, iterations, parked):
                    yield resumed
                if self.ended is not None:
                    return
            while True:
                if self.control is not None:  # the session's safe point: steer or interrupt
                    if self.control.interrupted:
                        raise _Interrupted
                    for steered in await self._take_steering():
                        yield steered
                async for point_event in self._safe_point():
                    yield point_event
                if self.call.stop_reason is not None:
                    reply = Msg.assistant(
                        f"I stopped before finishing: {self.call.stop_reason}",
                        metadata={"harness": "stopped", "reason": self.call.stop_reason},
                    )
                    yield await self._finish(reply, "stopped", iterations)
                    return
                if iterations >= agent.max_iters:
                    yield MaxItersEvent(max_iters=agent.max_iters, **self.base)
                    reply = Msg.assistant(
                        f"I stopped after {agent.max_iters} model requests, the limit for one "
                        "call (max_iters), before finishing the task. Call again to continue.",
                        metadata={"harness": "max_iters"},
                    )
                    yield await self._finish(reply, "max_iters", iterations)
                    return
                iterations += 1
                response: ModelResponse | None = None
                async for event in self._model_step(iterations):
                    if isinstance(event, ModelResponse):
                        response = event
                    else:
                        yield event
                assert response is not None
                message = response.message
                calls = message.tool_uses
                if not calls:
                    if self.control is not None and self.control.has_steering:
                        # steering arrived while the model answered: it gets one more step
                        self.record_messages(message)
                        state.append(message)
                        await self._commit_step()
                        continue
                    yield await self._finish(message, "completed", iterations)
                    return
                self.record_messages(message)
                await self.flush()  # logged before its tools run: a crash leaves it answerable
                async for event in self._act(message, iterations):
                    yield event
                if self.ended is not None:
                    return
        except _Interrupted:
            for event in self._drain():
                yield event
            yield await self._stop(iterations)
        except GeneratorExit:
            await self._abandon(closed=True)
            raise
        except (Exception, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError):
                await self._abandon(closed=False)
            for event in self._drain():
                yield event
            await self._record_failure(exc)
            if not isinstance(exc, asyncio.CancelledError):
                yield ErrorEvent(error_type=type(exc).__name__, message=str(exc), **self.base)
            raise
        finally:
            self.agent.approval_gate.broker.run_ended(self.approvals.session)

    async def _act(
        self, message: Msg, iterations: int, parked: ParkedStep | None = None
    ) -> AsyncIterator[Event]:
        """Approve the calls of ``message``, run them and commit the step — or park it."""
        state = self.state
        decided: list[StepDecision] = []
        try:
            async for event in self._pump(self.approvals.decide(message, state, parked), decided):
                yield event
        except _Interrupted:
            # asked and not answered: the step is parked (resume asks again); otherwise its
            # calls end as interrupted, never run
            if not self.approvals.park_aborted(state):
                self._append_interrupted(message, message.tool_uses, logged=True)
            raise
        decision = decided[0]
        if decision.parked is not None:
            state.set_permissions(decision.parked.store(state.permissions))
            ids = tuple(r.request_id for r in decision.parked.open_requests)
            self.record(
                RecordType.RUN_END,
                {"status": "pending", "iterations": iterations, "pending": list(ids)},
            )
            await self._commit_step()
            self.ended = AgentEndEvent(
                reply=pending_reply(decision.parked),
                status="pending",
                iterations=iterations,
                pending=ids,
                **self.base,
            )
            yield self.ended
            return
        results: list[ToolResultBlock] = []
        stopped = False
        try:
            async for event in self._tool_step(message.tool_uses, results, decision.guard):
                yield event
        except _Interrupted:
            stopped = True
        tool_messages = [_result_msg(r) for r in results]
        self.record_messages(*tool_messages)
        state.append(message, *tool_messages)
        if decision.resumed:
            state.set_permissions(ParkedStep.clear(state.permissions))
        await self._commit_step()
        if stopped:
            raise _Interrupted

    # ------------------------------------------------- steering and interrupts
    async def _take_steering(self) -> list[Event]:
        """Add the steering messages that arrived since the last step to the history (through
        the same door as a capability's ``add_messages``), saved at once."""
        assert self.control is not None
        messages = self.control.take_steering()
        if not messages:
            return []
        self._add_messages(messages)
        await self._commit_step()
        return [
            CustomEvent(name="steer", data={"message_id": m.id, "text": m.text}, **self.base)
            for m in messages
        ]

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
        tool_messages = [_result_msg(self._interrupted_result(c)) for c in calls]
        self.record_messages(*(tool_messages if logged else [message, *tool_messages]))
        self.state.append(message, *tool_messages)

    async def _stop(self, iterations: int) -> AgentEndEvent:
        """End an interrupted run: what it did is saved; ``resume`` continues from there."""
        parked = self.approvals.parked(self.state)
        pending = tuple(r.request_id for r in parked.open_requests) if parked else ()
        reason = self.control.reason if self.control is not None else None
        if self.control is not None and parked is None:
            # steering that came too late is kept for the resumed turn, not dropped
            self._add_messages(self.control.take_steering())
        self.record(
            RecordType.RUN_END,
            {
                "status": "interrupted",
                "iterations": iterations,
                "reason": reason,
                "pending": list(pending),
            },
        )
        await self._commit_step()
        reply = self.partial or Msg.assistant(
            "The turn was interrupted before it finished; its progress is saved and it can "
            "be resumed.",
            metadata={"harness": "interrupted"},
        )
        self.ended = AgentEndEvent(
            reply=reply, status="interrupted", iterations=iterations, pending=pending, **self.base
        )
        return self.ended

    async def _pump(self, work: Awaitable[T], out: list[T]) -> AsyncIterator[Event]:
        """Run ``work``, yielding queued events while it runs; its result goes to ``out``.

        An interrupt (``control``) cancels ``work`` and raises :class:`_Interrupted`.
        """
        task = self._work = asyncio.ensure_future(work)
        stop = (
            asyncio.ensure_future(self.control.wait_interrupted())
            if self.control is not None
            else None
        )
        try:
            while not task.done():
                getter = asyncio.ensure_future(self.pending.get())
                waits: set[asyncio.Future[Any]] = {getter, task}
                if stop is not None:
                    waits.add(stop)
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
                if stop is not None and stop.done() and not task.done():
                    task.cancel()
                    await _quietly(task)
                    raise _Interrupted
            for event in self._drain():
                yield event
            out.append(task.result())
        finally:
            if stop is not None:
                stop.cancel()
            if not task.done():
                task.cancel()
                await _quietly(task)

    async def _abandon(self, closed: bool) -> None:
        """The stream was closed (``closed``) or cancelled: stop the work in progress, and if
        the user was being asked, park the step so a later call can resume it."""
        work, self._work = self._work, None
        if work is not None and not work.done():
            work.cancel()
            await _quietly(work)
        if self.approvals.park_aborted(self.state):
            if closed:  # a cancelled run records its end with the failure
                self.record(RecordType.RUN_END, {"status": "pending"})
            await asyncio.shield(self._commit_step())
        elif closed:
            # The consumer stopped reading: whatever already happened (a tool that ran, the
            # model's message) still belongs in the log, and so does the end of the run.
            self.record(RecordType.RUN_END, {"status": "closed"})
            try:
                await asyncio.shield(self.flush())
            except Exception:
                logger.exception("could not log the end of closed run %s", self.run_id)

    async def _finish(self, reply: Msg, status: RunStatus, iterations: int) -> AgentEndEvent:
        self.record_messages(reply)
        self.record(
            RecordType.RUN_END,
            {"status": status, "iterations": iterations, "reply_id": reply.id},
        )
        self.state.append(reply)
        await self._commit_step()
        return AgentEndEvent(reply=reply, status=status, iterations=iterations, **self.base)

    async def _record_failure(self, exc: BaseException) -> None:
        """Best effort: the failure is logged, but logging must not hide the original error."""
        status = "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
        self.record(RecordType.ERROR, {"error_type": type(exc).__name__, "message": str(exc)})
        self.record(RecordType.RUN_END, {"status": status})
        try:
            await asyncio.shield(self.flush())
        except Exception:
            logger.exception(
                "could not write the failure of run %s to the session log", self.run_id
            )

    async def _model_step(
        self, iteration: int, overflow: ContextOverflowError | None = None
    ) -> AsyncIterator[Event | ModelResponse]:
        agent = self.agent
        model_call_id = new_id("mc_")
        info = PrepareInfo(
            agent_name=agent.name,
            runtime=self.ctx,
            model=agent.model,
            model_call_id=model_call_id,
            iteration=iteration,
            emit=self.emit,
            run_cache=self.run_cache,
            retry=overflow is not None,
            force_compaction=overflow is not None,
        )
        revision = self.state.history_revision
        self.summary_error = None
        prepared: list[ModelRequest] = []
        async for event in self._prepare(info, prepared):
            yield event
        request = prepared[0]
        if overflow is not None and self.state.history_revision == revision:
            raise overflow_not_recovered(
                overflow, shrunk=False, summary_error=self.summary_error
            ) from overflow
        # the preparation's records go out with the step's message (one write per step part)
        yield ModelCallStartEvent(
            model_call_id=model_call_id, iteration=iteration, model=agent.model.name, **self.base
        )
        response: ModelResponse | None = None
        produced = False
        texts: list[str] = []
        ready: list[ToolUseBlock] = []
        stream = agent.model.stream(request)
        stop = (
            asyncio.ensure_future(self.control.wait_interrupted())
            if self.control is not None
            else None
        )
        try:
            while True:
                try:
                    chunk = await self._next_chunk(stream, stop)
                except _Interrupted:
                    await _close(stream)
                    self._save_partial(model_call_id, "".join(texts), ready)
                    raise
                if chunk is None:
                    break
                if isinstance(chunk, RetryNotice):  # shown and logged; nothing produced yet
                    yield self._retry_event(model_call_id, chunk)
                    continue
                produced = True
                if isinstance(chunk, TextDelta):
                    texts.append(chunk.text)
                    yield TextDeltaEvent(model_call_id=model_call_id, text=chunk.text, **self.base)
                elif isinstance(chunk, ThinkingDelta):
                    yield ThinkingDeltaEvent(
                        model_call_id=model_call_id, thinking=chunk.thinking, **self.base
                    )
                elif isinstance(chunk, ToolCallReady):
                    ready.append(chunk.call)
                    yield ToolCallEvent(model_call_id=model_call_id, call=chunk.call, **self.base)
                elif isinstance(chunk, ModelResponse):
                    response = chunk
            if response is None:
                raise ModelError(f"model {agent.model.name!r} ended its stream without a response")
            observe = getattr(agent.prepare, "after_response", None)
            if observe is not None:
                observe(info, response)
            role = response.message.role
            if role != "assistant":
                raise ModelError(f"model returned a {role!r} message, expected 'assistant'")
        except ContextOverflowError as exc:
            await self._model_done(ModelCall(model_call_id, iteration, request, error=exc))
            # Overflow recovery: prepare this step again with a forced compaction and send it
            # once more (tools are not re-run, the input is not re-added).
            if produced or agent.compaction is None:
                raise
            if overflow is not None:
                raise overflow_not_recovered(exc, shrunk=True) from exc
            self.emit("overflow_recovery", {"model_call_id": model_call_id, "error": str(exc)})
            async for retried in self._model_step(iteration, exc):
                yield retried
            return
        except (Exception, asyncio.CancelledError) as exc:
            await self._model_done(ModelCall(model_call_id, iteration, request, error=exc))
            raise
        finally:
            if stop is not None:
                stop.cancel()
        message = response.message
        message = message.replace(
            metadata={**message.metadata, "model_call_id": model_call_id, "model": agent.model.name}
        )
        response = ModelResponse(
            message=message,
            usage=response.usage,
            stop_reason=response.stop_reason,
            model=response.model,
        )
        await self._model_done(ModelCall(model_call_id, iteration, request, response))
        yield ModelCallEndEvent(
            model_call_id=model_call_id,
            message=message,
            usage=response.usage,
            stop_reason=response.stop_reason,
            **self.base,
        )
        yield response

    async def _model_done(self, model_call: ModelCall) -> None:
        """The capabilities hear how a model request went (a failing hook does not hide the
        request's own error)."""
        if not self.caps.after_model_request:
            return
        if model_call.error is None:
            await self.caps.run_after_model_request(self.call, model_call)
            return
        try:
            await self.caps.run_after_model_request(self.call, model_call)
        except Exception:
            logger.exception("after_model_request failed while reporting a failed request")

    def _retry_event(self, model_call_id: str, notice: RetryNotice) -> CustomEvent:
        data = {
            "model_call_id": model_call_id,
            "model": self.agent.model.name,
            "attempt": notice.attempt,
            "max_attempts": notice.max_attempts,
            "wait_seconds": round(notice.wait, 3),
            "status_code": notice.status_code,
            "error": notice.error,
        }
        self.record("custom", {"name": "model_retry", "data": data})
        return CustomEvent(name="model_retry", data=data, **self.base)

    async def _next_chunk(
        self, stream: AsyncIterator[ModelEvent], stop: asyncio.Future[Any] | None
    ) -> ModelEvent | None:
        """The stream's next chunk (``None`` at its end); an interrupt (``stop``) wins."""
        if stop is None:
            return await anext(stream, None)
        if stop.done():
            raise _Interrupted
        chunk = asyncio.ensure_future(anext(stream, None))
        await asyncio.wait({chunk, stop}, return_when=asyncio.FIRST_COMPLETED)
        if chunk.done():
            return chunk.result()
        chunk.cancel()
        await _quietly(chunk)
        raise _Interrupted

    def _save_partial(self, model_call_id: str, text: str, calls: list[ToolUseBlock]) -> None:
        """Keep what the model streamed before the interrupt: its text so far, and its
        complete tool calls, each with an interrupted result (they never ran)."""
        blocks: list[ContentBlock] = [TextBlock(text)] if text.strip() else []
        blocks.extend(calls)
        if not blocks:
            return
        message = Msg.assistant(
            blocks,
            metadata={
                "model_call_id": model_call_id,
                "model": self.agent.model.name,
                "interrupted": True,
            },
        )
        self.partial = message
        self._append_interrupted(message, calls)

    async def _prepare(self, info: PrepareInfo, out: list[ModelRequest]) -> AsyncIterator[Event]:
        """Prepare the request, yielding the events it emits while it runs (a summary made
        for compaction can take a while; a UI should see ``compaction_start`` meanwhile)."""
        draft = self.agent.draft_request(self.state, info.model_call_id)
        async for event in self._pump(self.agent.prepare(self.state, draft, info), out):
            yield event

    async def _tool_step(
        self, calls: list[ToolUseBlock], results: list[ToolResultBlock], guard: ToolGuard | None
    ) -> AsyncIterator[Event]:
        """Run the calls, yielding result and custom events while they run."""
        agent = self.agent

        def on_result(result: ToolResultBlock, duration_ms: float) -> None:
            self.pending.put_nowait(
                ToolResultEvent(result=result, duration_ms=round(duration_ms, 3), **self.base)
            )
            self.record(
                RecordType.TOOL_EXECUTION,
                {
                    "call_id": result.tool_use_id,
                    "tool": result.name,
                    "is_error": result.is_error,
                    "duration_ms": round(duration_ms, 3),
                    "output_chars": len(result.content),
                },
            )

        def make_context(call: ToolUseBlock) -> ToolContext:
            return ToolContext(
                agent_name=agent.name,
                runtime=self.ctx,
                state=self.state,
                call_id=call.id,
                workspace=agent.workspace,
                emit=self._emit_from_anywhere,
                call=self.call,
            )

        caps, run_call = self.caps, self.call
        if caps.before_tool_call:
            permissions = guard

            async def guarded(call: ToolUseBlock, tool: Tool, context: ToolContext) -> str | None:
                refusal = await caps.run_before_tool_call(run_call, call, tool)
                if refusal is not None or permissions is None:
                    return refusal
                return await permissions(call, tool, context)

            guard = guarded

        async def finish(call: ToolUseBlock, result: ToolResultBlock) -> ToolResultBlock:
            return await caps.run_after_tool_call(run_call, call, result)

        done: list[list[ToolResultBlock]] = []
        finished: dict[str, ToolResultBlock] = {}

        def collect(result: ToolResultBlock, duration_ms: float) -> None:
            finished[result.tool_use_id] = result
            on_result(result, duration_ms)

        step = agent.toolkit.run_step(
            calls, make_context, guard, collect, finish if caps.after_tool_call else None
        )
        try:
            async for event in self._pump(step, done):
                yield event
        except _Interrupted:
            # calls that finished keep their results; the others end as interrupted
            results.extend(finished.get(c.id) or self._interrupted_result(c) for c in calls)
            raise
        results.extend(done[0])


async def _quietly(task: Awaitable[Any]) -> None:
    with contextlib.suppress(BaseException):  # the step was cancelled on purpose
        await task


async def _close(stream: AsyncIterator[ModelEvent]) -> None:
    closer = getattr(stream, "aclose", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            await closer()


def _result_msg(result: ToolResultBlock) -> Msg:
    return Msg("tool", (result,), name=result.name)
