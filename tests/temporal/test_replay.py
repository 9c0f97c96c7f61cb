"""Workflow versioning: histories recorded on earlier code replay on the current workflows.

Temporal replays a running workflow's history on whichever worker picks it up, so a new
release whose turn, task or wake-up workflow orders its steps differently would break the
workflows that were running during the deployment. These histories (recorded with
``python -m tests.temporal.record_histories``) must keep replaying; a change that cannot
keep them needs ``workflow.patched`` (see docs/temporal.md, "Deploying new code").
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from harnessed.temporal.schema import TASK, TASK_WORKFLOW, TaskInput
from harnessed.temporal.tasks import TaskWorkflow
from harnessed.temporal.woken import WakeupWorkflow
from harnessed.temporal.workflow import TurnWorkflow

HISTORIES = Path(__file__).resolve().parent / "histories"


def _replayer(*workflows: type) -> Replayer:
    return Replayer(
        workflows=list(workflows),
        workflow_runner=SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("harnessed")
        ),
    )


def _history(name: str) -> WorkflowHistory:
    text = (HISTORIES / f"{name}.json").read_text()
    return WorkflowHistory.from_json(f"recorded-{name}", json.loads(text))


@pytest.mark.parametrize("name", ["turn", "task", "wakeup", "wakeup-hooks"])
async def test_recorded_histories_replay_on_the_current_workflows(name: str) -> None:
    replayer = _replayer(TurnWorkflow, TaskWorkflow, WakeupWorkflow)
    result = await replayer.replay_workflow(_history(name), raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


@workflow.defn(name=TASK_WORKFLOW, sandboxed=False)
class _ChangedTask:
    """The task workflow as a careless change might leave it: its activity runs twice."""

    @workflow.run
    async def run(self, task: TaskInput) -> str:
        timeout = timedelta(seconds=60)
        await workflow.execute_activity(TASK, task, start_to_close_timeout=timeout)
        second: str = await workflow.execute_activity(
            TASK, task, result_type=str, start_to_close_timeout=timeout
        )
        return second


async def test_a_workflow_that_orders_its_steps_differently_does_not_replay() -> None:
    """The check can fail."""
    result = await _replayer(_ChangedTask).replay_workflow(
        _history("task"), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None
