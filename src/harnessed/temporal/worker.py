"""A worker process's Temporal worker: the turn workflow and activities for some agents.

Any number of workers may listen on one task queue; Temporal hands each workflow task and
activity to one of them and moves work off a worker that stopped answering. Limits:
``max_concurrent_activities`` (model requests and tool calls at once on this worker),
``max_concurrent_workflow_tasks``, and ``max_per_user`` (activities of one user at once on this
worker).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from harnessed.temporal.activities import TurnActivities
from harnessed.temporal.tasks import TaskWorkflow
from harnessed.temporal.woken import WakeupWorkflow
from harnessed.temporal.woken_hooks import OnWokenHook
from harnessed.temporal.workflow import TurnWorkflow

__all__ = ["make_worker", "run_worker"]


def make_worker(
    client: Client,
    agents: Sequence[Any],
    task_queue: str,
    *,
    max_concurrent_activities: int = 100,
    max_concurrent_workflow_tasks: int = 100,
    max_per_user: int | None = None,
    on_woken: OnWokenHook | None = None,
) -> Worker:
    """A worker serving ``agents`` (HarnessAgent objects, by name) on ``task_queue``;
    ``on_woken(wakeup, turn)`` is called for every woken turn that ends, besides the hook of
    the agent's ``Wakeups`` capability (``harnessed worker --channels`` sends the reply)."""
    if not agents:
        raise ValueError("make_worker needs at least one agent")
    by_name = {a.name: a for a in agents}
    if len(by_name) != len(agents):
        raise ValueError("make_worker agents must have different names")
    if max_concurrent_activities < 1 or max_concurrent_workflow_tasks < 1:
        raise ValueError("make_worker limits must be at least 1")
    activities = TurnActivities(by_name, max_per_user=max_per_user, on_woken=on_woken)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[TurnWorkflow, TaskWorkflow, WakeupWorkflow],
        activities=activities.all(),
        max_concurrent_activities=max_concurrent_activities,
        max_concurrent_workflow_tasks=max_concurrent_workflow_tasks,
        workflow_runner=SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("harnessed")
        ),
    )


async def run_worker(
    target: str,
    agents: Sequence[Any],
    task_queue: str,
    *,
    namespace: str = "default",
    stop: asyncio.Event | None = None,
    **limits: Any,
) -> None:
    """Connect to ``target`` and work until ``stop`` is set (or forever)."""
    client = await Client.connect(target, namespace=namespace)
    worker = make_worker(client, agents, task_queue, **limits)
    if stop is None:
        await worker.run()
        return
    async with worker:
        await stop.wait()
