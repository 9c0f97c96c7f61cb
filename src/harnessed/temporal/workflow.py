"""The turn workflow: the order of a turn's steps, and nothing that touches the world.

It runs in Temporal's sandbox and is replayed on whichever worker picks it up after another
died, so it only decides what comes next; every read and write of the session log happens in
an activity (:mod:`harnessed.temporal.activities`). A step is a model request (an activity),
then each of its tool calls (one activity each, in call order). Signals steer (messages for the
next model request) and interrupt (the running activity is cancelled; the turn ends
``interrupted`` with its progress saved, as an interrupted in-process turn does).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from harnessed.temporal.schema import (
        FAIL,
        INTERRUPT,
        MODEL,
        PROGRESS,
        STEER,
        STOP,
        TOOL,
        WORKFLOW,
        ActivityOptions,
        ModelStepInput,
        StepOutcome,
        StopInput,
        ToolInput,
        TurnInput,
        TurnResult,
    )

__all__ = ["TurnWorkflow"]


class _Interrupted(Exception):
    pass


@workflow.defn(name=WORKFLOW)
class TurnWorkflow:
    def __init__(self) -> None:
        self._steering: list[dict[str, Any]] = []
        self._interrupt: str | None = None
        self._interrupted = False
        self._iteration = 0
        self._step = "begin"

    @workflow.signal(name=STEER)
    def steer(self, messages: list[dict[str, Any]]) -> None:
        self._steering.extend(messages)

    @workflow.signal(name=INTERRUPT)
    def interrupt(self, reason: str | None = None) -> None:
        if not self._interrupted:
            self._interrupted, self._interrupt = True, reason

    @workflow.query(name=PROGRESS)
    def progress(self) -> dict[str, Any]:
        return {"iteration": self._iteration, "step": self._step, "steering": len(self._steering)}

    @workflow.run
    async def run(self, turn: TurnInput) -> TurnResult:
        result = await self._turn(turn)
        if self._steering:  # came too late for a model request: the caller keeps them
            result = dataclasses.replace(result, unused_steering=list(self._steering))
        return result

    async def _turn(self, turn: TurnInput) -> TurnResult:
        try:
            while True:
                if self._interrupted:
                    raise _Interrupted
                steering, self._steering = self._steering, []
                self._iteration += 1
                self._step = "model"
                outcome: StepOutcome = await self._activity(
                    MODEL,
                    ModelStepInput(turn, self._iteration, steering),
                    StepOutcome,
                    turn.options,
                    tool=False,
                )
                if outcome.end is not None:
                    return outcome.end
                for call_id in outcome.call_ids:
                    self._step = f"tool:{call_id}"
                    await self._activity(
                        TOOL, ToolInput(turn, self._iteration, call_id), None, turn.options
                    )
                    if self._interrupted:
                        raise _Interrupted
        except _Interrupted:
            return await self._end(turn, "interrupted", self._interrupt, None)
        except ActivityError as exc:
            cause = exc.cause
            error_type = cause.type if isinstance(cause, ApplicationError) else None
            message = cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
            return await self._end(turn, "error", message, error_type or "ActivityError")

    async def _end(
        self, turn: TurnInput, status: str, reason: str | None, error_type: str | None
    ) -> TurnResult:
        self._step = status
        name = STOP if status == "interrupted" else FAIL
        end = StopInput(turn, self._iteration, status, reason, error_type)
        result: TurnResult = await self._activity(
            name, end, TurnResult, turn.options, tool=False, stoppable=False
        )
        return result

    async def _activity(
        self,
        name: str,
        arg: Any,
        result_type: type[Any] | None,
        options: ActivityOptions,
        *,
        tool: bool = True,
        stoppable: bool = True,
    ) -> Any:
        """Run one activity; an interrupt cancels it (and waits until it has settled)."""
        attempts = options.model_attempts if name == MODEL else 0
        handle = workflow.start_activity(
            name,
            arg,
            result_type=result_type,
            start_to_close_timeout=timedelta(
                seconds=options.tool_timeout if tool else options.model_timeout
            ),
            heartbeat_timeout=timedelta(seconds=options.heartbeat_timeout),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=options.retry_initial),
                maximum_interval=timedelta(seconds=options.retry_max),
                maximum_attempts=attempts,
            ),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        if not stoppable:
            return await handle
        await workflow.wait_condition(lambda: handle.done() or self._interrupted)
        if handle.done():
            return handle.result()
        handle.cancel()
        try:
            value = await handle
        except ActivityError as exc:
            if isinstance(exc.cause, CancelledError):
                raise _Interrupted from exc
            raise
        if name == TOOL:
            return value  # the call finished (or ended as interrupted) before it heard
        raise _Interrupted
