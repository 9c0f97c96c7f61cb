"""A tool step: approvals, running the calls (results in call order), committing the step."""

from __future__ import annotations

from collections.abc import AsyncIterator

from harnessed.events import AgentEndEvent, Event, ToolResultEvent
from harnessed.log.record import RecordType
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock
from harnessed.models.base import structured_output_of
from harnessed.output.spec import FINAL_TOOL
from harnessed.run.approvals import StepApproval
from harnessed.run.base import RunBase
from harnessed.run.deps import Interrupted, result_msg
from harnessed.run.output_step import final_alone
from harnessed.state.parked import ParkedStep
from harnessed.tools.base import Tool
from harnessed.tools.context import ToolContext
from harnessed.tools.toolkit import ToolGuard

__all__ = ["ToolSteps"]


class ToolSteps(RunBase):
    """Approving and running the tool calls of a model message, then committing the step."""

    async def _act(
        self, message: Msg, iterations: int, parked: ParkedStep | None = None
    ) -> AsyncIterator[Event]:
        """Approve the calls of ``message``, run them and commit the step — or park it."""
        state = self.state
        decided: list[StepApproval] = []
        try:
            async for event in self._pump(self.approvals.decide(message, state, parked), decided):
                yield event
        except Interrupted:
            # asked and not answered: the step is parked (resume asks again); otherwise its
            # calls end as interrupted, never run
            if not self.approvals.park_aborted(state):
                self._append_interrupted(message, message.tool_uses, logged=True)
            raise
        decision = decided[0]
        if decision.parked is not None:
            decision.parked.park(state)
            ids = tuple(r.request_id for r in decision.parked.open_requests)
            self.record(
                RecordType.RUN_END,
                {
                    "status": "pending",
                    "iterations": iterations,
                    "pending": list(ids),
                    "usage": self.meter.tree.to_dict(),
                },
            )
            await self._commit_step()
            self.ended = AgentEndEvent(
                reply=self.approvals.pending_reply(decision.parked),
                status="pending",
                iterations=iterations,
                pending=ids,
                usage=self.meter.tree,
                turn_id=self.turn_id,
                **self.base,
            )
            yield self.ended
            return
        results: list[ToolResultBlock] = []
        stopped = False
        try:
            async for event in self._tool_step(message.tool_uses, results, decision.guard):
                yield event
        except Interrupted:
            stopped = True
        tool_messages = [result_msg(r) for r in results]
        self.record_messages(*tool_messages)
        state.append(message, *tool_messages)
        if decision.resumed:
            ParkedStep.unpark(state)
        await self._commit_step()
        if stopped:
            raise Interrupted

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
        native = structured_output_of(agent.model) == "native"
        if caps.before_tool_call:
            permissions = guard

            async def guarded(call: ToolUseBlock, tool: Tool, context: ToolContext) -> str | None:
                refusal = await caps.run_before_tool_call(run_call, call, tool)
                if refusal is not None or permissions is None:
                    return refusal
                return await permissions(call, tool, context)

            guard = guarded

        async def finish(call: ToolUseBlock, result: ToolResultBlock) -> ToolResultBlock:
            if call.name == FINAL_TOOL and self.output is not None and not native:
                result = final_alone(call)
            if not caps.after_tool_call:
                return result
            return await caps.run_after_tool_call(run_call, call, result)

        done: list[list[ToolResultBlock]] = []
        finished: dict[str, ToolResultBlock] = {}

        def collect(result: ToolResultBlock, duration_ms: float) -> None:
            finished[result.tool_use_id] = result
            on_result(result, duration_ms)

        step = agent.toolkit.run_step(
            calls,
            make_context,
            guard,
            collect,
            finish if caps.after_tool_call or self.output is not None else None,
        )
        try:
            async for event in self._pump(step, done):
                yield event
        except Interrupted:
            # calls that finished keep their results; the others end as interrupted
            results.extend(finished.get(c.id) or self._interrupted_result(c) for c in calls)
            raise
        results.extend(done[0])
