"""The wake-up workflow: one firing of a wake-up starts one turn of its session.

Started by the server when a once wake-up is due (a delayed start) or at each time of a cron
wake-up's schedule. It asks a worker for the turn (none when the wake-up was cancelled),
starts the session's turn workflow as a child that outlives it — waiting, with growing
pauses, while another turn of the session runs, as a woken turn queues behind a running one
in process — and then has a once wake-up dropped from the session's list. Then it waits for
the turn's end and has a worker call the agent's ``on_woken`` hooks with it (the activity
keeps a record in the session log, so a retried one does not call them again). Runs started
before that last part existed replay without it (``workflow.patched``).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError
from temporalio.workflow import ChildWorkflowHandle, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from harnessed.temporal.runtime import workflow_id
    from harnessed.temporal.schema import (
        WAKEUP_DONE,
        WAKEUP_HOOK_PATCH,
        WAKEUP_PREPARE,
        WAKEUP_START,
        WAKEUP_WOKEN,
        WAKEUP_WORKFLOW,
        WORKFLOW,
        TurnInput,
        TurnResult,
        WakeupDue,
        WakeupFiring,
        WakeupStart,
        WakeupWoken,
    )

__all__ = ["WakeupWorkflow"]

_SCHEDULED = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
"""Set by the server on the runs a schedule starts: the time of the firing."""


@workflow.defn(name=WAKEUP_WORKFLOW)
class WakeupWorkflow:
    @workflow.run
    async def run(self, firing: WakeupFiring) -> str:
        options = firing.options
        retry = RetryPolicy(
            initial_interval=timedelta(seconds=options.retry_initial),
            maximum_interval=timedelta(seconds=options.retry_max),
        )
        scheduled = workflow.info().typed_search_attributes.get(_SCHEDULED)
        due = WakeupDue(firing, scheduled.timestamp() if scheduled is not None else None)
        timeout = timedelta(seconds=options.model_timeout)
        hooks = workflow.patched(WAKEUP_HOOK_PATCH)
        wakeup: dict[str, Any] = {}
        if hooks:
            started: list[WakeupStart] = await workflow.execute_activity(
                WAKEUP_START,
                due,
                result_type=list[WakeupStart],
                start_to_close_timeout=timeout,
                retry_policy=retry,
            )
            if not started:
                return "cancelled"
            turn, wakeup = started[0].turn, started[0].wakeup
        else:  # a run started before the hooks: as it was
            turns: list[TurnInput] = await workflow.execute_activity(
                WAKEUP_PREPARE,
                due,
                result_type=list[TurnInput],
                start_to_close_timeout=timeout,
                retry_policy=retry,
            )
            if not turns:
                return "cancelled"
            turn = turns[0]
        pause = 1.0
        while True:
            try:
                child: ChildWorkflowHandle[Any, TurnResult] = await workflow.start_child_workflow(
                    WORKFLOW,
                    turn,
                    id=workflow_id(turn.agent, turn.user_id, turn.session_id),
                    task_queue=workflow.info().task_queue,
                    parent_close_policy=ParentClosePolicy.ABANDON,
                    result_type=TurnResult,
                )
                break
            except WorkflowAlreadyStartedError:  # a turn of the session runs: after it
                await workflow.sleep(timedelta(seconds=pause))
                pause = min(pause * 2, 30.0)
        await workflow.execute_activity(
            WAKEUP_DONE, firing, start_to_close_timeout=timeout, retry_policy=retry
        )
        if not hooks:
            return "fired"
        woken = WakeupWoken(firing, wakeup, turn)
        try:
            woken = dataclasses.replace(woken, result=await child)
        except ChildWorkflowError as exc:  # terminated, timed out: the hooks hear it failed
            woken = dataclasses.replace(woken, error=str(exc.cause or exc))
        await workflow.execute_activity(
            WAKEUP_WOKEN,
            woken,
            start_to_close_timeout=timedelta(seconds=options.tool_timeout),
            heartbeat_timeout=timedelta(seconds=options.heartbeat_timeout),
            retry_policy=retry,
        )
        return "fired"
