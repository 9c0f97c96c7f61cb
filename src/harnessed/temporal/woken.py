"""The wake-up workflow: one firing of a wake-up starts one turn of its session.

Started by the server when a once wake-up is due (a delayed start) or at each time of a cron
wake-up's schedule. It asks a worker for the turn (none when the wake-up was cancelled),
starts the session's turn workflow as a child that outlives it — waiting, with growing
pauses, while another turn of the session runs, as a woken turn queues behind a running one
in process — and then has a once wake-up dropped from the session's list.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from harnessed.temporal.runtime import workflow_id
    from harnessed.temporal.schema import (
        WAKEUP_DONE,
        WAKEUP_PREPARE,
        WAKEUP_WORKFLOW,
        WORKFLOW,
        TurnInput,
        WakeupDue,
        WakeupFiring,
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
        turns: list[TurnInput] = await workflow.execute_activity(
            WAKEUP_PREPARE,
            due,
            result_type=list[TurnInput],
            start_to_close_timeout=timedelta(seconds=options.model_timeout),
            retry_policy=retry,
        )
        if not turns:
            return "cancelled"
        turn = turns[0]
        pause = 1.0
        while True:
            try:
                await workflow.start_child_workflow(
                    WORKFLOW,
                    turn,
                    id=workflow_id(turn.agent, turn.user_id, turn.session_id),
                    task_queue=workflow.info().task_queue,
                    parent_close_policy=ParentClosePolicy.ABANDON,
                )
                break
            except WorkflowAlreadyStartedError:  # a turn of the session runs: after it
                await workflow.sleep(timedelta(seconds=pause))
                pause = min(pause * 2, 30.0)
        await workflow.execute_activity(
            WAKEUP_DONE,
            firing,
            start_to_close_timeout=timedelta(seconds=options.model_timeout),
            retry_policy=retry,
        )
        return "fired"
