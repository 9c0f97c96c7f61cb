"""Session controls: the application's side of task state, plan mode and permissions.

:class:`SessionControls` is part of :class:`~harnessed.HarnessAgent`. Everything here is called
by trusted application code, never by the model: begin a task and decide on its requirements,
record verification results, switch plan mode, set a session's permission mode or rules, and
answer confirmation requests. Each change runs under the session lock (so it waits for a running
call of that session to end), bumps the state's revisions and is written to the session log as
``task/changed``, ``plan/changed`` or ``permission/changed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harnessed.context.compiler import ContextCompiler
from harnessed.context.receipts import SupersededTodoReceipts
from harnessed.permissions.broker import Answer, ConfirmationError, Posted, SessionId
from harnessed.permissions.gate import ApprovalGate
from harnessed.permissions.pending import ParkedStep, PendingConfirmation
from harnessed.permissions.policy import ToolPermissionCheck
from harnessed.permissions.rules import PermissionMode, PermissionRule
from harnessed.runtime import RuntimeContext, SessionLocks
from harnessed.session.indexed import IndexedSessionLogStore
from harnessed.session.record import RecordType
from harnessed.state.agent_state import AgentState, PlanState
from harnessed.state.editor import StateEditor
from harnessed.state.store import AgentStateStore
from harnessed.state.task import (
    RequirementKind,
    TaskContextState,
    TaskContractConfig,
)
from harnessed.state.verification import VerificationService, require_task
from harnessed.tools.base import Tool
from harnessed.tools.plan import plan_exit_check, plan_tools
from harnessed.tools.task import task_tools
from harnessed.tools.todo import todo_tools
from harnessed.tools.toolkit import Toolkit
from harnessed.workspace import Workspace

__all__ = ["SessionControls"]

logger = logging.getLogger(__name__)

Records = list[tuple[str, Mapping[str, Any]]]


class SessionControls:
    """Task contract, plan mode and permission controls of an agent (a mixin)."""

    name: str
    toolkit: Toolkit
    compiler: ContextCompiler
    workspace: Workspace | None
    state_store: AgentStateStore
    session_store: IndexedSessionLogStore
    _locks: SessionLocks

    approval_gate: ApprovalGate
    """Decides each step's tool calls before they run (permissions, plan mode, tool checks)."""
    verification: VerificationService
    """Records verification results in a session's task contract."""
    task_contract: TaskContractConfig
    _plan_mode: bool
    _editor: StateEditor

    def _setup_controls(
        self,
        *,
        enable_task_list: bool,
        enable_plan_mode: bool,
        task_contract: TaskContractConfig | None,
        permission_mode: PermissionMode | str | None,
        permission_rules: Sequence[PermissionRule],
        permission_checks: Mapping[str, ToolPermissionCheck] | None,
        confirmation_timeout: float | None,
    ) -> None:
        if task_contract is not None and not isinstance(task_contract, TaskContractConfig):
            raise TypeError("task_contract must be a TaskContractConfig")
        self.task_contract = task_contract or TaskContractConfig()
        self.compiler.task_contract = self.task_contract
        checks: dict[str, ToolPermissionCheck] = {}
        extra: list[Tool] = []
        if enable_task_list:
            extra += todo_tools()
            self.compiler.views.append(SupersededTodoReceipts())
        if enable_plan_mode:
            if self.workspace is None:
                raise ValueError(
                    "enable_plan_mode needs a workspace (the plan is written to plans/PLAN.md): "
                    "pass workspace=... to HarnessAgent"
                )
            extra += plan_tools(self.workspace)
            checks["plan_exit"] = plan_exit_check(self.workspace)
        if self.task_contract.allow_requirement_proposals:
            extra += task_tools()
        for tool in extra:
            if tool.name in self.toolkit:
                logger.info("the application's tool %r replaces the built-in one", tool.name)
                checks.pop(tool.name, None)
            else:
                self.toolkit.add(tool)
        checks.update(permission_checks or {})
        self.approval_gate = ApprovalGate(
            self.toolkit,
            mode=permission_mode,
            rules=permission_rules,
            checks=checks,
            confirmation_timeout=confirmation_timeout,
        )
        self._plan_mode = enable_plan_mode
        self._editor = StateEditor(self.name, self.state_store, self.session_store, self._locks)
        self.verification = VerificationService(self._editor)

    # ------------------------------------------------------------ task contract
    async def task_state(self, ctx: RuntimeContext | None = None) -> TaskContextState | None:
        """The session's task contract as last saved (``None`` before ``begin_task``)."""
        return (await self._editor.read(ctx)).task

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
                previous=state.task,
                metadata=metadata,
            )
            state.set_task(task)
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
            if state.task is None:
                return None
            ended = state.task
            state.set_task(None)
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
            state.set_task(task)
            return [_task_record(action, task)]

        return _task(await self._editor.change(ctx, change))

    # --------------------------------------------------------------- plan mode
    async def enter_plan_mode(self, ctx: RuntimeContext | None = None) -> PlanState:
        """Put the session in plan mode (needs ``enable_plan_mode=True``)."""
        if not self._plan_mode or self.workspace is None:
            raise RuntimeError(
                "plan mode is not enabled: create the agent with enable_plan_mode=True"
            )
        plan_file = self.workspace.PLAN_FILE
        return await self._set_plan(ctx, "enter", PlanState(active=True, plan_file=plan_file))

    async def exit_plan_mode(self, ctx: RuntimeContext | None = None) -> PlanState:
        """Leave plan mode (the application's approval; the plan file stays)."""
        return await self._set_plan(ctx, "exit", PlanState(active=False))

    async def _set_plan(
        self, ctx: RuntimeContext | None, action: str, plan: PlanState
    ) -> PlanState:
        def change(state: AgentState) -> Records | None:
            target = PlanState(plan.active, plan.plan_file or state.plan.plan_file)
            if state.plan == target:
                return None
            state.set_plan(target)
            return [(RecordType.PLAN_CHANGED, {"action": action, "plan": target.to_dict()})]

        return (await self._editor.change(ctx, change)).plan

    # ------------------------------------------------------------- permissions
    async def set_permission_mode(
        self, ctx: RuntimeContext | None, mode: PermissionMode | str | None
    ) -> None:
        """Set the session's permission mode (``None``: back to the agent's configuration)."""
        parsed = PermissionMode.parse(mode) if mode is not None else None

        def change(state: AgentState) -> Records:
            permissions = {k: v for k, v in state.permissions.items() if k != "mode"}
            if parsed is not None:
                permissions["mode"] = parsed.value
            state.set_permissions(permissions)
            return [
                (
                    RecordType.PERMISSION_CHANGED,
                    {"action": "mode", "mode": parsed.value if parsed else None},
                )
            ]

        await self._editor.change(ctx, change)

    async def set_permission_rules(
        self, ctx: RuntimeContext | None, rules: Sequence[PermissionRule]
    ) -> None:
        """Replace the session's own rules (checked before, and together with, the agent's)."""
        for rule in rules:
            if not isinstance(rule, PermissionRule):
                raise TypeError(f"expected PermissionRule objects, got {rule!r}")
        data = [r.to_dict() for r in rules]

        def change(state: AgentState) -> Records:
            state.set_permissions({**state.permissions, "rules": data})
            return [(RecordType.PERMISSION_CHANGED, {"action": "rules", "rules": data})]

        await self._editor.change(ctx, change)

    async def pending_confirmations(
        self, ctx: RuntimeContext | None = None
    ) -> list[PendingConfirmation]:
        """Requests waiting for an answer: those a running call is asking now, and those of
        the step the session left waiting."""
        ctx = self._editor.resolve(ctx)
        live = self.approval_gate.broker.waiting(_session(self.name, ctx))
        parked = ParkedStep.load((await self._editor.read(ctx)).permissions)
        seen = {r.request_id for r in live}
        stored = [r for r in (parked.open_requests if parked else []) if r.request_id not in seen]
        return [*live, *stored]

    async def respond(
        self,
        ctx: RuntimeContext | None,
        request_id: str,
        approved: bool,
        *,
        feedback: str | None = None,
    ) -> None:
        """Answer a confirmation request.

        A call that is waiting for this answer (``stream_events``) gets it at once and goes
        on. For a call that ended with status ``pending`` the answer is stored with the
        session; call the agent again without input to continue. ``feedback`` is passed on to
        the model when the call is declined. Raises
        :class:`~harnessed.permissions.ConfirmationError` for an unknown request or one
        already answered differently.
        """
        if not isinstance(approved, bool):
            raise TypeError(f"approved must be True or False, got {approved!r}")
        ctx = self._editor.resolve(ctx)
        session = _session(self.name, ctx)
        broker = self.approval_gate.broker
        live = {r.request_id for r in broker.waiting(session)}
        if live and request_id not in live:
            # a call of this session is running and waiting for other answers: the stored
            # state cannot hold this request now, and waiting for the lock would wait for ever
            raise ConfirmationError(_unknown(request_id, ctx))
        if request_id in broker.parking(session):
            # The running call stopped waiting (confirmation_timeout) and is parking the step;
            # waiting for its session lock from inside its own stream would never end.
            raise ConfirmationError(
                f"confirmation request {request_id!r} timed out while the call was running and "
                "its step is being parked; answer it again once the call has ended"
            )
        posted = broker.post(session, request_id, Answer(approved, feedback))
        if posted.consumed.is_set():
            return
        store = asyncio.ensure_future(self._store_answer(ctx, session, request_id, posted))
        taken = asyncio.ensure_future(posted.consumed.wait())
        try:
            await asyncio.wait({store, taken}, return_when=asyncio.FIRST_COMPLETED)
            if store.done() and not posted.consumed.is_set():
                store.result()
        finally:
            broker.withdraw(session, request_id, posted)
            for task in (store, taken):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task

    async def _store_answer(
        self, ctx: RuntimeContext, session: SessionId, request_id: str, posted: Posted
    ) -> None:
        answer = posted.answer

        def change(state: AgentState) -> Records | None:
            if posted.consumed.is_set():  # a call of this session took it meanwhile
                return None
            parked = ParkedStep.load(state.permissions)
            request = parked.request(request_id) if parked is not None else None
            if parked is None or request is None:
                raise ConfirmationError(_unknown(request_id, ctx))
            if request.answered:
                if request.approved == answer.approved:
                    return None
                raise ConfirmationError(
                    f"confirmation request {request_id!r} was already "
                    f"{'approved' if request.approved else 'declined'}"
                )
            state.set_permissions(
                parked.with_answer(request_id, answer.approved, answer.feedback).store(
                    state.permissions
                )
            )
            self.approval_gate.broker.withdraw(session, request_id, posted)
            return [
                (
                    RecordType.PERMISSION_CHANGED,
                    {
                        "action": "answered",
                        "request_id": request_id,
                        "approved": answer.approved,
                        "feedback": answer.feedback,
                    },
                )
            ]

        await self._editor.change(ctx, change)


def _unknown(request_id: str, ctx: RuntimeContext) -> str:
    return (
        f"no confirmation request {request_id!r} is waiting in session {ctx.session!r} of "
        f"user {ctx.user_id!r}"
    )


def _session(agent: str, ctx: RuntimeContext) -> SessionId:
    return (agent, ctx.user_id, ctx.session)


def _task(state: AgentState) -> TaskContextState:
    assert state.task is not None
    return state.task


def _task_record(action: str, task: TaskContextState) -> tuple[str, Mapping[str, Any]]:
    return (
        RecordType.TASK_CHANGED,
        {"action": action, "revision": task.revision, "task": task.to_dict()},
    )
