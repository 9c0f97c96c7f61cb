"""Background tasks that a runtime keeps running across processes (Temporal).

An agent whose ``runtime`` has ``start_task`` (:class:`TaskRunner`; the Temporal runtime has)
does not run a background sub-agent task in the process that spawned it: the runtime starts a
durable piece of work for it (on Temporal a workflow of its own, named by the task id, so a
task is started once however often it is asked), and some worker runs it with
:meth:`~harnessed.subagents.Subagents.run_task` and saves its outcome in the parent's records
with :meth:`~harnessed.subagents.Subagents.deliver_task`. A worker that dies mid-task leaves it
to another, which continues it from the sub-agent's log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["TaskRunner", "task_runner"]


class TaskRunner(Protocol):
    """A runtime that runs background sub-agent tasks itself."""

    async def start_task(
        self, agent: str, user_id: str, session_id: str, record: Mapping[str, Any]
    ) -> None:
        """Make sure the task of ``record`` (a ``TaskRecord.to_dict()``) of that parent
        session runs to its end somewhere: started once, nothing done when it already runs
        or ran."""
        ...

    async def cancel_task(self, agent: str, user_id: str, session_id: str, task_id: str) -> None:
        """Stop that task where it runs (nothing happens when it has ended)."""
        ...


def task_runner(host: object) -> TaskRunner | None:
    """The runtime of ``host`` when it runs background tasks itself (else ``None``)."""
    runtime = getattr(host, "runtime", None)
    if runtime is not None and callable(getattr(runtime, "start_task", None)):
        found: TaskRunner = runtime
        return found
    return None
