"""VerificationService: application code records what was checked, and against which version.

``verify`` records an outcome you already know; ``run`` runs a check function and records its
outcome (an exception is recorded as ``error``, never as a pass). Both bind the result to a
subject version — by default the one current when the check *started*, so a check that ran
while the subject changed is stale from the moment it is recorded. Results are stored in the
task contract of the session (see :mod:`harnessed.contract.state`) and logged as ``task/changed``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from harnessed.contract.state import (
    TASK,
    VERIFICATION_OUTCOMES,
    TaskContextState,
    VerificationOutcome,
    VerificationResult,
)
from harnessed.log.record import RecordType
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import StateEditor

__all__ = ["CheckReport", "VerificationService"]

CheckReport: TypeAlias = bool | str | tuple[str, str]
"""What a check function returns: ``True``/``False`` (passed/failed), an outcome name, or
``(outcome, details)``."""
CheckFunction: TypeAlias = Callable[[], CheckReport | Awaitable[CheckReport]]


def require_task(state: AgentState) -> TaskContextState:
    task = state.get(TASK)
    if task is None:
        raise LookupError(
            f"session {state.session_id!r} of user {state.user_id!r} has no task: call "
            "agent.begin_task(...) first"
        )
    return task


class VerificationService:
    """Records verification results in a session's task contract."""

    def __init__(self, editor: StateEditor) -> None:
        self._editor = editor

    async def verify(
        self,
        ctx: RuntimeContext | None,
        check: str,
        outcome: VerificationOutcome,
        *,
        details: str = "",
        requirement_id: str | None = None,
        subject_version: str | int | None = None,
        expected_revision: int | None = None,
    ) -> VerificationResult:
        """Record ``outcome`` of ``check`` (for ``requirement_id``, if given).

        ``subject_version`` defaults to the task's current one. Raises ``LookupError`` when
        the session has no task, ``ValueError`` for a bad outcome or requirement, and
        :class:`~harnessed.contract.state.TaskRevisionConflictError` when ``expected_revision``
        is not current; nothing is recorded then.
        """

        def change(state: AgentState) -> list[tuple[str, dict[str, object]]]:
            task = require_task(state).record(
                check,
                outcome,
                subject_version=subject_version,
                requirement_id=requirement_id,
                details=details,
                expected_revision=expected_revision,
            )
            state.put(TASK, task)
            return [
                (
                    RecordType.TASK_CHANGED,
                    {
                        "action": "verify",
                        "result": task.verifications[-1].to_dict(),
                        "revision": task.revision,
                        "task": task.to_dict(),
                    },
                )
            ]

        state = await self._editor.change(ctx, change)
        return require_task(state).verifications[-1]

    async def run(
        self,
        ctx: RuntimeContext | None,
        check: str,
        function: CheckFunction,
        *,
        requirement_id: str | None = None,
    ) -> VerificationResult:
        """Run ``function`` and record its outcome against the subject version current when
        it started (the check runs outside the session lock: it may take long)."""
        task = require_task(await self._editor.read(ctx))
        version = task.subject_version
        try:
            report = function()
            if inspect.isawaitable(report):
                report = await report
            outcome, details = _read_report(report)
        except Exception as exc:
            outcome, details = "error", f"{type(exc).__name__}: {exc}"
        return await self.verify(
            ctx,
            check,
            outcome,
            details=details,
            requirement_id=requirement_id,
            subject_version=version,
        )


def _read_report(report: object) -> tuple[VerificationOutcome, str]:
    details = ""
    if isinstance(report, tuple) and len(report) == 2:
        report, details = report
    if isinstance(report, bool):
        return ("passed" if report else "failed"), str(details)
    if isinstance(report, str) and report in VERIFICATION_OUTCOMES:
        outcome: VerificationOutcome = report  # type: ignore[assignment]
        return outcome, str(details)
    raise ValueError(
        f"a check must return True/False, one of {', '.join(VERIFICATION_OUTCOMES)}, or "
        f"(outcome, details); it returned {report!r}"
    )
