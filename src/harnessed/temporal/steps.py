"""The parts of a turn as activities run them, each against the session log.

:class:`StepRun` is the in-process loop (:class:`~harnessed.run.AgentRun`) cut at the
activity boundaries: the start of the turn, one model request, one tool call, and the end of
an interrupted or failed turn. Every part first reads the log and does nothing it finds done,
so a retried activity (its worker was killed, or its result was lost) never writes a record
twice:

* the start is one batch with the run's ``run/start``; found, it is not written again;
* a model request's message has an id made of the turn and the step (``<turn>.<n>``) and goes
  to the log in one batch with what the request's preparation logged; found, the activity
  returns its tool calls (or the turn's end) without asking the model again;
* a tool call logs that it starts before it runs. A retry that finds its result returns it;
  one that finds only the start answers the call as the in-process loop answers a call its
  process stopped in (an "interrupted" error result), and never runs the tool a second time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from harnessed.capabilities.base import CallContext, CallEnd
from harnessed.events import Event
from harnessed.log.record import RecordType, SessionRecord
from harnessed.log.view import interrupted_results
from harnessed.messages import Msg, ToolResultBlock
from harnessed.models.base import ModelResponse
from harnessed.run import AgentRun
from harnessed.run.deps import result_msg
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.temporal.schema import StepOutcome, TurnInput, TurnResult

__all__ = ["StepRun", "step_message_id"]

TOOL_START = "temporal/tool_start"
"""The custom record a tool call's activity logs before it runs the tool."""


def step_message_id(turn_id: str, iteration: int) -> str:
    return f"{turn_id}.{iteration}"


