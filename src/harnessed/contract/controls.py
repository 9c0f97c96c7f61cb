"""The application's side of the task contract (the agent offers these methods).

Called by trusted application code, never by the model: begin a task, decide on its
requirements, move its subject version, end it. Each change runs under the session lock (it
waits for a running call of that session to end), bumps the state's revisions and is written to
the session log as ``task/changed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harnessed.contract.state import TASK, RequirementKind, TaskContextState
from harnessed.contract.verification import VerificationService, require_task
from harnessed.log.record import RecordType
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import StateEditor

__all__ = ["TaskControls"]

Records = list[tuple[str, Mapping[str, Any]]]


class TaskControls:
    """Task contract controls: a part of :class:`~harnessed.HarnessAgent`."""

    def __init__(self, editor: StateEditor, verification: VerificationService) -> None:
        self._editor = editor
        self.verification = verification
        """Records verification results in a session's task contract."""

    # ------------------------------------------------------------ task contract
    async def task_state(self, ctx: RuntimeContext | None = None) -> TaskContextState | None:
        """The session's task contract as last saved (``None`` before ``begin_task``)."""
        return (await self._editor.read(ctx)).get(TASK)

    async def begin_task(
        self,
        ctx: RuntimeContext | None,
        task_id: str,
        objective: str,
        *,
        subject_version: str | int = "1",
        metadata: Mapping[str, Any] | None = None,
    ) -> TaskContextState:
        """Start (or replace) the session's task: its id, objective and subject version."""

        def change(state: AgentState) -> Records:
            task = TaskContextState.begin(
                task_id,
                objective,
                subject_version=subject_version,
                previous=state.get(TASK),
                metadata=metadata,
            )
            state.put(TASK, task)
            return [_task_record("begin", task)]

        return _task(await self._editor.change(ctx, change))

    async def add_requirement(
        self,
        ctx: RuntimeContext | None,
        kind: RequirementKind,
        text: str,
        *,
        expected_revision: int | None = None,
    ) -> TaskContextState:
        """Add a confirmed requirement (application code is trusted)."""
        return await self._change_task(
            ctx,
            "add_requirement",
            lambda t: t.add_requirement(kind, text, expected_revision=expected_revision),
        )

    async def confirm_requirement(
        self,
        ctx: RuntimeContext | None,
        requirement_id: str,
        *,
        note: str | None = None,
        expected_revision: int | None = None,
    ) -> TaskContextState:
        """Make a requirement binding (typically one the model proposed)."""
        return await self._change_task(
            ctx,
            "confirm",
            lambda t: t.confirm(requirement_id, note=note, expected_revision=expected_revision),
        )

    async def reject_requirement(
        self,
        ctx: RuntimeContext | None,
        requirement_id: str,
        *,
        note: str | None = None,
        expected_revision: int | None = None,
    ) -> TaskContextState:
        """Set a requirement aside; ``note`` tells the model why."""
        return await self._change_task(
            ctx,
            "reject",
            lambda t: t.reject(requirement_id, note=note, expected_revision=expected_revision),
        )

    async def set_task_subject(
        self,
        ctx: RuntimeContext | None,
        version: str | int,
        *,
        expected_revision: int | None = None,
    ) -> TaskContextState:
        """The subject of verification changed (new commit, new draft …): results recorded for
        earlier versions are shown as STALE from now on."""
        return await self._change_task(
            ctx,
            "subject",
            lambda t: t.with_subject_version(version, expected_revision=expected_revision),
        )

    async def end_task(self, ctx: RuntimeContext | None = None) -> None:
        """Remove the session's task contract (the log keeps its history)."""

        def change(state: AgentState) -> Records | None:
            ended = state.get(TASK)
            if ended is None:
                return None
            state.put(TASK, None)
            return [(RecordType.TASK_CHANGED, {"action": "end", "task": ended.to_dict()})]

        await self._editor.change(ctx, change)

    async def _change_task(
        self,
        ctx: RuntimeContext | None,
        action: str,
        update: Callable[[TaskContextState], TaskContextState],
    ) -> TaskContextState:
        def change(state: AgentState) -> Records:
            task = update(require_task(state))
            state.put(TASK, task)
            return [_task_record(action, task)]

        return _task(await self._editor.change(ctx, change))


def _task(state: AgentState) -> TaskContextState:
    task = state.get(TASK)
    assert task is not None
    return task


def _task_record(action: str, task: TaskContextState) -> tuple[str, Mapping[str, Any]]:
    return (
        RecordType.TASK_CHANGED,
        {"action": action, "revision": task.revision, "task": task.to_dict()},
    )
