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
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from harnessed.capabilities.base import CallContext, CallEnd
from harnessed.cost.ledger import session_spending
from harnessed.cost.meter import METER_KEY
from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    MaxItersEvent,
    RunStatus,
    UsageLimitEvent,
)
from harnessed.log.record import RecordType
from harnessed.messages import Msg
from harnessed.models.base import ModelResponse
from harnessed.run.deps import MODE_KEY, Interrupted, quietly
from harnessed.run.fair import checkpoint
from harnessed.run.model_step import ModelSteps
from harnessed.run.output_step import OutputSteps
from harnessed.run.tool_step import ToolSteps
from harnessed.state.parked import ParkedStep
from harnessed.tool_call_ids import repair_call_ids

__all__ = ["AgentRun"]

logger = logging.getLogger(__name__)


class AgentRun(OutputSteps, ModelSteps, ToolSteps):
    """Executes one call. Created by :meth:`HarnessAgent.stream_events` under the session lock."""

    # ----------------------------------------------------------------- loop
    async def execute(self, messages: list[Msg]) -> AsyncGenerator[Event, None]:
        """Run the call; capabilities observe its events and hear how it ended."""
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        await checkpoint()
        self.state = await self._load_state()
        if self.meter.session_limits is not None:  # the session's spending so far
            self.meter.before = await session_spending(self.agent.session_store, self.key)
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
        self.call.values[METER_KEY] = self.meter
        self.call.values[MODE_KEY] = self.approvals.mode
        try:
            caps = self.caps
            if not (caps.on_event or caps.after_call):
                async with contextlib.aclosing(self._execute(messages)) as events:
                    async for event in events:
                        if not isinstance(event, AgentEndEvent):  # nothing runs after the end
                            await _turn_of(events)
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
                        if not isinstance(event, AgentEndEvent):
                            await _turn_of(events)
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
        finally:
            # the call context's hooks and the approval flow's callbacks are bound methods of
            # this run: without them the run is freed as its call ends, not at a full collection
            del self.call, self.approvals

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

    async def _safe_point(self) -> AsyncIterator[Event]:
        """Before a model request: capabilities may add messages or ask the call to stop."""
        if self.caps.before_model_request:
            await self.caps.run_before_model_request(self.call)
            for event in self._drain():
                yield event

    async def _execute(self, messages: list[Msg]) -> AsyncGenerator[Event, None]:
        """The call from start to end: :meth:`_start`, then :meth:`_step` until the run has
        ended (:attr:`ended`), or the end of an interrupted or failed run."""
        approvals = self.approvals  # the run may have let go of its flow when this ends
        if messages:
            self.turn_id = messages[0].id
        yield AgentStartEvent(
            agent=self.agent.name,
            user_id=self.ctx.user_id,
            input=messages[-1] if messages else None,
            **self.base,
        )
        try:
            parked = await self._start(messages)
            if parked is not None:  # no input: continue the step left waiting for answers
                async for resumed in self._act(parked.message, self.iterations, parked):
                    yield resumed
            while self.ended is None:
                async for event in self._step():
                    yield event
        except Interrupted:
            for event in self._drain():
                yield event
            yield await self._stop(self.iterations)
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
            approvals.run_ended()

    async def _start(self, messages: list[Msg]) -> ParkedStep | None:
        """The run's start: a step left waiting is closed by new input (or returned, to be
        resumed), the input is logged and appended, the capabilities hear the call begin."""
        agent, state = self.agent, self.state
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
        if any(m.tool_uses for m in messages):  # a history handed in: ids as a model's
            repaired = repair_call_ids(messages, taken=agent.conversation.call_ids(self.key))
            messages = repaired[0] if repaired is not None else messages
        self.record_messages(*messages)
        await self.flush()
        state.append(*messages)
        if self.caps.before_call:
            await self.caps.run_before_call(self.call)
        return parked

    async def _step(self) -> AsyncIterator[Event]:
        """One step: the safe point (steering, capabilities), the run's limits, a model
        request, then its tool calls — or the end of the run (:attr:`ended` is set)."""
        if self.control is not None:  # the session's safe point: steer or interrupt
            if self.control.interrupted:
                raise Interrupted
            for steered in await self._take_steering():
                yield steered
        async for point_event in self._safe_point():
            yield point_event
        for limit_event in await self._end_at_limit():
            yield limit_event
        if self.ended is not None:
            return
        self.iterations += 1
        response: ModelResponse | None = None
        async for event in self._model_step(self.iterations):
            if isinstance(event, ModelResponse):
                response = event
            else:
                yield event
        assert response is not None
        message = response.message
        settled = await self._settle_answer(message, response.stop_reason)
        if settled is not None:  # the run ended, or it takes another step
            for end_event in settled:
                yield end_event
            return
        self.record_messages(message)
        await self.flush()  # logged before its tools run: a crash leaves it answerable
        async for event in self._act(message, self.iterations):
            yield event

    async def _settle_answer(self, message: Msg, stop_reason: str | None) -> list[Event] | None:
        """A model answer that needs no tool step: the run's end (its event), or ``[]`` for
        another step (steering arrived, or a typed answer to retry); ``None``: run the tools."""
        if not message.tool_uses:
            if self.control is not None and self.control.has_steering:
                # steering arrived while the model answered: it gets one more step
                self.record_messages(message)
                self.state.append(message)
                await self._commit_step()
                return []
            if self.output is None:
                return [await self._end_with(message, "completed")]
        if self.output is not None:
            answered = await self._answer(message, stop_reason, self.iterations)
            if isinstance(answered, AgentEndEvent):
                self.ended = answered
                return [answered]
            if answered:
                return []
        return None

    async def _end_at_limit(self) -> list[Event]:
        """End the run before another model request when a capability asked it to stop, a
        spending limit was reached or ``max_iters`` requests were made."""
        if self.call.stop_reason is not None:
            reply = Msg.assistant(
                f"I stopped before finishing: {self.call.stop_reason}",
                metadata={"harness": "stopped", "reason": self.call.stop_reason},
            )
            return [await self._end_with(reply, "stopped")]
        hit = self.meter.reached()
        if hit is not None:
            reached = UsageLimitEvent(
                limit=hit.limit, scope=hit.scope, used=hit.used, maximum=hit.maximum, **self.base
            )
            reply = Msg.assistant(
                f"I stopped before finishing: {hit.describe()}. What was done so far is "
                "saved; raise the limit and call again to continue.",
                metadata={"harness": "limit", "limit": hit.limit, "scope": hit.scope},
            )
            return [reached, await self._end_with(reply, "limit")]
        max_iters = self.agent.max_iters
        if self.iterations >= max_iters:
            limit = MaxItersEvent(max_iters=max_iters, **self.base)
            reply = Msg.assistant(
                f"I stopped after {max_iters} model requests, the limit for one "
                "call (max_iters), before finishing the task. Call again to continue.",
                metadata={"harness": "max_iters"},
            )
            return [limit, await self._end_with(reply, "max_iters")]
        return []

    async def _end_with(self, reply: Msg, status: RunStatus) -> AgentEndEvent:
        """The run ends with ``reply`` (see :meth:`_finish`)."""
        self.ended = await self._finish(reply, status, self.iterations)
        return self.ended

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
                "usage": self.meter.tree.to_dict(),
            },
        )
        await self._commit_step()
        reply = self.partial or Msg.assistant(
            "The turn was interrupted before it finished; its progress is saved and it can "
            "be resumed.",
            metadata={"harness": "interrupted"},
        )
        self.ended = AgentEndEvent(
            reply=reply,
            status="interrupted",
            iterations=iterations,
            pending=pending,
            usage=self.meter.tree,
            turn_id=self.turn_id,
            **self.base,
        )
        return self.ended

    async def _abandon(self, closed: bool) -> None:
        """The stream was closed (``closed``) or cancelled: stop the work in progress, and if
        the user was being asked, park the step so a later call can resume it."""
        work, self._work = self._work, None
        if work is not None and not work.done():
            work.cancel()
            await quietly(work)
        if self.approvals.park_aborted(self.state):
            if closed:  # a cancelled run records its end with the failure
                self.record(
                    RecordType.RUN_END, {"status": "pending", "usage": self.meter.tree.to_dict()}
                )
            await asyncio.shield(self._commit_step())
        elif closed:
            # The consumer stopped reading: whatever already happened (a tool that ran, the
            # model's message) still belongs in the log, and so does the end of the run.
            self.record(
                RecordType.RUN_END, {"status": "closed", "usage": self.meter.tree.to_dict()}
            )
            try:
                await asyncio.shield(self.flush())
            except Exception:
                logger.exception("could not log the end of closed run %s", self.run_id)

    async def _finish(
        self, reply: Msg, status: RunStatus, iterations: int, output: Any = None
    ) -> AgentEndEvent:
        self.record_messages(reply)
        self.record(
            RecordType.RUN_END,
            {
                "status": status,
                "iterations": iterations,
                "reply_id": reply.id,
                "usage": self.meter.tree.to_dict(),
            },
        )
        self.state.append(reply)
        await self._commit_step()
        return AgentEndEvent(
            reply=reply,
            status=status,
            iterations=iterations,
            usage=self.meter.tree,
            turn_id=self.turn_id,
            output=output,
            **self.base,
        )

    async def _record_failure(self, exc: BaseException) -> None:
        """Best effort: the failure is logged, but logging must not hide the original error."""
        status = "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
        self.record(RecordType.ERROR, {"error_type": type(exc).__name__, "message": str(exc)})
        self.record(RecordType.RUN_END, {"status": status, "usage": self.meter.tree.to_dict()})
        try:
            await asyncio.shield(self.flush())
        except Exception:
            logger.exception(
                "could not write the failure of run %s to the session log", self.run_id
            )


async def _turn_of(events: AsyncGenerator[Event, None]) -> None:
    """:func:`checkpoint` between two events of ``events``. A cancellation that comes while
    the run waits in line is handed to the run first (it records a cancelled end, as when a
    cancellation reaches it in its own work), then goes on."""
    try:
        await checkpoint()
    except asyncio.CancelledError as exc:
        try:
            await events.athrow(exc)
            while True:  # the run's last queued events: nobody reads them now
                await anext(events)
        except (asyncio.CancelledError, StopAsyncIteration):
            pass
        raise