class StepRun(AgentRun):
    """One part of a Temporal turn (a new object per part and activity attempt)."""

    def __init__(self, agent: Any, turn: TurnInput) -> None:
        ctx = RuntimeContext(
            user_id=turn.user_id,
            session_id=turn.session_id,
            run_id=turn.run_id,
            extras=turn.extras,
        )
        super().__init__(agent, ctx, "park", None)
        self.turn_id = turn.turn_id

    # ------------------------------------------------------------ the parts
    async def begin(self, messages: list[Msg]) -> None:
        """Log the turn's start and its input (once), and let capabilities see the call."""
        await self._open()
        if await self._logged(RecordType.RUN_START):
            return
        state = self.state
        self.record(RecordType.RUN_START, {"agent": self.agent.name, "user_id": self.ctx.user_id})
        parked = self.approvals.parked(state)
        if parked is not None and messages:  # new input closes the step left waiting
            closing = self.approvals.close_parked(state, parked)
            self.record_messages(*closing)
            state.append(parked.message, *closing)
        elif parked is not None:
            raise ValueError(
                "a step waiting for approvals cannot be continued on the Temporal runtime yet; "
                "answer it with new input"
            )
        if not messages and not state.history:
            raise ValueError(
                f"nothing to continue: session {self.ctx.session!r} has no history yet; "
                "pass the user's input"
            )
        self._add_messages(messages)
        await self._commit_step()
        if self.caps.before_call:
            await self.caps.run_before_call(self.call)
            await self._commit_step()

    async def model(self, iteration: int, steering: list[Msg]) -> StepOutcome:
        """One model request: its message is logged with the step's id, once."""
        await self._open()
        message_id = step_message_id(self.turn_id, iteration)
        done = self._message(message_id)
        if done is not None:
            return await self._outcome(done)
        known = {m.id for m in self.state.history}
        fresh = [m for m in steering if m.id not in known]
        if fresh:
            self._add_messages(fresh)
            for m in fresh:
                self.emit("steer", {"message_id": m.id, "text": m.text})
            await self._commit_step()
        await _drained(self._safe_point())
        agent = self.agent
        if self.call.stop_reason is not None:
            reply = Msg.assistant(
                f"I stopped before finishing: {self.call.stop_reason}",
                id=message_id,
                metadata={"harness": "stopped", "reason": self.call.stop_reason},
            )
            return await self._end(reply, "stopped", iteration - 1)
        if iteration > agent.max_iters:
            reply = Msg.assistant(
                f"I stopped after {agent.max_iters} model requests, the limit for one "
                "call (max_iters), before finishing the task. Call again to continue.",
                id=message_id,
                metadata={"harness": "max_iters"},
            )
            return await self._end(reply, "max_iters", iteration - 1)
        response: ModelResponse | None = None
        async for event in self._model_step(iteration):
            if isinstance(event, ModelResponse):
                response = event
        assert response is not None
        message = response.message.replace(id=message_id)
        if not message.tool_uses:
            return await self._end(message, "completed", iteration)
        decision = await self.approvals.decide(message, self.state)
        if decision.parked is not None:  # park the step, as a call() does
            state = self.state
            decision.parked.park(state)
            ids = [r.request_id for r in decision.parked.open_requests]
            self.record_messages(message)
            self.record(
                RecordType.RUN_END,
                {"status": "pending", "iterations": iteration, "pending": ids},
            )
            await self._commit_step()
            reply = self.approvals.pending_reply(decision.parked)
            await self._ended(CallEnd("pending", reply, iteration))
            return StepOutcome(end=_result("pending", iteration, reply, ids))
        self._add_messages([message])
        await self._commit_step()
        return StepOutcome(call_ids=[c.id for c in message.tool_uses])

    async def tool(self, iteration: int, call_id: str) -> None:
        """One tool call of the step's message: run once, or answered as interrupted."""
        await self._open()
        message = self._message(step_message_id(self.turn_id, iteration))
        if message is None:
            raise ValueError(f"step {iteration} of turn {self.turn_id} is not in the log")
        call = next((c for c in message.tool_uses if c.id == call_id), None)
        if call is None:
            raise ValueError(f"step {iteration} of turn {self.turn_id} has no call {call_id}")
        if self._answered(call_id):
            return
        if call_id in await self._started_calls():
            note = {
                "error_type": "ProcessInterrupted",
                "message": "the worker stopped before this tool call finished",
                "call_ids": [call_id],
            }
            self.record(RecordType.ERROR, note)
            self.record(
                RecordType.TOOL_EXECUTION,
                {"call_id": call.id, "tool": call.name, "is_error": True, "interrupted": True},
            )
            self._add_messages(interrupted_results([call]))
            await self._commit_step()
            return
        self.record("custom", {"name": TOOL_START, "data": {"call_id": call_id}})
        await self.flush()
        decision = await self.approvals.decide(message, self.state)
        results: list[ToolResultBlock] = []
        try:
            await _drained(self._tool_step([call], results, decision.guard))
        except asyncio.CancelledError:  # interrupted: the call ends as the loop ends it
            results = [self._interrupted_result(call)]
            self._add_messages([result_msg(r) for r in results])
            await asyncio.shield(self._commit_step())
            raise
        self._add_messages([result_msg(r) for r in results])
        await self._commit_step()

    async def stop(
        self, iteration: int, status: str, reason: str | None, error: str | None
    ) -> TurnResult:
        """End an interrupted or failed turn (once): unanswered calls of its last step get
        an interrupted result, and the run's end is logged."""
        await self._open()
        ended = await self._run_end()
        if ended is not None:
            return _result(str(ended.payload.get("status")), iteration, _stop_reply(status))
        message = self._message(step_message_id(self.turn_id, iteration))
        if message is not None:
            for call in message.tool_uses:
                if not self._answered(call.id):
                    self._add_messages([result_msg(self._interrupted_result(call))])
        if status == "error":
            self.record(RecordType.ERROR, {"error_type": error or "Error", "message": reason or ""})
            self.record(RecordType.RUN_END, {"status": "error"})
        else:
            payload = {"status": status, "iterations": iteration, "reason": reason, "pending": []}
            self.record(RecordType.RUN_END, payload)
        await self._commit_step()
        reply = _stop_reply(status)
        await self._ended(
            CallEnd("error" if status == "error" else "interrupted", reply, iteration)
        )
        return _result(status, iteration, reply, error_type=error, error=reason)

    # ------------------------------------------------------------- helpers
    async def _open(self) -> None:
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

    async def _load_state(self) -> AgentState:
        # not settled: a step left unanswered is this turn's own, its calls still to run
        key = SessionRef(self.agent.name, self.ctx.user_id, self.ctx.session)
        return await self.agent.conversation.load(key)

    def _message(self, message_id: str) -> Msg | None:
        for message in reversed(self.state.history):
            if message.id == message_id:
                return message
        return None

    def _answered(self, call_id: str) -> bool:
        return any(
            isinstance(b, ToolResultBlock) and b.tool_use_id == call_id
            for m in self.state.history
            if m.role == "tool"
            for b in m.content
        )

    async def _records(self, *types: str) -> list[SessionRecord]:
        records = await self.agent.session_store.read(self.key, types=list(types))
        return [r for r in records if r.run_id == self.run_id]

    async def _logged(self, record_type: str) -> bool:
        return bool(await self._records(record_type))

    async def _run_end(self) -> SessionRecord | None:
        ends = await self._records(RecordType.RUN_END)
        return ends[-1] if ends else None

    async def _started_calls(self) -> set[str]:
        return {
            str(r.payload.get("data", {}).get("call_id"))
            for r in await self._records("custom")
            if r.payload.get("name") == TOOL_START
        }

    async def _outcome(self, message: Msg) -> StepOutcome:
        """The outcome of a model step found in the log."""
        end = await self._run_end()
        if end is None:
            return StepOutcome(call_ids=[c.id for c in message.tool_uses])
        payload = end.payload
        status = str(payload.get("status"))
        iterations = int(payload.get("iterations") or 0)
        if status == "pending":
            parked = self.approvals.parked(self.state)
            reply = self.approvals.pending_reply(parked) if parked is not None else message
            return StepOutcome(
                end=_result(status, iterations, reply, list(payload.get("pending") or []))
            )
        return StepOutcome(end=_result(status, iterations, message))

    async def _end(self, reply: Msg, status: Any, iterations: int) -> StepOutcome:
        await self._finish(reply, status, iterations)
        await self._ended(CallEnd(status, reply, iterations))
        return StepOutcome(end=_result(status, iterations, reply))

    async def _ended(self, end: CallEnd) -> None:
        if self.caps.after_call:
            await self._after_call(end)


def _result(
    status: str,
    iterations: int,
    reply: Msg,
    pending: list[str] | None = None,
    *,
    error_type: str | None = None,
    error: str | None = None,
) -> TurnResult:
    return TurnResult(
        status=status,
        iterations=iterations,
        reply=reply.to_dict(),
        pending=list(pending or []),
        error_type=error_type,
        error=error,
    )


def _stop_reply(status: str) -> Msg:
    if status == "error":
        return Msg.assistant("The turn failed.", metadata={"harness": "error"})
    return Msg.assistant(
        "The turn was interrupted before it finished; its progress is saved and it can be resumed.",
        metadata={"harness": "interrupted"},
    )


async def _drained(events: AsyncIterator[Event]) -> None:
    async for _ in events:
        pass
