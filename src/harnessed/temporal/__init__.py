"""Turns on Temporal (``pip install 'harnessed[temporal]'``): any worker continues the work.

``HarnessAgent(..., runtime=TemporalRuntime("HOST:PORT", task_queue="agents"))`` runs each turn
as a workflow, each model request and each tool call as an activity, on the workers started
with ``harnessed worker --agent module:agent --temporal HOST:PORT --task-queue agents``. The
session log stays the one truth. See ``docs/temporal.md``.
"""

from harnessed.temporal.runtime import (
    TemporalRuntime,
    TemporalUnavailableError,
    TurnFailedError,
    workflow_id,
)
from harnessed.temporal.schema import ActivityOptions
from harnessed.temporal.worker import make_worker, run_worker

__all__ = [
    "ActivityOptions",
    "TemporalRuntime",
    "TemporalUnavailableError",
    "TurnFailedError",
    "make_worker",
    "run_worker",
    "workflow_id",
]
