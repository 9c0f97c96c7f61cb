"""The workflow of a background sub-agent task: one activity, retried on another worker
when its worker dies.

A task spawned in the background by a turn on the Temporal runtime runs as a workflow of its
own, whose id is made of the task's id (so it is started once, however often it is asked:
the spawning tool call and every later turn of the parent session ask). It outlives the turn
that spawned it. Its one activity (:meth:`TurnActivities.task
<harnessed.temporal.activities.TurnActivities.task>`) runs the sub-agent's turn on a worker
and saves the outcome in the parent session's records; an attempt that dies is followed by
one on another worker, which continues the sub-agent from its log.
"""

from __future__ import annotations

import json
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from harnessed.temporal.schema import TASK, TASK_WORKFLOW, TaskInput

__all__ = ["TaskWorkflow", "task_workflow_id"]


def task_workflow_id(agent: str, user_id: str, session_id: str, task_id: str) -> str:
    """The id of a background task's workflow."""
    return f"harnessed-task/{json.dumps([agent, user_id, session_id, task_id])}"


@workflow.defn(name=TASK_WORKFLOW)
class TaskWorkflow:
    @workflow.run
    async def run(self, task: TaskInput) -> str:
        options = task.options
        status: str = await workflow.execute_activity(
            TASK,
            task,
            result_type=str,
            start_to_close_timeout=timedelta(seconds=options.task_timeout),
            heartbeat_timeout=timedelta(seconds=options.heartbeat_timeout),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=options.retry_initial),
                maximum_interval=timedelta(seconds=options.retry_max),
            ),
        )
        return status
